"""`zaya manta compose|eval`: the installed console script as a real subprocess, and the typer app in-process."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from manta.cli import app
from typer.testing import CliRunner

ZAYA = shutil.which("zaya", path=str(Path(sys.executable).parent))


def zaya(*args, cwd):
    assert ZAYA, "the zaya console script is not installed (pip install -e tools/zaya-cli)"
    env = {**os.environ, "ZAYA_CACHE": str(cwd / "cache"), "COLUMNS": "200"}
    return subprocess.run([ZAYA, "manta", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


@pytest.mark.slow
def test_compose_prints_and_writes_plans(tmp_path):
    result = zaya(
        "compose",
        "a watercolor painting of a cat wearing a top hat",
        "--hardware",
        "laptop-8gb",
        "--catalog",
        "example",
        "--batch",
        "2",
        "-o",
        str(tmp_path / "plans.json"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "cat-breeds" in result.stdout and "laptop-8gb" in result.stdout
    plans = json.loads((tmp_path / "plans.json").read_text())
    assert len(plans) == 2 and all(p["base_family"] == "sd15" for p in plans)
    assert list((tmp_path / "cache" / "manta-embeddings").glob("*.npy"))  # the cache went where ZAYA_CACHE says


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compose", "   "], "the prompt is empty"),
        (["compose", "a cat", "--hardware", "tpu"], "unknown hardware profile 'tpu'"),
        (["compose", "a cat", "--catalog", "nope.jsonl"], "catalog file nope.jsonl does not exist"),
        (["compose", "a cat", "--model-path", "/no/model"], "embedding model path /no/model is not a"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_plan_metric_eval_is_named_a_smoke_check_and_writes_winrates(tmp_path, cache_dir, embedder):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("a cat wearing a top hat, watercolor\n\na dragon over a castle\n")
    out = tmp_path / "eval"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--judge",
            "plan-metrics",
            "--prompts",
            str(prompts),
            "--batch",
            "2",
            "--cache-dir",
            str(cache_dir),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "smoke check" in result.output and "2 prompts" in result.output
    report = json.loads((out / "winrates.json").read_text())
    assert report["judge"].startswith("plan-metrics (smoke check")
    assert set(report["opponents"]) == {"stylus", "stylus-limited"}
    assert set(report["controls"]) == {"prompt-blind", "random-relevant"}
    for rates in (report["aa"], *report["opponents"].values(), *report["controls"].values()):
        assert set(rates) == {"diversity", "alignment", "quality"}
        assert all(0 <= s["ci"][0] <= s["rate"] <= s["ci"][1] <= 1 and s["win"] + s["tie"] + s["loss"] == 2
                   for s in rates.values())  # fmt: skip
    assert 0 <= report["coverage"] <= 1 and report["adapters_per_image"] > 0
    assert (out / "winrates.png").read_bytes()[:4] == b"\x89PNG"


def test_eval_rejects_an_unknown_judge(tmp_path, cache_dir):
    result = CliRunner().invoke(app, ["eval", "--judge", "vibes", "--cache-dir", str(cache_dir)])
    assert result.exit_code == 2
    assert "unknown judge 'vibes'" in " ".join(result.output.split())
