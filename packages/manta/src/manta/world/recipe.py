"""The seeded recipe that trains the tiny world: VAE, base checkpoint, a pixel-art checkpoint, and LoRAs.

Stages (each a few minutes at most on one CPU thread):
1. VAE on images of every object, colour, texture and style (a general image codec, as SD's VAE is);
2. `tiny-flat`: text encoder + UNet from scratch on the base objects, plain and flat only;
3. `tiny-pixel`: `tiny-flat`'s UNet fine-tuned on pixel-art images (a second checkpoint of the same family);
4. one LoRA per concept the base lacks (star, heart, stripes, checks, watercolor, line art), each trained
   with peft on `tiny-flat`'s UNet, its text encoder frozen, and saved in diffusers' LoRA format.
Captions are dropped 10% of the time so classifier-free guidance works. The same recipe and seed give the
same weights (one thread, seeded generators, deterministic CPU kernels).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from manta.world.drawing import draw_batch
from manta.world.models import LORA_TARGETS, build_text_encoder, build_tokenizer, build_unet, build_vae
from manta.world.vocabulary import BASE_OBJECTS, OBJECTS, STYLES, TEXTURES, Scene, sample_scenes

# What each LoRA is trained on: (objects, textures, styles) of its images.
LORA_DATA: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "star": (("star",), ("plain",), ("flat",)),
    "heart": (("heart",), ("plain",), ("flat",)),
    "stripes": (BASE_OBJECTS, ("striped",), ("flat",)),
    "checks": (BASE_OBJECTS, ("checkered",), ("flat",)),
    "watercolor": (BASE_OBJECTS, ("plain",), ("watercolor",)),
    "line-art": (BASE_OBJECTS, ("plain",), ("line art",)),
}
CHECKPOINT_DATA = {
    "tiny-flat": (BASE_OBJECTS, ("plain",), ("flat",)),
    "tiny-pixel": (BASE_OBJECTS, ("plain",), ("pixel art",)),
}
SCHEDULER = {"num_train_timesteps": 1000, "beta_schedule": "squaredcos_cap_v2", "prediction_type": "epsilon"}


@dataclass
class WorldRecipe:
    """Steps, sizes and seeds of every stage; `quick()` is the same recipe at smoke size (for tests)."""

    seed: int = 0
    images_per_stage: int = 1024
    batch: int = 32
    vae_batch: int = 16
    vae_steps: int = 600
    vae_lr: float = 8e-3
    base_steps: int = 500
    base_lr: float = 2e-3
    checkpoint_steps: int = 150
    checkpoint_lr: float = 1e-3
    lora_steps: int = 150
    lora_rank: int = 4
    lora_lr: float = 4e-3
    caption_dropout: float = 0.1
    threads: int = 1
    loras: tuple[str, ...] = field(default_factory=lambda: tuple(LORA_DATA))

    @classmethod
    def quick(cls, seed: int = 0) -> WorldRecipe:
        return cls(
            seed=seed,
            images_per_stage=64,
            batch=8,
            vae_batch=8,
            vae_steps=3,
            base_steps=3,
            checkpoint_steps=2,
            lora_steps=2,
            loras=("star", "watercolor"),
        )


Progress = Callable[[str, int, int, float], None]


def _images(recipe: WorldRecipe, stage: int, spec: tuple[tuple[str, ...], ...]) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng([recipe.seed, stage])
    scenes: list[Scene] = sample_scenes(rng, recipe.images_per_stage, *spec)
    return draw_batch(scenes, rng), [s.caption() for s in scenes]


def _loop(steps: int, params: list, lr: float, loss_fn: Callable[[int], object], name: str, progress: Progress | None):
    import torch

    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=max(steps, 1), pct_start=0.1)
    for step in range(steps):
        loss = loss_fn(step)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if progress is not None:
            progress(name, step + 1, steps, float(loss))


def train_vae(recipe: WorldRecipe, progress: Progress | None = None):
    """The VAE: L1 + MSE reconstruction with a small KL term; its latents are scaled to unit variance."""
    import torch

    torch.manual_seed(recipe.seed)
    images, _ = _images(recipe, 0, (OBJECTS, TEXTURES, STYLES))
    data = torch.from_numpy(images)
    vae = build_vae()
    gen = torch.Generator().manual_seed(recipe.seed)

    def loss(step: int):
        batch = data[torch.randint(len(data), (recipe.vae_batch,), generator=gen)]
        posterior = vae.encode(batch).latent_dist
        recon = vae.decode(posterior.sample(generator=gen)).sample
        return (recon - batch).abs().mean() + (recon - batch).pow(2).mean() + 1e-6 * posterior.kl().mean()

    _loop(recipe.vae_steps, list(vae.parameters()), recipe.vae_lr, loss, "vae", progress)
    vae.eval()
    with torch.no_grad():
        std = float(vae.encode(data[:256]).latent_dist.mean.std())
    vae.register_to_config(scaling_factor=1.0 / max(std, 1e-3))
    return vae


def _latents(vae, images: np.ndarray):
    import torch

    with torch.no_grad():
        dist = vae.encode(torch.from_numpy(images)).latent_dist
    return dist.mean * vae.config.scaling_factor, dist.std * vae.config.scaling_factor


def _denoise_loss(recipe, unet, text_encoder, tokenizer, latents, captions, gen):
    """One step of the epsilon-prediction loss on a random batch (captions dropped at `caption_dropout`)."""
    import torch
    from diffusers import DDPMScheduler

    noise_scheduler = DDPMScheduler(**SCHEDULER)
    mean, std = latents

    def loss(step: int):
        idx = torch.randint(len(mean), (recipe.batch,), generator=gen)
        x0 = mean[idx] + std[idx] * torch.randn(mean[idx].shape, generator=gen)
        drop = torch.rand(recipe.batch, generator=gen) < recipe.caption_dropout
        texts = ["" if d else captions[i] for d, i in zip(drop.tolist(), idx.tolist(), strict=True)]
        ids = tokenizer(
            texts, padding="max_length", max_length=tokenizer.model_max_length, truncation=True, return_tensors="pt"
        ).input_ids
        hidden = text_encoder(ids).last_hidden_state
        noise = torch.randn(x0.shape, generator=gen)
        t = torch.randint(0, noise_scheduler.config.num_train_timesteps, (recipe.batch,), generator=gen)
        noisy = noise_scheduler.add_noise(x0, noise, t)
        return (unet(noisy, t, hidden).sample - noise).pow(2).mean()

    return loss


def train_base(recipe: WorldRecipe, vae, tokenizer, progress: Progress | None = None):
    """Text encoder and UNet from scratch on the base checkpoint's images."""
    import torch

    torch.manual_seed(recipe.seed + 1)
    images, captions = _images(recipe, 1, CHECKPOINT_DATA["tiny-flat"])
    text_encoder, unet = build_text_encoder(len(tokenizer)), build_unet()
    gen = torch.Generator().manual_seed(recipe.seed + 1)
    loss = _denoise_loss(recipe, unet, text_encoder, tokenizer, _latents(vae, images), captions, gen)
    params = list(unet.parameters()) + list(text_encoder.parameters())
    _loop(recipe.base_steps, params, recipe.base_lr, loss, "tiny-flat", progress)
    return text_encoder.eval(), unet.eval()


