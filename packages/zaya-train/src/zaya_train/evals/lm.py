"""zaya-model as an lm-evaluation-harness model (`--model zaya`): loglikelihood, loglikelihood_rolling and
generate_until, batched, on CPU or GPU, with the run's own tokenizer.

The request handling follows lm-eval's `hf` model so scores match it on the same weights: requests are sorted
longest first and batched (multiple-choice continuations of one token share one forward); inputs longer than
the model's positions are cut from the left; contexts are right-padded for scoring (causal, so padding never
reaches a real position) and left-padded with an attention mask for generation; the empty context is the EOS
token (what the run put between documents). The model is used only through its public API:
`forward(input_ids) -> logits` and `generate(...)`.

Generation runs in rounds of `gen_chunk_tokens` new tokens and stops once every sequence has produced EOS or
one of the request's stop strings, so a task allowing 256 tokens does not pay for 256 when lines end sooner.
"""

import contextlib
import logging
from typing import Any

import torch
import torch.nn.functional as F
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from lm_eval.models.utils import Collator, handle_stop_sequences, normalize_gen_kwargs, postprocess_generated_text
from lm_eval.utils import get_rolling_token_windows, make_disjoint_window
from tqdm import tqdm

from zaya_train.errors import ZayaTrainError

log = logging.getLogger("zaya_train")

MODEL_NAME = "zaya"
_GEN_KWARGS = {"until", "max_gen_toks", "do_sample", "temperature", "top_p"}
PRECISIONS = ("fp32", "bf16")


