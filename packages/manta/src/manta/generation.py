"""The generation backend: render a plan with diffusers, LoRAs applied through peft at the plan's weights.

The base checkpoint is a local diffusers folder and each adapter a local LoRA file or folder (the
catalog's `path` fields); nothing is fetched from a hub. One pipeline is kept loaded at a time (the
VRAM budget was planned for one base); its LoRAs are loaded once by name and switched per image with
`set_adapters(names, adapter_weights=...)`. `render_many` renders the images of one base with one set of
adapters at one set of weights as a batch, up to `max_batch` per pipeline call, a generator per image: each
image is the one `render` gives for its seed up to float rounding (batched kernels sum in another order: of
the tiny world evaluation's 127 images, 14 differ from their single renders in 1 to 4 of 3,072 values, by
1 / 255). On a CPU a batch of 16 tiny-world images takes the time of 5 single ones. With `fuse`, the plan's
LoRAs are merged into the UNet's weights for each call (peft's `merge`) instead of run beside every layer at
every step (unfused, the way the catalog's costs are measured), and the base weights are put back bit for
bit after: the images equal the unfused ones up to float rounding (batched and fused, 22 of those 127 differ
from their single unfused renders, by 1 / 255 in 1 to 4 values), for a quarter less CPU in that evaluation.
Needs the `diffusers` extra.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zaya_config.atomic import write_atomic

from manta.catalog import Catalog, CatalogEntry
from manta.errors import MantaError
from manta.plan import CompositionPlan, check_families


def _local_path(entry: CatalogEntry) -> Path:
    if not entry.path:
        raise MantaError(
            f"{entry.kind} {entry.id!r} has no local `path` in the catalog; set it to a "
            f"{'diffusers model folder' if not entry.is_adapter else 'LoRA .safetensors file or folder'}"
        )
    path = Path(entry.path).expanduser()
    if not path.exists():
        raise MantaError(f"{entry.kind} {entry.id!r}: path {path} does not exist; point `path` at the local files")
    return path


def adapter_name(entry_id: str) -> str:
    """A peft-safe adapter name (module-dict keys may not contain dots or dashes)."""
    return "a_" + re.sub(r"\W", "_", entry_id)


class DiffusersBackend:
    """Renders composition plans with local diffusers pipelines and LoRAs."""

    def __init__(
        self,
        catalog: Catalog,
        device: str = "cpu",
        num_steps: int = 30,
        height: int = 512,
        width: int = 512,
        guidance_scale: float = 7.5,
        keep_loaded: int = 1,
        threads: int | None = None,
        max_batch: int = 1,
        fuse: bool = False,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.catalog, self.device = catalog, device
        self.num_steps, self.height, self.width, self.guidance_scale = num_steps, height, width, guidance_scale
        self.keep_loaded = keep_loaded  # pipelines held at once (1 on a GPU: the budget was planned for one base)
        self._pipes: dict[str, tuple[Any, set[str]]] = {}  # base id -> (pipeline, loaded adapter names)
        self.threads = threads  # CPU threads while rendering (tiny models: 1 beats 2 on a shared machine)
        self.max_batch = max_batch  # images of one plan set-up per pipeline call (1: VRAM planned for one image)
        self.fuse = fuse  # merge the plan's LoRAs into the UNet for each call (`_fused`)

    @classmethod
    def from_render_config(cls, catalog: Catalog, render: Any) -> DiffusersBackend:
        """A backend with the device, steps, size and guidance of a `RenderConfig`."""
        return cls(
            catalog,
            device=render.device,
            num_steps=render.num_steps,
            height=render.height,
            width=render.width,
            guidance_scale=render.guidance_scale,
        )

    def pipeline(self, base_id: str) -> Any:
        """The loaded pipeline of `base_id`; beyond `keep_loaded` pipelines the least recently used is dropped."""
        if base_id in self._pipes:
            self._pipes[base_id] = self._pipes.pop(base_id)  # most recently used last
            return self._pipes[base_id][0]
        import torch
        from diffusers import DiffusionPipeline

        path = _local_path(self.catalog[base_id])
        # float16 on a GPU; float32 on a CPU whatever the files hold (CPU half-precision kernels are slow or absent)
        half = {"torch_dtype": torch.float16 if self.device.startswith("cuda") else torch.float32}
        try:
            pipe = DiffusionPipeline.from_pretrained(str(path), local_files_only=True, **half)
        except (OSError, ValueError) as err:
            raise MantaError(f"cannot load base checkpoint {base_id!r} from {path}: {err}") from None
        pipe.set_progress_bar_config(disable=True)
        while len(self._pipes) >= self.keep_loaded:
            self._pipes.pop(next(iter(self._pipes)))
        self._pipes[base_id] = (pipe.to(self.device), set())
        return self._pipes[base_id][0]

    def _load_adapter(self, base_id: str, pipe: Any, entry: CatalogEntry) -> str:
        name = adapter_name(entry.id)
        loaded = self._pipes[base_id][1]
        if name not in loaded:
            path = _local_path(entry)
            folder, weight = (path.parent, path.name) if path.is_file() else (path, None)
            kwargs = {"weight_name": weight} if weight else {}
            try:
                pipe.load_lora_weights(str(folder), adapter_name=name, **kwargs)
            except (OSError, ValueError, KeyError) as err:
                raise MantaError(f"cannot load adapter {entry.id!r} from {path}: {err}") from None
            loaded.add(name)
        return name

    def prepare(self, plan: CompositionPlan) -> Any:
        """Load the plan's base and adapters and activate the adapters at the plan's weights."""
        check_families(plan, self.catalog)
        pipe = self.pipeline(plan.base_id)
        names = [self._load_adapter(plan.base_id, pipe, self.catalog[a.id]) for a in plan.adapters]
        if names:
            pipe.enable_lora()
            pipe.set_adapters(names, adapter_weights=[a.weight for a in plan.adapters])
        elif self._pipes[plan.base_id][1]:
            pipe.disable_lora()
        return pipe

    def render(self, plan: CompositionPlan, seed: int = 0) -> Any:
        """One PIL image of the plan's prompt text, seeded."""
        return self.render_many([(plan, seed)])[0]

    def render_many(self, requests: Sequence[tuple[CompositionPlan, int]]) -> list[Any]:
        """A PIL image per (plan, seed), `render(plan, seed)`'s up to float rounding: the requests whose plans
        share a base and adapters at the same weights are rendered together, `max_batch` per pipeline call."""
        import torch

        groups: dict[tuple, list[int]] = {}
        for i, (plan, _) in enumerate(requests):
            groups.setdefault((plan.base_id, tuple((a.id, a.weight) for a in plan.adapters)), []).append(i)
        images: list[Any] = [None] * len(requests)
        with self._render_threads():
            for members in groups.values():
                for start in range(0, len(members), self.max_batch):
                    chunk = members[start : start + self.max_batch]
                    plan = requests[chunk[0]][0]
                    pipe = self.prepare(plan)
                    with self._fused(pipe, [adapter_name(a.id) for a in plan.adapters]):
                        result = pipe(
                            [requests[i][0].prompt_text for i in chunk],
                            num_inference_steps=self.num_steps,
                            height=self.height,
                            width=self.width,
                            guidance_scale=self.guidance_scale,
                            generator=[torch.Generator(device="cpu").manual_seed(requests[i][1]) for i in chunk],
                        )
                    for i, image in zip(chunk, result.images, strict=True):
                        images[i] = image
        return images

    @contextmanager
    def _fused(self, pipe: Any, names: list[str]):
        """With `fuse` and adapters active: their weighted deltas merged into the UNet's weights (peft's
        `merge`) for one pipeline call, then unmerged and the base weights put back bit for bit (unmerging
        alone would leave rounding behind, and later renders would depend on what was rendered before)."""
        if not (self.fuse and names):
            yield
            return
        from peft.tuners.tuners_utils import BaseTunerLayer

        layers = [m for m in pipe.unet.modules() if isinstance(m, BaseTunerLayer)]
        pristine = [m.get_base_layer().weight.detach().clone() for m in layers]
        for layer in layers:
            layer.merge(adapter_names=names)
        try:
            yield
        finally:
            for layer, weight in zip(layers, pristine, strict=True):
                layer.unmerge()
                layer.get_base_layer().weight.data.copy_(weight)

    @contextmanager
    def _render_threads(self):
        """torch's intra-op threads set to `threads` while rendering, restored after."""
        import torch

        before = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def render_batch(self, plans: list[CompositionPlan], folder: str | Path, seed: int = 0) -> list[Path]:
        """Render each plan (seed + i) and write `image_<i>.png` atomically into `folder`."""
        images = self.render_many([(plan, seed + i) for i, plan in enumerate(plans)])
        return [
            write_atomic(Path(folder) / f"image_{i:02d}.png", lambda handle, im=image: im.save(handle, format="PNG"))
            for i, image in enumerate(images)
        ]
