"""Structured configs of the `train` group: how a run is executed (data, optimizer, parallelism, cadence).

What is trained over time (phases, context lengths, schedules, mixtures) lives in `recipe.py`; the model
itself in zaya_model. Defaults run on a laptop CPU.
"""

from dataclasses import dataclass, field

from zaya_config.checks import in_range, non_negative, one_of, positive
from zaya_config.errors import invalid
from zaya_config.validated import ValidatedConfig

from zaya_train.cluster.config import ClusterConfig
from zaya_train.evals.config import DownstreamConfig
from zaya_train.resilience.config import FaultsConfig, ResilienceConfig

ACTIVATION_CHECKPOINTING = ("none", "selective", "full")
STDLIB = "stdlib"  # source path meaning "the running interpreter's standard library sources"


@dataclass
class SourceConfig(ValidatedConfig):
    """One named data source: a text file, a folder of text files, a prepared `.zarr` shard, a Megatron
    `.bin/.idx` prefix, or `stdlib`."""

    path: str = STDLIB
    glob: str = "**/*.py"
    exclude: list[str] = field(default_factory=lambda: ["**/site-packages/**"])
    max_files: int | None = None
    # a Megatron prefix: the vocabulary and EOS id its ids came from, checked against the run's tokenizer
    # (unnamed, every id is checked to lie below the run's vocabulary: one pass over the .bin)
    vocab_size: int | None = None
    eos_id: int | None = None

    def validate_fields(self) -> None:
        """A path is given; the file cap and the vocabulary are positive, the EOS id not negative."""
        if not self.path:
            raise invalid("path", self.path, f"a file, folder, prepared .zarr shard, Megatron prefix or {STDLIB!r}")
        positive("max_files", self.max_files, optional=True)
        positive("vocab_size", self.vocab_size, optional=True)
        if self.eos_id is not None:
            non_negative("eos_id", self.eos_id)


@dataclass
class TokenizerConfig(ValidatedConfig):
    """Which tokenizer: bytes (no training), BPE trained on the sources, or a local tokenizer.json."""

    kind: str = "byte"  # byte | bpe | file
    vocab_size: int = 2048  # bpe: target vocabulary including the EOS token
    path: str | None = None  # file: a tokenizer.json
    eos_token: str = "<|endoftext|>"
    train_max_bytes: int = 20_000_000  # bpe: how much source text the tokenizer is trained on

    def validate_fields(self) -> None:
        """Kind is known, a file tokenizer has a path."""
        one_of("kind", self.kind, ("byte", "bpe", "file"))
        positive("vocab_size", self.vocab_size)
        positive("train_max_bytes", self.train_max_bytes)
        if self.kind == "file" and not self.path:
            raise invalid("path", self.path, "a tokenizer.json path when kind is 'file'")


@dataclass
class DataConfig(ValidatedConfig):
    """The named sources a recipe's mixtures refer to, the tokenizer, and the held-out split."""

    # No default entries: OmegaConf merges dicts key by key, so a default source would join every preset's.
    sources: dict[str, SourceConfig] = field(default_factory=dict)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    val_fraction: float = 0.05  # share of documents held out for validation (by a hash of their name)
    cache_dir: str | None = None  # prepared shards are reused from here; default <paths.cache_dir>/data
    chunk_tokens: int = 1 << 16
    # packed windows: each document attends, convolves and counts positions only within itself (as if it ran
    # alone; zaya_model's document_ids). Off by default, as ZAYA1's recipe does not say.
    document_masking: bool = False

    def validate_fields(self) -> None:
        """A validation split exists. (No source is a valid default here: presets add theirs, and the recipe check
        at build names the mixture's sources that are missing.)"""
        in_range("val_fraction", self.val_fraction, 1e-6, 0.5)
        positive("chunk_tokens", self.chunk_tokens)


@dataclass
class OptimizerConfig(ValidatedConfig):
    """AdamW, or Muon for 2-D matrices with AdamW for the rest (one learning rate, RMS-matched)."""

    name: str = "muon"  # adamw | muon
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.1
    decay_embeddings: bool = False
    momentum: float = 0.95  # muon
    nesterov: bool = True  # muon
    ns_steps: int = 5  # muon: Newton-Schulz iterations
    rms_scale: float = 0.2  # muon: update RMS matched to AdamW's typical 0.2
    # muon: torch.compile the batched Newton-Schulz (with train.compile, on CUDA). Off: measured slower on an
    # H200 (8 layers: 646 ms compiled vs 207 ms eager per step, BENCHMARKS.md), the matmuls are cuBLAS anyway.
    compile_newton_schulz: bool = False

    def validate_fields(self) -> None:
        """Known optimizer, betas and momentum in [0, 1)."""
        one_of("name", self.name, ("adamw", "muon"))
        for i, beta in enumerate(self.betas):
            in_range(f"betas[{i}]", beta, 0.0, 0.999999)
        in_range("momentum", self.momentum, 0.0, 0.999999)
        positive("eps", self.eps)
        non_negative("weight_decay", self.weight_decay)
        positive("ns_steps", self.ns_steps)
        positive("rms_scale", self.rms_scale)


