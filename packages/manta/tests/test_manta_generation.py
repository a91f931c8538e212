"""The diffusers backend on a tiny randomly initialised pipeline with LoRAs made locally through peft."""

import json

import numpy as np
import pytest
from manta.catalog import load_catalog
from manta.errors import MantaError
from manta.generation import DiffusersBackend, adapter_name
from manta.plan import AdapterChoice, CompositionPlan
from manta.tiny_pipeline import build_tiny_pipeline, make_lora

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_catalog(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    model = build_tiny_pipeline(folder)
    red, blue = make_lora(model, folder / "red", 1), make_lora(model, folder / "blue", 2)
    rows = [
        {"id": "tiny-sd", "kind": "checkpoint", "base_family": "tiny", "description": "tiny base", "path": str(model)},
        {
            "id": "other-base",
            "kind": "checkpoint",
            "base_family": "other",
            "description": "another family",
            "path": str(model),
        },
        {"id": "lora-red", "kind": "lora", "base_family": "tiny", "description": "red", "rank": 4, "path": str(red)},
        {
            "id": "lora.blue",
            "kind": "lora",
            "base_family": "tiny",
            "description": "blue",
            "rank": 4,
            "path": str(blue.parent),
        },
        {"id": "lora-other", "kind": "lora", "base_family": "other", "description": "x", "rank": 4, "path": str(red)},
        {"id": "lora-nofile", "kind": "lora", "base_family": "tiny", "description": "x", "rank": 4},
    ]
    path = folder / "catalog.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_catalog(path)


def plan(adapters, base="tiny-sd"):
    return CompositionPlan(
        "a red cat",
        "a red cat",
        base,
        "tiny",
        tuple(AdapterChoice(i, "cat", w, 0.5) for i, w in adapters),
        ("cat",),
        "cpu",
        0,
        0,
        0,
        0,
    )


def render(backend, p):
    return np.asarray(backend.render(p, seed=0), dtype=np.float32)


def test_plans_render_with_their_loras_at_their_weights(tiny_catalog):
    backend = DiffusersBackend(tiny_catalog, num_steps=2, height=32, width=32, guidance_scale=1.0)
    plain = render(backend, plan([]))
    assert plain.shape == (32, 32, 3)
    red = render(backend, plan([("lora-red", 1.0)]))
    both = render(backend, plan([("lora-red", 1.0), ("lora.blue", 0.7)]))
    assert np.abs(red - plain).max() > 0 and np.abs(both - red).max() > 0
    pipe = backend.pipeline("tiny-sd")
    assert set(pipe.get_active_adapters()) == {adapter_name("lora-red"), adapter_name("lora.blue")}
    assert np.array_equal(render(backend, plan([])), plain)  # LoRAs switched off again
    assert np.array_equal(render(backend, plan([("lora-red", 1.0)])), red)  # reloading is not needed, same result
    assert np.abs(render(backend, plan([("lora-red", 0.3)])) - red).max() > 0  # the weight is applied


def test_images_are_written_as_png(tiny_catalog, tmp_path):
    backend = DiffusersBackend(tiny_catalog, num_steps=1, height=32, width=32, guidance_scale=1.0)
    paths = backend.render_batch([plan([("lora-red", 0.8)]), plan([])], tmp_path / "images")
    assert [p.name for p in paths] == ["image_00.png", "image_01.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)


def test_render_many_batches_one_set_up_and_gives_each_seeds_image(tiny_catalog, monkeypatch):
    """Plans of one base and adapters at one weight share a pipeline call; each image is `render`'s up to float rounding."""
    backend = DiffusersBackend(tiny_catalog, num_steps=2, height=32, width=32, guidance_scale=1.0, max_batch=2)
    red, plain = plan([("lora-red", 0.8)]), plan([])
    requests = [(red, 0), (plain, 0), (red, 1), (red, 2)]
    calls, call = [], type(backend.pipeline("tiny-sd")).__call__  # diffusers' pipeline, counted
    with monkeypatch.context() as patch:
        patch.setattr(
            type(backend.pipeline("tiny-sd")),
            "__call__",
            lambda self, prompts, **kw: calls.append(len(prompts)) or call(self, prompts, **kw),
        )
        many = [np.asarray(im, dtype=np.float32) for im in backend.render_many(requests)]
    assert calls == [2, 1, 1]  # red's three images in two calls of at most max_batch, then the plain one
    for (p, seed), image in zip(requests, many, strict=True):
        assert np.abs(image - np.asarray(backend.render(p, seed), dtype=np.float32)).max() <= 1  # float rounding


def test_fused_renders_are_the_unfused_ones_and_leave_the_weights_bit_for_bit(tiny_catalog):
    import torch

    fused = DiffusersBackend(tiny_catalog, num_steps=2, height=32, width=32, guidance_scale=1.0, fuse=True)
    unfused = DiffusersBackend(tiny_catalog, num_steps=2, height=32, width=32, guidance_scale=1.0)
    both = plan([("lora-red", 1.0), ("lora.blue", 0.7)])
    unet = fused.prepare(both).unet
    before = {k: v.clone() for k, v in unet.state_dict().items()}
    image = render(fused, both)
    after = unet.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert np.abs(image - render(unfused, both)).max() <= 1  # float rounding
    assert np.abs(image - render(fused, plan([]))).max() > 0  # the LoRAs were applied


def test_bad_plans_are_clear_errors(tiny_catalog):
    backend = DiffusersBackend(tiny_catalog, num_steps=1, height=32, width=32)
    with pytest.raises(MantaError, match="adapter 'lora-other' is for base family 'other' but the plan's base"):
        backend.prepare(plan([("lora-other", 1.0)]))
    with pytest.raises(MantaError, match="lora 'lora-nofile' has no local `path`"):
        backend.prepare(plan([("lora-nofile", 1.0)]))
    with pytest.raises(MantaError, match="no record with id 'ghost'"):
        backend.prepare(plan([("ghost", 1.0)]))
