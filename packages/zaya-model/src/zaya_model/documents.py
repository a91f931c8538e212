"""Document masking: packed sequences whose documents do not see each other.

A training window packs several documents back to back. With `document_ids` [B, T] (any integers; a
document is a run of equal ids) every token behaves as if its document ran alone from position 0:
- attention: a causal mask within the document (SDPA's boolean mask, which torch.compile traces);
- CCA's causal convolutions: an input tap from before the document start reads the zeros (depthwise) and
  the depthwise output of zeros (grouped) that a lone document's zero left state gives;
- the delayed value: a document's first token sees the delayed projection of an all-zero input;
- RoPE: positions restart at 0 at every document start.

`DocumentLayout` holds those masks, built once per forward and shared by every layer.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from zaya_model.errors import ZayaModelError


class DocumentLayout(NamedTuple):
    """Per-token masks of a packed batch (all bool). M = T + cca_time1 - 1 depthwise outputs."""

    starts_BT: torch.Tensor  # True at the first token of each document
    depthwise_keep_BMk: torch.Tensor  # depthwise tap j of output m reads an input of the same document
    grouped_keep_BTk: torch.Tensor  # grouped tap j of token t reads a depthwise output of the same document
    attention_B1TT: torch.Tensor  # token t may attend to token s: s <= t and the same document


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
    return DocumentLayout(starts, depthwise_keep, grouped_keep, attention[:, None])
