"""Image scorers: models that read rendered images, behind one small interface, so any judge can be plugged in.

An `ImageScorer` gives, for a list of PIL images, each image's alignment with a prompt (0-1), an image
embedding (unit rows, for diversity) and a quality score (0-1). Two ship here:
- `WorldScorer`: the tiny world's judge (`manta.world.judge_model`), trained from pixels of procedural
  drawings; alignment is its mean probability of each attribute the prompt names (read by exact words).
- `CLIPScorer`: any local CLIP folder (transformers `CLIPModel`): alignment is the image-text cosine,
  rescaled from [0.15, 0.35] to [0, 1]; quality is CLIP's zero-shot choice between a "sharp, high quality"
  and a "blurry, low quality, distorted" description (the CLIP-IQA prompt pair); loaded with
  `local_files_only`, nothing downloads.
A VLM is plugged in through `manta.evaluation.judges.VLMJudge` instead (it compares two sets at once).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from manta.errors import MantaError


class ImageScorer(Protocol):
    name: str

    def alignment(self, images: list[Any], prompt: str) -> np.ndarray: ...

    def embed(self, images: list[Any]) -> np.ndarray: ...

    def quality(self, images: list[Any]) -> np.ndarray: ...


def _tensor(images: list[Any]):
    """PIL images -> N x 3 x H x W float tensor in [-1, 1]."""
    import torch

    arrays = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) / 127.5 - 1 for im in images])
    return torch.from_numpy(arrays.transpose(0, 3, 1, 2).copy())


@dataclass
class WorldScorer:
    """The tiny world's judge network read through the scorer interface."""

    folder: Path
    name: str = "world-judge"
    _net: Any = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from manta.world.judge_model import load_judge_net

        self.folder = Path(self.folder)
        if not (self.folder / "judge.safetensors").is_file():
            raise MantaError(f"no world judge in {self.folder} (judge.safetensors); build the world first")
        self._net = load_judge_net(self.folder)

    def _read(self, images: list[Any]) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """One pass of the net over the images; a batch's alignment, embedding and quality reuse it.

        The last read is kept with the images it read (so their ids stay theirs), on one torch thread: a batch
        of a few 32 x 32 images is too little work to split (the other threads mostly wait on a shared CPU)."""
        key = tuple(id(im) for im in images)
        if self._cache.get("key") == key:
            return self._cache["read"]
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                pooled, logits, real = self._net(_tensor(images))
        finally:
            torch.set_num_threads(threads)
        probs = {a: torch.softmax(v, dim=1).numpy() for a, v in logits.items()}
        embedding = pooled.numpy()
        embedding = embedding / np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True), 1e-8)
        read = embedding, probs, torch.sigmoid(real).numpy()
        self._cache.update(key=key, images=list(images), read=read)
        return read

    def alignment(self, images: list[Any], prompt: str) -> np.ndarray:
        from manta.world.judge_model import CLASSES
        from manta.world.vocabulary import read_prompt

        wanted = read_prompt(prompt)
        if not wanted:
            raise MantaError(f"the world judge reads no object, colour, texture or style in {prompt!r}")
        _, probs, _ = self._read(images)
        per = [probs[a][:, CLASSES[a].index(v)] for a, v in wanted.items()]
        return np.mean(per, axis=0)

    def embed(self, images: list[Any]) -> np.ndarray:
        return self._read(images)[0].copy()

    def quality(self, images: list[Any]) -> np.ndarray:
        return self._read(images)[2].copy()

    def attributes(self, images: list[Any]) -> list[dict[str, str]]:
        """What the judge sees in each image (the most likely value of every attribute)."""
        from manta.world.judge_model import CLASSES

        _, probs, _ = self._read(images)
        return [{a: CLASSES[a][int(p[i].argmax())] for a, p in probs.items()} for i in range(len(images))]


QUALITY_PROMPTS = ("a sharp, clean, high quality image", "a blurry, noisy, low quality, distorted image")


@dataclass
class CLIPScorer:
    """A local CLIP model (transformers `CLIPModel` folder) as alignment, embedding and quality judge."""

    path: Path
    device: str = "cpu"
    name: str = ""
    _model: Any = field(default=None, repr=False)
    _processor: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import CLIPModel, CLIPProcessor

        self.path = Path(self.path)
        if not (self.path / "config.json").is_file():
            raise MantaError(f"CLIP judge path {self.path} has no config.json; pass a local CLIPModel folder")
        try:
            self._model = CLIPModel.from_pretrained(str(self.path), local_files_only=True).to(self.device).eval()
            self._processor = CLIPProcessor.from_pretrained(str(self.path), local_files_only=True)
        except (OSError, ValueError) as err:
            raise MantaError(f"cannot load the CLIP judge from {self.path}: {err}") from None
        self.name = self.name or f"clip:{self.path.name}"

    def _features(self, images: list[Any] | None = None, texts: list[str] | None = None) -> np.ndarray:
        import torch

        with torch.no_grad():
            if images is not None:
                inputs = self._processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
                out = self._model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
            else:
                inputs = self._processor(text=texts, return_tensors="pt", padding=True, truncation=True)
                out = self._model.get_text_features(**{k: v.to(self.device) for k, v in inputs.items()})
        out = getattr(out, "pooler_output", out)
        vectors = out.float().cpu().numpy()
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-8)

    def alignment(self, images: list[Any], prompt: str) -> np.ndarray:
        cosine = self._features(images) @ self._features(texts=[prompt])[0]
        return np.clip((cosine - 0.15) / 0.2, 0.0, 1.0)

    def embed(self, images: list[Any]) -> np.ndarray:
        return self._features(images)

    def quality(self, images: list[Any]) -> np.ndarray:
        logits = 100.0 * self._features(images) @ self._features(texts=list(QUALITY_PROMPTS)).T
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        return probs[:, 0]


def load_scorer(spec: str, world: Path | None = None) -> ImageScorer:
    """`world` (the tiny world's judge, from `world`'s folder) or `clip:PATH` (a local CLIP folder)."""
    if spec == "world":
        if world is None:
            raise MantaError("the 'world' judge needs the tiny world's folder (--world)")
        return WorldScorer(Path(world) / "judge")
    if spec.startswith("clip:"):
        return CLIPScorer(Path(spec[5:]).expanduser())
    raise MantaError(f"unknown image judge {spec!r}; allowed: 'world', 'clip:<local CLIP folder>'")