def _whole(name: str, value: Any, minimum: int = 1) -> int:
    """A whole-number model argument (lm-eval hands them over as int or str), checked."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise ZayaTrainError(f"zaya model: {name}={value!r} must be a whole number >= {minimum}")
    return number


@register_model(MODEL_NAME)
class ZayaLM(TemplateLM):
    """A `ZayaForCausalLM` + tokenizer behind lm-eval's `LM` interface.

    From the command line: `path=RUN_DIR_OR_HF_DIR[,step=N][,tokenizer=DIR][,precision=bf16]
    [,max_length=N][,max_gen_toks=N]`, plus lm-eval's `--batch_size` and `--device`. From Python:
    `ZayaLM(model=..., tokenizer=...)` wraps a live model (the trainer's downstream evals).
    """

    def __init__(
        self,
        path: str | None = None,
        *,
        step: int | None = None,
        tokenizer: Any = None,
        model: Any = None,
        device: str | None = None,
        batch_size: int | str = 16,
        max_batch_size: int | None = None,
        max_length: int | None = None,
        max_gen_toks: int = 256,
        gen_chunk_tokens: int = 32,
        precision: str = "fp32",
        seed: int = 1234,
        progress: bool = True,
        **unknown: Any,
    ) -> None:
        super().__init__()
        if unknown:
            raise ZayaTrainError(
                f"zaya model: unknown argument(s) {', '.join(sorted(unknown))}; allowed: path, step, tokenizer, "
                "device, batch_size, max_length, max_gen_toks, gen_chunk_tokens, precision, seed"
            )
        if precision not in PRECISIONS:
            raise ZayaTrainError(f"zaya model: precision={precision!r}; use one of {', '.join(PRECISIONS)}")
        from zaya_train.evals.loading import default_device, load_subject

        self.subject = None
        if model is None:
            if path is None:
                raise ZayaTrainError("zaya model: give path=RUN_DIR_OR_HF_DIR (a zaya-train run dir or a HF folder)")
            if tokenizer is not None and not isinstance(tokenizer, str):
                raise ZayaTrainError("zaya model: with path=..., tokenizer is a folder or tokenizer.json path")
            step = None if step is None else _whole("step", step, minimum=0)
            self.subject = load_subject(path, step=step, tokenizer=tokenizer, device=device or default_device())
            model, tokenizer = self.subject.model, self.subject.tokenizer
        elif tokenizer is None or isinstance(tokenizer, str):
            raise ZayaTrainError("zaya model: a live model needs its tokenizer object (tokenizer=...)")
        self.model, self.tok = model, tokenizer
        self._device = next(model.parameters()).device
        if str(batch_size).startswith("auto"):
            raise ZayaTrainError("zaya model: batch_size 'auto' is not supported; pass a number, e.g. --batch_size 16")
        self.batch_size = _whole("batch_size", batch_size)
        self._max_length = None if max_length is None else _whole("max_length", max_length)
        if self._max_length is not None and self._max_length > int(model.max_positions):
            raise ZayaTrainError(
                f"zaya model: max_length={self._max_length} exceeds the model's {model.max_positions} positions"
            )
        self.max_gen_toks = _whole("max_gen_toks", max_gen_toks)
        self.gen_chunk_tokens = _whole("gen_chunk_tokens", gen_chunk_tokens)
        self.precision, self.seed, self.progress = precision, int(seed), bool(progress)

    # ---------------------------------------------------------------- what lm-eval asks of a model
    @property
    def eot_token_id(self) -> int:
        return int(self.tok.eos_id)

    @property
    def max_length(self) -> int:
        """Longest input in tokens: the model's positions unless max_length is given."""
        return self._max_length or int(self.model.max_positions)

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def tokenizer_name(self) -> str:
        return str(self.tok.describe().get("fingerprint", "zaya"))

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs: Any) -> list[int]:
        """Token ids of `string` (zaya tokenizers add no special tokens)."""
        return [int(t) for t in self.tok.encode(string)]

    def tok_decode(self, tokens: list[int]) -> str:
        return self.tok.decode(tokens)

    def get_model_info(self) -> dict[str, Any]:
        """Recorded by lm-eval in its results' config."""
        info = self.subject.describe() if self.subject is not None else {"model": self.model.config.name}
        return {"zaya": info}

    # ---------------------------------------------------------------- forward passes
    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def _eval_mode(self):
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), self._autocast():
                yield
        finally:
            self.model.train(was_training)

    def _log_probs(self, rows: list[list[int]]) -> torch.Tensor:
        """Log-softmax [B, T, V] (fp32) of right-padded rows (padding id 0; causal, so it never matters)."""
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        logits = self.model(ids.to(self.device))
        return F.log_softmax(logits.float(), dim=-1)

    def _loglikelihood_tokens(
        self, requests: list[tuple[Any, list[int], list[int]]], disable_tqdm: bool = False, **kwargs: Any
    ) -> list[tuple[float, bool]]:
        """(log p(continuation | context), whether greedy decoding gives the continuation) per request."""
        results: list[tuple[float, bool]] = []
        order = Collator(
            requests,
            sort_fn=lambda req: (-len(req[1] + req[2]), tuple(req[1] + req[2])),
            group_by="contexts",
            group_fn=lambda req: req[-2] + req[-1][:-1],
        )
        bar = tqdm(total=len(requests), disable=disable_tqdm or not self.progress, desc="zaya: loglikelihood requests")
        cut = 0
        with self._eval_mode():
            for chunk in order.get_batched(n=self.batch_size):
                rows, inplens = [], []
                for _, context, continuation in chunk:
                    if not context or not continuation:
                        raise ZayaTrainError("loglikelihood request with an empty context or continuation")
                    cut += len(context) + len(continuation) > self.max_length + 1
                    row = (context + continuation)[-(self.max_length + 1) :][:-1]
                    rows.append(row)
                    inplens.append(len(row))
                log_probs = self._log_probs(rows)
                for (request, context, continuation), lp, inplen in zip(chunk, log_probs, inplens, strict=True):
                    scored = lp[inplen - len(continuation) : inplen][None]  # [1, cont, V]
                    greedy = scored.argmax(dim=-1)
                    for request_str, cont, lp_cont in order.get_cache(
                        req_str=request, cxt_toks=context, cont_toks=continuation, logits=scored
                    ):
                        target = torch.tensor(cont, dtype=torch.long, device=self.device)[None]
                        is_greedy = bool((greedy[:, -target.shape[1] :] == target).all())
                        total = float(torch.gather(lp_cont, 2, target[..., None]).sum())
                        results.append((total, is_greedy))
                        if request_str is not None:
                            self.cache_hook.add_partial("loglikelihood", request_str, (total, is_greedy))
                        bar.update(1)
        bar.close()
        if cut:
            log.info(
                "%d of %d requests were cut from the left to the model's %d positions",
                cut,
                len(requests),
                self.max_length,
            )
        return order.get_original(results)

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        """Log-likelihood of whole documents, each token predicted once with as much context as fits."""
        windows, owner = [], []
        for index, (text,) in enumerate(req.args for req in requests):
            tokens = self.tok_encode(text)
            for window in get_rolling_token_windows(tokens, self.prefix_token_id, self.max_length, context_len=1):
                windows.append((None, *make_disjoint_window(window)))
                owner.append(index)
        totals = [0.0] * len(requests)
        for start in range(0, len(windows), self.batch_size):
            batch = windows[start : start + self.batch_size]
            scores = self._loglikelihood_tokens(batch, disable_tqdm=True)
            for index, (score, _) in zip(owner[start : start + self.batch_size], scores, strict=True):
                totals[index] += score
        for req, total in zip(requests, totals, strict=True):
            self.cache_hook.add_partial("loglikelihood_rolling", req.args, total)
        return totals

    # ---------------------------------------------------------------- generation
    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """Greedy (or sampled, with do_sample) continuations, cut at the first stop string."""
        results: list[str] = []
        order = Collator(
            [req.args for req in requests],
            sort_fn=lambda req: (-len(self.tok_encode(req[0])), req[0]),
            group_by="gen_kwargs",
            group_fn=lambda req: req[1],
        )
        bar = tqdm(total=len(requests), disable=disable_tqdm or not self.progress, desc="zaya: generate requests")
        eos_text = self.tok_decode([self.eot_token_id]) or None
        for chunk in order.get_batched(n=self.batch_size):
            contexts, all_kwargs = zip(*chunk, strict=True)
            unknown = sorted(set(all_kwargs[0]) - _GEN_KWARGS - {"max_new_tokens", "max_tokens"})
            if unknown:
                raise ZayaTrainError(
                    f"zaya model: generation argument(s) {', '.join(unknown)} are not supported; "
                    f"supported: {', '.join(sorted(_GEN_KWARGS))}"
                )
            kwargs = normalize_gen_kwargs(all_kwargs[0], self.max_gen_toks)
            until = handle_stop_sequences(kwargs.pop("until", None), eos=eos_text)
            for text in self._generate(list(contexts), until, kwargs):
                results.append(text)
                bar.update(1)
        bar.close()
        return order.get_original(results)

    def _generate(self, contexts: list[str], until: list[str], kwargs: dict[str, Any]) -> list[str]:
        max_new = int(kwargs["max_gen_toks"])
        room = self.max_length - max_new
        if room <= 0:
            raise ZayaTrainError(
                f"a task asks for {max_new} new tokens but the model has {self.max_length} positions; "
                "lower the task's max_gen_toks"
            )
        temperature = float(kwargs.get("temperature") or 0.0) if kwargs.get("do_sample") else 0.0
        top_p = float(kwargs.get("top_p") or 1.0)
        encoded = [self.tok_encode(c)[-room:] for c in contexts]
        width = max(len(e) for e in encoded)
        ids = torch.full((len(encoded), width), self.eot_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, row in enumerate(encoded):
            if row:
                ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
                mask[i, width - len(row) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        generator = torch.Generator(self.device).manual_seed(self.seed)
        new_tokens = torch.empty(len(encoded), 0, dtype=torch.long, device=self.device)
        with self._eval_mode():
            while new_tokens.shape[1] < max_new:
                step = min(self.gen_chunk_tokens, max_new - new_tokens.shape[1])
                out = self.model.generate(
                    ids,
                    max_new_tokens=step,
                    temperature=temperature,
                    top_p=top_p,
                    attention_mask=mask,
                    eos_token_id=self.eot_token_id,
                    generator=generator,
                )
                fresh = out[:, ids.shape[1] :]
                ids, new_tokens = out, torch.cat((new_tokens, fresh), dim=1)
                mask = torch.cat((mask, torch.ones_like(fresh)), dim=1)
                if self._all_stopped(new_tokens, until) or fresh.shape[1] < step:
                    break
        texts = [self.tok_decode(row.tolist()) for row in new_tokens[:, :max_new]]
        return [postprocess_generated_text(text, until, None) for text in texts]

    def _all_stopped(self, new_tokens: torch.Tensor, until: list[str]) -> bool:
        for row in new_tokens.tolist():
            if self.eot_token_id in row:
                continue
            text = self.tok_decode(row)
            if not any(stop and stop in text for stop in until):
                return False
        return True
