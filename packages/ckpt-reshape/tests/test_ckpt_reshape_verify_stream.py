"""`verify` and `compare` read tensors as `convert` moves them (mapped windows, blocks of rows), never whole, and
still name the difference: what lets them check checkpoints whose largest tensor does not fit twice in memory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ckpt_reshape.convert import convert
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.verify import compare, verify

_MEASURE = r"""
import json, resource, sys
from pathlib import Path
from ckpt_reshape.verify import compare, verify
a, b = Path(sys.argv[1]), Path(sys.argv[2])
verify(a)  # the first call imports and opens everything once
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
ok = verify(b).ok and compare(a, b).ok
print(json.dumps({"ok": ok, "grew": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["dcp", "zarr"])  # byte ranges (dcp), rows served by zarr
def test_verify_and_compare_hold_a_block_not_the_tensor(tmp_path: Path, write_dcp, fmt: str):
    big = torch.randn(8192, 8192, generator=torch.Generator().manual_seed(2))  # 256 MB
    src = write_dcp({"model": {"embed.weight": big, "norm.weight": torch.ones(8)}}, tmp_path / "src.dcp")
    del big
    ours = tmp_path / f"ours.{fmt}"
    convert(src, ours, fmt, ParallelLayout(dp=2, fsdp=True), durable=False)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(ours), str(src)], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ok"]
    assert result["grew"] < 0.5 * 256e6, f"peak RSS grew by {result['grew'] / 1e6:.0f} MB for a 256 MB tensor"


@pytest.mark.parametrize("fmt", ["dcp", "zarr", "torch"])
def test_compare_names_the_largest_difference(tmp_path: Path, write_dcp, fmt: str):
    weight = torch.randn(64, 48, generator=torch.Generator().manual_seed(3))
    src = write_dcp({"model": {"w": weight, "steps": torch.arange(10)}}, tmp_path / "a.dcp")
    changed = weight.clone()
    changed[40, 7] += 0.5
    changed[3, 1] -= 0.25
    other = write_dcp({"model": {"w": changed, "steps": torch.arange(10) * 2}}, tmp_path / "other.dcp")
    theirs = tmp_path / f"b.{fmt}"
    convert(other, theirs, fmt, ParallelLayout(dp=2, fsdp=True) if fmt == "dcp" else None)
    report = compare(src, theirs)
    assert sorted(report.problems) == [
        "tensor 'model.steps': bytes differ (max abs difference n/a)",
        f"tensor 'model.w': bytes differ (max abs difference {(changed - weight).abs().max().item()})",
    ]
    assert report.checked_tensors == 2 and verify(theirs).ok
