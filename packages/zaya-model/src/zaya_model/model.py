"""ZAYA1 (arXiv 2511.17127): a mixture-of-experts decoder with CCA attention and the ZAYA router.

What is notable, top to bottom:
- token embeddings get a learned per-channel scale and bias; from there the residual stream is fp32;
- each block: pre-RMSNorm -> CCA attention -> residual scaling; pre-RMSNorm -> MoE -> residual scaling,
  where residual scaling is (branch + b) * s + (residual + b') * s' with learned per-channel b, s, b', s';
- the router of layer l sees an exponential depth average of the router states of layers < l;
- top-k routing over E experts plus a skip route that computes nothing (ZAYA1 uses k = 1);
- aux-loss-free bias balancing, driven by the trainer through `update_router_biases`;
- final RMSNorm, LM head tied to the embeddings; logits are returned in fp32, or with `labels` the mean
  next-token loss from the fused chunked head (loss.py), which never materialises [B, T, V] logits.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from zaya_model.attention import ZayaCCAttention
from zaya_model.balancing import all_reduce_counts, bias_step, load_fractions
from zaya_model.cache import ZayaCache
from zaya_model.config import ZayaConfig
from zaya_model.context_parallel import ContextParallel, check_chunk_len, group_mean_loss
from zaya_model.documents import DocumentLayout, document_layout, document_positions
from zaya_model.errors import ZayaModelError
from zaya_model.expert_parallel import ExpertParallel, set_model_expert_parallel
from zaya_model.experts import DECODE_GATHER_MAX_PAIRS, ZayaExperts
from zaya_model.kernels import token_loss
from zaya_model.layers import ZayaEmbeddingScaling, ZayaResidualScaling, ZayaRMSNorm, rope_cos_sin, rope_inv_freq
from zaya_model.loss import cross_entropy_chunk, fused_linear_cross_entropy
from zaya_model.router import ZayaRouter


class ZayaMoE(nn.Module):
    """Router + experts: the weighted expert output, the router state for the next layer, the class counts."""

    def __init__(self, config: ZayaConfig, layer_idx: int) -> None:
        super().__init__()
        self.router = ZayaRouter(config, layer_idx)
        self.experts = ZayaExperts(config)

    def forward(
        self, x_BTD: torch.Tensor, prev_state: torch.Tensor | None, token_mask_BT: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        B, T, D = x_BTD.shape
        choice, weights, state, counts = self.router(x_BTD, prev_state, token_mask_BT)
        y = self.experts(x_BTD.reshape(B * T, D), choice, weights)
        return y.view(B, T, D), state, counts

    def decode(
        self, x_B1D: torch.Tensor, prev_state: torch.Tensor | None, gather_max_pairs: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One token per row, sync-free (see `ZayaExperts.forward_decode`); no load counting."""
        B, _, D = x_B1D.shape
        choice, weights, state, _ = self.router(x_B1D, prev_state)
        y = self.experts.forward_decode(x_B1D.reshape(B, D), choice, weights, gather_max_pairs)
        return y.view(B, 1, D), state


