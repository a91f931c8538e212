"""MoE dispatch (grouped GEMM vs per-expert loop vs a per-token reference) and router load balancing."""

import pytest
import torch
import torch.nn.functional as F
from zaya_model import ZayaModelError
from zaya_model.experts import ZayaExperts


def _experts(small_config, backend, top_k=1, seed=0):
    cfg = small_config(moe_backend=backend, num_experts_per_tok=top_k)
    torch.manual_seed(seed)
    experts = ZayaExperts(cfg)
    with torch.no_grad():
        experts.gate_up.normal_(0, 0.2)
        experts.down.normal_(0, 0.2)
    return experts, cfg


def _per_token_reference(experts, x, choice, weight):
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for slot in range(choice.shape[1]):
            e = int(choice[t, slot])
            if e == experts.num_experts:
                continue
            gate, up = (experts.gate_up[e] @ x[t]).chunk(2)
            out[t] += weight[t, slot] * (experts.down[e] @ (F.silu(gate) * up))
    return out


@pytest.mark.parametrize("top_k", [1, 2, 3])
@pytest.mark.parametrize("backend", ["grouped_mm", "loop"])
def test_dispatch_matches_per_token_reference(small_config, backend, top_k):
    experts, cfg = _experts(small_config, backend, top_k)
    gen = torch.Generator().manual_seed(top_k)
    x = torch.randn(11, cfg.hidden_size, generator=gen)
    scores = torch.rand(11, cfg.num_experts + 1, generator=gen)
    scores[:3, -1] = 2.0  # the first tokens take the skip class E
    choice = scores.topk(top_k, dim=-1).indices
    weight = torch.rand(11, top_k, generator=gen).masked_fill(choice == cfg.num_experts, 0.0)
    assert (choice == cfg.num_experts).any()
    got = experts(x, choice, weight)
    assert torch.allclose(got, _per_token_reference(experts, x, choice, weight), atol=1e-5)


def test_grouped_and_loop_backends_agree_on_gradients(small_config):
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(16, 64, generator=gen)
    choice = torch.randint(0, 5, (16, 2), generator=gen)
    weight = torch.rand(16, 2, generator=gen)
    grads = {}
    for backend in ("grouped_mm", "loop"):
        experts, _ = _experts(small_config, backend, top_k=2)
        xb = x.clone().requires_grad_(True)
        (experts(xb, choice, weight) ** 2).sum().backward()
        grads[backend] = (xb.grad, experts.gate_up.grad, experts.down.grad)
    for a, b in zip(grads["grouped_mm"], grads["loop"], strict=True):
        assert torch.isfinite(a).all() and torch.allclose(a, b, atol=1e-5)


def test_all_tokens_skipped_gives_zero(small_config):
    experts, cfg = _experts(small_config, "grouped_mm")
    x = torch.randn(5, cfg.hidden_size)
    choice = torch.full((5, 1), cfg.num_experts)
    assert torch.equal(experts(x, choice, torch.zeros(5, 1)), torch.zeros(5, cfg.hidden_size))


def test_top2_model_trains_a_step(small_config, randomized_model):
    model = randomized_model(small_config(num_experts_per_tok=2)).train()
    ids = torch.randint(0, 512, (2, 8))
    loss = F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
    assert torch.allclose(model.expert_load().sum(-1), torch.ones(3, dtype=torch.float64))


