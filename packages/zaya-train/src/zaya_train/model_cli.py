"""`zaya model generate RUN_DIR_OR_HF_DIR --prompt "..."`: try a trained model, tokens streamed as they come.

Lives in zaya-train (not zaya-model) because a run dir's checkpoint and tokenizer are zaya-train's
(`trained_model.py`). On a GPU it runs `ZayaDecoder`'s fast path (static cache, one CUDA graph per step;
`--compile` adds per-layer inductor), on a CPU the same step eagerly.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from zaya_config.cli_errors import fail

if TYPE_CHECKING:
    from zaya_train.data.tokenizers import Tokenizer

model_app = typer.Typer(help="Try a trained ZAYA model: generate text from a prompt.", no_args_is_help=True)


@model_app.callback()
def _group() -> None:
    """Try a trained ZAYA model (a command group, so that `generate` stays a subcommand)."""


class TextStream:
    """Decodes the growing token list and hands out only the new, complete text (no half UTF-8 characters)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer, self.ids, self.shown = tokenizer, [], 0

    def push(self, token: int) -> str:
        self.ids.append(token)
        text = self.tokenizer.decode(self.ids)
        if text.endswith("\ufffd"):  # an incomplete multi-byte character: wait for the rest
            return ""
        new, self.shown = text[self.shown :], len(text)
        return new


@model_app.command("generate")
def generate(
    path: Path = typer.Argument(..., help="A pretrain run dir (config.yaml + checkpoints/) or a HF zaya folder"),
    prompt: str = typer.Option(..., "--prompt", "-p", help="Text to continue"),
    max_new_tokens: int = typer.Option(200, "--max-new-tokens", "-n", help="At most this many new tokens"),
    temperature: float = typer.Option(0.0, help="0 = greedy; else sampling temperature"),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling mass (with --temperature > 0)"),
    seed: int = typer.Option(0, help="Sampling seed"),
    device: str = typer.Option("auto", help="auto (cuda if available) | cpu | cuda | cuda:N"),
    dtype: str = typer.Option("auto", help="auto (bf16 on cuda, fp32 on cpu) | fp32 | bf16"),
    compile_: bool = typer.Option(False, "--compile", help="torch.compile the decode step (GPU; slower start)"),
    kernels: str = typer.Option(
        "torch", help="torch | triton: each layer as seven or eight fused Triton kernels (CUDA; top-1 routing)"
    ),
    tokenizer: str = typer.Option(None, help="Override the tokenizer: 'byte' or a tokenizer.json"),
    stop_at_eos: bool = typer.Option(True, help="Stop at the tokenizer's EOS token"),
) -> None:
    """Print PROMPT, then the model's continuation token by token; a summary line goes to stderr."""
    import time

    import torch
    from rich.console import Console
    from zaya_model import ZayaDecoder, ZayaModelError

    from zaya_train.errors import ZayaTrainError
    from zaya_train.trained_model import load_trained

    err = Console(stderr=True)
    try:
        dev = torch.device(
            "cuda" if device == "auto" and torch.cuda.is_available() else "cpu" if device == "auto" else device
        )
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ZayaTrainError(f"--device {device}: no CUDA GPU here; use --device cpu")
        dtypes = {
            "auto": torch.bfloat16 if dev.type == "cuda" else torch.float32,
            "fp32": torch.float32,
            "bf16": torch.bfloat16,
        }
        if dtype not in dtypes:
            raise ZayaTrainError(f"--dtype {dtype!r}: use one of {', '.join(dtypes)}")
        if max_new_tokens <= 0:
            raise ZayaTrainError(f"--max-new-tokens {max_new_tokens}: give at least 1")
        with err.status(f"loading {path} ..."):
            loaded = load_trained(path, dev, dtypes[dtype], tokenizer)
        ids = torch.as_tensor(loaded.tokenizer.encode(prompt), dtype=torch.long, device=dev)[None]
        if ids.shape[1] == 0:
            raise ZayaTrainError("--prompt is empty; give some text to continue")
        room = loaded.model.max_positions - ids.shape[1]
        if room <= 0:
            raise ZayaTrainError(f"the prompt has {ids.shape[1]} tokens; the model takes {loaded.model.max_positions}")
        n = min(max_new_tokens, room)
        gen = torch.Generator(dev).manual_seed(seed)
        with err.status("preparing the decoder (compiling)" if compile_ else "preparing the decoder ..."):
            decoder = ZayaDecoder(
                loaded.model,
                1,
                ids.shape[1] + n,
                temperature=temperature,
                top_p=top_p,
                eos_token_id=loaded.tokenizer.eos_id if stop_at_eos else None,
                compile=compile_,
                generator=gen,
                kernels=kernels,
            )
    except (ZayaTrainError, ZayaModelError) as error:  # zaya_model's errors import torch: caught here, not by @reports
        fail(error)
    typer.echo(prompt, nl=False)
    text = TextStream(loaded.tokenizer)
    start, count = time.perf_counter(), 0
    for token in decoder.stream(ids, n):
        count += 1
        if stop_at_eos and int(token[0]) == loaded.tokenizer.eos_id:
            break
        typer.echo(text.push(int(token[0])), nl=False)
    typer.echo("")
    seconds = time.perf_counter() - start
    mode = ("CUDA graph" if decoder.graph is not None else "eager") + (
        ", triton kernels" if kernels == "triton" else ""
    )
    err.print(
        f"{count} tokens in {seconds:.2f} s ({count / max(seconds, 1e-9):.1f} tokens/s, {dev}, {mode}) "
        f"from {loaded.source}",
        highlight=False,
        soft_wrap=True,
    )


if __name__ == "__main__":
    model_app()
