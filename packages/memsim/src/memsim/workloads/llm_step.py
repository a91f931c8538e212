"""One decode or prefill step of a layered mixture-of-experts transformer as a stream of memory runs.

The description (`LlmStepShape`) is plain byte counts, so memsim needs no model library: a caller turns
its model's byte accounting into it (the memstudy service does this from zaya-model). The stream is the
step's traffic in time order, layer by layer: the layer's dense weights, then per sequence its conv
state, cached K/V and the new K/V, then the experts the batch routed to, and the LM head at the end.

Virtual layout (each region starts on a 2 MiB boundary, every run starts on a line):
- dense weights `[L][dense_bytes_per_layer]`, then the head;
- expert weights `[L][E][expert_bytes]`: the active experts of a layer are a seeded random choice;
- KV cache `[L][B][kv_capacity_bytes_per_sequence]`: a sequence's cached positions are contiguous;
- conv state `[L][B][state_bytes_per_sequence]`.
Distinct experts per layer may be fractional (an expectation under uniform routing): the step spreads
round(active * L) experts over the layers, as even as possible, so the stream carries the expected bytes.
"""

from dataclasses import dataclass

import numpy as np

from memsim.errors import MemsimError

PHASES = ("decode", "prefill")
# region codes carried per run and per request; names match zaya-model's DecodeBytes fields
REGIONS = ("dense_weights", "expert_weights", "kv_cache", "conv_and_delayed_state")
DENSE, EXPERTS, KV, STATE = range(len(REGIONS))
REGION_ALIGN_BYTES = 2 << 20


@dataclass(frozen=True)
class LlmStepShape:
    """What one step of the batch moves, per layer and per sequence, in bytes (see the module docstring)."""

    phase: str
    layers: int
    batch_size: int
    tokens: int  # tokens the step produces (decode: batch_size) or ingests (prefill: batch_size x prompt)
    dense_bytes_per_layer: int
    head_bytes: int  # LM head and embedding rows, read once per step
    expert_bytes: int  # one expert's weights
    experts_per_layer: int  # experts stored per layer (the layout)
    active_experts_per_layer: float  # distinct experts the step reads per layer (expected)
    kv_read_bytes_per_sequence: int  # per layer: cached K/V read
    kv_write_bytes_per_sequence: int  # per layer: new K/V written
    kv_capacity_bytes_per_sequence: int  # per layer: the allocation (max context)
    state_bytes_per_sequence: int  # per layer: conv and delayed-value state
    state_read: bool = True  # decode reads the state before rewriting it; prefill only writes it

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise MemsimError(f"LlmStepShape.phase = {self.phase!r}; allowed: one of {', '.join(PHASES)}")
        for name in ("layers", "batch_size", "tokens", "experts_per_layer"):
            if getattr(self, name) < 1:
                raise MemsimError(f"LlmStepShape.{name} = {getattr(self, name)}; allowed: an integer >= 1")
        for name in ("dense_bytes_per_layer", "head_bytes", "expert_bytes", "kv_read_bytes_per_sequence",
                     "kv_write_bytes_per_sequence", "kv_capacity_bytes_per_sequence", "state_bytes_per_sequence"):  # fmt: skip
            if getattr(self, name) < 0:
                raise MemsimError(f"LlmStepShape.{name} = {getattr(self, name)}; allowed: a byte count >= 0")
        if not 0 <= self.active_experts_per_layer <= self.experts_per_layer:
            raise MemsimError(f"LlmStepShape.active_experts_per_layer = {self.active_experts_per_layer}; "
                              f"allowed: 0 ..{self.experts_per_layer} (experts_per_layer)")  # fmt: skip
        kv_used = self.kv_read_bytes_per_sequence + self.kv_write_bytes_per_sequence
        if kv_used > self.kv_capacity_bytes_per_sequence:
            raise MemsimError(f"LlmStepShape: K/V read + written per sequence ({kv_used} B) exceeds "
                              f"kv_capacity_bytes_per_sequence ({self.kv_capacity_bytes_per_sequence} B); "
                              "raise the capacity (max context) or lower the context")  # fmt: skip

    def region_read_bytes(self) -> dict[str, float]:
        """Expected bytes read per region in one step (before rounding to lines)."""
        L, B = self.layers, self.batch_size
        return {
            "dense_weights": float(L * self.dense_bytes_per_layer + self.head_bytes),
            "expert_weights": L * self.active_experts_per_layer * self.expert_bytes,
            "kv_cache": float(L * B * self.kv_read_bytes_per_sequence),
            "conv_and_delayed_state": float(L * B * self.state_bytes_per_sequence * self.state_read),
        }

    def region_write_bytes(self) -> dict[str, float]:
        """Bytes written per region in one step (new K/V, rewritten state)."""
        L, B = self.layers, self.batch_size
        return {"dense_weights": 0.0, "expert_weights": 0.0,
                "kv_cache": float(L * B * self.kv_write_bytes_per_sequence),
                "conv_and_delayed_state": float(L * B * self.state_bytes_per_sequence)}  # fmt: skip


