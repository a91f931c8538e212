"""Flat FSDP shards (`fsdp=flat`: FSDP1 `use_orig_params` views, DeepSpeed ZeRO-3 partitions): each rank holds
a contiguous element range of its row-major flattened rank-local tensor. Pieces tile every tensor once with the
ceil split per rank, DCP files hold exactly those ranges and load with torch's own DCP, conversions to and from
every format are bitwise exact, the byte-range streaming path still applies, and bad input is named."""

import io
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from ckpt_reshape.byte_ranges import contiguous_start
from ckpt_reshape.convert import convert
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.formats.dcp import DcpWriter
from ckpt_reshape.index import TensorMeta
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.pieces import flat_boxes, plan_layout, plan_pieces
from ckpt_reshape.splits import SplitSpec, SplitTable
from ckpt_reshape.verify import compare, verify
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.distributed.checkpoint.metadata import MetadataIndex

FLAT = ParallelLayout(dp=3, fsdp=True, fsdp_flat=True)
FLAT_TP = ParallelLayout(dp=4, ep=2, tp=2, fsdp=True, fsdp_flat=True)
# TP for conftest's synthetic_state: fused q|k|v sections (column), a row cut (dim 1), vocab and expert columns
TP_TABLE = SplitTable(
    [
        ("*.attn.wqkv.weight", SplitSpec(tp_dim=0, tp_kind="column", tp_sections=(16, 16, 16))),
        ("*.attn.out.weight", SplitSpec(tp_dim=1, tp_kind="row")),
        ("embed_tokens.weight", SplitSpec(tp_dim=0, tp_kind="column")),
        ("*.experts.*", SplitSpec(tp_dim=1, tp_kind="column", expert=True)),
    ],
    source="flat-test table",
)


def _rank_local(full: torch.Tensor, spec: SplitSpec, layout: ParallelLayout, rank: int) -> torch.Tensor:
    """The tensor `rank` holds before FSDP, by plain slicing (independent of pieces.py)."""
    c = layout.coords(rank)
    local = full
    if spec.expert and layout.ep > 1:
        local = local.chunk(layout.ep, dim=0)[c.ep_rank]
    if spec.tp_dim is not None and layout.tp > 1:
        sections = local.split(list(spec.tp_sections), dim=spec.tp_dim) if spec.tp_sections else [local]
        local = torch.cat([s.chunk(layout.tp, dim=spec.tp_dim)[c.tp_rank] for s in sections], dim=spec.tp_dim)
    return local


