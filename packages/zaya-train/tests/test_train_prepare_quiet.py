"""A prepare keeps datatrove's INFO lines out of the terminal: stderr has none, the task logs under
OUT/.datatrove have them; loguru warnings and errors still reach stderr."""

import io
import json
import subprocess
import sys

import pytest
from loguru import logger
from zaya_train.data.dataset import LOGS
from zaya_train.data.prepare.quiet_executor import WarningsAndUp


def test_loguru_lines_below_warning_are_dropped_and_the_rest_pass():
    out = io.StringIO()
    sink = logger.add(WarningsAndUp(out), level="DEBUG", format="{level}: {message}")
    try:
        logger.info("routine")
        logger.success("done")
        logger.warning("careful")
        logger.error("broken")
    finally:
        logger.remove(sink)
    WarningsAndUp(out).write("not from loguru\n")
    assert out.getvalue() == "WARNING: careful\nERROR: broken\nnot from loguru\n"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_prepare_prints_no_datatrove_info_and_its_task_logs_keep_them(tmp_path, workers):
    corpus = tmp_path / "c"
    corpus.mkdir()
    for i in range(3):
        lines = [json.dumps({"text": f"document {i}.{j} héllo"}) for j in range(20)]
        (corpus / f"p{i}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "zaya_cli.app", "data", "prepare", str(corpus), "--out", str(out)]
    done = subprocess.run([*command, "--workers", str(workers), "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""  # no datatrove line at all (nothing was wrong)
    assert done.stdout.startswith(f"wrote {out}: 3 shards, 60 documents")
    for stage, tasks in (("tokenize", 3), ("index", 1)):
        logs = sorted((out / LOGS / stage / "logs").glob("task_*.log"))
        assert len(logs) == tasks
        for log in logs:
            text = log.read_text()
            assert "| INFO     |" in text and "Launching pipeline for rank=" in text
