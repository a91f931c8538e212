"""`ParallelLayout`: how a training run spread one logical model over its ranks.

Ranks are numbered pipeline-major, then data parallel, then tensor parallel:
`rank = (pp_stage * dp + dp_rank) * tp + tp_rank`, so `world_size = pp * dp * tp`. Expert parallelism is
carved out of the data-parallel group (as in Megatron and DeepSpeed-MoE): `ep_rank = dp_rank % ep`, and the
`dp / ep` ranks that hold the same experts form the experts' FSDP group. With `fsdp` on, every tensor a rank
holds (after its TP and EP cuts) is further cut into its FSDP group's shards, in one of two styles:
- dim 0 (`fsdp=1`): along dim 0 with `torch.chunk` sizes (FSDP2 / DTensor `Shard(0)`, what DCP stores);
- flat (`fsdp=flat`, `fsdp_flat`): the rank-local tensor flattened in row-major order, group rank r holding
  elements `[r*c, min((r+1)*c, numel))` with `c = ceil(numel / group)` (FSDP1 `use_orig_params` views,
  DeepSpeed ZeRO-3 per-parameter partitions); trailing ranks may hold fewer elements or none.
With `fsdp` off data-parallel ranks hold replicas.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ckpt_reshape.errors import ReshapeError

_KEYS = ("dp", "tp", "pp", "ep")
_FSDP_VALUES = "0, 1 or flat"


@dataclass(frozen=True)
class RankCoords:
    """One rank's position in each parallel dimension."""

    rank: int
    pp_stage: int
    dp_rank: int
    tp_rank: int
    ep_rank: int
    edp_rank: int


@dataclass(frozen=True)
class ParallelLayout:
    """Data, tensor, pipeline and expert parallel degrees plus FSDP sharding (see module docstring).

    `fsdp_flat` picks the flat FSDP style instead of dim-0 shards; it needs `fsdp`.
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    fsdp: bool = False
    fsdp_flat: bool = False

    def __post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ReshapeError(f"layout {key}={value!r} is invalid; use a positive integer")
        if self.fsdp_flat and not self.fsdp:
            raise ReshapeError(
                "layout fsdp_flat=True needs fsdp=True: flat FSDP shards are a style of FSDP sharding; "
                "use ParallelLayout(..., fsdp=True, fsdp_flat=True) or the CLI form fsdp=flat"
            )
        if self.dp % self.ep:
            raise ReshapeError(
                f"layout ep={self.ep} does not divide dp={self.dp}; expert parallel ranks come from the "
                "data-parallel group, so pick ep among the divisors of dp"
            )

    @property
    def world_size(self) -> int:
        """Number of ranks that wrote (or will load) the checkpoint."""
        return self.pp * self.dp * self.tp

    @property
    def edp(self) -> int:
        """Size of the experts' data-parallel (FSDP) group."""
        return self.dp // self.ep

    def coords(self, rank: int) -> RankCoords:
        """Position of `rank` in every parallel dimension."""
        tp_rank = rank % self.tp
        dp_rank = (rank // self.tp) % self.dp
        pp_stage = rank // (self.tp * self.dp)
        return RankCoords(rank, pp_stage, dp_rank, tp_rank, dp_rank % self.ep, dp_rank // self.ep)

    def rank_of(self, pp_stage: int, dp_rank: int, tp_rank: int) -> int:
        """Inverse of `coords`."""
        return (pp_stage * self.dp + dp_rank) * self.tp + tp_rank

    def to_dict(self) -> dict:
        """JSON-able form, stored next to every checkpoint this package writes.

        `fsdp_flat` appears only when set, so dim-0 layouts keep the form older versions read, and older
        versions refuse a flat layout (unknown key) rather than misread it as dim-0 shards.
        """
        data = asdict(self)
        if not self.fsdp_flat:
            del data["fsdp_flat"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ParallelLayout:
        """Inverse of `to_dict` (a missing `fsdp_flat` is off); unknown keys are an error so typos do not pass."""
        unknown = set(data) - {*_KEYS, "fsdp", "fsdp_flat"}
        if unknown:
            raise ReshapeError(f"unknown layout keys {sorted(unknown)}; allowed: {', '.join(_KEYS)}, fsdp, fsdp_flat")
        return cls(**{k: (bool(v) if k in ("fsdp", "fsdp_flat") else int(v)) for k, v in data.items()})

    @classmethod
    def parse(cls, text: str) -> ParallelLayout:
        """Parse the CLI form `dp=4,tp=2,pp=1,ep=2,fsdp=1` (missing keys default to 1 / off; `fsdp=flat`)."""
        values: dict[str, object] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or key not in {*_KEYS, "fsdp"}:
                raise ReshapeError(
                    f"bad layout item {part!r} in {text!r}; expected comma-separated dp=N,tp=N,pp=N,ep=N,fsdp=0|1|flat"
                )
            if key == "fsdp":
                if value.lower() == "flat":
                    values.update(fsdp=True, fsdp_flat=True)
                    continue
                if value not in ("0", "1"):
                    raise ReshapeError(
                        f"layout fsdp={value!r} in {text!r} is not {_FSDP_VALUES}: 0 off, 1 dim-0 shards "
                        "(FSDP2), flat flattened shards (FSDP1 use_orig_params, ZeRO-3)"
                    )
                values.update(fsdp=value == "1", fsdp_flat=False)
                continue
            try:
                values[key] = int(value)
            except ValueError:
                raise ReshapeError(f"layout {key}={value!r} in {text!r} is not an integer") from None
        return cls.from_dict(values)

    def __str__(self) -> str:
        fsdp = "flat" if self.fsdp_flat else int(self.fsdp)
        return f"dp={self.dp},tp={self.tp},pp={self.pp},ep={self.ep},fsdp={fsdp}"
