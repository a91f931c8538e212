"""Per-tensor split specs: which dim tensor parallelism cuts, whether dim 0 is the global expert id, where a
tensor lives under pipeline parallelism.

A `SplitTable` maps state-dict key patterns (shell globs, matched against the parameter's fully qualified
name or any dotted suffix of it) to a `SplitSpec`. Optimizer state inherits the spec of its parameter
(`optim.state.<param fqn>.<state>`), so Adam moments and Muon momentum move with their weights; scalar
state (step counters) is replicated on the parameter's pipeline stage.

The table comes from `zaya_model.parallel_plan(cfg)` when zaya-model provides it (see `zaya_names`), else
from the built-in ZAYA1 table below, else (any other model) nothing is split by TP and only FSDP applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from ckpt_reshape.errors import ReshapeError

_LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_OPTIM_STATE = "optim.state."


@dataclass(frozen=True)
class SplitSpec:
    """How one logical tensor is split; `tp_granule` is the unit TP may not cut (e.g. a head's rows)."""

    tp_dim: int | None = None
    tp_kind: str | None = None  # "column" (output dim) or "row" (input dim); informational
    tp_granule: int = 1
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
            if self.tp_granule > 1:
                details.append(f"units of {self.tp_granule}")
            if self.tp_sections:
                details.append("sections " + "|".join(map(str, self.tp_sections)))
            parts.append(f"TP dim {self.tp_dim}" + (f" ({', '.join(details)})" if details else ""))
        if self.expert:
            parts.append("EP (global expert ids)")
        if self.pp_place == "last":
            parts.append("last PP stage")
        return "; ".join(parts) or "replicated"


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


def zaya_builtin_table(head_dim: int = 1) -> SplitTable:
    """ZAYA1 split rules written from the HF `zaya` module layout (used when zaya-model has no plan)."""
    if head_dim < 1:
        raise ReshapeError(f"head_dim={head_dim} must be >= 1")
    col = SplitSpec(tp_dim=0, tp_kind="column", tp_granule=head_dim)
    half_col = SplitSpec(tp_dim=0, tp_kind="column", tp_granule=max(head_dim // 2, 1))
    rules = [
        ("embed_tokens.weight", SplitSpec(tp_dim=0, tp_kind="column")),  # vocab parallel
        ("lm_head.weight", SplitSpec(tp_dim=0, tp_kind="column", pp_place="last")),
        ("norm.weight", SplitSpec(pp_place="last")),
        ("*.qkv_proj.q_proj.weight", col),
        ("*.qkv_proj.k_proj.weight", col),
        ("*.qkv_proj.v_proj_current.weight", half_col),
        ("*.qkv_proj.v_proj_delayed.weight", half_col),
        ("*.self_attn.qk_norm.temp", SplitSpec(tp_dim=0, tp_kind="column")),
        ("*.self_attn.o_proj.weight", SplitSpec(tp_dim=1, tp_kind="row", tp_granule=head_dim)),
        ("*.mlp.experts.gate_up_proj", SplitSpec(expert=True)),
        ("*.mlp.experts.down_proj", SplitSpec(expert=True)),
    ]
    return SplitTable(rules, source="ckpt_reshape builtin ZAYA1 table")


def table_from_plan(plan: dict, source: str, granule: int = 1) -> SplitTable:
    """Build a table from a plan mapping key patterns to "column" / "row" / "expert" / dicts.

    Accepted values per pattern: "column", "row", "expert", "replicate", or a dict with any of
    `tp_dim`, `tp_kind`, `tp_granule`, `expert`, `pp_place` (also `style`/`dim` synonyms).
    """
    rules: list[tuple[str, SplitSpec]] = []
    for pattern, value in plan.items():
        rules.append((pattern, _spec_from_plan_value(pattern, value, granule)))
    return SplitTable(rules, source=source)


def _spec_from_plan_value(pattern: str, value: object, granule: int = 1) -> SplitSpec:
    if isinstance(value, SplitSpec):
        return value
    if hasattr(value, "tp_style"):  # zaya_model.ShardSpec (duck-typed: zaya-model is optional)
        style = value.tp_style
        if style == "replicate" or value.tp_dim is None:
            return SplitSpec(expert=value.ep_dim == 0)
        sections = tuple(value.sections) if value.sections else None
        per_head = style in {"column", "row"} and "experts" not in pattern and "key_temperature" not in pattern
        heads = granule if per_head else 1
        return SplitSpec(
            tp_dim=value.tp_dim,
            tp_kind=style,
            tp_granule=heads,
            tp_sections=sections,
            expert=value.ep_dim == 0,
            pp_place="last" if pattern.startswith(("final_norm", "lm_head")) else "first",
        )
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
