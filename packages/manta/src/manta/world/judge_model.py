"""The world's image judge: a small CNN that reads object, colour, texture and style from pixels, tells
clean images from corrupted ones, and gives an image embedding; trained only on procedurally drawn images.

It shares nothing with the composer: no text embeddings, no catalog, no diffusion model. Its training
images come from the drawing code with their own seed, blurred and noised a little so that the diffusion
model's softer renders are still read; its quality head learns clean drawings (1) against corrupted ones
(0: heavy noise, two images blended, shuffled patches, colour blotches, strong blur).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from manta.world.drawing import draw_batch
from manta.world.vocabulary import ATTRIBUTES, COLOURS, OBJECTS, STYLES, TEXTURES, Scene, sample_scenes

CLASSES = {"object": OBJECTS, "colour": tuple(COLOURS), "texture": TEXTURES, "style": STYLES}
EMBED_DIM = 64


def _net():
    import torch
    from torch import nn

    class WorldJudgeNet(nn.Module):
        """Conv stack -> 64-d embedding -> one head per attribute and a realism logit."""

        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 24, 3, padding=1),
                nn.GELU(),
                nn.Conv2d(24, 48, 3, stride=2, padding=1),
                nn.GELU(),
                nn.Conv2d(48, 64, 3, stride=2, padding=1),
                nn.GELU(),
                nn.Conv2d(64, EMBED_DIM, 3, stride=2, padding=1),
                nn.GELU(),
            )
            self.heads = nn.ModuleDict({a: nn.Linear(2 * EMBED_DIM, len(CLASSES[a])) for a in ATTRIBUTES})
            self.real = nn.Linear(2 * EMBED_DIM, 1)

        def forward(self, images_N3HW: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
            maps = self.features(images_N3HW)
            pooled = torch.cat([maps.mean(dim=(2, 3)), maps.amax(dim=(2, 3))], dim=1)
            return pooled, {a: head(pooled) for a, head in self.heads.items()}, self.real(pooled)[:, 0]

    return WorldJudgeNet()


@dataclass
class JudgeRecipe:
    seed: int = 1000  # never a seed the world's models were trained with
    steps: int = 400
    batch: int = 64
    lr: float = 3e-3

    @classmethod
    def quick(cls) -> JudgeRecipe:
        return cls(steps=3, batch=8)


def _scenes(rng: np.random.Generator, n: int) -> list[Scene]:
    scenes = sample_scenes(rng, n, OBJECTS, TEXTURES, STYLES)
    return [Scene(s.object, s.colour, "plain", s.style) if s.style == "line art" else s for s in scenes]


def _augment(images, gen):
    """Mild blur, noise and brightness jitter: what a diffusion render does to a clean drawing."""
    import torch
    import torch.nn.functional as F

    blur = torch.tensor([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16
    blurred = F.conv2d(F.pad(images, (1, 1, 1, 1), mode="replicate"), blur.expand(3, 1, 3, 3), groups=3)
    mix = torch.rand(len(images), 1, 1, 1, generator=gen)
    images = mix * blurred + (1 - mix) * images
    images = images + 0.05 * torch.randn(images.shape, generator=gen) * torch.rand(len(images), 1, 1, 1, generator=gen)
    return (images + 0.1 * (torch.rand(len(images), 1, 1, 1, generator=gen) - 0.5)).clamp(-1, 1)


def corrupt(images, gen):
    """Images a quality judge must score low, one corruption per image."""
    import torch
    import torch.nn.functional as F

    n = len(images)
    kind = torch.randint(0, 5, (n,), generator=gen)
    out = images.clone()
    noisy = images + 0.5 * torch.randn(images.shape, generator=gen)
    blended = 0.5 * images + 0.5 * images.roll(1, dims=0)
    small = F.interpolate(images, size=(8, 8), mode="area")
    smeared = F.interpolate(small, size=images.shape[-2:], mode="bilinear", align_corners=False)
    patches = images.unfold(2, 8, 8).unfold(3, 8, 8).reshape(n, 3, 16, 8, 8)
    order = torch.randperm(16, generator=gen)
    shuffled = patches[:, :, order].reshape(n, 3, 4, 4, 8, 8).permute(0, 1, 2, 4, 3, 5).reshape(images.shape)
    blotches = images + F.interpolate(torch.randn(n, 3, 4, 4, generator=gen), size=images.shape[-2:], mode="bilinear")
    for k, source in enumerate((noisy, blended, smeared, shuffled, blotches)):
        out[kind == k] = source[kind == k]
    return out.clamp(-1, 1)


def train_judge(recipe: JudgeRecipe, progress=None):
    """Cross-entropy on every attribute head and logistic loss on clean vs corrupted images."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(recipe.seed)
    rng = np.random.default_rng(recipe.seed)
    gen = torch.Generator().manual_seed(recipe.seed)
    net = _net()
    optimizer = torch.optim.AdamW(net.parameters(), lr=recipe.lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, recipe.lr, total_steps=max(recipe.steps, 1))
    for step in range(recipe.steps):
        scenes = _scenes(rng, recipe.batch)
        clean = _augment(torch.from_numpy(draw_batch(scenes, rng)), gen)
        _, logits, real = net(torch.cat([clean, corrupt(clean, gen)]))
        loss = F.binary_cross_entropy_with_logits(real, torch.cat([torch.ones(len(clean)), torch.zeros(len(clean))]))
        for attribute in ATTRIBUTES:
            labels = torch.tensor([CLASSES[attribute].index(s.value(attribute)) for s in scenes])
            loss = loss + F.cross_entropy(logits[attribute][: len(clean)], labels)
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if progress is not None:
            progress("judge", step + 1, recipe.steps, float(loss.detach()))
    return net.eval()


def save_judge(net, recipe: JudgeRecipe, folder: Path) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(folder / "judge.safetensors"))
    meta = {"classes": {a: list(c) for a, c in CLASSES.items()}, "embed_dim": EMBED_DIM, "recipe": asdict(recipe)}
    (folder / "judge.json").write_text(json.dumps(meta, indent=1))
    return folder


def load_judge_net(folder: Path):
    """The trained judge network from `folder` (judge.safetensors + judge.json), in eval mode."""
    from safetensors.torch import load_file

    meta = json.loads((folder / "judge.json").read_text())
    if meta["classes"] != {a: list(c) for a, c in CLASSES.items()}:
        raise ValueError(f"{folder}/judge.json was trained on other classes than this world has; rebuild the world")
    net = _net()
    net.load_state_dict(load_file(str(folder / "judge.safetensors")))
    return net.eval()
