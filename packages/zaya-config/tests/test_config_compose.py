"""compose(), hardware() and validation through the real Hydra machinery and the installed presets."""

import pytest
from zaya_config import ZayaConfigError, compose, group_options, hardware, hardware_names
from zaya_config.hardware import HardwareProfile


def test_base_config_has_shared_groups_with_cpu_defaults():
    cfg = compose()
    assert set(cfg) >= {"hardware", "cluster", "paths", "logging"}
    assert cfg.hardware.name == "cpu"
    assert cfg.cluster.nodes == 1 and cfg.cluster.gpus_per_node == 1


def test_overrides_select_presets_and_values():
    cfg = compose("zaya", ["hardware=mi300x", "cluster=hgx-h200", "logging.level=DEBUG"])
    assert cfg.hardware.compute_units == 304
    assert cfg.cluster.gpus_per_node == 8
    assert cfg.logging.level == "DEBUG"


def test_hardware_profiles_carry_datasheet_numbers():
    h200 = hardware("h200")
    assert isinstance(h200, HardwareProfile)
    assert h200.peak_bf16_flops == pytest.approx(989.5e12)
    assert h200.hbm_bw_gbps == 4800.0 and h200.compute_units == 132
    assert h200.ridge_flops_per_byte == pytest.approx(989.5e12 / 4.8e12)
    mi = hardware("mi300x")
    assert mi.hbm_capacity_bytes == 192_000_000_000 and mi.peak_bf16_flops == pytest.approx(1307.4e12)
    assert mi.measured.copy_bw_gbps is None  # filled by collbench, not by the datasheet


def test_group_options_lists_presets_without_schemas():
    assert {"cpu", "h200", "mi300x"} <= set(hardware_names())
    assert "schema" not in group_options("hardware")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("hardware.hbm_bw_gbps=fast", "invalid config: hardware.hbm_bw_gbps = 'fast'; allowed: a number"),
        ("hardware.hbm_bw_gbps=-1", "invalid config: hardware.hbm_bw_gbps = -1.0; allowed: a number > 0"),
        ("hardware.kind=tpu", "invalid config: hardware.kind = 'tpu'; allowed: one of 'gpu', 'cpu'"),
        ("logging.level=LOUD", "invalid config: logging.level = 'LOUD'; allowed: one of 'DEBUG'"),
        ("cluster.intra_node.bw_gbps=0", "invalid config: cluster.intra_node.bw_gbps = 0.0; allowed: a number > 0"),
        ("+hardware.turbo=1", "unknown key hardware.turbo; allowed: one of the keys name, vendor"),
        ("hardware.measured.copy_bw_gbps=-3", "hardware.measured.copy_bw_gbps = -3.0; allowed: a number > 0 or null"),
    ],
)
def test_bad_values_name_key_value_and_what_is_allowed(override, expected):
    with pytest.raises(ZayaConfigError) as err:
        compose("zaya", [override])
    assert expected in str(err.value)


def test_unknown_preset_lists_the_available_ones():
    with pytest.raises(ZayaConfigError, match=r"(?s)hardware/tpu-v9.*cpu.*h200.*mi300x"):
        compose("zaya", ["hardware=tpu-v9"])
    with pytest.raises(ZayaConfigError, match="unknown hardware profile 'tpu-v9'; allowed: one of cpu, h200, mi300x"):
        hardware("tpu-v9")


def test_validation_can_be_skipped_for_inspection():
    cfg = compose("zaya", ["hardware.hbm_bw_gbps=-1"], validate=False)
    assert cfg.hardware.hbm_bw_gbps == -1


def test_validation_resolves_interpolations_across_groups():
    cfg = compose("zaya", ["paths.output_dir=${paths.root_dir}/runs"], validate=False)
    from omegaconf import OmegaConf
    from zaya_config import validate_config

    unresolved = OmegaConf.create(
        {"hardware": {"name": "${paths.root_dir}"}, "paths": OmegaConf.to_container(cfg.paths)}
    )
    objects = validate_config(unresolved)
    assert objects["hardware"].name == objects["paths"].root_dir
    assert OmegaConf.is_interpolation(unresolved.hardware, "name")  # the caller's config is untouched
