"""The matrix tile the sizing rules align widths to, derived from a measured GEMM sweep (and the rows that show it).

Tile quantization makes a GEMM whose N is not a multiple of the tile pay for the whole last tile column, so the
achieved rate dips at misaligned widths below the rate of the aligned widths either side (a sawtooth in an N
sweep). For each candidate granule g, every measured width N with N % g != 0 whose aligned neighbours
floor(N/g)g and ceil(N/g)g were measured at the same M and K is compared with the rate interpolated between
them: drop = 1 - rate(N) / interpolated. Smooth trends (rates rising with N on small shapes) interpolate
away; only the steps remain. The same test on aligned widths (N % g == 0 against N - g and N + g) is the
control: timing noise gives both groups the same spread, a tile step only the misaligned one. A granule's
score is the median misaligned drop minus the size of the median control drop; the derived tile is the granule with the
highest score, if the score and the median drop are both at least `min_drop`, over at least `min_widths`
widths in at least two distinct aligned intervals (a step that repeats, not one slow or fast anchor row), most of
which (two thirds) dropped. Otherwise the sweep shows no tile step and the rules keep the
hardware profile's datasheet tile, saying so.
"""

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from collbench.gemm_shapes import GemmResult

GRANULES = (8, 16, 32, 64, 128, 256)


@dataclass
class TileEvidence:
    """What a GEMM sweep says about tile alignment, with the rows (1-based data rows of `source`) behind it."""

    source: str
    granule: int | None  # the derived tile; None: no step of at least min_drop measured
    drop: float  # median measured drop of misaligned widths at `granule` (0 when none)
    widths: int  # misaligned widths behind that median
    rows: list[int] = field(default_factory=list)
    drops_by_granule: dict[int, float] = field(default_factory=dict)
    min_drop: float = 0.02
    shape: str = ""  # the M and K of the widths used
    control_by_granule: dict[int, float] = field(default_factory=dict)  # median drop of aligned widths

    def describe(self) -> str:
        """One sentence naming the measurement (for the rules' `evidence`)."""
        tried = ", ".join(
            f"{g}: {d:.1%} (aligned {self.control_by_granule.get(g, 0.0):.1%})"
            for g, d in sorted(self.drops_by_granule.items())
        )
        tried = tried or "no width comparable with two aligned intervals"
        if self.granule is None:
            return (
                f"{self.source}: no tile step of {self.min_drop:.0%} or more above the aligned widths' own scatter "
                f"(median drop of misaligned widths against their aligned neighbours, per granule: {tried})"
            )
        return (
            f"{self.source} rows {_ranges(self.rows)} ({self.shape}): widths not a multiple of {self.granule} run "
            f"{self.drop:.1%} below their aligned neighbours (median of {self.widths} widths; per granule: {tried})"
        )

    def as_dict(self) -> dict[str, object]:
        """Plain dict for JSON."""
        return {
            "source": self.source,
            "granule": self.granule,
            "drop": self.drop,
            "widths": self.widths,
            "rows": self.rows,
            "drops_by_granule": {str(g): d for g, d in self.drops_by_granule.items()},
            "control_by_granule": {str(g): d for g, d in self.control_by_granule.items()},
            "min_drop": self.min_drop,
            "text": self.describe(),
        }


def _ranges(rows: list[int]) -> str:
    """[3, 4, 5, 9] -> '3-5, 9'."""
    out, start = [], None
    for i, r in enumerate(rows):
        if start is None:
            start = r
        if i + 1 == len(rows) or rows[i + 1] != r + 1:
            out.append(f"{start}-{r}" if r != start else str(r))
            start = None
    return ", ".join(out)


def width_drops(
    table: list[GemmResult], granule: int, aligned: bool = False
) -> list[tuple[float, list[int], tuple[int, int]]]:
    """(drop, the 1-based rows [lower aligned, N, upper aligned], (M, K)) for every misaligned width comparable at `granule`
    (with `aligned`: the control, every aligned width against its aligned neighbours one granule away)."""
    by_mk: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for i, r in enumerate(table):
        by_mk[(r.m, r.k)].setdefault(r.n, i)
    out = []
    for mk, widths in by_mk.items():
        for n, i in widths.items():
            if (n % granule == 0) != aligned:
                continue
            lo = n - granule if aligned else n // granule * granule
            hi = n + granule if aligned else lo + granule
            if lo <= 0 or lo not in widths or hi not in widths:
                continue
            rate_lo, rate_hi = table[widths[lo]].tflops, table[widths[hi]].tflops
            expected = rate_lo + (rate_hi - rate_lo) * (n - lo) / (hi - lo)
            if expected > 0:
                out.append((1.0 - table[i].tflops / expected, [widths[lo] + 1, i + 1, widths[hi] + 1], mk))
    return out


def derive_tile(
    table: list[GemmResult], source: str, min_drop: float = 0.02, min_widths: int = 2, granules=GRANULES
) -> TileEvidence:
    """The tile a measured GEMM table supports (see the module docstring), with its evidence."""
    drops_by_granule, controls, scores, found = {}, {}, {}, {}
    for g in granules:
        drops = width_drops(table, g)
        intervals = {(tuple(idx[::2]), mk) for _, idx, mk in drops}  # the aligned rows either side
        if len(drops) < min_widths or len(intervals) < 2:
            continue
        control = [d for d, _, _ in width_drops(table, g, aligned=True)]
        drops_by_granule[g] = statistics.median(d for d, _, _ in drops)
        controls[g] = statistics.median(control) if control else 0.0
        scores[g] = drops_by_granule[g] - abs(controls[g])  # aligned widths off either way: that much is noise
        found[g] = drops
    best = max(scores, key=lambda g: (scores[g], -g), default=None)
    if (
        best is None
        or scores[best] < min_drop
        or drops_by_granule[best] < min_drop
        or sum(d > 0 for d, _, _ in found[best]) < 2 * len(found[best]) / 3
    ):
        return TileEvidence(source, None, 0.0, 0, [], drops_by_granule, min_drop, "", controls)
    rows = sorted({r for _, idx, _ in found[best] for r in idx})
    shapes = sorted({mk for _, _, mk in found[best]})
    shape = "; ".join(f"M={m} K={k}" for m, k in shapes[:3]) + (" ..." if len(shapes) > 3 else "")
    return TileEvidence(
        source, best, drops_by_granule[best], len(found[best]), rows, drops_by_granule, min_drop, shape, controls
    )
