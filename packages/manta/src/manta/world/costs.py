"""Measured costs of the tiny world on this CPU: weight memory and seconds per denoising step, with LoRAs.

These numbers go into the world's catalog instead of invented ones: a checkpoint's `vram_bytes` is the
bytes of its weights (UNet, VAE, text encoder; on a CPU that is the memory the model holds), its
`step_latency_ms` the measured time of one guided denoising step at 32 x 32; a LoRA's are its own weight
bytes and the extra time per step it costs when active (unfused), measured against the same pipeline timed
again right before it (a shared CPU's load drifts; a difference below the noise is recorded as 0).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np


def weight_bytes(module: Any) -> int:
    """Bytes of a torch module's parameters and buffers."""
    return int(sum(t.numel() * t.element_size() for t in [*module.parameters(), *module.buffers()]))


def step_ms(pipe: Any, repeats: int = 5, steps: int = 4) -> float:
    """Fastest of `repeats` timings, in milliseconds per guided denoising step of `pipe` at 32 x 32 (one
    warm-up call first); the minimum, not the median, because on a shared CPU the noise only ever adds time."""
    import torch

    def call() -> float:
        start = time.perf_counter()
        pipe(
            "a red circle",
            num_inference_steps=steps,
            guidance_scale=3.0,
            height=32,
            width=32,
            generator=torch.Generator().manual_seed(0),
            output_type="np",
        )
        return (time.perf_counter() - start) * 1000 / steps

    call()
    return float(np.min([call() for _ in range(repeats)]))


def measure_world_costs(paths: dict[str, Path], repeats: int = 5) -> dict[str, dict[str, float]]:
    """{model id: {"vram_bytes", "step_latency_ms", "size_bytes"}} for the world's checkpoints and LoRAs."""
    import torch
    from diffusers import DiffusionPipeline

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    costs: dict[str, dict[str, float]] = {}
    try:
        for model_id, path in paths.items():
            if model_id.startswith("lora-"):
                continue
            pipe = DiffusionPipeline.from_pretrained(str(path), local_files_only=True, torch_dtype=torch.float32)
            pipe.set_progress_bar_config(disable=True)
            base_ms = step_ms(pipe, repeats)
            size = sum(f.stat().st_size for f in Path(path).rglob("*.safetensors"))
            memory = sum(weight_bytes(getattr(pipe, n)) for n in ("unet", "vae", "text_encoder"))
            costs[model_id] = {"vram_bytes": memory, "step_latency_ms": base_ms, "size_bytes": size}
            if model_id != "tiny-flat":
                continue
            for lora_id, lora in paths.items():
                if not lora_id.startswith("lora-"):
                    continue
                before = step_ms(pipe, repeats)  # the base again, right before: the machine's load drifts
                pipe.load_lora_weights(str(lora.parent), weight_name=lora.name, adapter_name="probe")
                pipe.set_adapters(["probe"], [1.0])
                extra = max(step_ms(pipe, repeats) - before, 0.0)
                lora_bytes = sum(weight_bytes(m) for n, m in pipe.unet.named_modules() if n.endswith("probe"))
                costs[lora_id] = {"vram_bytes": lora_bytes, "step_latency_ms": extra, "size_bytes": lora.stat().st_size}
                pipe.delete_adapters("probe")
    finally:
        torch.set_num_threads(threads)
    return costs