class ZayaDecoderLayer(nn.Module):
    """One ZAYA1 block (see the module docstring); the unit to compile and to checkpoint.

    Returns (residual stream, router state, per-class router counts in training mode else None)."""

    def __init__(self, config: ZayaConfig, layer_idx: int) -> None:
        super().__init__()
        self.attn_norm = ZayaRMSNorm(config.hidden_size, config.rms_norm_eps, config.kernels)
        self.attn = ZayaCCAttention(config, layer_idx)
        self.attn_residual = ZayaResidualScaling(config.hidden_size)
        self.moe_norm = ZayaRMSNorm(config.hidden_size, config.rms_norm_eps, config.kernels)
        self.moe = ZayaMoE(config, layer_idx)
        self.moe_residual = ZayaResidualScaling(config.hidden_size)

    def forward(
        self,
        resid_BTD: torch.Tensor,
        router_state: torch.Tensor | None,
        rope: tuple[torch.Tensor, torch.Tensor],
        attn_mask: torch.Tensor | None = None,
        cache: ZayaCache | None = None,
        token_mask_BT: torch.Tensor | None = None,
        documents: DocumentLayout | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        attn_out = self.attn(self.attn_norm(resid_BTD), rope, attn_mask, cache, token_mask_BT, documents)
        resid_BTD = self.attn_residual(attn_out, resid_BTD)
        moe_out, router_state, counts = self.moe(self.moe_norm(resid_BTD), router_state, token_mask_BT)
        return self.moe_residual(moe_out, resid_BTD), router_state, counts

    def decode(
        self,
        resid_B1D: torch.Tensor,
        router_state: torch.Tensor | None,
        rope: tuple[torch.Tensor, torch.Tensor],
        state: tuple[torch.Tensor, ...],
        valid_BS: torch.Tensor,
        gather_max_pairs: int = DECODE_GATHER_MAX_PAIRS,
    ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
        """`forward` for one token per row on a static cache, as a pure function (nothing written in place).

        state: this layer's (keys, values, conv state, delayed value) from `ZayaStaticCache.layer(i)`.
        Returns (residual stream, router state, (key, value, conv state, delayed value) to write back)."""
        attn_out, *new_state = self.attn.decode(self.attn_norm(resid_B1D), rope, *state, valid_BS)
        resid_B1D = self.attn_residual(attn_out, resid_B1D)
        moe_out, router_state = self.moe.decode(self.moe_norm(resid_B1D), router_state, gather_max_pairs)
        return self.moe_residual(moe_out, resid_B1D), router_state, tuple(new_state)


class ZayaForCausalLM(nn.Module):
    """The ZAYA1 language model: `forward(input_ids)` -> logits [B, T, V] in fp32; with `labels`, the mean loss."""

    def __init__(self, config: ZayaConfig) -> None:
        super().__init__()
        self.config = config
        D = config.hidden_size
        self.embed = nn.Embedding(config.vocab_size, D)
        self.embed_scaling = ZayaEmbeddingScaling(D)
        self.layers = nn.ModuleList(ZayaDecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.final_norm = ZayaRMSNorm(D, config.rms_norm_eps, config.kernels)
        self.lm_head = nn.Linear(D, config.vocab_size, bias=config.lm_head_bias)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.embed.weight
        self.token_loss = token_loss(config.kernels, fused_linear_cross_entropy)
        self.register_buffer("rope_inv_freq", rope_inv_freq(config.rotary_dim, config.rope_theta), persistent=False)
        self.context_parallel: ContextParallel | None = None
        self.expert_parallel: ExpertParallel | None = None
        self.reset_parameters()

    # ---------------------------------------------------------------- init
    @torch.no_grad()
    def reset_parameters(self, seed: int | None = None) -> None:
        """Normal(0, initializer_range) for matrices and conv kernels, ones/zeros for scales/biases."""
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        std = self.config.initializer_range
        for name, p in self.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if p.ndim >= 2 or leaf in ("conv_depthwise_weight", "conv_grouped_weight"):
                p.copy_(torch.randn(p.shape, generator=gen) * std)
            elif leaf in ("weight", "branch_scale", "residual_scale", "scale", "depth_scale", "key_temperature"):
                p.fill_(1.0)
            else:
                p.zero_()

    # ---------------------------------------------------------------- positions and RoPE
    @property
    def max_positions(self) -> int:
        """Longest sequence (past + new) the model accepts; the phased recipe raises it with RoPE theta."""
        return self.config.max_position_embeddings

    @max_positions.setter
    def max_positions(self, value: int) -> None:
        self.config = self.config.replace(max_position_embeddings=int(value))

    def set_rope_theta(self, theta: float) -> None:
        """Change the RoPE base (e.g. 10k -> 1M for the 32k-context phase); recomputes the frequencies."""
        self.config = self.config.replace(rope_theta=float(theta))
        self.rope_inv_freq = rope_inv_freq(self.config.rotary_dim, theta).to(self.rope_inv_freq.device)

    def set_context_parallel(self, cp: ContextParallel | None) -> None:
        """Split every sequence over a CP group (None: off). Training and loss forwards then take this rank's
        zigzag chunks (`zaya_model.context_parallel.shard_sequence`); decoding with a cache is unaffected."""
        self.context_parallel = cp
        for layer in self.layers:
            layer.attn.context_parallel = cp

    def set_expert_parallel(self, ep: ExpertParallel | None) -> None:
        """Dispatch every MoE layer's routed pairs over an EP group (None: off); each rank's experts must
        already be its E / ep slice (zaya-train's parallelize slices them). See expert_parallel.py."""
        set_model_expert_parallel(self, ep)

    def new_cache(self, batch_size: int, max_len: int, dtype: torch.dtype | None = None) -> ZayaCache:
        """An empty decode cache on the model's device."""
        dtype = dtype or self.embed.weight.dtype
        return ZayaCache(self.config, batch_size, max_len, device=self.embed.weight.device, dtype=dtype)

    # ---------------------------------------------------------------- forward
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        cache: ZayaCache | None = None,
        labels: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits [B, T, V] in fp32; with `labels`, the mean next-token loss (fp32 scalar) instead.

        attention_mask: [B, past + T] with 1 for real tokens, 0 for (left) padding (HF convention);
        position_ids: [B, T] or [T], default past + arange(T); cache: a `ZayaCache` to read and extend;
        labels: [B, T], the target of each position, already shifted (see `loss`). Trainers call the model
        (or its DDP/FSDP wrapper) with labels, so the wrapper's hooks fire and the loss takes the fused path.
        document_ids: [B, T] integers, a document a run of equal ids, for packed windows: each document is
        computed as if it ran alone (attention, CCA conv state, delayed value, RoPE positions; documents.py).
        Not with a cache, position_ids or context parallelism.
        """
        if labels is not None:
            if cache is not None:
                raise ZayaModelError("labels and cache are exclusive: the loss is for training, the cache for decoding")
            return self.loss(input_ids, labels, attention_mask, document_ids=document_ids)
        hidden = self.hidden_states(input_ids, attention_mask, position_ids, cache, document_ids)
        logits = self.lm_head(self.final_norm(hidden))
        return logits.float()

    def loss(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        ignore_index: int = -100,
        document_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Mean next-token cross-entropy, without materialising [B, T, V] fp32 logits.

        `labels[b, t]` is the target of position t (already shifted, unlike HF's `labels=input_ids`, so a
        [B, T + 1] window trains on T positions; `ignore_index` is skipped). The LM head and the loss run
        in token chunks through `self.token_loss` (loss.py); `compile_blocks` compiles its per-chunk softmax.
        """
        if labels.shape != input_ids.shape:
            raise ZayaModelError(
                f"labels must have the shape of input_ids {tuple(input_ids.shape)}, got {tuple(labels.shape)}"
            )
        hidden = self.hidden_states(input_ids, attention_mask, document_ids=document_ids)
        hidden = self.final_norm(hidden).flatten(0, 1)
        loss = self.token_loss(hidden, self.lm_head.weight, self.lm_head.bias, labels.flatten(), ignore_index)
        if self.context_parallel is not None:  # the group's mean, this rank's share of its gradient
            loss = group_mean_loss(loss, labels, ignore_index, self.context_parallel)
        return loss

    def hidden_states(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        cache: ZayaCache | None = None,
        document_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The fp32 residual stream after the last block (before the final norm)."""
        if input_ids.ndim != 2:
            raise ZayaModelError(f"input_ids must be [batch, seq], got shape {tuple(input_ids.shape)}")
        B, T = input_ids.shape
        cp = self.context_parallel if cache is None else None
        documents = None
        if document_ids is not None:
            self._check_documents(document_ids, (B, T), cache, position_ids, cp)
            documents = document_layout(document_ids, self.config.cca_time0, self.config.cca_time1)
            position_ids = document_positions(document_ids)
        if cp is not None:
            position_ids, attn_mask, token_mask = self._context_parallel_inputs(cp, attention_mask, position_ids, B, T)
        else:
            past = cache.length if cache is not None else 0
            if cache is not None:
                cache.check_room(T, B)
            self._check_positions(past + T)
            if position_ids is None:
                position_ids = torch.arange(past, past + T, device=input_ids.device)
            position_ids = position_ids.expand(B, T) if position_ids.ndim == 1 else position_ids
            attn_mask, token_mask = self._masks(attention_mask, B, T, past, input_ids.device)
            if documents is not None and attn_mask is None:
                attn_mask = documents.attention_B1TT
            elif documents is not None:  # padding too: the boolean mask holds both, the BlockMask only documents
                attn_mask, documents = attn_mask & documents.attention_B1TT, documents._replace(block_mask=None)
        rope = rope_cos_sin(position_ids, self.rope_inv_freq)
        resid = self.embed_scaling(self.embed(input_ids))
        router_state = None
        for layer in self.layers:
            resid, router_state, counts = layer(resid, router_state, rope, attn_mask, cache, token_mask, documents)
            if counts is not None:  # outside the block: counted once even when the block is recomputed
                layer.moe.router.load_counts += counts
        if cache is not None:
            cache.advance(T)
        return resid

    @staticmethod
    def _check_documents(
        document_ids: torch.Tensor,
        shape: tuple[int, int],
        cache: ZayaCache | None,
        position_ids: torch.Tensor | None,
        cp: ContextParallel | None,
    ) -> None:
        """Refuse document_ids where they cannot hold: their positions and masks are for one unsplit window."""
        if tuple(document_ids.shape) != shape:
            raise ZayaModelError(f"document_ids must be [batch, seq] = {list(shape)}, got {tuple(document_ids.shape)}")
        if cache is not None:
            raise ZayaModelError("document_ids are for training forwards; leave them out when decoding with a cache")
        if position_ids is not None:
            raise ZayaModelError("document_ids set the positions (restarting at each document); leave position_ids out")
        if cp is not None:
            raise ZayaModelError(
                "document_ids are not supported under context parallelism; turn context parallelism off "
                "or leave document_ids out"
            )

    def _check_positions(self, length: int) -> None:
        if length > self.max_positions:
            raise ZayaModelError(
                f"sequence of {length} positions exceeds max_positions {self.max_positions}; "
                "raise model.max_positions (and set_rope_theta) for longer contexts"
            )

    def _context_parallel_inputs(
        self,
        cp: ContextParallel,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        B: int,
        T: int,
    ) -> tuple[torch.Tensor, None, torch.Tensor | None]:
        """(global positions [B, 2L], no SDPA mask, the padding mask of the tokens or None) of this rank's chunks.

        Only padding at the end of the sequence is allowed (what `shard_sequence` adds): causal everywhere, it is
        seen by no real token, so it needs no attention mask; it is kept out of the router's load counts."""
        if position_ids is not None:
            raise ZayaModelError(
                "position_ids cannot be given under context parallelism: each token's global position follows "
                "from the zigzag layout; leave position_ids out"
            )
        L = cp.chunk_len(T)
        self._check_positions(2 * cp.size * L)
        check_chunk_len(2 * cp.size * L, cp.size, self.config.conv_state_len)
        positions = cp.positions(T, self.rope_inv_freq.device).expand(B, T)
        if attention_mask is None:
            return positions, None, None
        if attention_mask.shape != (B, T):
            raise ZayaModelError(
                f"attention_mask must be [batch, local tokens] = [{B}, {T}] under context parallelism, "
                f"got {tuple(attention_mask.shape)}"
            )
        chunks = attention_mask.to(torch.bool).view(B, 2, L)
        if bool((chunks[..., 1:] & ~chunks[..., :-1]).any()):
            raise ZayaModelError(
                "under context parallelism attention_mask may only mark padding at the end of the sequence "
                "(as shard_sequence makes it); left padding and holes need the unsplit model"
            )
        return positions, None, (None if bool(chunks.all()) else chunks.reshape(B, T))

    @staticmethod
    def _masks(
        attention_mask: torch.Tensor | None, B: int, T: int, past: int, device: torch.device
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(SDPA bool mask [B, 1, T, S] or None for plain causal; padding mask of the new tokens [B, T] or None)."""
        S = past + T
        if attention_mask is not None:
            if attention_mask.shape != (B, S):
                raise ZayaModelError(
                    f"attention_mask must be [batch, past + new] = [{B}, {S}], got {tuple(attention_mask.shape)}"
                )
            if bool(attention_mask.all()):
                attention_mask = None
        if attention_mask is None and (past == 0 or T == 1):
            return None, None
        q_pos = torch.arange(past, S, device=device)[:, None]
        k_pos = torch.arange(S, device=device)[None, :]
        allowed = (k_pos <= q_pos)[None, None]
        if attention_mask is None:
            return allowed, None
        valid = attention_mask.to(torch.bool)
        # A padding query still sees itself, so its row never turns to NaN (its output is discarded).
        allowed = allowed & (valid[:, None, None, :] | (k_pos == q_pos)[None, None])
        return allowed, valid[:, past:]

    # ---------------------------------------------------------------- router balancing
    def expert_load(self) -> torch.Tensor:
        """Fractions [L, E + 1] of the (token, slot) pairs each class got since the last bias update."""
        return load_fractions(self._load_counts())

    def _load_counts(self) -> torch.Tensor:
        return torch.stack([layer.moe.router.load_counts for layer in self.layers])

    @torch.no_grad()
    def update_router_biases(self, process_group: Any | None = None) -> torch.Tensor:
        """All-reduce the load counts (if distributed), apply the balancing step, reset the counts.

        Call once per optimizer step; counts accumulate over micro-batches. Returns the global fractions
        [L, E + 1] the step was based on.
        """
        counts = all_reduce_counts(self._load_counts(), process_group)
        for layer, layer_counts in zip(self.layers, counts, strict=True):
            bias_step(layer.moe.router, layer_counts, self.config)
        self.reset_router_counts()
        return load_fractions(counts)

    @torch.no_grad()
    def reset_router_counts(self) -> None:
        """Forget the load counted since the last bias update (a trainer drops a batch it will not apply)."""
        for layer in self.layers:
            layer.moe.router.load_counts.zero_()

    # ---------------------------------------------------------------- speed and generation
    def compile_blocks(self, **compile_kwargs: Any) -> ZayaForCausalLM:
        """torch.compile every decoder block in place and the loss's per-chunk softmax.

        `nn.Module.compile` keeps the module tree, so parameter names (checkpoints, HF export) are unchanged.
        The blocks share one code object, whose graph variants multiply (layer 0 has no depth state; training
        and evaluation; fp32 master weights under autocast or bf16 weights; static then dynamic batch), so the
        recompile limit is raised to keep them all compiled instead of falling back to eager after 8."""
        config = torch._dynamo.config
        config.recompile_limit = max(getattr(config, "recompile_limit", 8), 64)
        for layer in self.layers:
            layer.compile(**compile_kwargs)
        self.compile_loss(**compile_kwargs)
        return self

    def compile_loss(self, **compile_kwargs: Any) -> None:
        """Compile the fused loss's per-chunk softmax and gradient (one pass over the bf16 logits)."""
        chunk_fn = torch.compile(cross_entropy_chunk, **compile_kwargs)
        self.token_loss = token_loss(
            self.config.kernels, functools.partial(fused_linear_cross_entropy, chunk_fn=chunk_fn)
        )

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        attention_mask: torch.Tensor | None = None,
        eos_token_id: int | None = None,
        generator: torch.Generator | None = None,
        **decoder_options: Any,
    ) -> torch.Tensor:
        """Prompt + up to max_new_tokens tokens [B, T + n]; greedy at temperature 0, else top-p sampling.

        Batched prompts are left-padded with `attention_mask` marking real tokens. Sequences that emitted
        `eos_token_id` are filled with it afterwards; generation stops when all have. Runs a `ZayaDecoder`
        (static cache; on CUDA one CUDA graph per step); `decoder_options` go to it (`compile=True`,
        `cuda_graph=False`). For repeated requests of one shape, keep a `ZayaDecoder` instead.
        """
        from zaya_model.decode.generation import generate_tokens  # the decode stack loads on first use

        return generate_tokens(
            self,
            input_ids,
            max_new_tokens,
            temperature,
            top_p,
            attention_mask,
            eos_token_id,
            generator,
            **decoder_options,
        )


def build_model(cfg: ZayaConfig | dict[str, Any] | Any) -> ZayaForCausalLM:
    """The one builder: a ZayaConfig, a dict, or an omegaconf DictConfig of the `model` group."""
    return ZayaForCausalLM(ZayaConfig.from_dict(cfg))
