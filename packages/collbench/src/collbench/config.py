"""Structured configs of collbench (Hydra schemas under the `bench` and `sizing` keys).

Defaults run on a laptop CPU in seconds; presets in `conf/bench/` and `conf/sizing/` scale them up.
Building one validates it (`ValidatedConfig`): `ZayaConfigError` naming the key, the bad value and what is allowed; zaya_config is
imported inside it so the benchmark scripts can use these dataclasses on machines without Hydra.
"""

from dataclasses import dataclass, field

from zaya_config.validated import ValidatedConfig

TORCH_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
NCCL_TESTS_COLLECTIVES = (*TORCH_COLLECTIVES, "reduce", "sendrecv", "gather", "scatter")
BACKENDS = ("gloo", "nccl", "auto", "nccl-tests")
DTYPES = ("float32", "bfloat16", "float16", "float64", "int32", "int64", "int8", "uint8")
MEMBW_KERNELS = ("copy", "read", "write", "triad")


def _checks():
    from zaya_config import checks

    return checks


def _invalid(key: str, value: object, allowed: str) -> Exception:
    from zaya_config.errors import invalid

    return invalid(key, value, allowed)


@dataclass
class CollectivesConfig(ValidatedConfig):
    """A collective sweep: which ops, which sizes, how many ranks, how it is timed and checked."""

    enabled: bool = True
    backend: str = "gloo"  # gloo | nccl | auto (nccl on GPU, else gloo) | nccl-tests (the binaries)
    collectives: list[str] = field(
        default_factory=lambda: ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"]
    )
    dtypes: list[str] = field(default_factory=lambda: ["float32"])
    min_bytes: str = "1K"
    max_bytes: str = "64K"
    step_factor: float = 2.0
    step_bytes: str = "0"  # > 0 switches from a factor to a fixed step (nccl-tests -i)
    in_place: list[bool] = field(default_factory=lambda: [False, True])
    rank_counts: list[int] = field(default_factory=lambda: [2])  # several GPU counts in one launch
    warmup_iters: int = 2
    iters: int = 5
    check: bool = True
    timeout_s: float = 120.0
    binary_dir: str = ""  # nccl-tests: folder of all_reduce_perf ...; empty = PATH
    mpirun: str = ""  # nccl-tests: launcher prefix, e.g. "mpirun -np 8"; empty = run the binary directly
    gpus_per_process: int = 1  # nccl-tests -g

    def validate_fields(self) -> None:
        """Known collectives and dtypes for the backend, ordered sizes, at least 2 ranks."""
        from collbench.errors import CollbenchError
        from collbench.sizes import parse_size

        c = _checks()
        c.one_of("backend", self.backend, BACKENDS)
        allowed = NCCL_TESTS_COLLECTIVES if self.backend == "nccl-tests" else TORCH_COLLECTIVES
        for i, name in enumerate(self.collectives):
            if name not in allowed:
                raise _invalid(f"collectives[{i}]", name, f"one of {', '.join(allowed)} (backend {self.backend})")
        for i, name in enumerate(self.dtypes):
            c.one_of(f"dtypes[{i}]", name, DTYPES)
        try:
            lo, hi = parse_size(self.min_bytes), parse_size(self.max_bytes)
            parse_size(self.step_bytes)
        except CollbenchError as err:
            raise _invalid("min_bytes/max_bytes", f"{self.min_bytes}..{self.max_bytes}", str(err)) from None
        if lo > hi:
            raise _invalid("min_bytes", self.min_bytes, f"a size <= max_bytes ({self.max_bytes}); sizes out of order")
        if parse_size(self.step_bytes) == 0 and self.step_factor <= 1:
            raise _invalid("step_factor", self.step_factor, "a number > 1")
        for i, n in enumerate(self.rank_counts):
            if n < 2:
                raise _invalid(f"rank_counts[{i}]", n, "an integer >= 2 (a collective needs two ranks)")
        c.positive("iters", self.iters)
        c.non_negative("warmup_iters", self.warmup_iters)
        c.positive("timeout_s", self.timeout_s)
        c.positive("gpus_per_process", self.gpus_per_process)


@dataclass
class GemmConfig(ValidatedConfig):
    """A GEMM sweep: square grid, the model's own shapes, and an N sweep across tile and wave boundaries."""

    enabled: bool = True
    dtype: str = "bfloat16"
    square_sizes: list[int] = field(default_factory=lambda: [64, 128, 256])
    quant_m: int = 128  # the N sweep's fixed M and K
    quant_k: int = 128
    quant_n_min: int = 64
    quant_n_max: int = 512
    quant_n_step: int = 32
    tokens: int = 256  # rows of the model's projection GEMMs
    tokens_per_expert: int = 64
    warmup_iters: int = 2
    iters: int = 5

    def validate_fields(self) -> None:
        """Positive sizes and iteration counts."""
        c = _checks()
        c.one_of("dtype", self.dtype, ("bfloat16", "float16", "float32"))
        for i, s in enumerate(self.square_sizes):
            c.positive(f"square_sizes[{i}]", s)
        for name in (
            "quant_m",
            "quant_k",
            "quant_n_min",
            "quant_n_max",
            "quant_n_step",
            "tokens",
            "tokens_per_expert",
            "iters",
        ):
            c.positive(name, getattr(self, name))
        if self.quant_n_min > self.quant_n_max:
            raise _invalid("quant_n_min", self.quant_n_min, f"<= quant_n_max ({self.quant_n_max})")