def _flat_range(local: torch.Tensor, spec: SplitSpec, layout: ParallelLayout, rank: int) -> torch.Tensor:
    """Elements `[r*c, (r+1)*c)` of the flattened rank-local tensor; empty for a TP replica (stored by tp rank 0)."""
    c = layout.coords(rank)
    if (spec.tp_dim is None and c.tp_rank > 0) or (local.dim() == 0 and rank > 0):
        return local.reshape(-1)[:0]
    group, group_rank = (layout.edp, c.edp_rank) if spec.expert else (layout.dp, c.dp_rank)
    chunk = -(-local.numel() // group)
    return local.reshape(-1)[group_rank * chunk : (group_rank + 1) * chunk]


def _held(full: torch.Tensor, pieces, rank: int) -> list[int]:
    values = [full[p.slices()].reshape(-1) for p in pieces if p.rank == rank]
    return sorted(torch.cat(values).tolist()) if values else []


CASES = [
    ((10,), SplitSpec(), ParallelLayout(dp=3, fsdp=True, fsdp_flat=True)),
    ((7,), SplitSpec(), ParallelLayout(dp=4, fsdp=True, fsdp_flat=True)),  # ceil(7/4) = 2: last rank holds 1
    ((2,), SplitSpec(), ParallelLayout(dp=3, fsdp=True, fsdp_flat=True)),  # the third rank holds nothing
    ((12, 8), SplitSpec(tp_dim=0), ParallelLayout(dp=3, tp=2, fsdp=True, fsdp_flat=True)),
    ((12, 8), SplitSpec(tp_dim=1), ParallelLayout(dp=3, tp=2, fsdp=True, fsdp_flat=True)),
    ((12, 5), SplitSpec(tp_dim=0, tp_sections=(8, 4)), ParallelLayout(dp=3, tp=2, fsdp=True, fsdp_flat=True)),
    ((9, 7), SplitSpec(), ParallelLayout(dp=4, tp=2, fsdp=True, fsdp_flat=True)),  # replicated over TP
    ((8, 6, 5), SplitSpec(expert=True), ParallelLayout(dp=3, fsdp=True, fsdp_flat=True)),
    ((8, 6, 5), SplitSpec(expert=True, tp_dim=1), ParallelLayout(dp=4, ep=2, tp=2, fsdp=True, fsdp_flat=True)),
    ((8, 6, 5), SplitSpec(expert=True, tp_dim=2), ParallelLayout(dp=6, ep=2, tp=1, fsdp=True, fsdp_flat=True)),
    ((8, 6, 5), SplitSpec(expert=True), ParallelLayout(dp=4, ep=4, fsdp=True, fsdp_flat=True)),  # edp = 1
    ((), SplitSpec(), ParallelLayout(dp=3, fsdp=True, fsdp_flat=True)),
]


@pytest.mark.parametrize(("shape", "spec", "layout"), CASES, ids=[f"{s}-{lay}" for s, _, lay in CASES])
def test_flat_pieces_tile_once_and_each_rank_holds_its_flat_range(shape, spec, layout):
    meta = TensorMeta("model.layers.0.w", shape, torch.float32)
    pieces = plan_pieces(meta, spec, layout, num_layers=1)
    full = torch.arange(max(torch.Size(shape).numel(), 1), dtype=torch.int64).reshape(shape)
    count = torch.zeros(shape, dtype=torch.int32)
    for piece in pieces:
        count[piece.slices()] += 1
        assert all(s > 0 for s in piece.sizes), piece
    assert bool((count == 1).all())
    for rank in range(layout.world_size):
        expected = _flat_range(_rank_local(full, spec, layout, rank), spec, layout, rank)
        assert _held(full, pieces, rank) == sorted(expected.tolist()), rank
        if not spec.tp_sections:  # one local box per row-major run: at most 2 * ndim - 1 per rank
            assert sum(p.rank == rank for p in pieces) <= max(2 * len(shape) - 1, 1)


@settings(max_examples=60, deadline=None)
@given(
    dp=st.sampled_from([1, 2, 3, 4, 5, 8]),
    tp=st.sampled_from([1, 2]),
    sections=st.booleans(),
    expert=st.booleans(),
    tp_dim=st.sampled_from([0, 1, 2, None]),
)
def test_flat_pieces_match_the_ceil_split(dp, tp, sections, expert, tp_dim):
    ep = 2 if expert and dp % 2 == 0 else 1
    layout = ParallelLayout(dp=dp, tp=tp, ep=ep, fsdp=True, fsdp_flat=True)
    shape = (8, 12, 6)
    spec = SplitSpec(tp_dim=tp_dim, tp_sections=(8, 4) if sections and tp_dim == 1 else None, expert=expert)
    pieces = plan_pieces(TensorMeta("model.layers.1.w", shape, torch.float32), spec, layout, num_layers=4)
    full = torch.arange(torch.Size(shape).numel()).reshape(shape)
    held = []
    for rank in range(layout.world_size):
        expected = _flat_range(_rank_local(full, spec, layout, rank), spec, layout, rank)
        mine = _held(full, pieces, rank)
        assert mine == sorted(expected.tolist())
        held += mine
    assert sorted(held) == full.reshape(-1).tolist()  # every element exactly once


def test_flat_boxes_are_row_major_runs_in_order():
    for shape in [(5,), (3, 4), (2, 3, 4), (3, 1, 2, 5)]:
        n = torch.Size(shape).numel()
        index = torch.arange(n).reshape(shape)
        for start in range(n + 1):
            for stop in range(start, n + 1):
                boxes = flat_boxes(shape, start, stop)
                assert len(boxes) <= 2 * len(shape) - 1
                got = [index[tuple(slice(o, o + s) for o, s in zip(*box, strict=True))].reshape(-1) for box in boxes]
                assert torch.cat(got or [index.reshape(-1)[:0]]).tolist() == list(range(start, stop))
                assert all(contiguous_start(shape, *box) is not None for box in boxes)


def test_flat_layout_parses_prints_and_round_trips():
    layout = ParallelLayout.parse("dp=4,tp=2,ep=2,fsdp=flat")
    assert (layout.fsdp, layout.fsdp_flat) == (True, True)
    assert str(layout) == "dp=4,tp=2,pp=1,ep=2,fsdp=flat"
    assert ParallelLayout.parse(str(layout)) == layout
    assert ParallelLayout.from_dict(layout.to_dict()) == layout
    dim0 = ParallelLayout.parse("dp=4,fsdp=1")
    assert not dim0.fsdp_flat and str(dim0).endswith("fsdp=1")
    assert "fsdp_flat" not in dim0.to_dict()  # dim-0 sidecars keep the form older versions read
    old_sidecar = {"dp": 2, "tp": 1, "pp": 1, "ep": 1, "fsdp": True}
    assert ParallelLayout.from_dict(old_sidecar) == ParallelLayout(dp=2, fsdp=True)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: ParallelLayout.parse("dp=4,fsdp=flt"), r"fsdp='flt'.*0, 1 or flat"),
        (lambda: ParallelLayout.parse("dp=4,fsdp=2"), r"fsdp='2'.*0, 1 or flat"),
        (lambda: ParallelLayout(dp=4, fsdp_flat=True), r"fsdp_flat=True needs fsdp=True"),
        (lambda: ParallelLayout.from_dict({"dp": 4, "fsdp": False, "fsdp_flat": True}), "needs fsdp=True"),
    ],
)
def test_bad_flat_layouts_are_named(make, needle):
    with pytest.raises(ReshapeError, match=needle):
        make()


