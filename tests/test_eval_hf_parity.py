"""End to end: the main job's run dir scored by lm-eval's `zaya` model equals lm-eval's `hf` model (transformers'
reference ZAYA) on the same weights exported with `zaya ckpt convert --to hf`: same tasks, same limit, same
scores, same generations. The run goes through a context extension, so the export must carry the last phase's
RoPE theta and the run tokenizer's EOS."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("transformers.models.zaya")
pytest.importorskip("ckpt_reshape")

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["zaya_stdlib_nextline", "zaya_stdlib_docstring", "zaya_stdlib_idioms", "zaya_arith", "zaya_stdlib_ppl"]
EXACT = ("acc", "acc_norm", "exact_match")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


# 32 steps of 16 x 128, then 8 steps of 16 x 256 at theta 1e5
MAIN_JOB = [
    "recipe.phases.0.tokens=65536",
    "recipe.phases.1.tokens=32768",
    "train.data.sources.library.max_files=60",
    "train.data.sources.tests.max_files=60",
    "train.data.val_fraction=0.15",
    "train.eval.sample_tokens=0",
    "train.eval.downstream.tasks=[]",
    "train.plots=false",
    "logging.progress=false",
]


def _main_job_run() -> Path:
    """The main job's run dir (the pretrain service as a subprocess, shortened by MAIN_JOB), built once and
    cached (see tests/artifact_cache.py), keyed by the service, the training sources and configs (every
    package's src/), the overrides, the stdlib it trains on (Python version and location) and torch's version.
    Only read here: the export writes into the test's own folder."""
    import sysconfig

    from trained_runs import cached_run, run_dir_key

    def build(folder: Path) -> None:
        service = [str(ROOT / "services" / "pretrain" / "main.py"), f"paths.root_dir={folder}"]
        _run(*service, f"hydra.run.dir={folder / 'run'}", *MAIN_JOB, cwd=folder)

    key = run_dir_key(ROOT / "services" / "pretrain", *MAIN_JOB, sysconfig.get_paths()["stdlib"])
    return cached_run("main-job-run", key, build) / "run"


@pytest.mark.slow
def test_zaya_model_scores_equal_the_hf_model_on_the_exported_weights(tmp_path):
    from lm_eval import simple_evaluate
    from zaya_train.evals.harness import scores, task_manager
    from zaya_train.evals.lm import ZayaLM

    run = _main_job_run()
    hf = tmp_path / "hf"
    _run("-m", "zaya_cli.app", "ckpt", "convert", str(run / "checkpoints"), str(hf), "--to", "hf", cwd=tmp_path)
    config = json.loads((hf / "config.json").read_text())
    assert config["rope_parameters"]["hybrid"]["rope_theta"] == 1e5 and config["eos_token_id"] == 256

    manager = task_manager(TASKS)
    runs = {}
    for name, model in (
        ("zaya", ZayaLM(str(run), device="cpu", batch_size=8, progress=False)),
        ("hf", f"pretrained={hf},tokenizer={run / 'tokenizer'},dtype=float32"),
    ):
        runs[name] = simple_evaluate(
            model=model if name == "zaya" else "hf",
            model_args=None if name == "zaya" else model,
            tasks=TASKS,
            task_manager=manager,
            limit=12,
            device="cpu",
            batch_size=8,
            log_samples=True,
        )
    ours, theirs = scores(runs["zaya"]), scores(runs["hf"])
    assert set(ours) == set(theirs) and len(ours) >= 15
    for key, value in ours.items():
        if key.split("/")[1] in EXACT:
            assert value == theirs[key], key
        else:
            assert value == pytest.approx(theirs[key], rel=1e-5), key
    for task in TASKS:
        for a, b in zip(runs["zaya"]["samples"][task], runs["hf"]["samples"][task], strict=True):
            if task in ("zaya_stdlib_idioms", "zaya_arith"):
                assert a["resps"] == b["resps"], (task, a["doc"])  # the same greedy text
            else:
                got = [r[0][0] if isinstance(r[0], tuple | list) else r[0] for r in a["resps"]]
                ref = [r[0][0] if isinstance(r[0], tuple | list) else r[0] for r in b["resps"]]
                assert got == pytest.approx(ref, abs=2e-3, rel=1e-5), task
    assert ours["zaya_stdlib_nextline/acc"] > 0.25  # trained: better than chance, so the parity means something