@dataclass(frozen=True)
class StepStream:
    """The step's runs in time order: first line, line count, write flag and region code of each."""

    line_bytes: int
    start_line: np.ndarray
    n_lines: np.ndarray
    is_write: np.ndarray
    region: np.ndarray

    @property
    def total_lines(self) -> int:
        return int(self.n_lines.sum())

    @property
    def total_bytes(self) -> int:
        return self.total_lines * self.line_bytes

    def region_bytes(self, write: bool) -> dict[str, int]:
        """Bytes per region as DRAM sees them (whole lines), reads or writes."""
        sel = self.is_write == write
        per = np.bincount(self.region[sel], weights=self.n_lines[sel], minlength=len(REGIONS))
        return {name: int(per[i]) * self.line_bytes for i, name in enumerate(REGIONS)}


def _lines(nbytes: int, line: int) -> int:
    return -(-int(nbytes) // line)


def _experts_per_layer(shape: LlmStepShape) -> list[int]:
    """round(active x L) experts over the layers, the remainder on the first layers."""
    total = round(shape.active_experts_per_layer * shape.layers)
    base, extra = divmod(total, shape.layers)
    return [min(shape.experts_per_layer, base + (i < extra)) for i in range(shape.layers)]


def build_step_stream(shape: LlmStepShape, line_bytes: int, seed: int = 0) -> StepStream:
    """The step's traffic as runs of whole `line_bytes` lines, in the order a layer-by-layer kernel reads it."""
    if line_bytes < 1 or line_bytes & (line_bytes - 1):
        raise MemsimError(f"line_bytes = {line_bytes}; allowed: a power of two (the memory's request size)")
    rng = np.random.default_rng(seed)
    L, B, E = shape.layers, shape.batch_size, shape.experts_per_layer
    align = _lines(REGION_ALIGN_BYTES, line_bytes)
    dense_l, expert_l = _lines(shape.dense_bytes_per_layer, line_bytes), _lines(shape.expert_bytes, line_bytes)
    kv_cap_l, state_l = _lines(shape.kv_capacity_bytes_per_sequence, line_bytes), _lines(shape.state_bytes_per_sequence, line_bytes)  # fmt: skip
    kv_read_l, kv_write_l = _lines(shape.kv_read_bytes_per_sequence, line_bytes), _lines(shape.kv_write_bytes_per_sequence, line_bytes)  # fmt: skip
    head_l = _lines(shape.head_bytes, line_bytes)

    def region_after(base: int, lines: int) -> int:
        return -(-(base + lines) // align) * align

    dense_base = 0
    head_base = dense_base + L * dense_l
    expert_base = region_after(head_base, head_l)
    kv_base = region_after(expert_base, L * E * expert_l)
    state_base = region_after(kv_base, L * B * kv_cap_l)

    runs: list[tuple[int, int, bool, int]] = []
    for layer, n_experts in enumerate(_experts_per_layer(shape)):
        runs.append((dense_base + layer * dense_l, dense_l, False, DENSE))
        for b in range(B):
            state = state_base + (layer * B + b) * state_l
            kv = kv_base + (layer * B + b) * kv_cap_l
            if shape.state_read:
                runs.append((state, state_l, False, STATE))
            runs.append((kv, kv_read_l, False, KV))
            runs.append((kv + kv_read_l, kv_write_l, True, KV))
            runs.append((state, state_l, True, STATE))
        for e in sorted(rng.choice(E, size=n_experts, replace=False).tolist()):
            runs.append((expert_base + (layer * E + e) * expert_l, expert_l, False, EXPERTS))
    runs.append((head_base, head_l, False, DENSE))
    runs = [r for r in runs if r[1] > 0]
    if not runs:
        raise MemsimError("the step moves no bytes: every size in the LlmStepShape is 0")
    start, n, write, region = zip(*runs, strict=True)
    return StepStream(line_bytes, np.array(start, dtype=np.int64), np.array(n, dtype=np.int64),
                      np.array(write, dtype=bool), np.array(region, dtype=np.int64))  # fmt: skip
