"""Image scorers behind the plug-in interface: a local CLIP folder (a tiny random CLIP built here, the loading
path a user's real CLIP takes) and the rendered-image judge's arithmetic."""

import json

import numpy as np
import pytest
from manta.errors import MantaError
from manta.evaluation.image_judge import ImageJudge, embedding_diversity
from manta.evaluation.image_scorers import CLIPScorer, load_scorer
from manta.plan import AdapterChoice, CompositionPlan
from PIL import Image


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    folder = tmp_path_factory.mktemp("clip")
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for char in "abcdefghijklmnopqrstuvwxyz,":
        vocab[char] = len(vocab)
        vocab[char + "</w>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=32)
    torch.manual_seed(0)
    config = CLIPConfig(
        text_config={
            "vocab_size": len(vocab),
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "max_position_embeddings": 32,
            "bos_token_id": 0,
            "eos_token_id": 1,
        },
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=8,
    )
    CLIPModel(config).save_pretrained(folder)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)) for _ in range(n)]


def test_clip_scorer_loads_a_local_folder_and_scores_in_range(tiny_clip):
    scorer = load_scorer(f"clip:{tiny_clip}")
    assert isinstance(scorer, CLIPScorer) and scorer.name == f"clip:{tiny_clip.name}"
    batch = images(3)
    align, quality, vectors = scorer.alignment(batch, "a red star"), scorer.quality(batch), scorer.embed(batch)
    assert align.shape == quality.shape == (3,) and ((align >= 0) & (align <= 1)).all()
    assert ((quality >= 0) & (quality <= 1)).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vectors[0], vectors[1])  # different images, different embeddings


def test_bad_scorer_specs_are_clear_errors(tmp_path):
    with pytest.raises(MantaError, match="unknown image judge 'vlm'"):
        load_scorer("vlm")
    with pytest.raises(MantaError, match=r"has no config\.json"):
        load_scorer(f"clip:{tmp_path}")
    with pytest.raises(MantaError, match="needs the tiny world's folder"):
        load_scorer("world")
    with pytest.raises(MantaError, match="no world judge"):
        load_scorer("world", tmp_path)


def test_embedding_diversity_is_mean_pairwise_cosine_distance():
    same = np.array([[1.0, 0.0], [1.0, 0.0]])
    orthogonal = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert embedding_diversity(same) == 0.0 and embedding_diversity(same[:1]) == 0.0
    assert embedding_diversity(orthogonal) == pytest.approx((1 + 2 + 1) / 3)


def test_image_judge_renders_each_plan_once_with_the_same_seeds(tiny_clip):
    calls = []

    def render(plan, seed):
        calls.append((plan.base_id, seed))
        return images(1, seed=ord(plan.base_id[0]))[0]  # the image depends on the plan only

    def plan(base):
        return CompositionPlan(
            "a cat", "a cat", base, "f", (AdapterChoice("x", "cat", 1.0, 0.5),), ("cat",), "t", 0, 0.0, 0.0, 0.0
        )

    judge = ImageJudge(load_scorer(f"clip:{tiny_clip}"), render)
    verdict = judge.judge("a cat", [plan("a"), plan("b")], [plan("a"), plan("a")])
    assert set(verdict.a) == {"diversity", "alignment", "quality"}
    assert verdict.details["a"]["diversity"] > 1e-3 > abs(verdict.details["b"]["diversity"])  # b repeats one image
    judge.judge("a cat", [plan("a"), plan("b")], [plan("c")])
    assert sorted(calls) == [("a", 0), ("a", 1), ("b", 1), ("c", 0)]  # cached by plan and seed
    assert judge.name == f"images/clip:{tiny_clip.name}"
