"""RoPE theta and context length changes (the phased long-context recipe), cache limits."""

import pytest
import torch
from zaya_model import ZayaModelError, build_model


def test_set_rope_theta_equals_a_model_built_with_that_theta(small_config, randomized_model):
    model = randomized_model(small_config())
    ids = torch.randint(0, 512, (1, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = model(ids)
        model.set_rope_theta(1e6)
        after = model(ids)
        rebuilt = build_model(model.config)
        rebuilt.load_state_dict(model.state_dict())
        assert torch.equal(after, rebuilt.eval()(ids))
    assert model.config.rope_theta == 1e6 and not torch.allclose(before, after)


def test_max_positions_can_be_raised(small_config, randomized_model):
    model = randomized_model(small_config(max_position_embeddings=16))
    ids = torch.zeros(1, 20, dtype=torch.long)
    with pytest.raises(ZayaModelError, match="exceeds max_positions 16"):
        model(ids)
    model.max_positions = 32
    with torch.no_grad():
        assert model(ids).shape == (1, 20, 512)


def test_cache_limits_are_explicit(small_config, randomized_model):
    model = randomized_model(small_config())
    cache = model.new_cache(batch_size=1, max_len=4)
    with torch.no_grad():
        model(torch.zeros(1, 3, dtype=torch.long), cache=cache)
        with pytest.raises(ZayaModelError, match="3 of 4 positions; 2 more do not fit"):
            model(torch.zeros(1, 2, dtype=torch.long), cache=cache)
        with pytest.raises(ZayaModelError, match="batch size 1"):
            model(torch.zeros(2, 1, dtype=torch.long), cache=cache)
    with pytest.raises(ZayaModelError, match="max_position_embeddings"):
        model.new_cache(batch_size=1, max_len=10_000)
