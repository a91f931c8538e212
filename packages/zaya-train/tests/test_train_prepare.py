"""Preparing on datatrove (zaya_train.data.prepare): several tasks give one stream per split, bitwise the
same with 1 and 2 workers; a SIGKILLed `zaya data prepare` resumes without redoing finished shards and never
reads a half-written one; the Slurm executor is built with the options asked for, and its job body (what
each array task runs) makes the same dataset."""

import json
import os
import signal
import subprocess
import sys
import time

import dill
import numpy as np
import pytest
from typer.testing import CliRunner
from zaya_train.cli import data_app
from zaya_train.config import TokenizerConfig
from zaya_train.data.concat_tokens import ConcatTokens
from zaya_train.data.corpus import is_validation
from zaya_train.data.dataset import INDEX, LOGS, shard_path
from zaya_train.data.prepare.executors import SlurmOptions, build_executors
from zaya_train.data.prepare.index_step import WriteIndex
from zaya_train.data.prepare.inputs import list_inputs, plan_tasks
from zaya_train.data.prepare.read_step import ReadInputs, iter_documents_of
from zaya_train.data.prepare.run import prepare_dataset
from zaya_train.data.prepare.tokenize_step import TokenizeDocuments
from zaya_train.data.prepare.write_step import WriteShard
from zaya_train.data.shards import TokenShard
from zaya_train.errors import ZayaTrainError

BYTE = TokenizerConfig(kind="byte")
VAL = 0.2


def _corpus(folder, files=6, records=40, seed=0):
    """A folder of text files (one document each) and one of jsonl files (a document per line), seeded."""
    rng = np.random.default_rng(seed)
    (folder / "txt").mkdir(parents=True)
    (folder / "jsonl").mkdir()
    words = ["alpha", "beta", "gamma", "delta", "héllo", "✓", "def", "return"]
    for i in range(files):
        (folder / "txt" / f"t{i:02d}.txt").write_text(" ".join(rng.choice(words, 50 + 20 * i)) + "\n")
        with open(folder / "jsonl" / f"r{i:02d}.jsonl", "w", encoding="utf-8") as handle:
            for _ in range(records):
                handle.write(json.dumps({"text": " ".join(rng.choice(words, rng.integers(1, 30)))}) + "\n")
    return folder


def _expected(tasks, split):
    """The split's stream computed directly: every document's bytes then EOS, in task order."""
    parts = []
    for task in tasks:
        for name, text in iter_documents_of(task):
            if ("val" if is_validation(name, VAL) else "train") == split:
                parts.append(np.frombuffer(text.encode(), np.uint8).astype(np.uint32))
                parts.append(np.array([256], np.uint32))
    return np.concatenate(parts)


def _tasks(folder, shard_bytes=1200):
    return plan_tasks(list_inputs([folder / "txt", folder / "jsonl"], "**/*"), shard_bytes)


@pytest.mark.slow
def test_one_and_two_workers_give_the_same_stream_in_task_order(tmp_path):
    tasks = _tasks(_corpus(tmp_path / "c"))
    assert len(tasks) >= 8 and any(len(t) > 1 for t in tasks)  # text files grouped, each jsonl alone
    for workers in (1, 2):
        assert prepare_dataset(tasks, BYTE, tmp_path / f"w{workers}", VAL, workers=workers, progress=False)
    one, two = TokenShard(tmp_path / "w1"), TokenShard(tmp_path / "w2")
    for split in ("train", "val"):
        a, b = one.split(split), two.split(split)
        assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.doc_offsets, b.doc_offsets)
        assert np.array_equal(a.tokens, _expected(tasks, split))
        assert np.count_nonzero(a.tokens == 256) == len(a.doc_offsets) - 1 == one.num_docs[split]
        assert (a.tokens[a.doc_offsets[1:].astype(np.int64) - 1] == 256).all()  # offsets end at every EOS
    index = json.loads((tmp_path / "w2" / INDEX).read_text())
    assert [e["path"] for e in index["shards"]] == [f"shards/{r:05d}.zarr" for r in range(len(tasks))]


def test_a_half_written_shard_is_never_read_and_a_rerun_finishes(tmp_path):
    tasks = _tasks(_corpus(tmp_path / "c"))
    out = tmp_path / "out"
    prepare_dataset(tasks, BYTE, out, VAL, workers=1, progress=False)
    whole = TokenShard(out).split("train").tokens
    # The state a kill leaves: task 3 half written under its temporary name, no marker, no index.
    half = out / "shards" / ".tmp.00003.zarr.999999"
    shard_path(out, 3).rename(half)
    (half / "train" / "doc_offsets" / "zarr.json").unlink()
    # Task 5 was killed after its rename, before datatrove's marker: its shard is whole and must be kept.
    done = out / LOGS / "tokenize" / "completions"
    for marker in (done / "00003", done / "00005", out / LOGS / "index" / "completions" / "00000"):
        marker.unlink()
    (out / INDEX).unlink()
    with pytest.raises(ZayaTrainError, match=r"unfinished prepared dataset.*rerun the same"):
        TokenShard(out)
    kept = {r: shard_path(out, r).stat().st_ino for r in range(len(tasks)) if r != 3}
    assert prepare_dataset(tasks, BYTE, out, VAL, workers=1, progress=False)
    assert not half.exists() and {r: shard_path(out, r).stat().st_ino for r in kept} == kept
    assert np.array_equal(TokenShard(out).split("train").tokens, whole)


