"""A statistically faithful sample of a long request stream: stratified windows of contiguous lines.

A zaya1-base decode step reads hundreds of MB; simulating every line would take hours. The stream is cut
into `n` equal strides and from each stride one window of `window_lines` consecutive lines is kept, at a
seeded random offset of its own (stratified sampling: no common offset that could alias with the address
interleave). A window holds the stream's row-buffer and channel locality, and the strides spread the
windows over every region in proportion to its bytes, so bandwidth and energy per byte of the sample
estimate those of the whole stream; `scale` = stream lines / sampled lines takes them back to the step.
"""

from dataclasses import dataclass

import numpy as np

from memsim.errors import MemsimError
from memsim.workloads.llm_step import REGIONS, StepStream


@dataclass(frozen=True)
class SampledRequests:
    """Requests of the sample in stream order (byte addresses of whole lines), and how they scale."""

    addrs: np.ndarray
    is_write: np.ndarray
    region: np.ndarray
    windows: int
    window_lines: int
    scale: float  # stream lines / sampled lines

    def __len__(self) -> int:
        return len(self.addrs)

    def region_share(self) -> dict[str, float]:
        """Fraction of the sampled lines per region (compare with the stream's own shares)."""
        counts = np.bincount(self.region, minlength=len(REGIONS)) / max(1, len(self.region))
        return {name: float(counts[i]) for i, name in enumerate(REGIONS)}


def _expand(stream: StepStream, first: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lines [first, first + count) of the stream's line sequence, as (line index, write, region)."""
    ends = np.cumsum(stream.n_lines)
    starts = ends - stream.n_lines
    pos = np.arange(first, first + count, dtype=np.int64)
    run = np.searchsorted(ends, pos, side="right")
    return stream.start_line[run] + (pos - starts[run]), stream.is_write[run], stream.region[run]


def sample_stream(stream: StepStream, sample_bytes: int, window_bytes: int, seed: int = 0) -> SampledRequests:
    """About `sample_bytes` of the stream in windows of `window_bytes`; the whole stream when it is smaller."""
    line = stream.line_bytes
    if window_bytes < line or sample_bytes < window_bytes:
        raise MemsimError(f"sampling: window_bytes = {window_bytes} and sample_bytes = {sample_bytes}; allowed: "
                          f"line size ({line} B) <= window_bytes <= sample_bytes")  # fmt: skip
    total = stream.total_lines
    window = window_bytes // line
    windows = max(1, sample_bytes // window_bytes)
    if windows * window >= total:
        lines, write, region = _expand(stream, 0, total)
        return SampledRequests(lines * line, write, region, 1, total, 1.0)
    stride = total // windows
    offsets = np.random.default_rng(seed).integers(0, stride - window + 1, size=windows)
    parts = [_expand(stream, int(offsets[k]) + k * stride, window) for k in range(windows)]
    lines, write, region = (np.concatenate(p) for p in zip(*parts, strict=True))
    return SampledRequests(lines * line, write, region, windows, window, total / len(lines))
