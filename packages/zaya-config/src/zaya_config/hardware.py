"""Hardware profiles: the datasheet ceilings every sizing rule, MFU and roofline is measured against.

A profile holds datasheet numbers (their sources are cited in the preset YAML files beside this
package, `conf/hardware/<name>.yaml`) and optional measured fields that collbench fills in after a
characterization run. Units are in the names: FLOP/s, GB/s (1e9 bytes/s, as nccl-tests), bytes.
"""

from dataclasses import dataclass, field, fields

from zaya_config.checks import one_of, positive
from zaya_config.validated import ValidatedConfig


@dataclass
class MeasuredHardware(ValidatedConfig):
    """Ceilings measured on a real machine (collbench writes these); None until measured."""

    bf16_matmul_flops: float | None = None
    copy_bw_gbps: float | None = None
    read_bw_gbps: float | None = None
    write_bw_gbps: float | None = None
    triad_bw_gbps: float | None = None
    allreduce_busbw_gbps: float | None = None
    source: str | None = None

    def validate_fields(self) -> None:
        """Every measured ceiling is positive when present."""
        for name in MEASURED_CEILINGS:
            positive(name, getattr(self, name), optional=True)


# The measured ceilings by name (every field but `source`), in the order collbench writes them.
MEASURED_CEILINGS: tuple[str, ...] = tuple(f.name for f in fields(MeasuredHardware) if f.name != "source")


@dataclass
class HardwareProfile(ValidatedConfig):
    """One accelerator (or CPU) as the sizing rules see it."""

    name: str = "cpu"
    vendor: str = "generic"
    kind: str = "cpu"  # gpu | cpu
    peak_bf16_flops: float = 1.9e11  # dense, no sparsity
    peak_fp32_flops: float = 1.9e11  # non-tensor-core fp32
    hbm_bw_gbps: float = 20.0
    hbm_capacity_bytes: int = 24 * 2**30
    compute_units: int = 2  # SMs (NVIDIA) or CUs (AMD) or cores (CPU)
    l2_cache_bytes: int = 2**20
    intra_node_bw_gbps: float = 10.0  # per GPU, one direction (NVLink / Infinity Fabric)
    inter_node_bw_gbps: float = 1.25  # per GPU, one direction (NIC)
    matmul_tile: int = 16  # the M/N/K multiple the matrix units need to run at full rate
    measured: MeasuredHardware = field(default_factory=MeasuredHardware)

    def validate_fields(self) -> None:
        """Reject non-physical numbers before a sweep starts."""
        one_of("kind", self.kind, ("gpu", "cpu"))
        for name in (
            "peak_bf16_flops",
            "peak_fp32_flops",
            "hbm_bw_gbps",
            "hbm_capacity_bytes",
            "compute_units",
            "l2_cache_bytes",
            "intra_node_bw_gbps",
            "inter_node_bw_gbps",
            "matmul_tile",
        ):
            positive(name, getattr(self, name))

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the bf16 roofline turns from memory- to compute-bound."""
        return self.peak_bf16_flops / (self.hbm_bw_gbps * 1e9)
