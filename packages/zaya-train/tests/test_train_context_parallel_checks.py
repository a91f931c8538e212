"""Context-parallel settings that cannot run fail at build, in one line naming the key and the fix."""

import pytest
from zaya_config.errors import ZayaConfigError
from zaya_train.build import check_recipe
from zaya_train.config import DataConfig, DistributedConfig, SourceConfig, TrainConfig
from zaya_train.distributed import DistributedContext, parallel_mesh
from zaya_train.errors import ZayaTrainError
from zaya_train.recipe import PhaseConfig, RecipeConfig

SOURCES = DataConfig(sources={"a": SourceConfig()})


def _recipe(seq_len: int = 64, cp: int | None = None) -> RecipeConfig:
    return RecipeConfig(phases=[PhaseConfig(tokens=10**6, seq_len=seq_len, mixture={"a": 1}, context_parallel=cp)])


def _train(cp: int = 1, batch: int = 8, micro: int = 2) -> TrainConfig:
    return TrainConfig(global_batch_size=batch, micro_batch_size=micro, data=SOURCES,
                       distributed=DistributedConfig(context_parallel=cp))  # fmt: skip


def test_context_parallel_sizes_are_validated():
    with pytest.raises(ZayaConfigError, match=r"context_parallel = 0"):
        DistributedConfig(context_parallel=0)
    with pytest.raises(ZayaConfigError, match=r"context_parallel = -2"):
        PhaseConfig(mixture={"a": 1}, context_parallel=-2)


@pytest.mark.parametrize(
    ("recipe", "train", "world", "message"),
    [
        (_recipe(), _train(cp=3), 4, r"train.distributed.context_parallel = 3 does not divide the world size 4"),
        (_recipe(cp=4), _train(), 2, r"recipe.phases\[0\].context_parallel = 4 does not divide the world size 2"),
        (
            _recipe(seq_len=256),
            _train(cp=3),
            3,
            r"seq_len 256 \(padded to 258 for context_parallel 3\) exceeds the "
            r"model's 256 positions",
        ),
        (_recipe(seq_len=6), _train(cp=4), 4, r"chunks of 1 tokens, fewer than the 2 the CCA convs read"),
        # 8 sequences over dp 2 (4 ranks, cp 2) in micro-batches of 8: not whole micro-batches
        (_recipe(), _train(cp=2, batch=8, micro=8), 4, r"micro_batch_size 8 x 2 data-parallel ranks"),
    ],
    ids=["world", "phase-world", "padded-positions", "halo", "dp-batch"],
)
def test_recipe_checks_name_the_context_parallel_problem(recipe, train, world, message):
    with pytest.raises(ZayaTrainError, match=message):
        check_recipe(recipe, train, max_positions=256, world_size=world, halo_len=2)


def test_recipe_with_context_parallel_that_fits_passes():
    # 8 sequences over 4 ranks as dp 2 x cp 2, micro-batches of 4; 250 tokens pad to 252 (<= 256)
    check_recipe(_recipe(seq_len=250), _train(cp=2, batch=8, micro=4), max_positions=256, world_size=4, halo_len=2)


def test_one_process_cannot_split_a_sequence():
    import torch

    ctx = DistributedContext(0, 0, 1, torch.device("cpu"), "single")
    assert parallel_mesh(ctx, 1).dp == 1
    with pytest.raises(ZayaTrainError, match=r"context_parallel = 2 does not divide the world size 1"):
        parallel_mesh(ctx, 2)