@dataclass
class DistributedConfig(ValidatedConfig):
    """Data, context and expert parallelism: one code path from one CPU process to many GPUs under torchrun."""

    strategy: str = "auto"  # auto (single when one process, else ddp) | single | ddp | fsdp
    backend: str = "auto"  # auto (nccl on CUDA, else gloo) | gloo | nccl
    zero1: bool = False  # ddp: shard optimizer state over ranks (ZeRO-1)
    reshard_after_forward: bool = True  # fsdp: free gathered params after forward (ZeRO-3) or keep (ZeRO-2)
    timeout_s: float = 600.0
    # ranks that split each sequence (context parallelism, zigzag chunks); must divide the world size, the
    # rest is data parallelism (world = dp x cp). A recipe phase may set its own (phases[i].context_parallel).
    context_parallel: int = 1
    # ranks the experts are split over (expert parallelism, all-to-all dispatch): each holds num_experts / N of
    # them; must divide the world size and model.num_experts. The same ranks keep their own rows of the batch.
    expert_parallel: int = 1
    # fsdp: HSDP, FSDP2 over a replicate x shard mesh: parameters sharded within world / N ranks, replicated
    # across N such groups (1: plain FSDP over every rank)
    data_parallel_replicate: int = 1

    def validate_fields(self) -> None:
        """Known strategy and backend, positive parallel sizes, combinations that exist."""
        one_of("strategy", self.strategy, ("auto", "single", "ddp", "fsdp"))
        positive("context_parallel", self.context_parallel)
        positive("expert_parallel", self.expert_parallel)
        positive("data_parallel_replicate", self.data_parallel_replicate)
        if self.data_parallel_replicate > 1 and self.strategy != "fsdp":
            raise invalid(
                "data_parallel_replicate", self.data_parallel_replicate, "1 unless strategy is fsdp (HSDP is FSDP2's)"
            )
        if self.zero1 and self.expert_parallel > 1:
            raise invalid(
                "zero1",
                self.zero1,
                "false with expert_parallel > 1 (ZeRO-1 partitions whole parameters over every "
                "rank; the experts live on their EP ranks): use strategy=fsdp to shard the optimizer state",
            )
        one_of("backend", self.backend, ("auto", "gloo", "nccl"))
        positive("timeout_s", self.timeout_s)


@dataclass
class CheckpointConfig(ValidatedConfig):
    """torch.distributed.checkpoint saves: cadence, retention, async, resume."""

    enabled: bool = True
    every_steps: int = 100
    keep_last: int = 3
    async_save: bool = False
    resume: bool = True
    dir: str | None = None  # default: <run dir>/checkpoints

    def validate_fields(self) -> None:
        """Positive cadence and retention."""
        positive("every_steps", self.every_steps)
        positive("keep_last", self.keep_last)


@dataclass
class EvalConfig(ValidatedConfig):
    """Validation loss cadence and the sample generation at the end."""

    every_steps: int = 50
    sequences: int = 16  # validation windows per source
    sample_prompt: str = "def "
    sample_tokens: int = 64
    sample_temperature: float = 0.0  # 0: greedy
    sample_top_p: float = 1.0
    downstream: DownstreamConfig = field(default_factory=DownstreamConfig)  # lm-eval tasks during training

    def validate_fields(self) -> None:
        """Positive cadence and sizes."""
        positive("every_steps", self.every_steps)
        positive("sequences", self.sequences)
        non_negative("sample_tokens", self.sample_tokens)
        non_negative("sample_temperature", self.sample_temperature)
        in_range("sample_top_p", self.sample_top_p, 1e-6, 1.0)


@dataclass
class TrainConfig(ValidatedConfig):
    """How a pretraining run is executed; `recipe` says what it trains on and for how long."""

    seed: int = 0
    global_batch_size: int = 8  # sequences per optimizer step over all ranks (a phase may override)
    micro_batch_size: int = 4  # sequences per forward pass per rank; the rest is gradient accumulation
    precision: str = "fp32"  # fp32 | bf16 (autocast; fp32 master weights and residual stream)
    grad_clip: float = 1.0  # max global grad norm; 0 disables
    device: str = "auto"  # auto | cpu | cuda
    cpu_threads: int | None = None  # torch intra-op threads on CPU; None: torch's default (one per core)
    max_steps: int | None = None  # stop early (smoke runs); the recipe's token budget otherwise
    # torch.compile per transformer block (and the loss's per-chunk softmax, Muon's iteration); None = auto:
    # on for CUDA, off on CPU (inductor's CPU compile costs more than it saves on a small model).
    compile: bool | None = None
    compile_backend: str = "inductor"  # inductor | aot_eager (CPU tests: compiles without code generation)
    activation_checkpointing: str = "none"  # none | selective (keep matmul outputs) | full (keep block inputs)
    data: DataConfig = field(default_factory=DataConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    resilience: ResilienceConfig = field(default_factory=ResilienceConfig)  # preemption, watchdog, NaN policy
    faults: FaultsConfig = field(default_factory=FaultsConfig)  # fault injection (tests, soak runs)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)  # straggler detection (zaya_train.cluster)
    eval: EvalConfig = field(default_factory=EvalConfig)
    plots: bool = True

    def validate_fields(self) -> None:
        """Batch sizes, precision and device are coherent on their own (cross-checks happen at build)."""
        positive("global_batch_size", self.global_batch_size)
        positive("micro_batch_size", self.micro_batch_size)
        if self.global_batch_size % self.micro_batch_size:
            raise invalid(
                "global_batch_size", self.global_batch_size, f"a multiple of micro_batch_size ({self.micro_batch_size})"
            )
        one_of("precision", self.precision, ("fp32", "bf16"))
        one_of("device", self.device, ("auto", "cpu", "cuda"))
        one_of("compile_backend", self.compile_backend, ("inductor", "aot_eager"))
        one_of("activation_checkpointing", self.activation_checkpointing, ACTIVATION_CHECKPOINTING)
        non_negative("grad_clip", self.grad_clip)
        positive("max_steps", self.max_steps, optional=True)
        positive("cpu_threads", self.cpu_threads, optional=True)
        if self.data.document_masking and self.distributed.context_parallel > 1:
            raise invalid(
                "data.document_masking",
                True,
                f"false with distributed.context_parallel = {self.distributed.context_parallel} (document "
                "masking is not implemented under context parallelism): set either to off",
            )
