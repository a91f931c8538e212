"""Phased recipes, as in ZAYA1: a run is a list of phases, each with its own token budget, context length,
RoPE theta, data mixture and learning-rate schedule segment. The trainer moves to the next phase at the
first step that starts at or after the phase's token boundary (so a boundary is crossed by less than one
global batch of tokens).
"""

from dataclasses import dataclass, field

from zaya_config.checks import in_range, one_of, positive
from zaya_config.errors import invalid
from zaya_config.validated import ValidatedConfig


@dataclass
class ScheduleConfig(ValidatedConfig):
    """The learning-rate segment of one phase, as a function of the phase's token progress in [0, 1].

    `warmup_cosine`: linear warmup to `peak_lr`, then cosine to `end_lr`. `wsd` (warmup-stable-decay):
    warmup, hold `peak_lr`, then decay to `end_lr` over the last `decay_fraction` (linear or cosine).
    `constant`: warmup, then hold (a phase between two others of a WSD run).
    """

    kind: str = "warmup_cosine"  # warmup_cosine | wsd | constant
    peak_lr: float = 3e-3
    start_lr: float = 0.0
    end_lr: float = 3e-4
    warmup_fraction: float = 0.05
    decay_fraction: float = 0.2  # wsd only
    decay_shape: str = "linear"  # wsd only: linear | cosine

    def validate_fields(self) -> None:
        """Known kind, non-negative rates, fractions that leave room for each other."""
        one_of("kind", self.kind, ("warmup_cosine", "wsd", "constant"))
        one_of("decay_shape", self.decay_shape, ("linear", "cosine"))
        positive("peak_lr", self.peak_lr)
        for name in ("start_lr", "end_lr"):
            in_range(name, getattr(self, name), 0.0, 1e3)
        in_range("warmup_fraction", self.warmup_fraction, 0.0, 1.0)
        in_range("decay_fraction", self.decay_fraction, 0.0, 1.0)
        if self.kind == "wsd" and self.warmup_fraction + self.decay_fraction > 1.0:
            raise invalid(
                "decay_fraction", self.decay_fraction, f"at most 1 - warmup_fraction = {1.0 - self.warmup_fraction:g}"
            )


@dataclass
class BatchRampConfig(ValidatedConfig):
    """Raise the global batch from `start_global_batch_size` to the phase's over its first `tokens` tokens.

    Large-batch pretraining starts small and grows the batch (ZAYA1 raised its batch size during training):
    the batch at a step is a pure function of the tokens the phase has consumed, linear in them and rounded
    down to whole micro-batches on every rank, so a resume anywhere inside the ramp continues exactly.
    `tokens: 0` (the default) means no ramp."""

    start_global_batch_size: int = 1
    tokens: int = 0

    def validate_fields(self) -> None:
        """A positive start batch and a non-negative ramp length."""
        positive("start_global_batch_size", self.start_global_batch_size)
        if self.tokens < 0:
            raise invalid("tokens", self.tokens, "an integer >= 0 (0: no ramp)")


def ramped_batch_size(ramp: BatchRampConfig | None, target: int, granule: int, tokens_into_phase: int) -> int:
    """The global batch after `tokens_into_phase` tokens of a phase whose batch is `target`, in whole granules."""
    if ramp is None or ramp.tokens <= 0 or tokens_into_phase >= ramp.tokens:
        return target
    start = ramp.start_global_batch_size
    grown = start + (target - start) * tokens_into_phase / ramp.tokens
    return max(start, min(target, int(grown) // granule * granule))


@dataclass
class PhaseConfig(ValidatedConfig):
    """One phase: how many tokens, at which context length and RoPE theta, from which data mixture."""

    name: str = "pretrain"
    tokens: int = 1_000_000
    seq_len: int = 128
    rope_theta: float = 10_000.0
    mixture: dict[str, float] = field(default_factory=dict)  # source name -> weight (no default: dicts merge)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    global_batch_size: int | None = None  # sequences per step; default train.global_batch_size
    batch_ramp: BatchRampConfig | None = None  # grow the batch over the phase's first tokens (None: fixed)
    # ranks per sequence in this phase (None: train.distributed.context_parallel), e.g. on for the 32k phase
    context_parallel: int | None = None

    def validate_fields(self) -> None:
        """Positive sizes, a non-empty mixture of non-negative weights that sum to something."""
        positive("tokens", self.tokens)
        positive("seq_len", self.seq_len)
        positive("rope_theta", self.rope_theta)
        positive("global_batch_size", self.global_batch_size, optional=True)
        positive("context_parallel", self.context_parallel, optional=True)
        if not self.mixture or any(w < 0 for w in self.mixture.values()) or sum(self.mixture.values()) <= 0:
            raise invalid("mixture", dict(self.mixture), "source name -> weight >= 0, with a positive sum")
        if self.batch_ramp is not None and self.batch_ramp.tokens > self.tokens:
            raise invalid("batch_ramp.tokens", self.batch_ramp.tokens, f"at most the phase's tokens ({self.tokens})")


@dataclass
class RecipeConfig(ValidatedConfig):
    """A named list of phases; `total_tokens`, when given, must equal the sum of the phase budgets."""

    name: str = "custom"
    total_tokens: int | None = None
    phases: list[PhaseConfig] = field(default_factory=list)

    def validate_fields(self) -> None:
        """At least one phase, unique names, budgets that add up."""
        if not self.phases:
            raise invalid("phases", [], "a list of at least one phase")
        names = [p.name for p in self.phases]
        if len(set(names)) != len(names):
            raise invalid("phases", names, "phases with unique names")
        total = sum(p.tokens for p in self.phases)
        if self.total_tokens is not None and total != self.total_tokens:
            raise invalid(
                "total_tokens",
                self.total_tokens,
                f"the sum of the phase budgets ({' + '.join(str(p.tokens) for p in self.phases)} = {total})"
                " — fix a phase's tokens or total_tokens",
            )

    def boundaries(self) -> list[int]:
        """Cumulative token count at which each phase ends."""
        ends, acc = [], 0
        for phase in self.phases:
            acc += phase.tokens
            ends.append(acc)
        return ends

    def phase_at(self, tokens_seen: int) -> int:
        """Index of the phase a step starting at `tokens_seen` belongs to (len(phases) when done)."""
        for i, end in enumerate(self.boundaries()):
            if tokens_seen < end:
                return i
        return len(self.phases)

    def phase_start(self, index: int) -> int:
        """Token count at which phase `index` starts."""
        return ([0, *self.boundaries()])[index]
