"""What happens after end-of-sequence: the one home of the EOS fill.

A row that has emitted `eos_token_id` is finished: every later token of that row is EOS again, and a
request stops once every row has finished, keeping the columns up to the last row's EOS. The decoder (on
the device, inside its recorded step), its stream (on the host) and the forward path of sharded models all
apply these functions, so they agree token for token.
"""

from __future__ import annotations

import torch


def fill_after_eos(token_B: torch.Tensor, finished_B: torch.Tensor, eos_token_id: int | None) -> torch.Tensor:
    """This step's tokens with finished rows set to EOS; rows emitting EOS now are marked in `finished_B`
    (in place). Device ops only (no host sync), so it records in a CUDA graph. No EOS: `token_B` as it is."""
    if eos_token_id is None:
        return token_B
    token_B = torch.where(finished_B, torch.full_like(token_B, eos_token_id), token_B)
    finished_B |= token_B == eos_token_id
    return token_B


def all_finished(finished_B: torch.Tensor, eos_token_id: int | None) -> bool:
    """Whether every row has emitted EOS, so the request can stop (a host sync when `finished_B` is on the
    device); never without EOS."""
    return eos_token_id is not None and bool(finished_B.all())


def kept_columns(new_BN: torch.Tensor, eos_token_id: int | None) -> int:
    """How many of the new tokens' columns to keep: up to the step at which the last row emitted EOS
    (all of them if some row never did, or without EOS)."""
    if eos_token_id is None:
        return new_BN.shape[1]
    is_eos = new_BN == eos_token_id
    if not bool(is_eos.any(dim=1).all()):
        return new_BN.shape[1]
    return int(is_eos.int().argmax(dim=1).max()) + 1