@dataclass
class MembwConfig(ValidatedConfig):
    """Memory bandwidth: copy/read/write/triad over buffer sizes from cache-resident to large."""

    enabled: bool = True
    kernels: list[str] = field(default_factory=lambda: list(MEMBW_KERNELS))
    min_bytes: str = "4K"
    max_bytes: str = "4M"
    step_factor: float = 4.0
    warmup_iters: int = 2
    iters: int = 5

    def validate_fields(self) -> None:
        """Known kernels, ordered sizes."""
        from collbench.sizes import parse_size

        c = _checks()
        for i, k in enumerate(self.kernels):
            c.one_of(f"kernels[{i}]", k, MEMBW_KERNELS)
        if parse_size(self.min_bytes) > parse_size(self.max_bytes):
            raise _invalid("min_bytes", self.min_bytes, f"a size <= max_bytes ({self.max_bytes}); sizes out of order")
        if self.step_factor <= 1:
            raise _invalid("step_factor", self.step_factor, "a number > 1")
        c.positive("iters", self.iters)


@dataclass
class BenchConfig(ValidatedConfig):
    """What `services/characterize` runs (config key `bench`)."""

    device: str = "auto"  # auto | cpu | cuda
    seed: int = 0
    collectives: CollectivesConfig = field(default_factory=CollectivesConfig)
    gemm: GemmConfig = field(default_factory=GemmConfig)
    membw: MembwConfig = field(default_factory=MembwConfig)

    def validate_fields(self) -> None:
        """The device; each part checks itself (ValidatedConfig prefixes its key)."""
        _checks().one_of("device", self.device, ("auto", "cpu", "cuda"))


@dataclass
class MeasureConfig(ValidatedConfig):
    """Measured mode of the sizing study (`sizing.measure=true`): how each candidate is built and timed.

    Training runs zaya-train's Trainer (the composed `train` and `recipe` groups: their global batch, micro-batch
    and sequence); decoding runs zaya-model's ZayaDecoder (compiled and CUDA-graphed on a GPU, eager on a CPU).
    """

    layers: int = 2  # decoder layers of every candidate (full width, a few layers)
    warmup_steps: int = 1  # untimed trainer steps (compilation, allocation)
    steps: int = 3  # timed trainer steps (the median is reported)
    decode_warmup: int = 2  # untimed decode steps after the prefill
    decode_tokens: int = 8  # timed decode steps
    decode_compile: bool | None = None  # per-layer torch.compile of the decode step; null = on CUDA only
    gemm_iters: int = 5  # GEMM sweep (when no measured_dir): timed calls per batch (CPU policy)
    gemm_warmup: int = 2
    rule_min_drop: float = 0.02  # a tile granule is a rule when misaligned widths lose more than this (measured)
    prior_weight: float = 0.1  # calibration: pull of the analytic coefficients against the measurements

    def validate_fields(self) -> None:
        """Positive counts; a drop threshold in [0, 1); a non-negative prior weight."""
        c = _checks()
        for name in ("layers", "steps", "decode_tokens", "gemm_iters"):
            c.positive(name, getattr(self, name))
        for name in ("warmup_steps", "decode_warmup", "gemm_warmup"):
            c.non_negative(name, getattr(self, name))
        if not 0 <= self.rule_min_drop < 1:
            raise _invalid("rule_min_drop", self.rule_min_drop, "a fraction in [0, 1)")
        c.non_negative("prior_weight", self.prior_weight)


@dataclass
class SizingConfig(ValidatedConfig):
    """The sizing study (config key `sizing`): dims rules and the MoE width study around the composed `model`."""

    num_experts: list[int] = field(default_factory=lambda: [4, 8, 16])
    expert_widths: list[int] = field(default_factory=lambda: [512, 1024, 2048])  # used when iso_params is false
    top_k: list[int] = field(default_factory=lambda: [1, 2])
    decode_batches: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64])
    latency_batch: int = 8  # the batch whose decode latency the Pareto front trades against training
    train_tokens_per_step: int = 16384  # tokens one GPU runs per forward (micro-batch x sequence)
    seq_len: int = 2048
    context_len: int = 2048
    iso_params: bool = True  # widths = base experts x width / num_experts (same expert parameters)
    iso_active_params: bool = False  # widths = base top-k x width / top-k (same active parameters); excludes iso_params
    max_total_params: float = 0.0  # 0 = no budget
    measured_dir: str = ""  # a characterize run dir; its gemm.csv refines the estimates
    tensor_parallel: int = 1
    measure: bool = False  # run every candidate (trainer step, fast decode) instead of estimating it
    measurement: MeasureConfig = field(default_factory=MeasureConfig)

    def validate_fields(self) -> None:
        """Positive grid values; the latency batch is one of the decode batches."""
        c = _checks()
        for name in ("num_experts", "expert_widths", "top_k", "decode_batches"):
            values = getattr(self, name)
            if not values:
                raise _invalid(name, values, "a non-empty list")
            for i, v in enumerate(values):
                c.positive(f"{name}[{i}]", v)
        if min(self.top_k) > max(self.num_experts):
            raise _invalid("top_k", self.top_k, f"values <= the number of experts ({self.num_experts})")
        if self.latency_batch not in self.decode_batches:
            raise _invalid("latency_batch", self.latency_batch, f"one of decode_batches {self.decode_batches}")
        for name in ("train_tokens_per_step", "seq_len", "context_len", "tensor_parallel"):
            c.positive(name, getattr(self, name))
        c.non_negative("max_total_params", self.max_total_params)
        if self.iso_params and self.iso_active_params:
            raise _invalid(
                "iso_active_params", True, "false while iso_params is true (choose one; set iso_params=false)"
            )
