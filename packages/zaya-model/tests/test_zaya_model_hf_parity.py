"""Parity with transformers' reference `ZayaForCausalLM` on the same random weights (fp32)."""

import pytest
import torch

TOL = 1e-5


@pytest.fixture
def pair(small_config, randomized_model, hf_twin):
    model = randomized_model(small_config())
    return model, hf_twin(model)


def test_full_forward_matches_hf(pair):
    model, hf = pair
    ids = torch.randint(0, model.config.vocab_size, (2, 13), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, ref = model(ids), hf(ids).logits
    assert ours.dtype == torch.float32 and ours.shape == (2, 13, model.config.vocab_size)
    assert (ours - ref).abs().max().item() <= TOL


def test_skip_route_is_exercised(pair):
    """The parity above only means something if tokens really take the skip route and real experts."""
    model, _ = pair
    ids = torch.randint(0, model.config.vocab_size, (2, 13), generator=torch.Generator().manual_seed(1))
    model.train()
    with torch.no_grad():
        model(ids)
    load = model.expert_load()
    assert (load[:, -1] > 0).any()  # some tokens skip
    assert ((load[:, :-1] > 0).sum(-1) >= 2).any()  # some layer dispatches to several experts


def test_cached_decoding_matches_hf(pair):
    from transformers import DynamicCache

    model, hf = pair
    ids = torch.randint(0, model.config.vocab_size, (2, 10), generator=torch.Generator().manual_seed(2))
    cache, hf_cache = model.new_cache(2, 10), DynamicCache(config=hf.config)
    ours_steps, hf_steps = [], []
    with torch.no_grad():
        full = hf(ids).logits
        for t in range(10):
            ours_steps.append(model(ids[:, t : t + 1], cache=cache))
            hf_steps.append(hf(ids[:, t : t + 1], cache=hf_cache, use_cache=True).logits)
    ours, ref = torch.cat(ours_steps, 1), torch.cat(hf_steps, 1)
    assert (ours - ref).abs().max().item() <= TOL
    assert (ours - full).abs().max().item() <= TOL


def test_chunked_prefill_then_decode_matches_full_forward(pair):
    model, hf = pair
    ids = torch.randint(0, model.config.vocab_size, (1, 11), generator=torch.Generator().manual_seed(3))
    cache = model.new_cache(1, 11)
    with torch.no_grad():
        full = hf(ids).logits
        parts = [
            model(ids[:, :4], cache=cache),
            model(ids[:, 4:9], cache=cache),
            model(ids[:, 9:10], cache=cache),
            model(ids[:, 10:], cache=cache),
        ]
    assert (torch.cat(parts, 1) - full).abs().max().item() <= TOL


def test_left_padded_batch_matches_hf(pair):
    """With a padding mask both models zero the padded conv inputs; real positions must agree."""
    model, hf = pair
    ids = torch.randint(1, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    with torch.no_grad():
        ours = model(ids, attention_mask=mask, position_ids=positions)
        ref = hf(ids, attention_mask=mask, position_ids=positions).logits
    real = mask.bool()
    assert (ours[real] - ref[real]).abs().max().item() <= TOL


def test_attention_bias_and_untied_head_match_hf(small_config, randomized_model, hf_twin):
    model = randomized_model(small_config(attention_bias=True, tie_word_embeddings=False, lm_head_bias=True))
    hf = hf_twin(model)
    ids = torch.randint(0, model.config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        assert (model(ids) - hf(ids).logits).abs().max().item() <= TOL
