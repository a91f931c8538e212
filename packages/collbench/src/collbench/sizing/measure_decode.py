"""One candidate's decode latency, measured with zaya-model's fast decode path (`ZayaDecoder`).

On a GPU the decoder is the one zaya-model's decode benchmark calls `compiled-graph`: the step compiled per
layer and replayed from one CUDA graph (`decode_compile` off: the uncompiled step in the graph); on a CPU the
same step runs eagerly. Per batch: a random prompt of `prompt_len` tokens is prefilled, `warmup` steps run
untimed, then `repeats` spans of `tokens` steps are timed (no host sync inside a span); the median span gives
milliseconds per step, i.e. per generated token of each sequence. Weights are random (the latency does not
depend on them), bf16 on CUDA and fp32 on a CPU, as in the decode benchmark.
"""

import statistics
import time
from dataclasses import dataclass

import torch
from zaya_model import ZayaConfig, ZayaDecoder, build_model

from collbench.timing import sync

REPEATS = 3


@dataclass
class DecodeSetup:
    """How every candidate is decoded."""

    device: torch.device
    prompt_len: int
    warmup: int
    tokens: int
    compile: bool | None = None  # None: on CUDA only

    @property
    def dtype(self) -> torch.dtype:
        """bf16 on CUDA, fp32 on a CPU."""
        return torch.bfloat16 if self.device.type == "cuda" else torch.float32

    @property
    def dtype_bytes(self) -> int:
        """Bytes per weight element (the traffic the estimator charges)."""
        return torch.empty((), dtype=self.dtype).element_size()

    @property
    def max_len(self) -> int:
        """Cache positions one decoder needs: prompt, warm-up and the timed spans."""
        return self.prompt_len + self.warmup + REPEATS * self.tokens + 1

    @property
    def mean_context(self) -> int:
        """Cached positions at the middle of the timed steps (the context the estimate is made at)."""
        return self.prompt_len + self.warmup + REPEATS * self.tokens // 2


@dataclass
class DecodeMeasurement:
    """Milliseconds per decode step at one batch size (median span; fastest and slowest beside it)."""

    batch: int
    ms: float
    ms_min: float
    ms_max: float


def measure_decode(model_cfg: ZayaConfig, setup: DecodeSetup, batches: list[int], seed: int = 0) -> list:
    """DecodeMeasurement for every batch size, on one randomly initialised copy of the candidate."""
    torch.manual_seed(seed)
    with torch.device(setup.device):
        model = build_model(model_cfg)
    model = model.to(setup.dtype).eval()
    on_gpu = setup.device.type == "cuda"
    compile_step = on_gpu if setup.compile is None else setup.compile
    options = {"backend": "aot_eager"} if compile_step and not on_gpu else compile_step
    gen = torch.Generator().manual_seed(seed + 1)
    out = []
    try:
        for batch in batches:
            decoder = ZayaDecoder(model, batch, setup.max_len, compile=options, cuda_graph=True if on_gpu else None)
            prompt = torch.randint(1, model_cfg.vocab_size, (batch, setup.prompt_len), generator=gen).to(setup.device)
            decoder.prefill(prompt)
            for _ in range(setup.warmup):
                decoder.step()
            sync(setup.device)
            spans = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                for _ in range(setup.tokens):
                    decoder.step()
                sync(setup.device)
                spans.append((time.perf_counter() - start) / setup.tokens * 1e3)
            out.append(DecodeMeasurement(batch, statistics.median(spans), min(spans), max(spans)))
            del decoder
    finally:
        del model
        if on_gpu:
            torch.cuda.empty_cache()
    return out
