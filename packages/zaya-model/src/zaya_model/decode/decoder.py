"""`ZayaDecoder`: autoregressive decoding at fixed shapes, for CUDA-graph replay at the memory roofline.

Batch-1 decoding reads every weight once per token, so its floor is bytes / bandwidth; issued op by op from
Python it is bound by kernel launches instead. Here one step (embed -> every layer -> LM head -> sampling)
is a sequence of device ops on buffers whose shapes and addresses never change:
- the `ZayaStaticCache` (keys/values, CCA conv and delayed-value state, valid slots, positions and the
  slot index all on the device): no Python value depends on the position;
- attention against the whole fixed-size cache with the invalid slots masked, the token's own key scored
  apart (`ZayaCCAttention.decode`), so the cache write can follow in the same fused function;
- MoE dispatch without host sync (`ZayaExperts.forward_decode`: gathered experts for a few pairs, the
  grouped GEMM for more);
- the next token chosen on the device (`sampling.py`), finished rows filled with EOS by a device flag
  (`eos.py`).
So the step (its pieces: `step.py`) can be compiled once (`compile=True`: per-layer `torch.compile`, one
graph for all layers but the first, which has no depth state) and recorded in one CUDA graph (`cuda_graph`,
default on CUDA) that each `step()` replays with a single launch. On a CPU the same code runs eagerly; the
prompt always takes the ordinary forward, writing its keys and values straight into the static buffers.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from zaya_model.decode.eos import all_finished, fill_after_eos, kept_columns
from zaya_model.decode.fused import FusedDecodeLayers
from zaya_model.decode.request import check_request, check_sampling, prompt_mask, prompt_positions
from zaya_model.decode.sampling import sample_tokens
from zaya_model.decode.static_cache import ZayaStaticCache
from zaya_model.decode.step import decode_inputs, decode_layer, decode_logits, evaluating
from zaya_model.errors import ZayaModelError
from zaya_model.experts import DECODE_GATHER_MAX_PAIRS, grouped_mm_available

if TYPE_CHECKING:
    from zaya_model.model import ZayaForCausalLM

KERNELS = ("torch", "triton")


class ZayaDecoder:
    """Decodes `batch_size` rows of up to `max_len` positions (prompt + new tokens) with one model.

    temperature / top_p / eos_token_id are fixed per decoder (they are part of the recorded step).
    compile: False, True, or a dict of `torch.compile` options for the per-layer, input and head functions
    (on CUDA: inductor; `mode` must not use cudagraphs, this class records its own graph).
    cuda_graph: record the step in a CUDA graph (None: when the model is on CUDA, falling back to the
    uncaptured step with a warning if capture fails; True: required).
    generator: the sampling generator, on the model's device (None: the default one).
    kernels: "torch" (the layers as torch ops, compiled or not) or "triton" (each layer as seven or eight fused
    Triton kernels, `fused.py`; CUDA, or a CPU under TRITON_INTERPRET=1; top-1 routing).
    """

    def __init__(
        self,
        model: ZayaForCausalLM,
        batch_size: int,
        max_len: int,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        eos_token_id: int | None = None,
        compile: bool | dict[str, Any] = False,
        cuda_graph: bool | None = None,
        generator: torch.Generator | None = None,
        kernels: str = "torch",
    ) -> None:
        check_sampling(temperature, top_p)
        if kernels not in KERNELS:
            raise ZayaModelError(f"kernels={kernels!r} is not one of {', '.join(KERNELS)}")
        if getattr(model, "expert_parallel", None) is not None:  # every step reads its all-to-all splits on the host
            if cuda_graph or kernels != "torch":
                raise ZayaModelError(
                    "an expert-parallel model decodes step by step with the torch kernels (its all-to-all split "
                    "sizes are read on the host every step); pass cuda_graph=False, kernels='torch'"
                )
            cuda_graph = False
        weight = model.embed.weight
        self.model, self.device = model, weight.device
        self.cache = ZayaStaticCache(model.config, batch_size, max_len, self.device, weight.dtype)
        self.temperature, self.top_p, self.eos_token_id, self.generator = temperature, top_p, eos_token_id, generator
        self.tokens = torch.zeros(batch_size, dtype=torch.long, device=self.device)  # the step's input and output
        self.finished = torch.zeros(batch_size, dtype=torch.bool, device=self.device)
        self.logits: torch.Tensor | None = None  # fp32 [B, V] the last tokens were chosen from
        self._inputs, self._layer, self._logits = decode_inputs, decode_layer, decode_logits
        self._fused: FusedDecodeLayers | None = None
        if kernels == "triton":
            self._fused = FusedDecodeLayers(model, self.cache)
        # compiled, the gathered experts are read in place (fused gather); eager, the grouped GEMM does that
        self.gather_max_pairs = DECODE_GATHER_MAX_PAIRS if compile else 0
        if compile:
            self._compile({} if compile is True else dict(compile))
        grouped_mm_available(self.device, weight.dtype)  # queries the device now: traced code reads a constant
        if cuda_graph and self.device.type != "cuda":
            raise ZayaModelError(f"cuda_graph=True needs the model on a CUDA device; it is on {self.device}")
        self.graph: torch.cuda.CUDAGraph | None = None
        self._room = 0  # positions left in the cache (host-side count: no sync)
        if cuda_graph or (cuda_graph is None and self.device.type == "cuda"):
            try:
                self._capture()
            except Exception as err:
                if cuda_graph:  # asked for explicitly: fail loudly
                    raise
                warnings.warn(
                    f"CUDA graph capture failed ({type(err).__name__}: {err}); decoding step by step", stacklevel=2
                )
                self.cache.reset()

    @property
    def batch_size(self) -> int:
        return self.cache.batch_size

    @property
    def max_len(self) -> int:
        return self.cache.max_len

    # ---------------------------------------------------------------- the step
    def _compile(self, options: dict[str, Any]) -> None:
        if "cudagraphs" in str(options.get("mode", "")) or options.get("mode") == "reduce-overhead":
            raise ZayaModelError(f"compile mode {options['mode']!r} records CUDA graphs; use cuda_graph=True instead")
        options = {"fullgraph": True, "dynamic": False, **options}
        config = torch._dynamo.config  # the layers are one code object: room for a graph variant per layer
        config.recompile_limit = max(getattr(config, "recompile_limit", 8), 2 * len(self.model.layers) + 8)
        self._inputs = torch.compile(decode_inputs, **options)
        self._layer = torch.compile(decode_layer, **options)
        self._logits = torch.compile(decode_logits, **options)

    def _step(self) -> torch.Tensor:
        """Feed `tokens`, write the cache, leave the next tokens in `tokens`; the logits (device ops only)."""
        model, cache = self.model, self.cache
        resid, cos, sin = self._inputs(model, self.tokens, cache.positions)
        if self._fused is not None:
            fused, B = self._fused, self.batch_size
            fused.resid.copy_(resid.view(B, -1))
            fused.cos.copy_(cos.view(B, -1))
            fused.sin.copy_(sin.view(B, -1))
            fused.run()
            resid = fused.resid.view(B, 1, -1)
        else:
            router_state = None
            for i, layer in enumerate(model.layers):
                resid, router_state = self._layer(
                    layer,
                    resid,
                    router_state,
                    cos,
                    sin,
                    *cache.layer(i),
                    cache.valid,
                    cache.length,
                    self.gather_max_pairs,
                )
        cache.advance()
        logits = self._logits(model, resid)
        self._choose(logits)
        return logits

    def _choose(self, logits_BV: torch.Tensor) -> None:
        token = sample_tokens(logits_BV, self.temperature, self.top_p, self.generator)
        self.tokens.copy_(fill_after_eos(token, self.finished, self.eos_token_id))

    def _capture(self) -> None:
        """Warm up (compiling, allocating) on a side stream, record one step, then forget the warm-up."""
        with evaluating(self.model):
            warm = torch.cuda.Stream(self.device)
            warm.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(warm):
                for _ in range(min(3, self.max_len)):
                    self._step()
            torch.cuda.current_stream(self.device).wait_stream(warm)
            graph = torch.cuda.CUDAGraph()
            if self.generator is not None and self.temperature > 0:
                if not hasattr(graph, "register_generator_state"):
                    raise ZayaModelError(
                        "this torch cannot replay a custom generator in a CUDA graph; pass generator=None"
                    )
                graph.register_generator_state(self.generator)
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):  # other threads may use CUDA
                self._graph_logits = self._step()  # lives in the graph's pool, refilled by each replay
        self.graph = graph
        self.cache.reset()

    # ---------------------------------------------------------------- public
    def prefill(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Start over with these (left-padded) prompts [B, T]; returns the first new tokens [B] (device)."""
        check_request(input_ids, 0, self.max_len, self.batch_size)
        mask = prompt_mask(input_ids, attention_mask)
        self.cache.reset()
        self.finished.zero_()
        view = self.cache.prompt_view()
        positions = prompt_positions(mask)
        with evaluating(self.model):
            self.logits = self.model(input_ids, attention_mask=mask, position_ids=positions, cache=view)[:, -1]
            self.cache.finish_prompt(view, mask, positions[:, -1] + 1)
            self._choose(self.logits)
        self._room = self.max_len - input_ids.shape[1]
        return self.tokens

    def step(self) -> torch.Tensor:
        """Feed the last tokens, return the next ones [B] (device; overwritten by the next step, as is
        `logits`, what they were chosen from)."""
        if self._room <= 0:
            raise ZayaModelError(
                f"the decoder's cache ({self.max_len} positions) is full, or prefill() was not called; "
                "make a decoder with a larger max_len"
            )
        if self.graph is not None:
            self.graph.replay()
            self.logits = self._graph_logits
        else:
            with evaluating(self.model):
                self.logits = self._step()
        self._room -= 1
        return self.tokens

    def generate(
        self, input_ids: torch.Tensor, max_new_tokens: int, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Prompt + up to max_new_tokens tokens [B, T + n]; stops early once every row has emitted EOS
        (checked every 8 steps under a CUDA graph, every step otherwise), finished rows filled with EOS."""
        check_request(input_ids, max_new_tokens, self.max_len, self.batch_size)
        if max_new_tokens == 0:
            return input_ids.clone()
        eos = self.eos_token_id
        out = torch.full((self.batch_size, max_new_tokens), 0 if eos is None else eos, device=self.device)
        out[:, 0] = self.prefill(input_ids, attention_mask)
        check_every = 8 if self.graph is not None else 1
        for i in range(1, max_new_tokens):
            if i % check_every == 0 and all_finished(self.finished, eos):
                break
            out[:, i] = self.step()
        return torch.cat((input_ids, out[:, : kept_columns(out, eos)]), dim=1)

    def stream(
        self, input_ids: torch.Tensor, max_new_tokens: int, attention_mask: torch.Tensor | None = None
    ) -> Iterator[torch.Tensor]:
        """Yield each step's new tokens [B] (on the host) as soon as they exist; stops when every row is done."""
        check_request(input_ids, max_new_tokens, self.max_len, self.batch_size)
        done = torch.zeros(self.batch_size, dtype=torch.bool)  # on the host: no sync with the device's flag
        for i in range(max_new_tokens):
            # a copy even on a CPU, where .cpu() would hand out the `tokens` buffer the next step overwrites
            token = (self.prefill(input_ids, attention_mask) if i == 0 else self.step()).to("cpu", copy=True)
            yield token
            fill_after_eos(token, done, self.eos_token_id)  # the token is filled already; this marks `done`
            if all_finished(done, self.eos_token_id):
                return
