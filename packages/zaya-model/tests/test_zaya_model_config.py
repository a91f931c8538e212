"""ZayaConfig: presets, validation at construction, HF config.json mapping, the Hydra `model` group."""

import pytest
from zaya_model import ZayaConfig, ZayaModelError, build_model


@pytest.mark.parametrize(
    ("preset", "layers", "context", "theta"),
    [("zaya1-base", 40, 4096, 1e4), ("zaya1-8b-32k", 40, 32768, 1e6), ("zaya1-tiny", 2, 256, 1e4)],
)
def test_presets(preset, layers, context, theta):
    cfg = ZayaConfig.from_preset(preset)
    assert (cfg.name, cfg.num_hidden_layers, cfg.max_position_embeddings, cfg.rope_theta) == (
        preset,
        layers,
        context,
        theta,
    )


def test_base_preset_has_the_paper_dims():
    cfg = ZayaConfig.from_preset("zaya1-base")
    assert (cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim) == (2048, 8, 2, 128)
    assert (cfg.num_experts, cfg.moe_intermediate_size, cfg.router_hidden_size, cfg.vocab_size) == (
        16,
        2048,
        256,
        262272,
    )


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"num_attention_heads": 6, "num_key_value_heads": 4}, "num_attention_heads = 6"),
        ({"num_experts_per_tok": 5}, "num_experts_per_tok = 5"),
        ({"head_dim": 6, "partial_rotary_factor": 0.5}, "head_dim = 6"),
        ({"partial_rotary_factor": 1.5}, "partial_rotary_factor = 1.5"),
        ({"hidden_size": 0}, "hidden_size = 0"),
        ({"moe_backend": "cuda-magic"}, "moe_backend = 'cuda-magic'"),
        ({"eos_token_id": 10_000}, "eos_token_id = 10000"),
    ],
)
def test_inconsistent_configs_fail_at_construction(overrides, needle):
    with pytest.raises(ZayaModelError, match="allowed") as err:
        ZayaConfig.from_preset("zaya1-tiny", **overrides)
    assert needle in str(err.value)


def test_composed_configs_name_the_model_group():
    from omegaconf import OmegaConf
    from zaya_config import ZayaConfigError, validate_config

    cfg = OmegaConf.create({"model": {"hidden_size": 0}})
    with pytest.raises(ZayaConfigError, match=r"invalid config: model\.hidden_size = 0"):
        validate_config(cfg)


def test_unknown_preset_and_unknown_key():
    with pytest.raises(ZayaModelError, match="known presets: zaya1-8b-32k, zaya1-base, zaya1-tiny"):
        ZayaConfig.from_preset("zaya2")
    with pytest.raises(ZayaModelError, match="unknown model key"):
        build_model({"hidden_sise": 64})


def test_top_k_beyond_the_reference_is_allowed():
    assert ZayaConfig.from_preset("zaya1-tiny", num_experts_per_tok=4).num_experts_per_tok == 4


def test_hf_config_round_trip():
    cfg = ZayaConfig.from_preset("zaya1-8b-32k")
    hf = cfg.to_hf_config()
    assert hf["model_type"] == "zaya" and hf["rope_parameters"]["hybrid"]["rope_theta"] == 1e6
    back = ZayaConfig.from_hf_config(hf, name=cfg.name)
    assert back == cfg.replace(skip_bias_init=back.skip_bias_init)


def test_hf_config_flat_rope_and_eos_list():
    hf = ZayaConfig.from_preset("zaya1-tiny").to_hf_config()
    hf["rope_parameters"] = {"rope_type": "default", "rope_theta": 123.0, "partial_rotary_factor": 0.25}
    hf["eos_token_id"] = [7, 8]
    cfg = ZayaConfig.from_hf_config(hf)
    assert (cfg.rope_theta, cfg.partial_rotary_factor, cfg.eos_token_id) == (123.0, 0.25, 7)


def test_hf_config_with_sliding_layers_is_refused():
    hf = ZayaConfig.from_preset("zaya1-tiny").to_hf_config()
    hf["layer_types"] = ["hybrid", "hybrid_sliding"]
    with pytest.raises(ZayaModelError, match="layer_types"):
        ZayaConfig.from_hf_config(hf)


def test_hf_reference_accepts_our_hf_config(hf_zaya):
    _, hf_config_cls = hf_zaya
    hf_cfg = hf_config_cls(**ZayaConfig.from_preset("zaya1-tiny").to_hf_config())
    assert hf_cfg.num_experts == 4 and hf_cfg.rope_parameters["hybrid"]["partial_rotary_factor"] == 0.5


def test_hydra_model_group_composes_and_validates():
    zaya_config = pytest.importorskip("zaya_config")
    cfg = zaya_config.compose("zaya", ["+model=zaya1-tiny", "model.num_hidden_layers=3"], validate=False)
    # validate_node checks our schema only (validate_config would also load every other package's schemas)
    validated = zaya_config.validate_node("model", cfg.model, ZayaConfig)
    assert isinstance(validated, ZayaConfig) and validated.num_hidden_layers == 3
    assert build_model(cfg.model).config == validated
    bad = zaya_config.compose("zaya", ["+model=zaya1-tiny", "model.num_key_value_heads=3"], validate=False)
    with pytest.raises(zaya_config.ZayaConfigError, match=r"model\.num_attention_heads = 4"):
        zaya_config.validate_node("model", bad.model, ZayaConfig)
