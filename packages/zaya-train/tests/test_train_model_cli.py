"""`zaya model generate` as a real subprocess on a trained run dir (its checkpoint, phase and tokenizer): the
streamed text is what `model.generate` gives; a HF folder with a tokenizer.json and clear errors in-process, on
the same typer app (the run-dir test already starts the entry point; a process start adds nothing there)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch


def _generate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zaya_train.model_cli", "generate", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=None if env is None else {**os.environ, **env},
    )


def _generate_in_process(*args: str):
    """`generate` on the same typer app, in this process (typer's runner): its exit code and stderr."""
    from typer.testing import CliRunner
    from zaya_train.model_cli import model_app

    return CliRunner().invoke(model_app, ["generate", *args])


def _train_run(make_trainer, folder: Path) -> None:
    """6 steps of the byte-tokenizer tiny model into `folder/run`, checkpoints at 4 and 6, config.yaml as the
    pretrain service writes it (the model, train and recipe groups); the final weights in `folder/final.pt`."""
    from omegaconf import OmegaConf
    from zaya_model import ZayaConfig
    from zaya_train.config import CheckpointConfig

    run = folder / "run"
    trainer = make_trainer(run_dir=run, checkpoint=CheckpointConfig(every_steps=4), max_steps=6)
    trainer.run()
    groups = {"model": ZayaConfig.from_preset("zaya1-tiny"), "train": trainer.cfg, "recipe": trainer.recipe}
    (run / "config.yaml").write_text(OmegaConf.to_yaml({k: OmegaConf.structured(v) for k, v in groups.items()}))
    torch.save({k: v.detach().clone() for k, v in trainer.model.state_dict().items()}, folder / "final.pt")


@pytest.fixture
def trained(make_trainer) -> tuple[Path, dict[str, torch.Tensor]]:
    """A real run dir (see `_train_run`) and the weights the run ended with. Built once and cached (shared by
    this file's tests and later sessions), keyed by the training sources, conftest.py and `_train_run`; the
    tests only read it."""
    import inspect

    from trained_runs import cached_run, run_dir_key

    key = run_dir_key(Path(__file__).with_name("conftest.py"), inspect.getsource(_train_run))
    folder = cached_run("zaya-train-generate-run", key, lambda folder: _train_run(make_trainer, folder))
    return folder / "run", torch.load(folder / "final.pt", weights_only=True)


@pytest.mark.slow
def test_generate_from_a_run_dir_streams_what_the_model_generates(trained):
    from zaya_train.trained_model import load_trained

    run_dir, _ = trained
    proc = _generate(str(run_dir), "--prompt", "def ", "-n", "24", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "checkpoint step 6" in proc.stderr and "tokens/s" in proc.stderr
    loaded = load_trained(run_dir, torch.device("cpu"), torch.float32)
    tok = loaded.tokenizer
    ids = torch.as_tensor(tok.encode("def "), dtype=torch.long)[None]

    def expected(n: int) -> str:
        out = loaded.model.generate(ids, n, eos_token_id=tok.eos_id)[0, ids.shape[1] :].tolist()
        return "def " + tok.decode(out[: out.index(tok.eos_id)] if tok.eos_id in out else out) + "\n"

    assert proc.stdout == expected(24)
    wrong = _generate_in_process(str(run_dir), "--prompt", "def ", "-n", "2", "--device", "cpu", "--kernels", "cuda")
    assert wrong.exit_code == 2 and "kernels='cuda' is not one of torch, triton" in wrong.stderr
    if importlib.util.find_spec("triton") is None:
        return
    # the fused Triton layers (run by Triton's interpreter on this CPU: slow, so fewer tokens) stream the same text
    args = (str(run_dir), "--prompt", "def ", "-n", "6", "--device", "cpu", "--kernels", "triton")
    fused = _generate(*args, env={"TRITON_INTERPRET": "1"})
    assert fused.returncode == 0, fused.stderr[-2000:]
    assert fused.stdout == expected(6) and "triton kernels" in fused.stderr


@pytest.mark.slow
def test_a_run_dir_loads_the_weights_the_run_ended_with(trained):
    from zaya_model import hf_keys
    from zaya_train.trained_model import load_trained

    run_dir, final = trained
    loaded = load_trained(run_dir, torch.device("cpu"), torch.float32).model.state_dict()
    weights = [k for k in final if not k.endswith(hf_keys.OURS_ONLY_SUFFIXES)]
    assert weights and all(torch.equal(loaded[k], final[k]) for k in weights)


def test_generate_from_a_hf_folder_with_its_tokenizer(tmp_path):
    from zaya_model import ZayaConfig, build_model, save_hf
    from zaya_train.data.tokenizers import train_bpe

    texts = [f"def f{i}(x):\n    return x + {i}\n" for i in range(200)]
    tok_file = train_bpe(texts, 300, "<|endoftext|>", tmp_path / "hf" / "tokenizer.json")
    from tokenizers import Tokenizer

    eos = Tokenizer.from_file(str(tok_file)).token_to_id("<|endoftext|>")
    torch.manual_seed(0)
    save_hf(build_model(ZayaConfig.from_preset("zaya1-tiny", eos_token_id=eos)), tmp_path / "hf")
    proc = _generate_in_process(
        str(tmp_path / "hf"), "--prompt", "def f", "-n", "8", "--temperature", "0.8", "--top-p", "0.9"
    )
    assert proc.exit_code == 0, (proc.stderr[-2000:], proc.exception)
    assert proc.stdout.startswith("def f") and str(tmp_path / "hf") in proc.stderr


def test_bad_inputs_fail_with_one_clear_line(tmp_path):
    proc = _generate_in_process(str(tmp_path), "--prompt", "x")
    assert proc.exit_code == 2 and "neither a run dir" in proc.stderr
    proc = _generate_in_process(str(tmp_path), "--prompt", "x", "--dtype", "fp8")
    assert proc.exit_code == 2 and "--dtype 'fp8'" in proc.stderr


def test_a_bpe_run_finds_its_trained_tokenizer_again(make_trainer, tiny_sources, tmp_path):
    from omegaconf import OmegaConf
    from zaya_train.config import DataConfig, TokenizerConfig
    from zaya_train.trained_run import find_bpe_tokenizer

    data = DataConfig(
        sources=dict(tiny_sources),
        val_fraction=0.2,
        tokenizer=TokenizerConfig(kind="bpe", vocab_size=300),
        cache_dir=str(tmp_path / "cache"),
    )
    trainer = make_trainer(data=data)
    cfg = OmegaConf.create({"train": OmegaConf.structured(trainer.cfg)})
    found = find_bpe_tokenizer(OmegaConf.to_container(cfg), trainer.cfg.data.tokenizer)
    assert found.describe() == trainer.data.tokenizer.describe()  # the same file: same fingerprint and path
