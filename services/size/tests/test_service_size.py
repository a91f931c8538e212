"""services/size end to end on CPU: a real subprocess, one run and a multirun over two hardware profiles (the
README's, as written: tests/test_readme_commands.py leaves it to this file)."""

import pytest
import yaml
from readme_blocks import checkout_workdir, run_script_ok, sized_command
from zaya_model import ZayaConfig

PER_HARDWARE = sized_command("services/size/README.md", "python3 services/size/main.py -m hardware=")


@pytest.mark.slow
def test_size_writes_the_study_and_a_valid_recommended_config(run_service, tmp_path):
    run_service("size", "sizing.top_k=[1,2]", "sizing.num_experts=[2,4,8]")
    (run_dir,) = (tmp_path / "outputs" / "size").glob("*/*")
    rec = ZayaConfig.from_dict(yaml.safe_load((run_dir / "recommended_model.yaml").read_text()))
    assert rec.num_experts in (2, 4, 8) and rec.num_experts * rec.moe_intermediate_size == 4 * 32  # iso-params
    for name in ("moe_study.csv", "moe_pareto.png", "decode_latency.png", "sizing_rules.json"):
        assert (run_dir / name).stat().st_size > 0


@pytest.mark.slow
def test_size_multirun_over_hardware_profiles(tmp_path):
    work = checkout_workdir(tmp_path)
    run_script_ok(PER_HARDWARE, work, timeout=400)  # hardware=h200,mi300x model=zaya1-base sizing=zaya1-base
    (sweep,) = (work / "outputs" / "size" / "multirun").glob("*/*")
    headers = [(sweep / job / "recommended_model.yaml").read_text().splitlines()[0] for job in ("0", "1")]
    assert "hardware h200" in headers[0] and "hardware mi300x" in headers[1]


def test_bad_sizing_config_fails_at_start(run_service):
    proc = run_service("size", "sizing.latency_batch=3", expect_ok=False, timeout=120)
    assert proc.returncode != 0 and "sizing.latency_batch = 3" in proc.stderr
