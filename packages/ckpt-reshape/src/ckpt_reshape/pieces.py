"""Cut logical tensors into the per-rank pieces a layout stores, and refuse impossible layouts up front.

A `Piece` is a rectangular region of a logical tensor owned by one rank. Replicas are stored once, by the
lowest rank that holds them (as DCP's save planner deduplicates). See `layout.py` for the rank numbering.
A rank may own several pieces of one tensor: TP sections of a fused tensor, and flat FSDP shards, whose
element range of the rank-local tensor is a few boxes (partial leading rows, whole rows, partial trailing rows).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import CheckpointIndex, TensorMeta
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.splits import SplitSpec, SplitTable, layer_of


@dataclass(frozen=True)
class Piece:
    """Region `[offsets, offsets + sizes)` of a logical tensor, stored by `rank`."""

    rank: int
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]

    def slices(self) -> tuple[slice, ...]:
        """Index expression selecting this piece from the logical tensor."""
        return tuple(slice(o, o + s) for o, s in zip(self.offsets, self.sizes, strict=True))


def count_layers(index: CheckpointIndex) -> int:
    """Number of decoder layers, from the largest `layers.<n>` index among the entries."""
    found = [layer_of(name) for name in [*index.tensors, *index.objects]]
    return max((n for n in found if n is not None), default=-1) + 1


def stage_of(name: str, spec: SplitSpec, layout: ParallelLayout, num_layers: int) -> int:
    """Pipeline stage that holds an entry: contiguous layer ranges, extra layers to the first stages."""
    layer = layer_of(name)
    if layer is None:
        return layout.pp - 1 if spec.pp_place == "last" else 0
    base, extra = divmod(num_layers, layout.pp)
    boundary = extra * (base + 1)
    if layer < boundary:
        return layer // (base + 1)
    return extra + (layer - boundary) // base


Segments = list[tuple[int, int]]  # (global start, length) runs that make up one local dim, in order


def _cut(meta: TensorMeta, dim: int, length: int, parts: int, granule: int, what: str) -> int:
    if length % (parts * granule):
        unit = f" in units of {granule} (one head)" if granule > 1 else ""
        raise ReshapeError(
            f"tensor {meta.name!r} (shape {list(meta.shape)}): a length of {length} along dim {dim} cannot be split "
            f"{parts} ways{unit} for {what}; choose a degree that divides {length // granule}"
        )
    return length // parts


def _select(segments: Segments, start: int, length: int) -> Segments:
    """The global runs covering local positions [start, start + length) of a dim made of `segments`."""
    out, pos = [], 0
    for seg_start, seg_len in segments:
        lo, hi = max(start, pos), min(start + length, pos + seg_len)
        if lo < hi:
            out.append((seg_start + lo - pos, hi - lo))
        pos += seg_len
    return out


def _tp_segments(meta: TensorMeta, spec: SplitSpec, segments: Segments, tp: int, tp_rank: int) -> Segments:
    dim = spec.tp_dim
    sections = spec.tp_sections or (sum(n for _, n in segments),)
    if sum(sections) != meta.shape[dim] and spec.tp_sections:
        raise ReshapeError(
            f"tensor {meta.name!r}: parallel plan sections {list(sections)} sum to {sum(sections)}, but dim {dim} "
            f"is {meta.shape[dim]}; the plan was built for another model config: pass --model-config PRESET|config.json"
        )
    out, base = [], 0
    for section, length in enumerate(sections):
        part = _cut(meta, dim, length, tp, spec.section_granule(section), f"tp={tp}")
        out += _select(segments, base + tp_rank * part, part)
        base += length
    return out


Box = tuple[tuple[int, ...], tuple[int, ...]]  # (offsets, sizes)


def flat_boxes(shape: tuple[int, ...], start: int, stop: int) -> list[Box]:
    """Row-major elements `[start, stop)` of a tensor of `shape` as at most `2 * ndim - 1` boxes, in order.

    Partial leading row (recursively), the block of whole rows, partial trailing row (recursively): each box
    is one row-major run of `shape`.
    """
    if start >= stop:
        return []
    if len(shape) <= 1:
        return [((start,), (stop - start,))] if shape else [((), ())]
    inner = 1
    for size in shape[1:]:
        inner *= size

    def row(index: int, lo: int, hi: int) -> list[Box]:
        return [((index, *o), (1, *n)) for o, n in flat_boxes(shape[1:], lo, hi)]

    first_row, first_col = divmod(start, inner)
    last_row, last_col = divmod(stop, inner)
    if (stop - 1) // inner == first_row:
        return row(first_row, first_col, stop - first_row * inner)  # within one row
    boxes, whole_from = [], first_row
    if first_col:
        boxes += row(first_row, first_col, inner)
        whole_from += 1
    if last_row > whole_from:
        boxes.append(((whole_from, *(0 for _ in shape[1:])), (last_row - whole_from, *shape[1:])))
    if last_col:
        boxes += row(last_row, 0, last_col)
    return boxes


def _flat_shard(dims: list[Segments], group: int, group_rank: int) -> list[list[Segments]]:
    """Flat FSDP: this group rank's element range of the rank-local tensor `dims`, as boxes of global runs."""
    local = tuple(sum(n for _, n in d) for d in dims)
    numel = 1
    for size in local:
        numel *= size
    if numel == 0:
        return [dims]  # nothing to shard: the (empty) local tensor, deduplicated like a replica
    chunk = -(-numel // group)
    start = min(group_rank * chunk, numel)
    return [
        [_select(d, o, n) for d, o, n in zip(dims, offsets, sizes, strict=True)]
        for offsets, sizes in flat_boxes(local, start, min(start + chunk, numel))
    ]


def plan_pieces(meta: TensorMeta, spec: SplitSpec, layout: ParallelLayout, num_layers: int) -> list[Piece]:
    """All distinct pieces of one tensor under `layout`, each with the lowest rank that owns it."""
    stage = stage_of(meta.name, spec, layout, num_layers)
    seen: dict[tuple, Piece] = {}
    ndim = len(meta.shape)
    for dp_rank in range(layout.dp):
        for tp_rank in range(layout.tp):
            coords = layout.coords(layout.rank_of(stage, dp_rank, tp_rank))
            dims: list[Segments] = [[(0, size)] for size in meta.shape]
            group, group_rank = layout.dp, dp_rank
            if spec.expert:
                group, group_rank = layout.edp, coords.edp_rank
                if layout.ep > 1:
                    part = _cut(meta, 0, meta.shape[0], layout.ep, 1, f"ep={layout.ep} (whole experts per EP rank)")
                    dims[0] = [(coords.ep_rank * part, part)]
            if spec.tp_dim is not None and layout.tp > 1:
                dims[spec.tp_dim] = _tp_segments(meta, spec, dims[spec.tp_dim], layout.tp, tp_rank)
            boxes = [dims]
            if layout.fsdp and group > 1 and ndim > 0:
                if layout.fsdp_flat:
                    boxes = _flat_shard(dims, group, group_rank)  # empty for trailing ranks past numel
                else:
                    local = sum(n for _, n in dims[0])
                    chunk = -(-local // group)
                    start = min(group_rank * chunk, local)
                    dims[0] = _select(dims[0], start, min(chunk, local - start))
                    if not dims[0] and meta.shape[0] > 0:
                        continue  # torch.chunk leaves trailing FSDP ranks empty; they store nothing
            for box in boxes:
                for region in product(*box):
                    key = (tuple(o for o, _ in region), tuple(n for _, n in region))
                    if key not in seen:
                        seen[key] = Piece(coords.rank, *key)
    return list(seen.values())


class LayoutPlan(dict[str, list[Piece]]):
    """Pieces of every tensor under a layout, plus `grid`: the pieces a chunked format aligns its chunks with.

    `grid` is the same layout's pieces without flat FSDP cuts (dim-0 shards instead), which are arbitrary
    element boundaries that would shrink a gcd-aligned chunk grid to a few elements; for every other
    layout it is the plan itself.
    """

    grid: dict[str, list[Piece]]


def plan_layout(index: CheckpointIndex, table: SplitTable, layout: ParallelLayout) -> LayoutPlan:
    """Pieces of every tensor under `layout`; raises `ReshapeError` (before anything is written) if impossible."""
    num_layers = count_layers(index)
    if layout.pp > 1 and num_layers < layout.pp:
        raise ReshapeError(
            f"layout pp={layout.pp} needs at least {layout.pp} decoder layers; this checkpoint has {num_layers}"
        )

    def plan(target: ParallelLayout) -> dict[str, list[Piece]]:
        return {
            name: plan_pieces(meta, table.spec_for(name, meta.shape), target, num_layers)
            for name, meta in index.tensors.items()
        }

    out = LayoutPlan(plan(layout))
    out.grid = plan(replace(layout, fsdp_flat=False)) if layout.fsdp_flat else out
    return out
