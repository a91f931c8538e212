"""Muon against an SVD reference, the AdamW half of Muon against torch's AdamW, parameter groups, schedules."""

import itertools
import math

import pytest
import torch
from torch import nn
from zaya_train.config import OptimizerConfig
from zaya_train.optim import (
    Muon,
    build_optimizer,
    classify_parameters,
    newton_schulz,
    warmup_cosine,
    warmup_stable_decay,
)
from zaya_train.optim.muon import CUBIC


def _polar(g: torch.Tensor) -> torch.Tensor:
    u, _, vh = torch.linalg.svd(g.double(), full_matrices=False)
    return (u @ vh).float()


@pytest.mark.parametrize("shape", [(16, 16), (24, 8), (8, 40)])
def test_cubic_newton_schulz_converges_to_the_svd_polar_factor(shape):
    g = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    ortho = newton_schulz(g, steps=60, coefficients=CUBIC)
    assert torch.allclose(ortho, _polar(g), atol=1e-4)


@pytest.mark.parametrize("shape", [(32, 32), (48, 16), (3, 16, 24)])
def test_quintic_newton_schulz_keeps_singular_vectors_and_squeezes_singular_values(shape):
    g = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    ortho = newton_schulz(g, steps=5).double()
    u, s, vh = torch.linalg.svd(g.double(), full_matrices=False)
    # In G's singular bases the result must be diagonal, with entries near 1 (the quintic's band).
    core = u.mT @ ortho @ vh.mT
    diag = torch.diagonal(core, dim1=-2, dim2=-1)
    off = core - torch.diag_embed(diag)
    assert off.abs().max() < 1e-5
    assert diag.min() > 0.6 and diag.max() < 1.25
    # and it is far from G itself: the spread of singular values is gone
    assert (s.max(-1).values / s.min(-1).values).min() > 3 > (diag.max(-1).values / diag.min(-1).values).max()


def test_muon_step_matches_a_hand_computed_update():
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(8, 12))
    w0 = w.detach().clone()
    opt = Muon([{"params": [w], "use_muon": True}], lr=0.1, weight_decay=0.5, momentum=0.9, nesterov=True)
    grads = [torch.randn(8, 12) for _ in range(2)]
    buf = torch.zeros_like(w0)
    expected = w0.clone()
    for g in grads:
        w.grad = g.clone()
        opt.step()
        buf = 0.9 * buf + 0.1 * g
        update = 0.1 * g + 0.9 * buf
        expected = expected * (1 - 0.1 * 0.5) - 0.1 * 0.2 * math.sqrt(12) * newton_schulz(update)
    assert torch.allclose(w.detach(), expected, atol=1e-6)
    # the RMS-matching scale: update RMS ~ 0.2 like an AdamW step, so one LR serves both kinds
    rms = (newton_schulz(update) * 0.2 * math.sqrt(12)).pow(2).mean().sqrt()
    assert 0.1 < rms < 0.3


def test_muon_adamw_groups_match_torch_adamw():
    torch.manual_seed(0)
    a = nn.Parameter(torch.randn(5))
    b = nn.Parameter(a.detach().clone())
    ours = Muon([{"params": [a], "use_muon": False}], lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-8)
    ref = torch.optim.AdamW([b], lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-8)
    for _ in range(4):
        g = torch.randn(5)
        a.grad, b.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    assert torch.allclose(a, b, atol=1e-6)


def test_parameter_classification_on_zaya_model():
    from zaya_model import ZayaConfig, build_model

    model = build_model(ZayaConfig.from_preset("zaya1-tiny"))
    kinds = {kind.name: kind for _, kind in classify_parameters(model)}
    assert not kinds["embed.weight"].matrix and not kinds["embed.weight"].decay  # tied with lm_head: once
    assert "lm_head.weight" not in kinds
    matrices = [n for n, k in kinds.items() if k.matrix]
    assert matrices and all(kinds[n].decay for n in matrices)
    for name, kind in kinds.items():
        p = dict(model.named_parameters())[name]
        if p.ndim < 2:
            assert not kind.matrix and not kind.decay, name  # norms, biases, scales, router vectors
    opt = build_optimizer(model, OptimizerConfig(name="muon"))
    assert {g["group_name"] for g in opt.param_groups} >= {"muon", "adamw_no_decay"}
    assert sum(len(g["params"]) for g in opt.param_groups) == len(kinds)


def test_schedules_hit_their_anchor_points():
    assert warmup_cosine(0.0, 1.0, 0.1, 0.1) == 0.0
    assert warmup_cosine(0.05, 1.0, 0.1, 0.1) == pytest.approx(0.5)
    assert warmup_cosine(0.1, 1.0, 0.1, 0.1) == pytest.approx(1.0)
    assert warmup_cosine(0.55, 1.0, 0.1, 0.1) == pytest.approx(0.55)  # cosine midpoint = mean of peak and end
    assert warmup_cosine(1.0, 1.0, 0.1, 0.1) == pytest.approx(0.1)
    wsd = [warmup_stable_decay(p, 1.0, 0.0, 0.1, 0.2) for p in (0.05, 0.1, 0.5, 0.8, 0.9, 1.0)]
    assert wsd == pytest.approx([0.5, 1.0, 1.0, 1.0, 0.5, 0.0])
    values = [warmup_cosine(i / 100, 1.0, 0.1, 0.1) for i in range(10, 101)]
    assert all(a >= b for a, b in itertools.pairwise(values))  # monotone after warmup
