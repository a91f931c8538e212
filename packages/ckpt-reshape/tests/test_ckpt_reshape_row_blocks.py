"""Row-block streaming: tensors cut along dims other than 0 (row-parallel TP weights, expert tensors cut
inside) move a block of rows at a time, exactly, into and out of every format, without the whole tensor in
memory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ckpt_reshape import row_blocks
from ckpt_reshape.convert import convert
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.splits import SplitSpec, SplitTable
from ckpt_reshape.verify import compare

TABLE = SplitTable(
    [
        ("*.o_proj.weight", SplitSpec(tp_dim=1, tp_kind="row")),
        ("*.experts.w", SplitSpec(tp_dim=2, tp_kind="row", expert=True)),
        ("*.q_proj.weight", SplitSpec(tp_dim=0, tp_kind="column")),
    ],
    source="row-block test table",
)


def _model(seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {
        "model": {
            "layers.0.self_attn.o_proj.weight": torch.randn(37, 24, generator=g).to(torch.bfloat16),
            "layers.0.mlp.experts.w": torch.randn(4, 9, 12, generator=g),
            "layers.0.self_attn.q_proj.weight": torch.randn(18, 24, generator=g),
            "layers.0.norm.weight": torch.randn(24, generator=g),
        }
    }


@pytest.mark.parametrize("fmt", ["dcp", "hf", "torch", "zarr"])
def test_tp_dim1_pieces_move_in_row_blocks_exactly(tmp_path: Path, write_dcp, monkeypatch, fmt: str):
    monkeypatch.setattr(row_blocks, "BLOCK_BYTES", 100)  # blocks of a few rows, cutting across every piece
    src = write_dcp(_model(), tmp_path / "src.dcp")
    tp = tmp_path / "tp.dcp"
    convert(src, tp, "dcp", ParallelLayout(dp=2, tp=3, ep=2, fsdp=True), table=TABLE)
    with open_checkpoint(tp) as reader:
        chunks = reader._chunks["model.layers.0.self_attn.o_proj.weight"]
        assert {tuple(c.sizes)[1] for c, _ in chunks} == {8}  # cut along dim 1 three ways
    out = tmp_path / f"out.{fmt}"
    convert(tp, out, fmt, None if fmt != "dcp" else ParallelLayout(tp=2), table=TABLE)
    assert compare(src, out).ok and compare(tp, out).ok
    back = tmp_path / "back.dcp"
    flat = ParallelLayout(dp=3, tp=2, fsdp=True, fsdp_flat=True)  # flat shards of row-parallel pieces: strided
    convert(out, back, "dcp", flat, table=TABLE)  # out of `fmt` into TP again
    assert compare(src, back).ok


_MEASURE = r"""
import json, resource, sys
from pathlib import Path
from ckpt_reshape.convert import convert
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.splits import SplitSpec, SplitTable
table = SplitTable([("*.o_proj.weight", SplitSpec(tp_dim=1, tp_kind="row"))])
src, dst, fmt, tp = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
convert(Path(src), Path(dst), fmt, ParallelLayout(tp=tp) if fmt == "dcp" else None, table=table)
print(json.dumps({"grew": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before}))
"""


@pytest.mark.slow
def test_row_blocks_hold_a_block_not_the_tensor(tmp_path: Path, write_dcp):
    big = torch.randn(8192, 8192, generator=torch.Generator().manual_seed(1))  # 256 MB
    src = write_dcp({"model": {"layers.0.self_attn.o_proj.weight": big}}, tmp_path / "src.dcp")
    del big
    steps = [(src, tmp_path / "tp.dcp", "dcp", 4), (tmp_path / "tp.dcp", tmp_path / "full.pt", "torch", 1)]
    for a, b, fmt, tp in steps:  # full -> cut along dim 1 four ways -> a single torch.save file
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(a), str(b), fmt, str(tp)], capture_output=True, text=True, check=True
        )
        grew = json.loads(done.stdout.strip().splitlines()[-1])["grew"]
        assert grew < 0.5 * 256e6, f"{a.name} -> {b.name}: peak RSS grew by {grew / 1e6:.0f} MB for a 256 MB tensor"
    assert compare(src, tmp_path / "full.pt").ok