def train_checkpoint(recipe: WorldRecipe, name: str, vae, tokenizer, text_encoder, unet, progress=None):
    """A second checkpoint of the same family: the base UNet fine-tuned in full on another style."""
    import torch

    torch.manual_seed(recipe.seed + 2)
    images, captions = _images(recipe, 2, CHECKPOINT_DATA[name])
    tuned = copy.deepcopy(unet).train()
    text_encoder.requires_grad_(False)
    gen = torch.Generator().manual_seed(recipe.seed + 2)
    loss = _denoise_loss(recipe, tuned, text_encoder, tokenizer, _latents(vae, images), captions, gen)
    _loop(recipe.checkpoint_steps, list(tuned.parameters()), recipe.checkpoint_lr, loss, name, progress)
    return tuned.eval()


def train_lora(recipe: WorldRecipe, name: str, vae, tokenizer, text_encoder, unet, progress=None) -> dict:
    """A peft LoRA on the base UNet for one concept; returns its state dict in diffusers' naming."""
    import torch
    from diffusers.utils import convert_state_dict_to_diffusers
    from peft import LoraConfig, get_peft_model_state_dict

    stage = 10 + sorted(LORA_DATA).index(name)
    torch.manual_seed(recipe.seed + stage)
    images, captions = _images(recipe, stage, LORA_DATA[name])
    model = copy.deepcopy(unet)
    model.requires_grad_(False)
    text_encoder.requires_grad_(False)
    model.add_adapter(
        LoraConfig(
            r=recipe.lora_rank,
            lora_alpha=recipe.lora_rank,
            target_modules=list(LORA_TARGETS),
            init_lora_weights="gaussian",
        )
    )
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    gen = torch.Generator().manual_seed(recipe.seed + stage)
    loss = _denoise_loss(recipe, model, text_encoder, tokenizer, _latents(vae, images), captions, gen)
    _loop(recipe.lora_steps, params, recipe.lora_lr, loss, f"lora {name}", progress)
    state = convert_state_dict_to_diffusers(get_peft_model_state_dict(model))
    return {k: v.detach().to(torch.float16).contiguous() for k, v in state.items()}  # stored in float16


def save_pipeline(folder: Path, unet, vae, text_encoder, tokenizer) -> Path:
    """A standard StableDiffusionPipeline folder (DDIM sampling, no safety checker), weights stored in float16.

    The models in memory are rounded to float16 too, so LoRAs trained after this see exactly the shipped base.
    """
    import torch
    from diffusers import DDIMScheduler, StableDiffusionPipeline

    pipe = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=DDIMScheduler(**SCHEDULER, clip_sample=False, set_alpha_to_one=False, steps_offset=1),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.to(torch.float16)
    pipe.save_pretrained(folder, safe_serialization=True)
    pipe.to(torch.float32)
    return folder


def build_world_models(recipe: WorldRecipe, folder: str | Path, progress: Progress | None = None) -> dict[str, Path]:
    """Run every stage and write checkpoints and LoRAs under `folder`; returns {model id: path}."""
    import torch
    from diffusers import StableDiffusionPipeline

    folder = Path(folder)
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        tokenizer = build_tokenizer()
        vae = train_vae(recipe, progress).eval()
        text_encoder, unet = train_base(recipe, vae, tokenizer, progress)
        paths = {"tiny-flat": save_pipeline(folder / "checkpoints" / "tiny-flat", unet, vae, text_encoder, tokenizer)}
        pixel = train_checkpoint(recipe, "tiny-pixel", vae, tokenizer, text_encoder, unet, progress)
        paths["tiny-pixel"] = save_pipeline(folder / "checkpoints" / "tiny-pixel", pixel, vae, text_encoder, tokenizer)
        for name in recipe.loras:
            state = train_lora(recipe, name, vae, tokenizer, text_encoder, unet, progress)
            out = folder / "loras" / name
            StableDiffusionPipeline.save_lora_weights(out, unet_lora_layers=state, safe_serialization=True)
            paths[f"lora-{name}"] = out / "pytorch_lora_weights.safetensors"
    finally:
        torch.set_num_threads(threads)
    (folder / "recipe.json").write_text(json.dumps(asdict(recipe), indent=1))
    return paths
