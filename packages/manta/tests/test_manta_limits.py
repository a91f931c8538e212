"""Hardware-limit presets, derived defaults from zaya-config profiles, validation through compose."""

import pytest
from manta.catalog import CatalogEntry
from manta.errors import MantaError
from manta.limits import HardwareLimits, ResolvedLimits, plan_cost
from manta.presets import hardware_limit_names, hardware_limits
from zaya_config import ZayaConfigError, compose, hardware


def test_presets_are_found_through_zaya_config():
    assert {"laptop-8gb", "desktop-24gb", "h200", "cpu"} <= set(hardware_limit_names())


def test_h200_limits_derive_vram_from_the_zaya_hardware_profile_and_keep_the_measured_latencies():
    """The catalogs' latencies were measured on one H200, host-bound: its 989.5 TFLOP/s scale nothing."""
    limits = hardware_limits("h200").resolved()
    h200 = hardware("h200")
    assert limits.vram_budget_bytes == int(h200.hbm_capacity_bytes * 0.9)
    assert limits.latency_scale == 1.0
    with pytest.raises(ZayaConfigError, match="latency_scale"):
        HardwareLimits(name="x", base_profile="h200", vram_budget_bytes=None, latency_scale=None).resolved()


def test_explicit_values_win_over_the_profile():
    limits = HardwareLimits(name="x", base_profile="h200", vram_budget_bytes=10**9, latency_scale=3.0).resolved()
    assert (limits.vram_budget_bytes, limits.latency_scale) == (10**9, 3.0)


def test_unknown_preset_and_bad_values_are_clear_errors():
    with pytest.raises(MantaError, match="unknown hardware profile 'tpu'; allowed: one of"):
        hardware_limits("tpu")
    with pytest.raises(ZayaConfigError, match=r"manta_hardware.latency_budget_s = -1.0; allowed: a number > 0"):
        compose("zaya", ["+manta_hardware=laptop-8gb", "manta_hardware.latency_budget_s=-1"])
    with pytest.raises(ZayaConfigError, match="base_profile"):
        HardwareLimits(base_profile=None, vram_budget_bytes=None).validate()


def test_plan_cost_adds_up_and_names_violations():
    base = CatalogEntry("b", "checkpoint", "f", "base", vram_bytes=4 * 10**9, step_latency_ms=40, price_per_image=0.01)
    lora = CatalogEntry("l", "lora", "f", "lora", rank=8, vram_bytes=10**8, step_latency_ms=2, price_per_image=0.005)
    limits = ResolvedLimits("t", 4 * 10**9, 0.85, 0.5, 40, 1, cost_budget=0.012)
    cost = plan_cost(base, [lora], limits)
    assert cost.vram_bytes == 4_100_000_000
    assert cost.latency_s == pytest.approx(40 * 0.5 * 42 / 1000)
    assert cost.price == pytest.approx(0.015)
    assert cost.violations(limits) == ["vram", "cost"]
    assert plan_cost(base, [lora, lora], limits).violations(limits) == ["vram", "latency", "cost", "max_adapters"]
