"""`memstudy`: the structured config of an LLM memory-traffic study (phases, batch, context, sampling)."""

from dataclasses import dataclass, field

from zaya_config.checks import one_of, positive
from zaya_config.errors import invalid
from zaya_config.validated import ValidatedConfig

from memsim.workloads.llm_step import PHASES


@dataclass
class MemstudyConfig(ValidatedConfig):
    """Which steps to simulate and how large a sample of each; defaults finish in seconds per standard."""

    phases: list[str] = field(default_factory=lambda: ["decode", "prefill"])
    batch_size: int = 1
    context_len: int = 4096  # decode: positions already in the KV cache
    prompt_len: int = 4096  # prefill: prompt tokens per sequence
    dtype_bytes: int = 2  # weights, KV and state (bf16)
    sample_bytes: int = 1 << 20  # bytes simulated per step; the rest is scaled (see memsim.workloads.sampling)
    window_bytes: int = 1 << 14  # contiguous bytes per sample window
    include_writes: bool = True  # new K/V and rewritten conv state, on top of the accounting's reads
    seed: int = 0
    plots: bool = True

    def validate_fields(self) -> None:
        """Known phases, positive sizes, a window that fits in the sample."""
        if not self.phases:
            raise invalid("phases", self.phases, "a non-empty list of " + ", ".join(PHASES))
        for phase in self.phases:
            one_of("phases", phase, PHASES)
        for name in ("batch_size", "prompt_len", "dtype_bytes", "sample_bytes", "window_bytes"):
            positive(name, getattr(self, name))
        if self.context_len < 0:
            raise invalid("context_len", self.context_len, "an integer >= 0")
        if self.window_bytes > self.sample_bytes:
            raise invalid("window_bytes", self.window_bytes, f"at most sample_bytes ({self.sample_bytes})")
