"""ParallelLayout parsing, piece planning (every element stored exactly once), EP by global expert id, PP
stage ranges and layouts that must be refused before anything is written."""

import pytest
import torch
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import CheckpointIndex, TensorMeta
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.pieces import plan_layout, plan_pieces, stage_of
from ckpt_reshape.splits import REPLICATED, SplitSpec, SplitTable
from hypothesis import given, settings
from hypothesis import strategies as st


def test_parse_and_roundtrip():
    layout = ParallelLayout.parse("dp=4, tp=2, pp=2, ep=2, fsdp=1")
    assert (layout.dp, layout.tp, layout.pp, layout.ep, layout.fsdp) == (4, 2, 2, 2, True)
    assert layout.world_size == 16 and layout.edp == 2
    assert ParallelLayout.parse(str(layout)) == layout
    assert ParallelLayout.from_dict(layout.to_dict()) == layout
    for rank in range(layout.world_size):
        c = layout.coords(rank)
        assert layout.rank_of(c.pp_stage, c.dp_rank, c.tp_rank) == rank


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("dp=3,ep=2", "ep=2 does not divide dp=3"),
        ("tp=0", "tp=0"),
        ("dp=x", "not an integer"),
        ("zz=2", "bad layout item"),
    ],
)
def test_bad_layouts_are_named(text, needle):
    with pytest.raises(ReshapeError, match=needle):
        ParallelLayout.parse(text)


def _coverage(meta: TensorMeta, spec: SplitSpec, layout: ParallelLayout) -> torch.Tensor:
    count = torch.zeros(meta.shape, dtype=torch.int32)
    for piece in plan_pieces(meta, spec, layout, num_layers=4):
        count[piece.slices()] += 1
        assert 0 <= piece.rank < layout.world_size
    return count


@settings(max_examples=60, deadline=None)
@given(
    dp=st.sampled_from([1, 2, 3, 4, 8]),
    tp=st.sampled_from([1, 2]),
    fsdp=st.booleans(),
    sections=st.booleans(),
    expert=st.booleans(),
)
def test_every_element_is_stored_exactly_once(dp, tp, fsdp, sections, expert):
    ep = 2 if expert and dp % 2 == 0 else 1
    layout = ParallelLayout(dp=dp, tp=tp, ep=ep, fsdp=fsdp)
    spec = SplitSpec(tp_dim=1, tp_sections=(8, 4) if sections else None, expert=expert)
    meta = TensorMeta("model.layers.1.w", (8, 12, 3), torch.float32)
    assert bool((_coverage(meta, spec, layout) == 1).all())


def test_experts_go_to_ranks_by_global_id():
    layout = ParallelLayout(dp=4, ep=4)
    meta = TensorMeta("model.layers.0.experts.gate_up", (8, 4, 4), torch.bfloat16)
    pieces = plan_pieces(meta, SplitSpec(expert=True), layout, num_layers=1)
    owner = {p.offsets[0] // 2: layout.coords(p.rank).ep_rank for p in pieces}
    assert owner == {0: 0, 1: 1, 2: 2, 3: 3}
    assert all(p.sizes[0] == 2 for p in pieces)  # experts 2r, 2r+1 on ep rank r: global ids, never local


def test_pipeline_stages_take_contiguous_layer_ranges():
    layout = ParallelLayout(pp=3)
    stages = [stage_of(f"model.layers.{i}.w", REPLICATED, layout, 7) for i in range(7)]
    assert stages == [0, 0, 0, 1, 1, 2, 2]
    assert stage_of("model.final_norm.weight", SplitSpec(pp_place="last"), layout, 7) == 2
    assert stage_of("model.embed.weight", REPLICATED, layout, 7) == 0


def test_impossible_targets_fail_with_the_tensor_name():
    index = CheckpointIndex(
        tensors={
            "model.layers.0.experts.gate_up": TensorMeta("model.layers.0.experts.gate_up", (6, 4, 4), torch.float32)
        }
    )
    table = SplitTable([("*.experts.gate_up", SplitSpec(expert=True))])
    with pytest.raises(ReshapeError, match=r"experts.gate_up.*cannot be split 4 ways"):
        plan_layout(index, table, ParallelLayout(dp=4, ep=4))
    heads = SplitTable([("*.q.weight", SplitSpec(tp_dim=0, tp_granule=16))])
    index = CheckpointIndex(
        tensors={"model.layers.0.q.weight": TensorMeta("model.layers.0.q.weight", (32, 8), torch.float32)}
    )
    with pytest.raises(ReshapeError, match="in units of 16"):
        plan_layout(index, heads, ParallelLayout(tp=4))
    with pytest.raises(ReshapeError, match="pp=4 needs at least 4 decoder layers"):
        plan_layout(index, heads, ParallelLayout(pp=4))
