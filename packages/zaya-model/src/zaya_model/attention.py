"""CCA attention of ZAYA1 (Compressed Convolutional Attention, arXiv 2510.04476) with GQA.

Order of operations (matches HF `ZayaAttention` / `ZayaCCAProjection`):
1. padding tokens are zeroed (so they cannot leak into the conv state of real tokens);
2. one fused projection gives q | k | v_current | v_delayed (HF keeps four Linear layers);
3. q/k residual mixing: q_res = (q + k of its KV group) / 2, k_res = mean of q_res over the group;
4. a causal depthwise conv (kernel cca_time0) then a per-head grouped conv (kernel cca_time1) over the
   concatenated q|k channels; q = conv_q + q_res, k = conv_k + k_res;
5. value = [v_current(t) | v_delayed(t-1)] viewed as K heads (the first half of the heads carry the
   current token, the second half the previous token's delayed projection);
6. q, k L2-normalised to norm sqrt(d); k scaled by a learned per-KV-head temperature;
7. partial RoPE on the first rotary_dim channels; SDPA (GQA, causal); output projection.

The convs run channels-last as matmuls over unfolded windows: no [B, C, T] transposes, and the grouped
conv becomes one batched GEMM per head group.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zaya_model.cache import ZayaCache
from zaya_model.config import ZayaConfig
from zaya_model.context_parallel import ContextParallel, chunk_attention, exchange_halo, gather_sequence
from zaya_model.documents import DocumentLayout, document_attention
from zaya_model.layers import apply_partial_rope


class ZayaCCAttention(nn.Module):
    """CCA + GQA self-attention for one layer."""

    def __init__(self, config: ZayaConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.groups = config.kv_groups
        self.q_size, self.kv_size = config.q_size, config.kv_size
        self.k0, self.k1 = config.cca_time0, config.cca_time1
        self.state_len = config.conv_state_len
        channels = config.conv_channels
        bias = config.attention_bias
        self.qkv = nn.Linear(config.hidden_size, self.q_size + 2 * self.kv_size, bias=bias)
        # Stored in nn.Conv1d layout so checkpoints map 1:1 to HF: [C, 1, k0] and [C, d, k1].
        self.conv_depthwise_weight = nn.Parameter(torch.empty(channels, 1, self.k0))
        self.conv_depthwise_bias = nn.Parameter(torch.zeros(channels))
        self.conv_grouped_weight = nn.Parameter(torch.empty(channels, self.head_dim, self.k1))
        self.conv_grouped_bias = nn.Parameter(torch.zeros(channels))
        self.key_temperature = nn.Parameter(torch.ones(self.num_kv_heads))
        self.out = nn.Linear(self.q_size, config.hidden_size, bias=bias)
        # Set by ZayaForCausalLM.set_context_parallel: this layer then sees this rank's zigzag chunks only.
        self.context_parallel: ContextParallel | None = None

    # ---------------------------------------------------------------- CCA pieces
    def _causal_convs(self, qk_BPC: torch.Tensor, documents: DocumentLayout | None = None) -> torch.Tensor:
        """Depthwise then grouped causal conv over [B, P + T, C] (P past inputs in front); returns [B, T, C].

        With `documents`, a tap that reaches into another document reads what a lone document's zero left
        state gives: a zero input (depthwise), the depthwise output of zeros, its bias (grouped)."""
        B, L, C = qk_BPC.shape
        dtype = qk_BPC.dtype
        w_dw = self.conv_depthwise_weight.to(dtype)[:, 0, :]  # [C, k0]
        windows = qk_BPC.unfold(1, self.k0, 1)  # [B, L - k0 + 1, C, k0]
        if documents is not None:
            windows = windows * documents.depthwise_keep_BMk[:, :, None, :].to(dtype)
        b_dw = self.conv_depthwise_bias.to(dtype)
        mid = (windows * w_dw).sum(-1) + b_dw
        G, d = C // self.head_dim, self.head_dim
        T = L - self.state_len
        windows = mid.view(B, -1, G, d).unfold(1, self.k1, 1)  # [B, T, G, d_in, k1]
        if documents is not None:
            keep = documents.grouped_keep_BTk[:, :, None, None, :]
            windows = torch.where(keep, windows, b_dw.view(G, d, 1))
        w_g = self.conv_grouped_weight.to(dtype).view(G, d, d * self.k1)  # [G, d_out, d_in * k1]
        out = torch.einsum("btgx,gox->btgo", windows.reshape(B, T, G, d * self.k1), w_g)
        return out.reshape(B, T, C) + self.conv_grouped_bias.to(dtype)

    def project(
        self,
        x_BTD: torch.Tensor,
        past_qk_BPC: torch.Tensor | None,
        prev_delayed_BV: torch.Tensor | None,
        conv_mask_BT: torch.Tensor | None,
        documents: DocumentLayout | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """CCA q/k/v as [B, T, H, d], [B, T, K, d], [B, T, K, d] (before q/k norm and RoPE), and the
        recurrent state after these tokens: the last P q|k inputs [B, P, C] and the last delayed value [B, V].

        past_qk / prev_delayed: that state before them (None: the start of the sequence, all-zero inputs).
        documents: packed documents that must not see each other (documents.py)."""
        qkv = self.projection(x_BTD, conv_mask_BT)
        B = qkv.shape[0]
        if past_qk_BPC is None:
            past_qk_BPC = qkv.new_zeros(B, self.state_len, self.q_size + self.kv_size)
        if prev_delayed_BV is None:  # the token before the first one is an all-zero input: its delayed projection
            prev_delayed_BV = self.delayed_value_of_zero(qkv).expand(B, -1)
        return self.cca(qkv, past_qk_BPC, prev_delayed_BV, documents)

    def projection(self, x_BTD: torch.Tensor, conv_mask_BT: torch.Tensor | None) -> torch.Tensor:
        """The fused q | k | v_current | v_delayed projection [B, T, H·d + 2·K·d] (padding tokens zeroed first)."""
        if conv_mask_BT is not None:
            x_BTD = x_BTD * conv_mask_BT[:, :, None].to(x_BTD.dtype)
        return self.qkv(x_BTD)

    def cca(
        self,
        qkv: torch.Tensor,
        past_qk_BPC: torch.Tensor,
        prev_delayed_BV: torch.Tensor,
        documents: DocumentLayout | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """`project` from the fused projection and the state before these tokens (both given)."""
        B, T, _ = qkv.shape
        H, K, d, G = self.num_heads, self.num_kv_heads, self.head_dim, self.groups
        qk_BTC = qkv[..., : self.q_size + self.kv_size]
        v_cur, v_del = qkv[..., self.q_size + self.kv_size :].split(self.kv_size // 2, dim=-1)

        q_res = (qkv[..., : self.q_size].view(B, T, K, G, d) + qk_BTC[..., self.q_size :].view(B, T, K, 1, d)) * 0.5
        k_res = q_res.mean(dim=3)

        qk_full = torch.cat((past_qk_BPC.to(qk_BTC.dtype), qk_BTC), dim=1)
        conv = self._causal_convs(qk_full, documents)
        q = conv[..., : self.q_size].view(B, T, H, d) + q_res.reshape(B, T, H, d)
        k = conv[..., self.q_size :].view(B, T, K, d) + k_res

        v_prev = torch.cat((prev_delayed_BV.to(v_del.dtype)[:, None], v_del[:, :-1]), dim=1)
        if documents is not None:  # a document's first token: the delayed value before a sequence's first token
            v_prev = torch.where(documents.starts_BT[..., None], self.delayed_value_of_zero(v_del), v_prev)
        v = torch.cat((v_cur, v_prev), dim=-1).view(B, T, K, d)
        return q, k, v, qk_full[:, qk_full.shape[1] - self.state_len :], v_del[:, -1]

    def delayed_value_of_zero(self, like: torch.Tensor) -> torch.Tensor:
        """The delayed projection [V] of an all-zero input (the bias, or zeros): the value before the first token."""
        if self.qkv.bias is None:
            return like.new_zeros(self.kv_size // 2)
        return self.qkv.bias[self.q_size + self.kv_size + self.kv_size // 2 :].to(like.dtype)

    def normalize_qk(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """L2-normalise to norm sqrt(d); keys also get the learned per-KV-head temperature."""
        eps = torch.finfo(q.dtype).eps
        scale = self.head_dim**0.5
        q = q * (scale / q.norm(p=2, dim=-1, keepdim=True).clamp_min(eps))
        k = k * (scale / k.norm(p=2, dim=-1, keepdim=True).clamp_min(eps))
        return q, k * self.key_temperature.to(k.dtype)[None, None, :, None]

    # ---------------------------------------------------------------- one-token decoding on a static cache
    def decode(
        self,
        x_B1D: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        keys_BKSd: torch.Tensor,
        values_BKSd: torch.Tensor,
        past_qk_BPC: torch.Tensor,
        prev_delayed_BV: torch.Tensor,
        valid_BS: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One new token per row against a fixed-size cache, reading but never writing it.

        Attends the cached slots marked in `valid_BS` plus the token's own key (scored apart, so the
        cache write can come after). Returns (output [B, 1, D], its key and value [B, K, 1, d] in the cache
        dtype, the next conv state [B, P, C] and delayed value [B, V]); every shape is fixed by the cache."""
        B = x_B1D.shape[0]
        K, G, d = self.num_kv_heads, self.groups, self.head_dim
        q, k, v, next_qk, next_delayed = self.project(x_B1D, past_qk_BPC, prev_delayed_BV, None)
        q, k = self.normalize_qk(q, k)
        cos, sin = rope
        q, k = apply_partial_rope(q, cos, sin), apply_partial_rope(k, cos, sin)
        k, v = k.to(keys_BKSd.dtype), v.to(values_BKSd.dtype)
        # query head h reads KV head h // G (SDPA's enable_gqa grouping); softmax and sums in fp32
        q_BKGd = q.reshape(B, K, G, d).float()
        scale = d**-0.5
        cached = torch.einsum("bkgd,bksd->bkgs", q_BKGd, keys_BKSd.float()) * scale
        cached = cached.masked_fill(~valid_BS[:, None, None, :], float("-inf"))
        own = (q_BKGd * k.reshape(B, K, 1, d).float()).sum(-1, keepdim=True) * scale
        probs = torch.softmax(torch.cat((cached, own), dim=-1), dim=-1)
        out = torch.einsum("bkgs,bksd->bkgd", probs[..., :-1], values_BKSd.float())
        out = out + probs[..., -1:] * v.reshape(B, K, 1, d).float()
        out = self.out(out.reshape(B, 1, self.q_size).to(x_B1D.dtype))
        return out, k.transpose(1, 2), v.transpose(1, 2), next_qk, next_delayed

    # ---------------------------------------------------------------- forward
    def forward(
        self,
        x_BTD: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        attn_mask: torch.Tensor | None,
        cache: ZayaCache | None = None,
        conv_mask_BT: torch.Tensor | None = None,
        documents: DocumentLayout | None = None,
    ) -> torch.Tensor:
        """x [B, T, D] -> [B, T, D]. attn_mask: bool [B, 1, T, S] or None for plain causal attention.

        Under context parallelism (no cache) x is this rank's two zigzag chunks and rope their global positions.
        documents (no cache, no context parallelism): the conv and delayed-value masks of packed documents;
        attn_mask then already keeps each token within its document."""
        if self.context_parallel is not None and cache is None:
            return self.forward_context_parallel(x_BTD, rope, conv_mask_BT, self.context_parallel)
        B, T, _ = x_BTD.shape
        state = cache.layers[self.layer_idx] if cache is not None else None
        past_qk, prev_delayed = (state.conv_state, state.delayed_value) if state is not None else (None, None)
        q, k, v, next_qk, next_delayed = self.project(x_BTD, past_qk, prev_delayed, conv_mask_BT, documents)
        if state is not None:
            state.conv_state, state.delayed_value = next_qk.detach().clone(), next_delayed.detach().clone()
        q, k = self.normalize_qk(q, k)
        cos, sin = rope
        q, k = apply_partial_rope(q, cos, sin), apply_partial_rope(k, cos, sin)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        past = cache.length if cache is not None else 0
        if cache is not None:
            k, v = cache.append_kv(self.layer_idx, k, v)
            k, v = k.to(q.dtype), v.to(q.dtype)
        if documents is not None:
            out = document_attention(q, k, v, attn_mask, documents)
        else:
            is_causal = attn_mask is None and past == 0 and T > 1
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, enable_gqa=True)
        return self.out(out.transpose(1, 2).reshape(B, T, self.q_size))

    def forward_context_parallel(
        self,
        x_BTD: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        conv_mask_BT: torch.Tensor | None,
        cp: ContextParallel,
    ) -> torch.Tensor:
        """`forward` on this rank's chunks [B, 2L, D] of a sequence split over the CP group (context_parallel.py).

        The halo (the last P q|k inputs and the last delayed value of the chunk before each of ours) comes from
        the neighbouring chunks' ranks; keys and values of the whole sequence are all-gathered after RoPE, and
        each local chunk attends causally to the keys up to its own end."""
        B, T, _ = x_BTD.shape
        L = cp.chunk_len(T)
        H, K, d = self.num_heads, self.num_kv_heads, self.head_dim
        P, C, V = self.state_len, self.q_size + self.kv_size, self.kv_size // 2
        rows = self.projection(x_BTD, conv_mask_BT).view(B, 2, L, -1)  # [B, chunk, L, q|k|v_cur|v_del]
        tails = torch.cat((rows[:, :, L - P :, :C].reshape(B, 2, P * C), rows[:, :, -1, C + V :]), dim=-1)
        start = torch.cat((rows.new_zeros(P * C), self.delayed_value_of_zero(rows))).view(1, 1, -1)
        halo = exchange_halo(tails, start, cp).reshape(B * 2, P * C + V)
        q, k, v, _, _ = self.cca(rows.reshape(B * 2, L, -1), halo[:, : P * C].view(B * 2, P, C), halo[:, P * C :])
        q, k = self.normalize_qk(q, k)
        cos, sin = rope
        q = apply_partial_rope(q.reshape(B, T, H, d), cos, sin)
        k = apply_partial_rope(k.reshape(B, T, K, d), cos, sin)
        kv = gather_sequence(torch.stack((k, v.reshape(B, T, K, d)), dim=2), cp)  # [B, 2N·L, 2, K, d]
        keys, values = kv[:, :, 0].transpose(1, 2), kv[:, :, 1].transpose(1, 2)  # [B, K, S, d]
        outs = []
        for slot, chunk in enumerate(cp.chunks()):
            q_c = q[:, slot * L : (slot + 1) * L].transpose(1, 2)
            end = (chunk + 1) * L
            outs.append(chunk_attention(q_c, keys[:, :, :end], values[:, :, :end], chunk))
        out = torch.cat(outs, dim=2)  # [B, H, 2L, d]
        return self.out(out.transpose(1, 2).reshape(B, T, self.q_size))
