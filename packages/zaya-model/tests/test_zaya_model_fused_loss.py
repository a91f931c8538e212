"""The fused head + loss (gradients computed in forward) against plain autograd over the full logits."""

import pytest
import torch
import torch.nn.functional as F
from zaya_model.loss import chunked_cross_entropy, cross_entropy_chunk, fused_linear_cross_entropy


def _inputs(N=37, D=16, V=50, bias=True, seed=0):
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(N, D, generator=gen, requires_grad=True)
    weight = torch.randn(V, D, generator=gen, requires_grad=True)
    b = torch.randn(V, generator=gen, requires_grad=True) if bias else None
    labels = torch.randint(0, V, (N,), generator=gen)
    labels[::5] = -100
    return hidden, weight, b, labels


def _grads(loss, tensors):
    return torch.autograd.grad(loss, [t for t in tensors if t is not None])


@pytest.mark.parametrize("chunk", [8, 37, 1000])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_loss_and_gradients_equal_plain_autograd(chunk, bias):
    hidden, weight, b, labels = _inputs(bias=bias)
    ref = F.cross_entropy(F.linear(hidden, weight, b), labels, ignore_index=-100)
    fused = fused_linear_cross_entropy(hidden, weight, b, labels, chunk_tokens=chunk)
    assert torch.allclose(fused, ref, atol=1e-5, rtol=1e-5)
    for g_ref, g_fused in zip(_grads(ref, (hidden, weight, b)), _grads(fused * 3.0, (hidden, weight, b)), strict=True):
        assert torch.allclose(3.0 * g_ref, g_fused, atol=1e-5, rtol=1e-5)


def test_fused_loss_without_grad_is_the_chunked_forward():
    hidden, weight, b, labels = _inputs()
    with torch.no_grad():
        fused = fused_linear_cross_entropy(hidden, weight, b, labels, chunk_tokens=10)
        plain = chunked_cross_entropy(hidden, weight, b, labels, chunk_tokens=10)
    assert torch.allclose(fused, plain, atol=1e-6)


def test_every_label_ignored_gives_zero_loss_and_gradient():
    hidden, weight, b, labels = _inputs()
    loss = fused_linear_cross_entropy(hidden, weight, b, torch.full_like(labels, -100), chunk_tokens=8)
    assert float(loss.detach()) == 0.0
    assert all(float(g.abs().max()) == 0.0 for g in _grads(loss, (hidden, weight, b)))


def test_chunk_gradient_is_softmax_minus_one_hot():
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(6, 11, generator=gen)
    labels = torch.tensor([0, 3, -100, 10, 5, 5])
    loss, grad = cross_entropy_chunk(logits, labels, -100, torch.tensor(0.25))
    x = logits.clone().requires_grad_(True)
    ref = F.cross_entropy(x, labels, ignore_index=-100, reduction="sum")
    (ref * 0.25).backward()
    assert torch.allclose(loss, ref.detach(), atol=1e-6) and torch.allclose(grad, x.grad, atol=1e-6)


def test_bf16_autocast_runs_the_head_in_bf16_and_returns_fp32_gradients():
    hidden, weight, b, labels = _inputs(N=64, D=32, V=40)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = fused_linear_cross_entropy(hidden, weight, b, labels, chunk_tokens=16)
    ref = F.cross_entropy(F.linear(hidden, weight, b), labels)
    assert loss.dtype == torch.float32 and abs(float(loss) - float(ref)) < 0.05 * float(ref)
    grads = _grads(loss, (hidden, weight, b))
    assert [g.dtype for g in grads] == [torch.float32] * 3
    for g, g_ref in zip(grads, _grads(ref, (hidden, weight, b)), strict=True):
        assert (g - g_ref).norm() < 0.05 * g_ref.norm()


def test_model_forward_with_labels_gives_the_loss_and_gradients_of_the_plain_path(small_config, randomized_model):
    """fp32: `model(ids, labels=...)` (fused) and F.cross_entropy over `model(ids)` agree to 1e-5."""
    model = randomized_model(small_config()).train()
    ids = torch.randint(0, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(4))
    labels = torch.randint(0, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(5))
    grads = []
    for fused in (False, True):
        model.zero_grad()
        if fused:
            loss = model(ids, labels=labels)
        else:
            loss = F.cross_entropy(model(ids).flatten(0, 1), labels.flatten())
        loss.backward()
        grads.append((float(loss), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (plain_loss, plain), (fused_loss, fused) = grads
    assert fused_loss == pytest.approx(plain_loss, rel=1e-6)
    for name, g in plain.items():
        assert torch.allclose(g, fused[name], atol=1e-5, rtol=1e-5), name


def test_labels_must_match_the_input_shape(small_config, randomized_model):
    from zaya_model import ZayaModelError

    model = randomized_model(small_config())
    ids = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ZayaModelError, match="labels must have the shape"):
        model(ids, labels=ids[:, :-1])


@pytest.mark.gpu
def test_compiled_fused_loss_on_gpu_in_bf16_matches_fp32_autograd():
    """The inductor-compiled chunk kernel (what training runs on CUDA) against fp32 autograd on the CPU."""
    hidden, weight, _, labels = _inputs(N=3000, D=256, V=5000, bias=False)
    ref = F.cross_entropy(F.linear(hidden, weight), labels)
    ref_grads = _grads(ref, (hidden, weight))
    h, w = (t.detach().cuda().requires_grad_(True) for t in (hidden, weight))
    kernel = torch.compile(cross_entropy_chunk)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = fused_linear_cross_entropy(h, w, None, labels.cuda(), chunk_tokens=1024, chunk_fn=kernel)
    assert abs(float(loss.detach()) - float(ref)) < 1e-2 * float(ref)
    for g, g_ref in zip(_grads(loss, (h, w)), ref_grads, strict=True):
        assert g.dtype == torch.float32 and ((g.cpu() - g_ref).norm() / g_ref.norm()) < 2e-2
