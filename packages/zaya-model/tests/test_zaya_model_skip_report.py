"""The skip-route report reads a pretrain run dir (config.yaml + metrics.jsonl) and writes its JSON and plot."""

import json
import subprocess
import sys
from pathlib import Path

import yaml
from zaya_model import ZayaConfig

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "skip_route_report.py"


def _write_run(run_dir: Path, loads_by_step: dict[int, list[list[float]]]) -> None:
    cfg = ZayaConfig.from_preset("zaya1-tiny", skip_rate_target=0.25)
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"model": cfg.to_dict(), "train": {"seed": 0}}))
    lines = [{"kind": "phase", "step": 0}]
    lines += [{"kind": "train", "step": s, "loss": 1.0, "expert_load": load} for s, load in loads_by_step.items()]
    lines.append({"kind": "val", "step": max(loads_by_step), "val_loss": 1.0})
    (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")


def test_report_finds_the_first_skip_and_the_settled_loads(tmp_path):
    never = [[0.25, 0.25, 0.25, 0.25, 0.0]] * 2
    settled = [[0.2, 0.2, 0.15, 0.2, 0.25], [0.1875, 0.1875, 0.1875, 0.1875, 0.25]]
    _write_run(tmp_path / "run", {s: never for s in range(1, 21)} | {s: settled for s in range(21, 41)})
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--tail-steps", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "skip_route.json").read_text())
    assert summary["skip_target"] == 0.25 and summary["expert_target"] == 0.1875
    assert summary["first_step_skipping"] == 21
    assert summary["tail_skip_rate_per_layer"] == [0.25, 0.25]
    assert abs(summary["tail_max_expert_deviation"] - 0.0375) < 1e-9
    assert (tmp_path / "out" / "skip_route.png").stat().st_size > 1000
