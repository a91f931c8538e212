"""Synthetic checkpoints for ckpt-reshape's tests: real files written by torch.distributed.checkpoint."""

import importlib.metadata
import importlib.util
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch


def synthetic_state(seed: int = 0, experts: int = 8, layers: int = 4) -> dict:
    """A small MoE-shaped state: bf16 and fp32 weights, stacked experts, Adam state, param groups, train dict."""
    g = torch.Generator().manual_seed(seed)
    model = {"embed_tokens.weight": torch.randn(96, 32, generator=g).to(torch.bfloat16)}
    for i in range(layers):
        p = f"layers.{i}."
        model[p + "attn.wqkv.weight"] = torch.randn(48, 32, generator=g)
        model[p + "attn.out.weight"] = torch.randn(32, 32, generator=g).to(torch.bfloat16)
        model[p + "experts.gate_up"] = torch.randn(experts, 16, 32, generator=g).to(torch.bfloat16)
        model[p + "norm.weight"] = torch.randn(32, generator=g)
        model[p + "router.count"] = torch.arange(experts, dtype=torch.int64)
    model["final_norm.weight"] = torch.randn(32, generator=g)
    state = {
        name: {
            "step": torch.tensor(7.0),
            "exp_avg": torch.randn(t.shape, generator=g),
            "exp_avg_sq": torch.rand(t.shape, generator=g),
        }
        for name, t in model.items()
        if t.is_floating_point()
    }
    groups = [{"lr": 3e-4, "betas": (0.9, 0.95), "params": sorted(state)}]
    return {"model": model, "optim": {"state": state, "param_groups": groups}, "train": {"step": 7, "tokens": 1234}}


def save_dcp(state: dict, folder: Path) -> Path:
    """Write `state` with the real torch.distributed.checkpoint (single process)."""
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save(state, checkpoint_id=folder, no_dist=True)
    return folder


@pytest.fixture
def src_state() -> dict:
    return synthetic_state()


@pytest.fixture
def src_dcp(tmp_path: Path, src_state: dict) -> Path:
    """A single-rank DCP checkpoint of `synthetic_state()`."""
    return save_dcp(src_state, tmp_path / "src.dcp")


def tree_files(path: Path) -> dict[str, bytes]:
    """Every file under path (or the file itself) with its bytes, to prove a source was not modified."""
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def write_dcp():
    """Factory: write_dcp(state, folder) -> folder, through the real torch.distributed.checkpoint."""
    return save_dcp


@pytest.fixture
def snapshot():
    """Factory: snapshot(path) -> {relative file: bytes}, to prove a source was left untouched."""
    return tree_files


MEGATRON_WRITER = Path(__file__).with_name("megatron_writer.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_megatron_writer(*args: str) -> None:
    """megatron_writer.py on 2 gloo ranks (torchrun's launcher), with `args`."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
           str(_free_port()), str(MEGATRON_WRITER), *args]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="session")
def megatron_dir() -> Path:
    """Megatron-Core torch_dist checkpoints written by megatron-core itself (megatron_writer.py on 2 gloo ranks:
    tp2/, pp2/, ep2/, distopt/ and each layout's `<name>.reference.pt`), built once per cache
    (tests/artifact_cache.py, keyed by the writer's source and the megatron-core, torch and Python versions)."""
    pytest.importorskip("megatron.core")
    from artifact_cache import cached_artifact, content_hash

    versions = ",".join(importlib.metadata.version(p) for p in ("megatron-core", "torch"))
    key = content_hash(MEGATRON_WRITER, versions, sys.version)
    return cached_artifact("ckpt-reshape-megatron", key, lambda folder: run_megatron_writer("--out", str(folder)))


@pytest.fixture(scope="session")
def megatron_launch():
    """`run_megatron_writer`: megatron_writer.py on 2 gloo ranks with the given arguments."""
    return run_megatron_writer


@pytest.fixture(scope="session")
def megatron_writer():
    """megatron_writer.py as a module (its model and `load_reference`, for loading with megatron in-process)."""
    spec = importlib.util.spec_from_file_location("megatron_writer", MEGATRON_WRITER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
