"""The kernel choice (`ZayaConfig.kernels`): validated on any machine; on a GPU, liger's kernels against the
reference path (ZayaRMSNorm's fp32 norm, loss.py's fused chunked loss), each measured difference printed."""

import importlib.util

import pytest
import torch
from zaya_model import ZayaConfig, build_model
from zaya_model.errors import ZayaModelConfigError
from zaya_model.kernels import liger_linear_cross_entropy, liger_rms_norm, uses_liger
from zaya_model.layers import ZayaRMSNorm
from zaya_model.loss import fused_linear_cross_entropy

HAS_LIGER = importlib.util.find_spec("liger_kernel") is not None
needs_liger_gpu = pytest.mark.skipif(not (torch.cuda.is_available() and HAS_LIGER), reason="needs CUDA + liger")


def test_unknown_kernels_value_is_named_with_the_choices():
    with pytest.raises(ZayaModelConfigError, match=r"kernels = 'ligr'; allowed: one of 'torch', 'liger'"):
        ZayaConfig.from_preset("zaya1-tiny", kernels="ligr")


def test_liger_without_the_extra_names_the_install(monkeypatch):
    real = importlib.util.find_spec  # as on a machine without the extra, whatever this one has
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "liger_kernel" else real(name))
    with pytest.raises(ZayaModelConfigError, match=r"needs liger-kernel.*zaya-model\[kernels\]"):
        ZayaConfig.from_preset("zaya1-tiny", kernels="liger_loss")


@pytest.mark.skipif(not HAS_LIGER, reason="liger-kernel not installed")
def test_cpu_tensors_keep_the_reference_path_under_liger(small_config):
    torch.manual_seed(0)
    ref = build_model(small_config())
    fused = build_model(small_config(kernels="liger"))
    fused.load_state_dict(ref.state_dict())
    ids = torch.randint(0, ref.config.vocab_size, (2, 17))
    assert torch.equal(ref(ids[:, :-1], labels=ids[:, 1:]), fused(ids[:, :-1], labels=ids[:, 1:]))


def test_each_choice_selects_its_ops():
    assert [uses_liger(k, "norm") for k in ("torch", "liger", "liger_norm", "liger_loss")] == [0, 1, 1, 0]
    assert [uses_liger(k, "loss") for k in ("torch", "liger", "liger_norm", "liger_loss")] == [0, 1, 0, 1]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max() / b.float().abs().max())


@pytest.mark.gpu
@needs_liger_gpu
@pytest.mark.parametrize("weight_dtype", [torch.float32, torch.bfloat16])
def test_liger_rms_norm_matches_zaya_rms_norm(weight_dtype):
    """fp32 residual stream in; fp32 weights (Trainer: master weights) or bf16 (model alone)."""
    torch.manual_seed(0)
    norm = ZayaRMSNorm(2048, 1e-5).cuda().to(weight_dtype)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(4, 512, 2048, device="cuda") * 3
    grad = torch.randn(4, 512, 2048, device="cuda", dtype=weight_dtype)
    x_ref, x_lig = x.clone().requires_grad_(), x.clone().requires_grad_()
    y_ref = norm(x_ref)
    (y_ref * grad).sum().backward()
    w_ref, norm.weight.grad = norm.weight.grad, None
    y_lig = liger_rms_norm(x_lig, norm.weight, norm.eps)
    (y_lig * grad).sum().backward()
    diffs = {"y": _rel(y_lig, y_ref), "dx": _rel(x_lig.grad, x_ref.grad), "dw": _rel(norm.weight.grad, w_ref)}
    print(f"liger RMSNorm vs ZayaRMSNorm, weights {weight_dtype}: max |diff| / max |ref| {diffs}")
    assert y_lig.dtype == y_ref.dtype == weight_dtype
    tol = 1e-5 if weight_dtype == torch.float32 else 1e-2  # bf16: one rounding of the normalised value
    assert diffs["y"] < tol and diffs["dx"] < tol and diffs["dw"] < tol, diffs


@pytest.mark.gpu
@needs_liger_gpu
@pytest.mark.parametrize("autocast", [False, True])
def test_liger_linear_cross_entropy_matches_the_fused_chunked_loss(autocast):
    """bf16 weights (model alone) or fp32 master weights under bf16 autocast (the Trainer); ignored labels."""
    torch.manual_seed(0)
    dtype = torch.float32 if autocast else torch.bfloat16
    h = (torch.randn(6000, 512, device="cuda") * 2).to(dtype)
    w = (torch.randn(32768, 512, device="cuda") * 0.05).to(dtype)
    labels = torch.randint(0, 32768, (6000,), device="cuda")
    labels[::7] = -100
    grads = {}
    for name, fn in (("ref", fused_linear_cross_entropy), ("liger", liger_linear_cross_entropy)):
        hh, ww = h.clone().requires_grad_(), w.clone().requires_grad_()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = fn(hh, ww, None, labels, -100, 2048)
        loss.backward()
        grads[name] = (loss.detach(), hh.grad, ww.grad)
    (l_ref, h_ref, w_ref), (l_lig, h_lig, w_lig) = grads["ref"], grads["liger"]
    diffs = {"loss": abs(float(l_lig - l_ref)), "dh": _rel(h_lig, h_ref), "dw": _rel(w_lig, w_ref)}
    print(f"liger FLCE vs fused chunked loss, autocast={autocast}: {diffs} (loss {float(l_ref):.4f})")
    assert l_lig.dtype == torch.float32 and h_lig.dtype == dtype and w_lig.dtype == dtype
    assert diffs["loss"] < 2e-3 and diffs["dh"] < 2e-2 and diffs["dw"] < 2e-2, diffs


@pytest.mark.gpu
@needs_liger_gpu
def test_compiled_liger_model_matches_the_torch_model_without_graph_breaks(small_config):
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    ref = build_model(small_config(num_hidden_layers=2)).cuda()
    fused = build_model(small_config(num_hidden_layers=2, kernels="liger")).cuda()
    fused.load_state_dict(ref.state_dict())
    ids = torch.randint(0, ref.config.vocab_size, (2, 257), device="cuda")
    out = {}
    for name, model in (("ref", ref), ("liger", fused)):
        torch._dynamo.reset()
        counters.clear()
        model.compile_blocks()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids[:, :-1], labels=ids[:, 1:])
        loss.backward()
        out[name] = (float(loss), model.final_norm.weight.grad.clone(), sum(counters["graph_break"].values()))
    print(
        f"compiled, autocast: loss ref {out['ref'][0]:.6f} liger {out['liger'][0]:.6f}, graph breaks {out['liger'][2]}"
    )
    assert abs(out["ref"][0] - out["liger"][0]) < 1e-3
    assert _rel(out["liger"][1], out["ref"][1]) < 2e-2
    assert out["liger"][2] == out["ref"][2]  # liger's ops add no graph break to the compiled blocks
