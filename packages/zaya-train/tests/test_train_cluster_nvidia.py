"""The NVIDIA health check on nvidia-smi outputs in its `--query-gpu ... --format=csv` format (tests/data/nvidia_smi/,
its README says what each shows): the parser names the GPUs with uncorrectable ECC errors or insane clocks, and
the node's health check (`python -m zaya_train.cluster.health`, in process) runs a fake `nvidia-smi` on PATH that
prints them, fails the node (exit 76) and writes why in its report."""

import json
import os
import stat
from pathlib import Path

import pytest
from zaya_train.cluster import health
from zaya_train.cluster.nvidia import QUERY, parse_problems, parse_rows

DATA = Path(__file__).parent / "data" / "nvidia_smi"


def problems(name: str) -> list[tuple[int, str]]:
    return [(p.index, p.reason) for p in parse_problems((DATA / name).read_text(), min_clock_fraction=0.5)]


def test_recorded_outputs_name_the_bad_gpus():
    assert len(parse_rows((DATA / "healthy.csv").read_text())) == 8
    assert problems("healthy.csv") == [] and problems("ecc_off.csv") == []
    assert problems("ecc_uncorrectable.csv") == [(5, "2 uncorrectable ECC errors (volatile)")]
    assert problems("insane_clocks.csv") == [
        (3, "SM clock 345 MHz < 50% of 1980"),
        (6, "SM clock 2610 MHz above its maximum 1980 MHz"),
    ]


def test_other_layouts_of_the_same_fields_and_bad_output():
    # nounits and noheader (QUERY's field order), and a header with the fields in another order
    assert [p.index for p in parse_problems("0, 0, 1980, 1980\n1, 3, 1980, 1980\n", 0.5)] == [1]
    reordered = "clocks.max.sm [MHz], index, clocks.current.sm [MHz], ecc.errors.uncorrected.volatile.total\n"
    assert [p.index for p in parse_problems(reordered + "1980 MHz, 0, 300 MHz, 0\n", 0.5)] == [0]
    with pytest.raises(ValueError, match=r"lacks clocks\.max\.sm"):
        parse_problems("index, ecc.errors.uncorrected.volatile.total, clocks.current.sm [MHz]\n0, 0, 1980 MHz\n", 0.5)
    with pytest.raises(ValueError, match="expected 4 fields"):
        parse_problems("0, 0, 1980\n", 0.5)
    assert QUERY[-1] == "--format=csv"


def fake_nvidia_smi(bin_dir: Path, output: Path) -> None:
    """An `nvidia-smi` that prints `output` when asked QUERY (and fails on anything else)."""
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(f'#!/bin/sh\n[ "$*" = "{" ".join(QUERY[1:])}" ] || exit 9\ncat {output}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(
    ("name", "code", "detail"),
    [
        ("healthy.csv", 0, "8 GPU(s): no uncorrectable ECC errors, clocks sane"),
        ("ecc_uncorrectable.csv", 76, "GPU 5: 2 uncorrectable ECC errors (volatile)"),
        ("insane_clocks.csv", 76, "GPU 3: SM clock 345 MHz < 50% of 1980; GPU 6: SM clock 2610 MHz above its "
         "maximum 1980 MHz"),
    ],
)  # fmt: skip
def test_health_check_runs_nvidia_smi_and_fails_the_node(tmp_path, monkeypatch, name, code, detail):
    fake_nvidia_smi(tmp_path / "bin", DATA / name)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu-node-7")
    args = ["--report-dir", str(tmp_path / "reports"), "--checkpoint-dir", str(tmp_path / "ckpt"),
            "--no-collective", "--min-free-bytes", "0"]  # fmt: skip
    assert health.main(args) == code
    report = json.loads((tmp_path / "reports" / "gpu-node-7.json").read_text())
    checks = {c["name"]: (c["ok"], c["detail"]) for c in report["checks"]}
    assert checks["nvidia_smi"] == (code == 0, detail) and report["healthy"] is (code == 0)
