"""Document masking: packed sequences whose documents do not see each other.

A training window packs several documents back to back. With `document_ids` [B, T] (any integers; a
document is a run of equal ids) every token behaves as if its document ran alone from position 0:
- attention: a causal mask within the document: on CUDA inside torch.compile (compiled blocks) flex attention
  with a `BlockMask` (fully masked blocks skipped), else SDPA with a boolean mask [B, 1, T, T];
- CCA's causal convolutions: an input tap from before the document start reads the zeros (depthwise) and
  the depthwise output of zeros (grouped) that a lone document's zero left state gives;
- the delayed value: a document's first token sees the delayed projection of an all-zero input;
- RoPE: positions restart at 0 at every document start.

`DocumentLayout` holds those masks, built once per forward and shared by every layer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from zaya_model.errors import ZayaModelError


class DocumentLayout(NamedTuple):
    """Per-token masks of a packed batch (all bool). M = T + cca_time1 - 1 depthwise outputs."""

    starts_BT: torch.Tensor  # True at the first token of each document
    depthwise_keep_BMk: torch.Tensor  # depthwise tap j of output m reads an input of the same document
    grouped_keep_BTk: torch.Tensor  # grouped tap j of token t reads a depthwise output of the same document
    attention_B1TT: torch.Tensor  # token t may attend to token s: s <= t and the same document
    block_mask: Any = None  # the same as a flex-attention BlockMask (CUDA only), used by compiled blocks


def document_runs(document_ids_BT: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(run index [B, T] counting documents from 0 per row, start flags [B, T]): equal neighbours share a run."""
    if document_ids_BT.ndim != 2:
        raise ZayaModelError(f"document_ids must be [batch, seq], got shape {tuple(document_ids_BT.shape)}")
    starts = torch.ones_like(document_ids_BT, dtype=torch.bool)
    starts[:, 1:] = document_ids_BT[:, 1:] != document_ids_BT[:, :-1]
    return starts.long().cumsum(dim=1), starts


def document_positions(document_ids_BT: torch.Tensor) -> torch.Tensor:
    """RoPE positions [B, T] that restart at 0 at every document start (a lone document's positions)."""
    _, starts = document_runs(document_ids_BT)
    T = document_ids_BT.shape[1]
    index = torch.arange(T, device=document_ids_BT.device).expand_as(document_ids_BT)
    start_index = torch.where(starts, index, torch.zeros_like(index)).cummax(dim=1).values
    return index - start_index


def document_layout(document_ids_BT: torch.Tensor, cca_time0: int, cca_time1: int) -> DocumentLayout:
    """The masks every layer applies for these documents (see the module docstring)."""
    runs, starts = document_runs(document_ids_BT)
    B, T = runs.shape
    past = cca_time0 - 1 + cca_time1 - 1
    # the conv's zero left state counts as a run of its own (run 0; documents count from 1)
    padded = torch.cat((runs.new_zeros(B, past), runs), dim=1)  # [B, P + T]
    dw = padded.unfold(1, cca_time0, 1)  # [B, M, k0]: the runs of each depthwise output's inputs
    depthwise_keep = dw == dw[..., -1:]
    mid = padded[:, cca_time0 - 1 :].unfold(1, cca_time1, 1)  # [B, T, k1]: runs of each grouped tap
    grouped_keep = mid == mid[..., -1:]
    causal = torch.ones(T, T, dtype=torch.bool, device=runs.device).tril()
    attention = (runs[:, :, None] == runs[:, None, :]) & causal
    block_mask = _block_mask(runs) if runs.is_cuda else None
    return DocumentLayout(starts, depthwise_keep, grouped_keep, attention[:, None], block_mask)


def _block_mask(runs_BT: torch.Tensor) -> Any:
    """Causal attention within each run as a flex-attention BlockMask."""
    from torch.nn.attention.flex_attention import create_block_mask

    def same_document_causal(b, h, q, kv):  # flex attention's mask_mod signature
        return (runs_BT[b, q] == runs_BT[b, kv]) & (kv <= q)

    B, T = runs_BT.shape
    return create_block_mask(same_document_causal, B, None, T, T, device=runs_BT.device)


def document_attention(
    q_BHTd: torch.Tensor, k_BKTd: torch.Tensor, v_BKTd: torch.Tensor, attn_mask: torch.Tensor, documents: DocumentLayout
) -> torch.Tensor:
    """Attention of packed documents [B, H, T, d]: flex attention on the BlockMask where it is compiled (CUDA,
    compiled blocks; unfused it would materialise every score), else SDPA with the boolean mask.

    attn_mask: the SDPA mask, `documents.attention_B1TT` or that and a padding mask."""
    if documents.block_mask is not None and torch.compiler.is_compiling():
        from torch.nn.attention.flex_attention import flex_attention

        dtype = v_BKTd.dtype  # under autocast q, k may be fp32 after the norm; SDPA would cast them too
        q, k = q_BHTd.to(dtype), k_BKTd.to(dtype)
        return flex_attention(q, k, v_BKTd, block_mask=documents.block_mask, enable_gqa=True)
    return F.scaled_dot_product_attention(q_BHTd, k_BKTd, v_BKTd, attn_mask=attn_mask, enable_gqa=True)
