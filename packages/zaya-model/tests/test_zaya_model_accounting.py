"""Accounting: parameter counts (the paper's 8.3B / 760M), FLOPs per token, decode bytes."""

import pytest
from zaya_model import (
    ZayaConfig,
    attention_flops_per_token,
    build_model,
    count_parameters,
    decode_bytes_per_token,
    flops_per_token,
)


def test_zaya1_base_reproduces_the_paper_counts():
    """Non-embedding convention: 8.3B total, 760M active (ours: 753.6M, within 1%)."""
    count = count_parameters(ZayaConfig.from_preset("zaya1-base"))
    assert round(count.total / 1e9, 1) == 8.3
    assert count.active == pytest.approx(760e6, rel=0.01)
    assert count.embeddings == 262272 * 2048
    assert count.total_with_embeddings == count.total + count.embeddings


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"attention_bias": True, "tie_word_embeddings": False, "lm_head_bias": True},
        {"num_experts_per_tok": 3, "cca_time0": 4, "num_hidden_layers": 1},
    ],
)
def test_counts_equal_the_built_model(overrides):
    cfg = ZayaConfig.from_preset("zaya1-tiny", **overrides)
    count = count_parameters(cfg)
    model = build_model(cfg)
    assert count.total_with_embeddings == sum(p.numel() for p in model.parameters())
    expert_numel = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    inactive = expert_numel * (cfg.num_experts - cfg.num_experts_per_tok) // cfg.num_experts
    assert count.active == count.total - inactive
    assert sum(v for k, v in count.by_module.items() if k != "embeddings") == count.total


def test_flops_per_token():
    cfg = ZayaConfig.from_preset("zaya1-base")
    count = count_parameters(cfg)
    fwd = flops_per_token(cfg, 4096, training=False)
    # ~2 FLOPs per active weight plus the LM head, plus causal attention
    dense_part = fwd - attention_flops_per_token(cfg, 4096)
    assert dense_part == pytest.approx(2 * (count.active + cfg.vocab_size * cfg.hidden_size), rel=2e-3)
    assert flops_per_token(cfg, 4096, training=True) == 3 * fwd
    assert attention_flops_per_token(cfg, 4095) == 40 * 4 * 8 * 128 * 2048
    assert flops_per_token(cfg, 32768, training=False) > fwd


def test_decode_bytes_breakdown():
    cfg = ZayaConfig.from_preset("zaya1-base")
    one = decode_bytes_per_token(cfg, context_len=4096)
    assert one.expert_weights == 40 * 3 * 2048 * 2048 * 2  # one expert per layer at batch 1
    assert one.kv_cache == 40 * 2 * 256 * 4096 * 2
    assert one.conv_and_delayed_state == 40 * (2 * 1280 + 128) * 2
    assert one.dense_weights > 262272 * 2048 * 2  # the LM head is read every step
    many = decode_bytes_per_token(cfg, context_len=4096, batch_size=64)
    assert many.expert_weights == pytest.approx(16 / 1 * one.expert_weights, rel=0.02)  # ~every expert touched
    weights = lambda d: d.expert_weights + d.dense_weights  # noqa: E731
    assert weights(many) / 64 < weights(one) / 4  # weight reads are shared by the batch
    assert many.kv_cache / 64 == one.kv_cache  # the KV cache is not
