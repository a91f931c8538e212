"""Write measured ceilings back as a hardware preset the config layer loads, never into installed files.

`write_measured_preset` puts `hardware/<name>-measured.yaml` into a run folder: a preset whose defaults
list pulls in the datasheet preset `<name>` and overrides only `measured:`. Add the run folder to
Hydra's search path and select it:

    zaya config show 'hydra.searchpath=[file:///abs/run/dir]' hardware=h200-measured

Written by hand (flat YAML) so the GPU benchmark scripts can write it without omegaconf.
"""

import math
from pathlib import Path

from zaya_config.atomic import write_text_atomic
from zaya_config.hardware import MEASURED_CEILINGS

from collbench.gemm_shapes import GemmResult
from collbench.membw import MembwResult, best_bw, large_buffer_bw
from collbench.schema import BenchResult


def measured_fields(
    gemm: list[GemmResult] = (),
    membw: list[MembwResult] = (),
    collectives: list[BenchResult] = (),
    past_cache_bytes: int = 0,
) -> dict[str, float | None]:
    """The `HardwareProfile.measured` values these results support (None where nothing was measured).

    Bandwidths are the best over buffers of at least `past_cache_bytes` (the DRAM/HBM ceiling, not the
    cache's); when no buffer was that large (a CPU smoke run) the best over all sizes is used.
    """
    fields: dict[str, float | None] = dict.fromkeys(MEASURED_CEILINGS)
    bf16 = [r.tflops for r in gemm if r.dtype == "bfloat16"]
    if bf16:
        fields["bf16_matmul_flops"] = max(bf16) * 1e12
    for kernel in ("copy", "read", "write", "triad"):
        bw = large_buffer_bw(list(membw), kernel, past_cache_bytes) or best_bw(list(membw), kernel)
        fields[f"{kernel}_bw_gbps"] = bw or None
    allreduce = [r.busbw_gbps for r in collectives if r.collective == "all_reduce" and r.wrong <= 0]
    if allreduce:
        fields["allreduce_busbw_gbps"] = max(allreduce) or None
    return fields


def yaml_scalar(value: object, digits: int = 0) -> str:
    """A YAML scalar that reads back as the same type (floats keep a dot: YAML 1.1 reads `1e-05` as a string)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(float(f"{value:.{digits}g}")) if digits else repr(value)
        mantissa, _, exponent = text.partition("e")
        return f"{mantissa}.0e{exponent}" if exponent and "." not in mantissa else text
    if isinstance(value, str):
        return '"' + value.replace("\\", "/").replace('"', "'") + '"'
    return str(value)


def render_measured_preset(base: str, fields: dict[str, float | None], source: str) -> str:
    """YAML text of the `<base>-measured` preset."""
    lines = [
        f"# {base} with ceilings measured by collbench ({source}); datasheet values come from `{base}`.",
        "defaults:",
        f"  - {base}",
        "  - _self_",
        "measured:",
    ]
    lines += [f"  {name}: {yaml_scalar(fields.get(name), 6)}" for name in MEASURED_CEILINGS]
    lines.append(f"  source: {yaml_scalar(source)}")
    return "\n".join(lines) + "\n"


def write_measured_preset(base: str, fields: dict[str, float | None], run_dir: Path, source: str) -> Path:
    """Write `<run_dir>/hardware/<base>-measured.yaml` atomically and return its path."""
    return write_text_atomic(
        Path(run_dir) / "hardware" / f"{base}-measured.yaml", render_measured_preset(base, fields, source)
    )


def preset_overrides(base: str, run_dir: Path) -> list[str]:
    """Hydra overrides that select the measured preset from `run_dir`."""
    return [f"hydra.searchpath=[file://{Path(run_dir).resolve()}]", f"hardware={base}-measured"]


def field_overrides(fields: dict[str, float | None]) -> list[str]:
    """The same numbers as plain `hardware.measured.X=Y` overrides (for one-off commands)."""
    return [f"hardware.measured.{k}={yaml_scalar(v, 6)}" for k, v in fields.items() if v is not None]
