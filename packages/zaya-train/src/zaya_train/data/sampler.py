"""A deterministic, resumable, distributed sampler of packed sequences from a weighted mixture of sources.

Every rank computes the same global batch of (source, window) picks and reads only its own rows, so the
data a global batch holds does not depend on the number of ranks (DDP and FSDP runs match a
single-process run with the same global batch). The whole position is `drawn` — how many windows each
source has given — so the state saved in a checkpoint is a few integers and resume is exact:
- the source of each pick is the one furthest behind its weight (smooth weighted round robin), so a
  mixture's proportions hold exactly over any stretch, with no random number to replay;
- the k-th window of a source is `permutation(seed, phase, source, epoch)[k mod n]`, a fresh shuffle per
  pass over the source.
"""

from typing import Any

import numpy as np

from zaya_train.data.shards import TokenStream
from zaya_train.errors import ZayaTrainError


class MixtureSampler:
    """Global batches of `seq_len + 1`-token windows (inputs + shifted targets) for one phase."""

    def __init__(
        self, streams: dict[str, TokenStream], weights: dict[str, float], seq_len: int, seed: int, phase: int = 0
    ) -> None:
        missing = sorted(set(weights) - set(streams))
        if missing:
            raise ZayaTrainError(
                f"mixture names unknown sources {missing}; known: {sorted(streams)} (train.data.sources)"
            )
        active = {name: float(w) for name, w in weights.items() if w > 0}
        total = sum(active.values())
        self.weights = {name: w / total for name, w in sorted(active.items())}
        self.streams = {name: streams[name] for name in self.weights}
        self.seq_len, self.seed, self.phase = seq_len, seed, phase
        self.windows = {name: s.num_windows(seq_len) for name, s in self.streams.items()}
        for name, n in self.windows.items():
            if n == 0:
                raise ZayaTrainError(
                    f"source {name!r} has {self.streams[name].num_tokens} training tokens, fewer than "
                    f"one sequence of {seq_len + 1}; add data or lower the phase's seq_len"
                )
        self.drawn = dict.fromkeys(self.weights, 0)
        self._perm: dict[str, tuple[int, np.ndarray]] = {}

    def _next_source(self) -> str:
        total = sum(self.drawn.values()) + 1
        return max(self.weights, key=lambda name: self.weights[name] * total - self.drawn[name])

    def _window(self, name: str, k: int) -> int:
        n = self.windows[name]
        epoch = k // n
        cached = self._perm.get(name)
        if cached is None or cached[0] != epoch:
            source_id = sorted(self.streams).index(name)
            rng = np.random.default_rng([self.seed, self.phase, source_id, epoch])
            cached = (epoch, rng.permutation(n))
            self._perm[name] = cached
        return int(cached[1][k % n])

    def next_picks(self, count: int) -> list[tuple[str, int]]:
        """The next `count` (source, window) picks of the global stream; advances the position."""
        picks = []
        for _ in range(count):
            name = self._next_source()
            picks.append((name, self._window(name, self.drawn[name])))
            self.drawn[name] += 1
        return picks

    def next_rank_picks(self, global_batch: int, rank: int = 0, world_size: int = 1) -> list[tuple[str, int]]:
        """This rank's (source, window) picks of the next global batch: its slice of `next_picks(global_batch)`."""
        if global_batch % world_size:
            raise ZayaTrainError(
                f"global batch {global_batch} does not split over {world_size} ranks; "
                "make train.global_batch_size a multiple of the world size"
            )
        picks = self.next_picks(global_batch)
        per_rank = global_batch // world_size
        return picks[rank * per_rank : (rank + 1) * per_rank]

    def next_batch(self, global_batch: int, rank: int = 0, world_size: int = 1) -> np.ndarray:
        """This rank's rows `[global_batch / world_size, seq_len + 1]` of the next global batch."""
        return self.rows(self.next_rank_picks(global_batch, rank, world_size))

    def next_batch_with_documents(
        self, global_batch: int, rank: int = 0, world_size: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """`next_batch` and the document index of every token of its rows (for train.data.document_masking)."""
        mine = self.next_rank_picks(global_batch, rank, world_size)
        return self.rows(mine), np.stack([self.streams[name].window_documents(w, self.seq_len) for name, w in mine])

    def rows(self, picks: list[tuple[str, int]]) -> np.ndarray:
        """The token windows `[len(picks), seq_len + 1]` of these picks."""
        return np.stack([self.streams[name].window(w, self.seq_len) for name, w in picks])

    def state_dict(self) -> dict[str, Any]:
        """The exact position (plain ints, picklable), as stored in checkpoints."""
        return {"drawn": dict(self.drawn), "seq_len": self.seq_len, "seed": self.seed, "phase": self.phase}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a saved position; refuses a position of a different phase layout."""
        if (state["seq_len"], state["seed"], state["phase"]) != (self.seq_len, self.seed, self.phase):
            raise ZayaTrainError(
                f"sampler state is for phase {state['phase']} seq_len {state['seq_len']} seed "
                f"{state['seed']}, not phase {self.phase} seq_len {self.seq_len} seed {self.seed}"
            )
        if set(state["drawn"]) != set(self.drawn):
            raise ZayaTrainError(
                f"sampler state has sources {sorted(state['drawn'])}, the phase has {sorted(self.drawn)}"
            )
        self.drawn = {name: int(n) for name, n in state["drawn"].items()}


def validation_windows(streams: dict[str, TokenStream], seq_len: int, per_source: int) -> dict[str, np.ndarray]:
    """A fixed set of held-out windows per source, evenly spaced over each validation stream."""
    return {
        name: np.stack([streams[name].window(w, seq_len) for w in picks])
        for name, picks in validation_picks(streams, seq_len, per_source).items()
    }


def validation_documents(streams: dict[str, TokenStream], seq_len: int, per_source: int) -> dict[str, np.ndarray]:
    """The document index of every token of `validation_windows` (for train.data.document_masking)."""
    return {
        name: np.stack([streams[name].window_documents(w, seq_len) for w in picks])
        for name, picks in validation_picks(streams, seq_len, per_source).items()
    }


def validation_picks(streams: dict[str, TokenStream], seq_len: int, per_source: int) -> dict[str, list[int]]:
    """The window indices `validation_windows` holds per source."""
    out = {}
    for name, stream in sorted(streams.items()):
        n = stream.num_windows(seq_len)
        if n == 0:
            raise ZayaTrainError(
                f"source {name!r}: the validation split has {stream.num_tokens} tokens, fewer than one "
                f"sequence of {seq_len + 1}; raise train.data.val_fraction or add data"
            )
        picks = np.unique(np.linspace(0, n - 1, num=min(per_source, n)).round().astype(np.int64))
        out[name] = [int(w) for w in picks]
    return out
