"""A tiny randomly initialised Stable Diffusion pipeline and LoRAs, built locally, for smoke runs and tests.

Real users point the catalog at real local model folders; this exists so that the generation path
(diffusers pipeline, peft LoRAs, `set_adapters` with weights) can run end to end on a CPU in seconds
with nothing downloaded. Needs the `diffusers` extra.
"""

from __future__ import annotations

import json
from pathlib import Path


def build_tiny_pipeline(folder: Path) -> Path:
    """A ~100k-parameter Stable Diffusion pipeline (UNet, VAE, CLIP text encoder, tokenizer) saved to folder."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(16, 32),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=4,
        norm_num_groups=8,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        block_out_channels=(8, 16),
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        norm_num_groups=8,
        sample_size=16,
    )
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for char in "abcdefghijklmnopqrstuvwxyz0123456789,":
        vocab[char] = len(vocab)
        vocab[char + "</w>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(
        vocab_file=str(folder / "vocab.json"), merges_file=str(folder / "merges.txt"), model_max_length=16
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=16,
            projection_dim=16,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        )
    )
    pipe = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=DDIMScheduler(num_train_timesteps=1000, clip_sample=False, steps_offset=1),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder / "tiny-sd")
    return folder / "tiny-sd"


def make_lora(model_dir: Path, out_dir: Path, seed: int) -> Path:
    """A rank-4 LoRA on the UNet's attention projections with random (non-zero) up weights."""
    import torch
    from diffusers import StableDiffusionPipeline, UNet2DConditionModel
    from diffusers.utils import convert_state_dict_to_diffusers
    from peft import LoraConfig, get_peft_model_state_dict

    torch.manual_seed(seed)
    unet = UNet2DConditionModel.from_pretrained(model_dir / "unet")
    unet.add_adapter(LoraConfig(r=4, lora_alpha=4, target_modules=["to_q", "to_k", "to_v", "to_out.0"]))
    with torch.no_grad():
        for name, param in unet.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    state = convert_state_dict_to_diffusers(get_peft_model_state_dict(unet))
    StableDiffusionPipeline.save_lora_weights(out_dir, unet_lora_layers=state, safe_serialization=True)
    return out_dir / "pytorch_lora_weights.safetensors"


def write_tiny_catalog(folder: Path, n_loras: int = 2) -> Path:
    """A tiny pipeline, `n_loras` LoRAs and a catalog (JSONL) that points at them; returns the catalog path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = build_tiny_pipeline(folder)
    rows = [
        {
            "id": "tiny-sd",
            "kind": "checkpoint",
            "base_family": "tiny",
            "description": "tiny test pipeline for any subject",
            "vram_bytes": 10**8,
            "step_latency_ms": 1.0,
            "path": str(model),
        }
    ]
    subjects = ("cat", "watercolor painting", "hat", "robot", "city at night", "dragon")
    for i in range(n_loras):
        lora = make_lora(model, folder / f"lora{i}", seed=i + 1)
        subject = subjects[i % len(subjects)]
        rows.append(
            {
                "id": f"tiny-{subject.replace(' ', '-')}",
                "kind": "lora",
                "base_family": "tiny",
                "description": f"{subject} adapter",
                "rank": 4,
                "vram_bytes": 10**6,
                "step_latency_ms": 0.1,
                "tags": [subject],
                "path": str(lora),
            }
        )
    path = folder / "catalog.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
