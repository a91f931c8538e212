"""Model FLOP utilisation: achieved model FLOP/s over the hardware profile's peak, summed over ranks."""

from zaya_config import HardwareProfile


def peak_flops(hw: HardwareProfile, precision: str) -> float:
    """The per-device peak the run can reach at its precision (bf16 matrix rate, or fp32)."""
    return hw.peak_bf16_flops if precision == "bf16" else hw.peak_fp32_flops


def mfu(tokens_per_s: float, flops_per_token: float, hw: HardwareProfile, precision: str, world_size: int) -> float:
    """Fraction of the combined peak of `world_size` devices used by the model's own FLOPs."""
    return tokens_per_s * flops_per_token / (peak_flops(hw, precision) * world_size)
