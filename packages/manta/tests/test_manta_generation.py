"""The diffusers backend on a tiny randomly initialised pipeline with LoRAs made locally through peft."""

import json

import numpy as np
import pytest
from manta.catalog import load_catalog
from manta.errors import MantaError
from manta.generation import DiffusersBackend, adapter_name
from manta.plan import AdapterChoice, CompositionPlan

pytestmark = pytest.mark.slow


def build_tiny_pipeline(folder):
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


def make_lora(model_dir, out_dir, seed):
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


def test_bad_plans_are_clear_errors(tiny_catalog):
    backend = DiffusersBackend(tiny_catalog, num_steps=1, height=32, width=32)
    with pytest.raises(MantaError, match="adapter 'lora-other' is for base family 'other' but the plan's base"):
        backend.prepare(plan([("lora-other", 1.0)]))
    with pytest.raises(MantaError, match="lora 'lora-nofile' has no local `path`"):
        backend.prepare(plan([("lora-nofile", 1.0)]))
    with pytest.raises(MantaError, match="no record with id 'ghost'"):
        backend.prepare(plan([("ghost", 1.0)]))
