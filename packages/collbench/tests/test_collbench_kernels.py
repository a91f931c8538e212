"""GEMM and bandwidth sweeps on CPU, the quantization model, and the measured preset through Hydra."""

import pytest
import torch
from collbench.gemm import GemmShape, quantization_efficiency, quantization_shapes, run_gemm_sweep, square_shapes
from collbench.measured import field_overrides, measured_fields, preset_overrides, write_measured_preset
from collbench.membw import BYTES_PER_ELEMENT_MOVED, run_membw_sweep
from zaya_config import compose, validate_node
from zaya_config.hardware import HardwareProfile


def test_quantization_model_shows_tile_and_wave_steps():
    # pure tile quantization (one unit, so no waves): one column past a 128-wide tile pays for two tiles
    assert quantization_efficiency(128, 129, 64, units=1) == pytest.approx(129 / 256)
    # 12 x 11 = 132 tiles fill one wave of 132 SMs exactly; one more column needs 12 x 12 = 144 tiles, two waves
    full = quantization_efficiency(128 * 12, 128 * 11, 512, units=132)
    assert full == pytest.approx(1.0)
    assert quantization_efficiency(128 * 12, 128 * 11 + 1, 512, units=132) < 0.55 * full
    # K is quantized by the k-tile
    assert quantization_efficiency(128, 128, 65, units=1, tile_k=64) == pytest.approx(65 / 128)


def test_gemm_sweep_on_cpu_reports_flops_and_intensity():
    shapes = square_shapes([32, 64]) + quantization_shapes(32, 32, 16, 48, 16)
    results = run_gemm_sweep(shapes, "bfloat16", torch.device("cpu"), iters=2, warmup=1, units=2)
    assert [r.label for r in results] == ["32^3", "64^3", "N=16", "N=32", "N=48"]
    for r, s in zip(results, shapes, strict=True):
        assert r.tflops == pytest.approx(s.flops / (r.time_us * 1e-6) / 1e12) and r.tflops > 0
        assert r.intensity_flops_per_byte == pytest.approx(s.flops / s.bytes_moved(2))
    assert GemmShape(2, 3, 4).flops == 48


def test_membw_counts_stream_bytes():
    results = run_membw_sweep(["copy", "read", "write", "triad"], [4096, 65536], torch.device("cpu"), 2, 1)
    assert len(results) == 8
    for r in results:
        assert r.bytes_moved == BYTES_PER_ELEMENT_MOVED[r.kernel] * r.size_bytes and r.bw_gbps > 0


def test_measured_preset_loads_through_the_config_layer(tmp_path):
    gemm = run_gemm_sweep(square_shapes([32]), "bfloat16", torch.device("cpu"), 2, 1, units=2)
    membw = run_membw_sweep(["copy", "triad"], [4096], torch.device("cpu"), 2, 1)
    fields = measured_fields(gemm, membw)
    assert fields["bf16_matmul_flops"] == pytest.approx(gemm[0].tflops * 1e12)
    assert fields["read_bw_gbps"] is None and fields["copy_bw_gbps"] > 0
    write_measured_preset("cpu", fields, tmp_path, source="unit test")
    cfg = compose("zaya", preset_overrides("cpu", tmp_path))
    hw = validate_node("hardware", cfg.hardware, HardwareProfile)
    assert hw.name == "cpu" and hw.compute_units == 2  # datasheet part inherited from the `cpu` preset
    assert hw.measured.copy_bw_gbps == pytest.approx(fields["copy_bw_gbps"], rel=1e-5)
    assert hw.measured.source == "unit test" and hw.measured.read_bw_gbps is None
    plain = compose("zaya", field_overrides(fields))
    assert plain.hardware.measured.triad_bw_gbps == pytest.approx(fields["triad_bw_gbps"], rel=1e-5)
