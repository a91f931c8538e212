"""The decoder block compiles (one graph with the grouped-GEMM MoE), and bf16 autocast keeps fp32 logits."""

import pytest
import torch
from zaya_model.layers import rope_cos_sin


def _block_inputs(model, B=2, T=7, dtype=torch.float32):
    gen = torch.Generator().manual_seed(0)
    resid = torch.randn(B, T, model.config.hidden_size, generator=gen)
    rope = rope_cos_sin(torch.arange(T).expand(B, T), model.rope_inv_freq)
    prev = torch.randn(B, T, model.config.router_hidden_size, generator=gen).to(dtype)
    return resid, prev, rope


@pytest.mark.slow
def test_block_compiles_fullgraph_and_matches_eager(small_config, randomized_model):
    """bf16 weights, as on the GPU: the grouped GEMM's compile-time checks want bf16."""
    torch._dynamo.reset()
    model = randomized_model(small_config(moe_backend="grouped_mm"), skip_bias=0.0).train()
    block = model.layers[1].to(torch.bfloat16)
    resid, prev, rope = _block_inputs(model, dtype=torch.bfloat16)
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    outs, grads = [], []
    for fn in (block, compiled):
        block.zero_grad()
        x = resid.clone().requires_grad_(True)
        out, state, _counts = fn(x, prev, rope)
        (out.square().mean() + state.square().mean()).backward()
        outs.append(out.detach())
        grads.append([x.grad] + [p.grad.clone() for p in block.parameters()])
    assert torch.allclose(outs[0], outs[1], atol=2e-2, rtol=2e-2)
    for a, b in zip(grads[0], grads[1], strict=True):
        assert torch.allclose(a.float(), b.float(), atol=2e-2, rtol=5e-2)


@pytest.mark.slow
def test_compile_blocks_keeps_the_model_function(small_config, randomized_model):
    torch._dynamo.reset()
    model = randomized_model(small_config())
    ids = torch.randint(0, 512, (2, 6), generator=torch.Generator().manual_seed(1))
    keys = list(model.state_dict())
    with torch.no_grad():
        eager = model(ids)
        compiled = model.compile_blocks(backend="aot_eager")(ids)
    assert torch.allclose(eager, compiled, atol=1e-5)
    assert list(model.state_dict()) == keys  # compiled in place: checkpoints and HF export keep their names


def test_bf16_autocast_returns_fp32_logits_close_to_fp32(small_config, randomized_model):
    model = randomized_model(small_config())
    ids = torch.randint(0, 512, (2, 6), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = model(ids)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = model(ids)
    assert low.dtype == torch.float32
    assert (low - ref).abs().max() < 0.1 * ref.abs().max()
