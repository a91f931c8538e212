"""benchmarks/prepare_throughput.py on a 2 MB corpus (CPU smoke): both tools with 1 and 2 workers agree on
the token count (the script refuses otherwise), and the JSON record and the plot are written as documented."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "prepare_throughput.py"


@pytest.mark.slow
def test_prepare_throughput_smoke_writes_the_record_and_the_plot(tmp_path):
    results = tmp_path / "results" / "prepare_throughput.json"
    command = [sys.executable, str(SCRIPT), "--mb", "2", "--files", "2", "--tokenizer", "byte"]
    command += ["--results", str(results), "--work-dir", str(tmp_path / "work")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(results.read_text())
    assert set(record) == {"rows", "speedup_vs_datasets_map", "scaling_1_to_2", "machine", "date", "commit", "command"}
    assert [(r["tool"], r["workers"]) for r in record["rows"]] == [
        ("zaya data prepare", 1), ("datasets map", 1), ("zaya data prepare", 2), ("datasets map", 2)
    ]  # fmt: skip
    assert all(set(r) == {"tool", "workers", "tokens_per_s", "peak_rss_mib"} for r in record["rows"])
    assert all(r["tokens_per_s"] > 0 and r["peak_rss_mib"] > 50 for r in record["rows"])
    assert all(r["peak_rss_mib"] < 1024 for r in record["rows"] if r["tool"] == "zaya data prepare")
    speed = {(r["tool"], r["workers"]): r["tokens_per_s"] for r in record["rows"]}
    assert record["scaling_1_to_2"] == pytest.approx(
        speed["zaya data prepare", 2] / speed["zaya data prepare", 1], 1e-2
    )
    assert "--mb 2" in record["command"] and "zaya data prepare" in proc.stdout
    assert results.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
