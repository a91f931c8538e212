"""services/size end to end on CPU: a real subprocess, one run and a multirun over two hardware profiles."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from zaya_model import ZayaConfig

MAIN = Path(__file__).resolve().parents[1] / "main.py"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(MAIN), *args, f"paths.root_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.mark.slow
def test_size_writes_the_study_and_a_valid_recommended_config(tmp_path):
    _run(tmp_path, "sizing.top_k=[1,2]", "sizing.num_experts=[2,4,8]")
    (run_dir,) = (tmp_path / "outputs" / "size").glob("*/*")
    rec = ZayaConfig.from_dict(yaml.safe_load((run_dir / "recommended_model.yaml").read_text()))
    assert rec.num_experts in (2, 4, 8) and rec.num_experts * rec.moe_intermediate_size == 4 * 32  # iso-params
    for name in ("moe_study.csv", "moe_pareto.png", "decode_latency.png", "sizing_rules.json"):
        assert (run_dir / name).stat().st_size > 0


@pytest.mark.slow
def test_size_multirun_over_hardware_profiles(tmp_path):
    _run(tmp_path, "-m", "hardware=h200,mi300x", "model=zaya1-base", "sizing=zaya1-base")
    (sweep,) = (tmp_path / "outputs" / "size" / "multirun").glob("*/*")
    headers = [(sweep / job / "recommended_model.yaml").read_text().splitlines()[0] for job in ("0", "1")]
    assert "hardware h200" in headers[0] and "hardware mi300x" in headers[1]


def test_bad_sizing_config_fails_at_start(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(MAIN), "sizing.latency_batch=3", f"paths.root_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode != 0 and "sizing.latency_batch = 3" in proc.stderr