def test_a_rerun_with_other_settings_is_refused_by_name(tmp_path):
    tasks = _tasks(_corpus(tmp_path / "c"))
    prepare_dataset(tasks, BYTE, tmp_path / "out", VAL, workers=1, progress=False)
    with pytest.raises(ZayaTrainError, match=r"other val_fraction; pass another --out"):
        prepare_dataset(tasks, BYTE, tmp_path / "out", 0.5, workers=1, progress=False)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ZayaTrainError, match="is not a prepared dataset"):
        prepare_dataset(tasks, BYTE, tmp_path / "busy", VAL, workers=1, progress=False)


def test_a_split_larger_than_memory_reads_windows_across_shards(tmp_path, monkeypatch):
    tasks = _tasks(_corpus(tmp_path / "c"))
    prepare_dataset(tasks, BYTE, tmp_path / "out", VAL, workers=1, progress=False)
    in_memory = TokenShard(tmp_path / "out").split("train")
    monkeypatch.setattr("zaya_train.data.shards.IN_MEMORY_LIMIT_BYTES", 0)
    on_disk = TokenShard(tmp_path / "out").split("train")
    assert isinstance(on_disk.tokens, ConcatTokens) and on_disk.num_tokens == in_memory.num_tokens
    for index in range(on_disk.num_windows(37)):  # windows of 38 tokens cross every shard border
        assert np.array_equal(on_disk.window(index, 37), in_memory.window(index, 37))


def _slurm(tmp_path, tasks):
    pipeline = [ReadInputs(tasks), TokenizeDocuments(BYTE, VAL), WriteShard(str(tmp_path / "out"), {"kind": "byte"})]
    options = SlurmOptions(partition="cpu", time="01:30:00", mem_per_cpu_gb=3, job_name="zp")
    index = [WriteIndex(str(tmp_path / "out"), len(tasks), {"kind": "byte"})]
    return build_executors("slurm", tmp_path / "out", pipeline, index, len(tasks), None, options)


def test_slurm_executor_is_built_with_the_options_and_its_job_body_makes_the_dataset(tmp_path, monkeypatch):
    tasks = _tasks(_corpus(tmp_path / "c"))
    stage, last = _slurm(tmp_path, tasks)
    assert (stage.tasks, stage.workers, stage.partition, stage.time) == (len(tasks), -1, "cpu", "01:30:00")
    assert (stage.cpus_per_task, stage.mem_per_cpu_gb, stage.job_name) == (1, 3, "zp")
    assert last.tasks == 1 and last.depends is stage and last.job_name == "zp-index"
    script = stage.get_launch_file_contents(stage.get_sbatch_args(len(tasks)), "launch_pickled_pipeline x.pik")
    assert f"#SBATCH --array=0-{len(tasks) - 1}\n" in script and "#SBATCH --partition=cpu\n" in script
    assert f"source {sys.prefix}/bin/activate" in script and "#SBATCH --mem-per-cpu=3G\n" in script
    # What every array task runs: the pickled executor, its rank from SLURM_ARRAY_TASK_ID. No Slurm here, so the
    # one Slurm tool the task body calls (`scontrol show hostnames $SLURM_NODELIST`) is a script naming this host.
    scontrol = tmp_path / "bin" / "scontrol"
    scontrol.parent.mkdir()
    scontrol.write_text("#!/bin/sh\necho localhost\n")
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", f"{scontrol.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_NODELIST", "localhost")
    for executor in (stage, last):
        body = dill.loads(dill.dumps(executor))
        body.logging_dir.open("ranks_to_run.json", "w").write(json.dumps(list(range(body.tasks))))
        for rank in range(body.tasks):
            monkeypatch.setenv("SLURM_ARRAY_TASK_ID", str(rank))
            body.run()
    shard = TokenShard(tmp_path / "out")
    assert np.array_equal(shard.split("val").tokens, _expected(tasks, "val"))


def test_cli_names_a_missing_partition_and_an_unknown_executor(tmp_path):
    folder = _corpus(tmp_path / "c", files=1)
    runner = CliRunner()
    result = runner.invoke(data_app, ["prepare", str(folder / "txt"), "-o", str(tmp_path / "o"), "--executor", "slurm"])
    assert result.exit_code == 2 and "--executor slurm needs --partition" in result.output
    result = runner.invoke(data_app, ["prepare", str(folder / "txt"), "-o", str(tmp_path / "p"), "--executor", "ray"])
    assert result.exit_code == 2 and "--executor 'ray' is not one of local, slurm" in result.output
    assert not (tmp_path / "o").exists() and not (tmp_path / "p").exists()  # refused before anything is written


@pytest.mark.slow
def test_a_sigkilled_prepare_resumes_without_redoing_finished_shards(tmp_path):
    folder = _corpus(tmp_path / "c", files=16, records=3_000)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "zaya_cli.app", "data", "prepare", str(folder / "txt"), str(folder / "jsonl")]
    command += ["--out", str(out)]
    command += ["--workers", "1", "--val-fraction", str(VAL), "--no-progress"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    markers = out / LOGS / "tokenize" / "completions"
    deadline = time.monotonic() + 60
    while not (markers.is_dir() and len(list(markers.iterdir())) >= 3) and time.monotonic() < deadline:
        assert proc.poll() is None, "prepare ended before it could be killed"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / INDEX).exists()
    finished = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (out / "shards").glob("0*.zarr")}
    assert 3 <= len(finished) < 17  # 16 jsonl tasks + 1 of the text files
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert {n: ((out / "shards" / n).stat().st_ino, (out / "shards" / n).stat().st_mtime_ns) for n in finished} == (
        finished
    )
    tasks = _tasks(folder, 32 << 20)
    assert len(tasks) == len(list((out / "shards").glob("0*.zarr")))
    assert np.array_equal(TokenShard(out).split("val").tokens, _expected(tasks, "val"))
