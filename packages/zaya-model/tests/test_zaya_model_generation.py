"""Generation: cached incremental decoding equals the full forward; padding, EOS, sampling."""

import pytest
import torch
from zaya_model import ZayaModelError


@pytest.fixture
def model(small_config, randomized_model):
    return randomized_model(small_config(), seed=3)


def test_greedy_generation_equals_full_forward_argmax(model):
    prompt = torch.randint(0, model.config.vocab_size, (2, 5), generator=torch.Generator().manual_seed(0))
    out = model.generate(prompt, max_new_tokens=6)
    assert out.shape == (2, 11) and torch.equal(out[:, :5], prompt)
    with torch.no_grad():
        logits = model(out)
    # every generated token is the argmax of the full (uncached) forward at the position before it
    assert torch.equal(out[:, 5:], logits[:, 4:-1].argmax(-1))


def test_left_padded_batch_generates_like_each_prompt_alone(model):
    gen = torch.Generator().manual_seed(1)
    short = torch.randint(1, model.config.vocab_size, (1, 4), generator=gen)
    long = torch.randint(1, model.config.vocab_size, (1, 7), generator=gen)
    batch = torch.cat((torch.cat((torch.zeros(1, 3, dtype=torch.long), short), 1), long))
    mask = torch.ones_like(batch)
    mask[0, :3] = 0
    together = model.generate(batch, max_new_tokens=5, attention_mask=mask)
    assert torch.equal(together[0, 7:], model.generate(short, max_new_tokens=5)[0, 4:])
    assert torch.equal(together[1, 7:], model.generate(long, max_new_tokens=5)[0, 7:])


def test_eos_stops_a_row_and_fills_it(model):
    prompt = torch.randint(0, model.config.vocab_size, (2, 4), generator=torch.Generator().manual_seed(2))
    free = model.generate(prompt, max_new_tokens=6)
    eos = int(free[0, 4])  # row 0 ends at once
    assert eos not in free[1, 4:].tolist(), "pick another seed: row 1 must not emit the chosen EOS"
    out = model.generate(prompt, max_new_tokens=6, eos_token_id=eos)
    assert torch.equal(out[0, 4:], torch.full((6,), eos))
    assert torch.equal(out[1], free[1])
    alone = model.generate(prompt[:1], max_new_tokens=6, eos_token_id=eos)
    assert alone.shape == (1, 5)  # stops as soon as every row has finished


def test_sampling_is_seeded_and_top_p_keeps_the_nucleus(model):
    prompt = torch.randint(0, model.config.vocab_size, (3, 4), generator=torch.Generator().manual_seed(3))
    a = model.generate(prompt, 5, temperature=0.8, top_p=0.9, generator=torch.Generator().manual_seed(7))
    b = model.generate(prompt, 5, temperature=0.8, top_p=0.9, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    tiny_p = model.generate(prompt, 5, temperature=1.0, top_p=1e-6, generator=torch.Generator().manual_seed(8))
    assert torch.equal(tiny_p, model.generate(prompt, 5))  # a nucleus of one token is greedy


def test_generation_leaves_training_mode_and_router_counts_alone(model):
    model.train()
    model.generate(torch.zeros(1, 3, dtype=torch.long), 2)
    assert model.training and float(model.expert_load().sum()) == 0.0


def test_bad_generation_arguments(model):
    with pytest.raises(ZayaModelError, match="top_p"):
        model.generate(torch.zeros(1, 2, dtype=torch.long), 2, top_p=0.0)
    with pytest.raises(ZayaModelError, match="max_positions"):
        model.generate(torch.zeros(1, 250, dtype=torch.long), 10)
    with pytest.raises(ZayaModelError, match="attention_mask"):
        model(torch.zeros(1, 4, dtype=torch.long), attention_mask=torch.ones(1, 3))


def test_fused_loss_equals_cross_entropy_of_the_logits(model):
    ids = torch.randint(0, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(9))
    labels = ids.roll(-1, dims=1)
    labels[:, -1] = -100
    with torch.no_grad():
        expected = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), labels.flatten())
        assert torch.allclose(model.loss(ids, labels), expected, atol=1e-6)
