"""Shared fixtures: a small random ZAYA config and models whose every weight is non-trivial."""

import importlib.util
from pathlib import Path

import pytest
import torch
from zaya_model import ZayaConfig, ZayaForCausalLM, build_model


def pytest_configure(config):
    """Compiled tests and the subprocesses they start share one compile cache (tests/inductor_cache.py); here,
    not at import, since the Triton-interpreter checks import this file in a plain Python process."""
    from inductor_cache import use_shared_inductor_cache

    use_shared_inductor_cache()


def _small_config(**overrides) -> ZayaConfig:
    """3 layers (so EDA chains through two routers), GQA 4:2, kernels 3 and 2, 4 experts + skip."""
    base = dict(num_hidden_layers=3, cca_time0=3, cca_time1=2, name="test-small")
    base.update(overrides)
    return ZayaConfig.from_preset("zaya1-tiny", **base)


@pytest.fixture
def small_config():
    """Factory: small_config(**overrides) -> ZayaConfig."""
    return _small_config


def _randomized_model(config: ZayaConfig, seed: int = 0, skip_bias: float = 0.0) -> ZayaForCausalLM:
    """A model whose scales, biases, temperatures and balancing biases are all perturbed (so a wrong
    order of operations shows up), with the skip route reachable."""
    torch.manual_seed(seed)
    model = build_model(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
        for layer in model.layers:
            router = layer.moe.router
            for linear in (router.down, router.fc1, router.fc2, router.out):  # token-dependent routing
                linear.weight.normal_(0.0, 2.0 / linear.in_features**0.5)
            router.balancing_biases[:-1].normal_(0.0, 0.01)
            router.balancing_biases[-1] = skip_bias
    return model.eval()


@pytest.fixture
def randomized_model():
    """Factory: randomized_model(config, seed=0, skip_bias=0.0) -> ZayaForCausalLM in eval mode."""
    return _randomized_model


@pytest.fixture
def hf_zaya():
    """transformers' reference ZayaForCausalLM class and config class (a test-only dependency)."""
    zaya = pytest.importorskip("transformers.models.zaya")
    return zaya.ZayaForCausalLM, zaya.ZayaConfig


def _hf_twin(model: ZayaForCausalLM, hf_zaya):
    """The HF reference model with exactly our weights."""
    from zaya_model import to_hf_state_dict

    hf_cls, hf_cfg_cls = hf_zaya
    hf_model = hf_cls(hf_cfg_cls(**model.config.to_hf_config())).eval()
    hf_model.load_state_dict(to_hf_state_dict(model), strict=True)
    return hf_model


@pytest.fixture
def hf_twin(hf_zaya):
    """Factory: hf_twin(model) -> the HF model holding the same weights."""
    return lambda model: _hf_twin(model, hf_zaya)


def _load_worker(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def load_worker():
    """Factory: load_worker(path) -> a distributed worker script as a module (its helpers, in this process)."""
    return _load_worker