def _metadata(folder: Path):
    from zaya_config.train_checkpoint.dcp_metadata import read_dcp_metadata

    return read_dcp_metadata(folder)


def test_dcp_round_trip_through_flat_is_bitwise(tmp_path: Path, src_dcp: Path):
    dim0_2 = tmp_path / "dim0_2.dcp"
    convert(src_dcp, dim0_2, "dcp", ParallelLayout(dp=2, fsdp=True))
    flat_3 = tmp_path / "flat_3.dcp"
    convert(dim0_2, flat_3, "dcp", FLAT)
    dim0_4 = tmp_path / "dim0_4.dcp"
    convert(flat_3, dim0_4, "dcp", ParallelLayout(dp=4, fsdp=True))
    for out in (flat_3, dim0_4):
        report = compare(src_dcp, out)
        assert report.ok and report.checked_tensors == 22 + 3 * 18, report.problems
        assert verify(out).ok
    with open_checkpoint(flat_3) as reader:
        assert reader.index.layout == FLAT  # the sidecar carries the flat style
    experts = _metadata(flat_3).state_dict_metadata["model.layers.0.experts.gate_up"]
    per_rank = [0, 0, 0]
    storage = _metadata(flat_3).storage_data
    for item in storage:
        if item.fqn == "model.layers.0.experts.gate_up":
            per_rank[int(storage[item].relative_path.split("_")[2])] += 1
    assert len(experts.chunks) == sum(per_rank) and max(per_rank) > 1  # several chunks per rank in one file


def test_flat_dcp_with_tp_and_ep_round_trips(tmp_path: Path, src_dcp: Path):
    flat = tmp_path / "flat_tp.dcp"
    convert(src_dcp, flat, "dcp", FLAT_TP, table=TP_TABLE)
    back = tmp_path / "dim0.dcp"
    convert(flat, back, "dcp", ParallelLayout(dp=2, tp=2, fsdp=True), table=TP_TABLE)
    for out in (flat, back):
        assert compare(src_dcp, out).ok and verify(out).ok


@pytest.mark.parametrize("fmt", ["zarr", "hf", "torch"])
def test_flat_dcp_to_other_formats_and_back_is_bitwise(tmp_path: Path, src_dcp: Path, fmt: str):
    flat = tmp_path / "flat.dcp"
    convert(src_dcp, flat, "dcp", FLAT)
    other = tmp_path / ("other.pt" if fmt == "torch" else f"other.{fmt}")
    convert(flat, other, fmt, FLAT)
    back = tmp_path / "back.dcp"
    convert(other, back, "dcp", FLAT)
    for out in (other, back):
        report = compare(src_dcp, out)
        assert report.ok, report.problems
        assert report.checked_tensors == (22 if fmt == "hf" else 22 + 3 * 18)


@pytest.mark.parametrize("dp", [4, 5])
def test_zarr_chunks_follow_the_layout_not_the_flat_cuts(tmp_path: Path, src_dcp: Path, dp: int):
    import zarr
    from ckpt_reshape.formats.zarr_format import chunk_shape
    from ckpt_reshape.zaya_names import generic_table

    flat = ParallelLayout(dp=dp, ep=2 if dp % 2 == 0 else 1, fsdp=True, fsdp_flat=True)
    out = tmp_path / "flat.zarr"
    convert(src_dcp, out, "zarr", flat)
    group = zarr.open_group(str(out), mode="r")
    with open_checkpoint(src_dcp) as reader:
        index = reader.index
    dim0 = plan_layout(index, generic_table(), replace(flat, fsdp_flat=False))
    for name, meta in index.tensors.items():
        assert group[f"tensors/{name}"].chunks == chunk_shape(meta, dim0[name]), name
    # 96 rows: dp=4 shards of 24 rows; dp=5 shards of 20 (last 16), so a grid of 4 rows, never element-sized
    assert group["tensors/model.embed_tokens.weight"].chunks == ((24, 32) if dp == 4 else (4, 32))
    if dp == 4:
        assert group["tensors/model.layers.0.experts.gate_up"].chunks == (2, 16, 32)  # 4 experts / EP rank, edp 2
    assert compare(src_dcp, out).ok


