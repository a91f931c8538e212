"""Accounting: parameter counts (the paper's 8.3B / 760M), FLOPs per token, decode bytes, step traffic."""

import dataclasses

import pytest
from zaya_model import (
    ZayaConfig,
    ZayaModelError,
    attention_flops_per_token,
    build_model,
    count_parameters,
    decode_bytes_per_token,
    flops_per_token,
    step_traffic,
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


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_step_traffic_splits_the_accounted_step_per_layer_and_sequence(phase):
    """Per-layer parts times layers (and sequences), plus the head, add back up to the step's total."""
    cfg = ZayaConfig.from_preset("zaya1-base")
    t = step_traffic(cfg, phase, batch=4, ctx=1024)
    per_sequence = t.kv_read_bytes_per_sequence + (t.kv_write_bytes_per_sequence if phase == "prefill" else 0)
    rebuilt = (
        t.layers * (t.dense_bytes_per_layer + t.active_experts_per_layer * t.expert_bytes)
        + t.head_bytes
        + t.layers * t.batch_size * (per_sequence + t.state_bytes_per_sequence)
    )
    assert rebuilt == pytest.approx(t.accounting_bytes, rel=1e-6)
    assert t.tokens == (4 if phase == "decode" else 4 * 1024) and t.state_read == (phase == "decode")
    assert t.experts_per_layer == cfg.num_experts and 0 < t.active_experts_per_layer <= cfg.num_experts
    if phase == "decode":
        assert t.accounting_bytes == decode_bytes_per_token(cfg, 1024, 4).total
        assert t.kv_write_bytes_per_sequence * 1024 == t.kv_read_bytes_per_sequence
    assert set(t.per_layer()) == {f.name for f in dataclasses.fields(t)} - {"accounting_bytes", "flops"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("decoding", 1, 8), "step_traffic phase = 'decoding'; allowed: one of 'decode', 'prefill'"),
        (("decode", 0, 8), "step_traffic batch = 0, dtype_bytes = 2; both must be >= 1"),
        (("prefill", 1, 0), "step_traffic ctx = 0; a decode needs >= 0 cached positions, a prefill >= 1 token"),
    ],
)
def test_step_traffic_rejects_bad_arguments_by_name(args, message):
    with pytest.raises(ZayaModelError) as err:
        step_traffic(ZayaConfig.from_preset("zaya1-tiny"), *args)
    assert str(err.value) == message
