"""Per-tensor split specs: which dim tensor parallelism cuts, whether dim 0 is the global expert id, where a
tensor lives under pipeline parallelism.

A `SplitTable` maps state-dict key patterns (shell globs, matched against the parameter's fully qualified
name or any dotted suffix of it) to a `SplitSpec`. Optimizer state inherits the spec of its parameter
(`optim.state.<param fqn>.<state>`), so Adam moments and Muon momentum move with their weights; scalar
state (step counters) is replicated on the parameter's pipeline stage.

For ZAYA checkpoints the table is zaya-model's shard plan (`zaya_model.parallel_plan`, or `hf_parallel_plan`
for HF names; see `zaya_names`), taken spec for spec: ckpt-reshape knows no ZAYA tensor names. Any other
model gets a generic table (EP for `experts.*`, no TP) or a plan of its own (`table_from_plan`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from ckpt_reshape.errors import ReshapeError

if TYPE_CHECKING:
    from zaya_model.parallel import ShardSpec

_LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_OPTIM_STATE = "optim.state."


@dataclass(frozen=True)
class SplitSpec:
    """How one logical tensor is split: a `zaya_model.ShardSpec` resolved for one checkpoint entry.

    `tp_granule` is the unit TP may not cut (e.g. a head's rows), one per section where they differ.
    """

    tp_dim: int | None = None
    tp_kind: str | None = None  # "column" (output dim), "row" (input dim), "vocab"; informational
    tp_granule: int | tuple[int, ...] = 1
    tp_sections: tuple[int, ...] | None = None  # fused tensors: each section is cut tp ways separately
    expert: bool = False  # dim 0 is the global expert id; EP ranks own contiguous expert ranges
    pp_place: str = "first"  # non-layer tensors: "first" or "last" pipeline stage

    def to_dict(self) -> dict:
        """JSON-able form for the sidecar file."""
        return {k: v for k, v in self.__dict__.items() if v != SplitSpec.__dataclass_fields__[k].default}

    def describe(self) -> str:
        """A short human form for `zaya ckpt inspect`, e.g. `TP dim 1 (row, units of 128)`, `EP (global expert ids)`."""
        parts = []
        if self.tp_dim is not None:
            details = [self.tp_kind] if self.tp_kind else []
            if isinstance(self.tp_granule, tuple):
                details.append("units of " + "|".join(map(str, self.tp_granule)))
            elif self.tp_granule > 1:
                details.append(f"units of {self.tp_granule}")
            if self.tp_sections:
                details.append("sections " + "|".join(map(str, self.tp_sections)))
            parts.append(f"TP dim {self.tp_dim}" + (f" ({', '.join(details)})" if details else ""))
        if self.expert:
            parts.append("EP (global expert ids)")
        if self.pp_place == "last":
            parts.append("last PP stage")
        return "; ".join(parts) or "replicated"

    def section_granule(self, section: int) -> int:
        """The granule of one TP section."""
        return self.tp_granule[section] if isinstance(self.tp_granule, tuple) else self.tp_granule


REPLICATED = SplitSpec()


@dataclass
class SplitTable:
    """Ordered (pattern, spec) rules; the first match wins."""

    rules: list[tuple[str, SplitSpec]] = field(default_factory=list)
    source: str = "generic"

    def spec_for_param(self, fqn: str) -> SplitSpec:
        """Spec of a model parameter by its fully qualified name."""
        for pattern, spec in self.rules:
            if fnmatchcase(fqn, pattern) or fnmatchcase(fqn, "*." + pattern):
                return spec
        return REPLICATED

    def spec_for(self, name: str, shape: tuple[int, ...]) -> SplitSpec:
        """Spec of a logical checkpoint entry (`model.<fqn>`, `optim.state.<fqn>.<state>`, anything else)."""
        fqn = param_fqn(name)
        if fqn is None:
            return REPLICATED
        spec = self.spec_for_param(fqn)
        needed = max(spec.tp_dim if spec.tp_dim is not None else -1, 0 if spec.expert else -1)
        if len(shape) <= needed:
            return SplitSpec(pp_place=spec.pp_place)  # e.g. a scalar step counter of a split weight
        return spec


def param_fqn(name: str) -> str | None:
    """The parameter a logical entry belongs to, or None for entries that belong to no parameter."""
    if name.startswith("model."):
        return name[len("model.") :]
    if name.startswith(_OPTIM_STATE):
        rest = name[len(_OPTIM_STATE) :]
        fqn, _, _ = rest.rpartition(".")
        return fqn or None
    return None


def layer_of(name: str) -> int | None:
    """Decoder layer index a logical entry belongs to (`...layers.<n>....`), None outside the layer stack."""
    match = _LAYER_RE.search(name)
    return int(match.group(1)) if match else None


def table_from_plan(plan: dict, source: str) -> SplitTable:
    """Build a table from a plan mapping key patterns to a `zaya_model.ShardSpec`, a `SplitSpec`, or for
    other models "column" / "row" / "expert" / "replicate" or a dict with any of `tp_dim`, `tp_kind`,
    `tp_granule`, `expert`, `pp_place` (also `style`/`dim` synonyms)."""
    return SplitTable([(pattern, _spec_from_plan_value(pattern, value)) for pattern, value in plan.items()], source)


def from_shard_spec(pattern: str, spec: ShardSpec) -> SplitSpec:
    """zaya-model's `ShardSpec`, field for field."""
    if spec.ep_dim not in (None, 0):
        raise ReshapeError(f"parallel plan entry {pattern!r}: experts on dim {spec.ep_dim}; only dim 0 is supported")
    if spec.tp_style == "replicate" or spec.tp_dim is None:
        return SplitSpec(expert=spec.ep_dim == 0, pp_place=spec.pipeline_stage)
    return SplitSpec(
        tp_dim=spec.tp_dim,
        tp_kind=spec.tp_style,
        tp_granule=spec.granule,
        tp_sections=tuple(spec.sections) if spec.sections else None,
        expert=spec.ep_dim == 0,
        pp_place=spec.pipeline_stage,
    )


def _spec_from_plan_value(pattern: str, value: object) -> SplitSpec:
    from ckpt_reshape.zaya_extra import zaya_model  # here: only ZAYA plans need the model package

    ShardSpec = zaya_model("zaya_model.parallel").ShardSpec

    if isinstance(value, SplitSpec):
        return value
    if isinstance(value, ShardSpec):
        return from_shard_spec(pattern, value)
    if isinstance(value, str):
        style = value.lower()
        if style in {"column", "colwise"}:
            return SplitSpec(tp_dim=0, tp_kind="column")
        if style in {"row", "rowwise"}:
            return SplitSpec(tp_dim=1, tp_kind="row")
        if style in {"expert", "ep"}:
            return SplitSpec(expert=True)
        if style in {"replicate", "replicated", "none"}:
            return REPLICATED
    if isinstance(value, dict):
        data = dict(value)
        style = str(data.pop("style", data.pop("tp", "")) or "").lower()
        kind = data.get("tp_kind") or ("column" if style in {"column", "colwise"} else None)
        kind = kind or ("row" if style in {"row", "rowwise"} else None)
        tp_dim = data.get("tp_dim", data.get("dim"))
        if tp_dim is None and kind is not None:
            tp_dim = 0 if kind == "column" else 1
        expert = bool(data.get("expert", data.get("ep", style in {"expert", "ep"})))
        return SplitSpec(
            tp_dim=None if tp_dim is None else int(tp_dim),
            tp_kind=kind,
            tp_granule=int(data.get("tp_granule", data.get("granule", 1))),
            expert=expert,
            pp_place=str(data.get("pp_place", "first")),
        )
    raise ReshapeError(f"parallel plan entry {pattern!r} = {value!r} is not understood; use column|row|expert|dict")