# ---------------------------------------------------------------------------- balancing
def test_load_counts_accumulate_over_micro_batches_and_reset(small_config, randomized_model):
    model = randomized_model(small_config()).train()
    ids = torch.randint(0, 512, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(ids)
        once = model._load_counts().clone()
        model(ids)
    assert torch.equal(model._load_counts(), 2 * once) and float(once.sum(-1)[0]) == 12
    fractions = model.update_router_biases()
    assert torch.allclose(fractions, once / 12)
    assert float(model._load_counts().sum()) == 0.0 and float(model.expert_load().sum()) == 0.0


def test_eval_forward_does_not_count(small_config, randomized_model):
    model = randomized_model(small_config()).eval()
    with torch.no_grad():
        model(torch.zeros(1, 4, dtype=torch.long))
    assert float(model.expert_load().sum()) == 0.0


def test_padding_tokens_are_not_counted(small_config, randomized_model):
    model = randomized_model(small_config()).train()
    mask = torch.tensor([[0, 0, 1, 1, 1]])
    with torch.no_grad():
        model(torch.ones(1, 5, dtype=torch.long), attention_mask=mask)
    assert torch.equal(model._load_counts().sum(-1), torch.full((3,), 3.0, dtype=torch.float64))


def test_bias_step_moves_every_class_toward_its_target(small_config, randomized_model):
    """Over-loaded classes lose bias, under-loaded gain, the skip class included; the step is zero-sum."""
    model = randomized_model(small_config(skip_rate_target=0.25), skip_bias=-0.5).train()
    router = model.layers[0].moe.router
    before = router.balancing_biases.clone()
    # Targets: 0.1875 per expert, 0.25 skip. Loads: 0.52, 0.17, 0.17, 0.0 and 0.14 on skip.
    router.load_counts.copy_(torch.tensor([30.0, 10.0, 10.0, 0.0, 8.0], dtype=torch.float64))
    model.update_router_biases()
    delta = router.balancing_biases - before
    assert delta[0] < 0 < delta[1] and delta[3] > 0 and delta[4] > 0
    assert abs(float(delta.sum())) < 1e-6


def test_bias_step_with_no_counts_changes_nothing(small_config, randomized_model):
    model = randomized_model(small_config()).train()
    before = [layer.moe.router.balancing_biases.clone() for layer in model.layers]
    model.update_router_biases()
    for layer, b in zip(model.layers, before, strict=True):
        assert torch.equal(layer.moe.router.balancing_biases, b)
        assert float(layer.moe.router.bias_steps) == 0.0


@pytest.mark.parametrize(("target", "value"), [(None, 0.2), (0.0, 0.0), (0.3, 0.3)])
def test_skip_target_resolves_from_config(small_config, target, value):
    assert small_config(skip_rate_target=target).skip_target == pytest.approx(value)


@pytest.mark.parametrize("bad", [1.0, -0.1, True])
def test_skip_target_is_validated(small_config, bad):
    with pytest.raises(ZayaModelError, match=r"model\.skip_rate_target"):
        small_config(skip_rate_target=bad)


@pytest.mark.parametrize("target", [None, 0.1])
def test_skip_rate_converges_to_its_target_with_uniform_experts(small_config, randomized_model, target):
    """Closed loop on a tiny model: from a skip bias of -1 (never skipping) the skip rate rises to the target
    within a few hundred seeded steps while the experts share the rest evenly."""
    cfg = small_config(num_hidden_layers=2, skip_rate_target=target)
    model = randomized_model(cfg, seed=0, skip_bias=-1.0).train()
    gen = torch.Generator().manual_seed(0)
    history = []
    for _ in range(240):
        with torch.no_grad():
            model(torch.randint(0, cfg.vocab_size, (8, 32), generator=gen))
        history.append(model.update_router_biases())
    assert float(history[0][:, -1].max()) == 0.0  # the skip route starts unreachable
    settled = torch.stack(history[-60:]).mean(0)  # [L, E + 1]
    s = cfg.skip_target
    assert torch.allclose(settled[:, -1], torch.full((2,), s, dtype=settled.dtype), atol=0.02), settled
    experts = settled[:, :-1]
    assert torch.allclose(experts, torch.full_like(experts, (1 - s) / cfg.num_experts), atol=0.035), settled


def test_balancing_evens_out_a_skewed_router(small_config, randomized_model):
    """Closed loop: repeated steps on the same data shrink the max/min expert load ratio."""
    cfg = small_config(bias_update_rate=0.05)
    model = randomized_model(cfg, seed=1, skip_bias=-10.0).train()  # skip far out of reach
    ids = torch.randint(0, 512, (4, 16), generator=torch.Generator().manual_seed(1))

    def spread():
        with torch.no_grad():
            model(ids)
        load = model.expert_load()[:, :-1]
        return float((load.max(-1).values - load.min(-1).values).mean())

    first = spread()
    model.update_router_biases()
    for _ in range(40):
        spread()
        model.update_router_biases()
    assert spread() < 0.5 * first
