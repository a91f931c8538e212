"""Text generation from a prompt with a trained model: what the model has learned, at a glance."""

import torch
from torch import nn

from zaya_train.data.tokenizers import Tokenizer


@torch.no_grad()
def generate_text(
    model: nn.Module,
    tokenizer: Tokenizer,
    prompt: str,
    max_new_tokens: int,
    *,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
) -> str:
    """`prompt` plus up to `max_new_tokens` generated tokens (clipped to the model's positions), decoded.

    Seeded, so every rank (FSDP ranks generate together) and every rerun produce the same text.
    """
    device = next(model.parameters()).device
    ids = torch.as_tensor(tokenizer.encode(prompt), dtype=torch.long, device=device)[None]
    room = int(getattr(model, "max_positions", ids.shape[1] + max_new_tokens)) - ids.shape[1]
    was_training = model.training
    model.eval()
    try:
        out = model.generate(
            ids,
            max_new_tokens=max(min(max_new_tokens, room), 0),
            temperature=temperature,
            top_p=top_p,
            generator=torch.Generator(device).manual_seed(seed),
        )
    finally:
        model.train(was_training)
    return prompt + tokenizer.decode(out[0, ids.shape[1] :].tolist())