def test_flat_dcp_loads_with_torch_dcp(tmp_path: Path, src_dcp: Path, src_state: dict):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    flat = tmp_path / "flat_tp.dcp"
    convert(src_dcp, flat, "dcp", FLAT_TP, table=TP_TABLE)
    assert len(list(flat.glob("__*_0.distcp"))) == FLAT_TP.world_size
    target = {"model": {k: torch.empty_like(v) for k, v in src_state["model"].items()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(target, checkpoint_id=flat, no_dist=True)
        native = tmp_path / "native.pt"
        dcp_to_torch_save(flat, native)
    for name, tensor in src_state["model"].items():
        assert torch.equal(target["model"][name], tensor), name
    loaded = torch.load(native, weights_only=True)
    for name, tensor in src_state["model"].items():
        assert torch.equal(loaded["model"][name], tensor), name
    assert compare(src_dcp, native).ok


def test_each_rank_file_holds_exactly_its_flat_range(tmp_path: Path, src_dcp: Path, src_state: dict):
    flat = tmp_path / "flat_tp.dcp"
    convert(src_dcp, flat, "dcp", FLAT_TP, table=TP_TABLE)
    metadata = _metadata(flat)
    files = {p.name: p.read_bytes() for p in flat.glob("__*_0.distcp")}
    with open_checkpoint(src_dcp) as src:
        for name, item in metadata.state_dict_metadata.items():
            if not hasattr(item, "chunks"):
                continue
            full = src.read_tensor(name)
            spec = TP_TABLE.spec_for(name, tuple(full.shape))
            position = torch.arange(max(full.numel(), 1)).reshape(full.shape)
            for rank in range(FLAT_TP.world_size):
                want = _flat_range(_rank_local(position, spec, FLAT_TP, rank), spec, FLAT_TP, rank)
                got_values, got_positions = [], []
                for chunk in item.chunks:
                    info = metadata.storage_data[MetadataIndex(name, chunk.offsets)]
                    if info.relative_path != f"__{rank}_0.distcp":
                        continue
                    blob = files[info.relative_path][info.offset : info.offset + info.length]
                    value = torch.load(io.BytesIO(blob), weights_only=True)
                    region = tuple(slice(o, o + s) for o, s in zip(chunk.offsets, chunk.sizes, strict=True))
                    got_values.append(value.reshape(-1))
                    got_positions.append(position[region].reshape(-1))
                if not got_values:
                    assert want.numel() == 0, (name, rank)
                    continue
                got_positions, got_values = torch.cat(got_positions), torch.cat(got_values)
                order = torch.argsort(got_positions)
                assert torch.equal(got_positions[order], want.sort().values), (name, rank)
                # bitwise: r's bytes are the rank-local tensor's flat range, `local.reshape(-1)[r*c:(r+1)*c]`
                local = _flat_range(_rank_local(full, spec, FLAT_TP, rank), spec, FLAT_TP, rank)
                by_position = got_values[order][torch.argsort(torch.argsort(want))]
                assert torch.equal(by_position.view(torch.uint8), local.contiguous().view(torch.uint8)), (name, rank)


def test_flat_pieces_stream_by_byte_ranges(tmp_path: Path, src_dcp: Path):
    """Without a TP cut of a later dim every flat piece is one row-major run: both sides of a conversion
    to or from flat DCP offer byte ranges, so `convert` copies them without materialising the tensor."""
    flat = tmp_path / "flat.dcp"
    convert(src_dcp, flat, "dcp", FLAT)
    with open_checkpoint(flat) as reader:
        index = reader.index
        table = SplitTable([("*.experts.*", SplitSpec(expert=True))])
        for layout in (FLAT, ParallelLayout(dp=4, ep=2, fsdp=True, fsdp_flat=True), ParallelLayout(dp=2, fsdp=True)):
            pieces = plan_layout(index, table, layout)
            writer = DcpWriter(
                tmp_path / f"probe_{layout.dp}_{layout.ep}_{int(layout.fsdp_flat)}", index, pieces, layout
            )
            for name in index.tensors:
                assert writer.can_stream(name), (layout, name)
                assert reader.byte_extents(name) is not None, name  # flat chunks read back as byte extents
        # a TP cut of dim 1 (row parallel) makes flat pieces strided: the tensor path, as for dim-0 shards
        tp_pieces = plan_layout(index, TP_TABLE, FLAT_TP)
        writer = DcpWriter(tmp_path / "probe_tp", index, tp_pieces, FLAT_TP)
        assert not writer.can_stream("model.layers.0.attn.out.weight")
        assert writer.can_stream("model.layers.0.attn.wqkv.weight")  # fused sections cut along dim 0 still stream
