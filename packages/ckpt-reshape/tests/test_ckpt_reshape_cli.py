"""`zaya ckpt inspect|convert|verify`: one real subprocess of the installed `zaya` command (the entry point
mounts the sub-app and a conversion runs end to end), then the other commands through the same typer app
in-process (same parsing, output and exit codes, without another interpreter start per command)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ckpt_reshape.cli import app
from typer.testing import CliRunner

ZAYA = shutil.which("zaya") or str(Path(sys.executable).parent / "zaya")


@pytest.mark.slow
def test_inspect_convert_verify(tmp_path: Path, src_dcp: Path, src_state: dict, write_dcp, snapshot):
    if not Path(ZAYA).exists():
        pytest.skip("the `zaya` command is not installed (pip install -e tools/zaya-cli)")
    dst = tmp_path / "out.zarr"
    done = subprocess.run(
        [ZAYA, "ckpt", "convert", str(src_dcp), str(dst), "--to", "zarr", "--layout", "dp=4,ep=4,fsdp=1"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "layout dp=4,tp=1,pp=1,ep=4,fsdp=1" in done.stdout and dst.is_dir()

    cli = CliRunner()
    shown = cli.invoke(app, ["inspect", str(dst), "--limit", "3"])
    assert shown.exit_code == 0, shown.output
    assert "format: zarr" in shown.stdout and "layout: dp=4,tp=1,pp=1,ep=4,fsdp=1" in shown.stdout
    assert (
        "model.embed_tokens.weight" in shown.stdout and "bfloat16" in shown.stdout and "more (--limit 0" in shown.stdout
    )
    before = snapshot(dst)
    again = cli.invoke(app, ["convert", str(src_dcp), str(dst), "--to", "zarr", "--quiet"])
    assert again.exit_code == 2 and "already exists; pass --force" in again.stderr
    assert snapshot(dst) == before
    same = cli.invoke(app, ["verify", str(src_dcp), str(dst)])
    assert same.exit_code == 0 and "logical comparison: OK" in same.stdout
    checked = cli.invoke(app, ["verify", str(dst)])
    assert checked.exit_code == 0 and "checksums: OK" in checked.stdout
    src_state["model"]["final_norm.weight"][3] += 1.0
    other = write_dcp(src_state, tmp_path / "other.dcp")
    differs = cli.invoke(app, ["verify", str(dst), str(other)])
    assert differs.exit_code == 1 and "FAILED (1 problems)" in differs.stdout
    assert "'model.final_norm.weight': bytes differ" in differs.stdout


def test_inspect_shows_how_each_tensor_is_split(tmp_path: Path, src_dcp: Path):
    from ckpt_reshape.convert import convert
    from ckpt_reshape.formats import open_checkpoint
    from ckpt_reshape.layout import ParallelLayout
    from ckpt_reshape.splits import SplitSpec

    dst = tmp_path / "ep.dcp"
    convert(src_dcp, dst, "dcp", ParallelLayout(dp=4, ep=2, fsdp=True))
    shown = CliRunner().invoke(app, ["inspect", str(dst), "--limit", "0"])
    assert shown.exit_code == 0, shown.output
    assert "split rules: generic" in shown.stdout
    rows = [line for line in shown.stdout.splitlines() if "8x16x32" in line]  # the stacked experts
    with open_checkpoint(dst) as reader:  # piped (not a terminal): one line per tensor, its name whole
        names = list(reader.index.tensors)
    assert max(map(len, names)) > 20 and all(
        any(f"│ {n} " in line for line in shown.stdout.splitlines()) for n in names
    )
    # ep=2 gives each EP rank 4 experts; its 2-rank FSDP group halves them along dim 0: 4 pieces in all
    assert rows and all("EP (global" in row and row.rstrip(" │").endswith("4") for row in rows), rows
    assert SplitSpec(tp_dim=1, tp_kind="row", tp_granule=128).describe() == "TP dim 1 (row, units of 128)"
    assert SplitSpec(tp_dim=0, tp_sections=(4, 2, 2)).describe() == "TP dim 0 (sections 4|2|2)"
    assert SplitSpec().describe() == "replicated"
