"""The H200 measured-sizing command of BENCHMARKS.md, composed and checked on a CPU before GPU time is spent:
every override known, 12 or more candidates at ZAYA1's active expert width, the trainer at the trainer
benchmark's global batch, and the decode within the model's positions."""

import shlex
from pathlib import Path

import pytest
import torch
from collbench.sizing.measure_decode import DecodeSetup
from collbench.sizing.measure_train import TrainSetup
from collbench.sizing.measured_study import check_measurable
from collbench.sizing.moe_study import grid_points
from hydra import compose, initialize_config_dir
from zaya_config import validate_config

ROOT = Path(__file__).resolve().parents[3]
START = "timeout 560 python3 services/size/main.py "


def h200_overrides() -> list[str]:
    (line,) = [
        ln for ln in (ROOT / "packages/collbench/BENCHMARKS.md").read_text().splitlines() if ln.startswith(START)
    ]
    return [arg for arg in shlex.split(line[len(START) :]) if not arg.startswith("hydra.")]


def test_h200_measure_command_composes_to_the_study_the_benchmarks_describe(tmp_path):
    with initialize_config_dir(config_dir=str(ROOT / "services/size/conf"), version_base="1.3"):
        cfg = compose(config_name="size", overrides=h200_overrides())
    objs = validate_config(cfg)
    sizing, base, train, recipe = objs["sizing"], objs["model"], objs["train"], objs["recipe"]
    assert sizing.measure and objs["hardware"].name == "h200" and base.name == "zaya1-base"
    points = grid_points(sizing, base)
    assert len(points) == 15 and {f * k for _, f, k in points} == {2048} and (16, 2048, 1) in points
    setup = TrainSetup(train, recipe, objs["hardware"], tmp_path, tmp_path)
    assert (setup.global_batch, setup.micro_batch, setup.seq_len) == (64, 8, 4096)
    assert train.precision == "bf16" and train.device == "cuda" and train.data.tokenizer.kind == "byte"
    assert sizing.measurement.layers == 4 and sizing.measurement.decode_compile is False
    m = sizing.measurement
    decode = DecodeSetup(torch.device("cuda"), sizing.context_len, m.decode_warmup, m.decode_tokens, m.decode_compile)
    check_measurable(sizing, base, decode, points)  # raises if the decode would not fit 4096 positions


@pytest.mark.slow
def test_h200_measure_command_data_feeds_the_trainer_at_4096(tmp_path):
    """The command's data (the standard library as bytes, 400 files) yields the training and validation windows
    the trainer checks at its start (`check_recipe`, `check_data`) at sequence 4096 and global batch 64."""
    from collbench.sizing.measure_train import measurement_recipe, measurement_train_config
    from zaya_train.build import check_data, check_recipe
    from zaya_train.data.pipeline import prepare_data

    with initialize_config_dir(config_dir=str(ROOT / "services/size/conf"), version_base="1.3"):
        objs = validate_config(compose(config_name="size", overrides=h200_overrides()))
    train, recipe = measurement_train_config(objs["train"]), measurement_recipe(objs["recipe"])
    check_recipe(recipe, train, objs["model"].max_position_embeddings, world_size=1)
    data = prepare_data(train.data, tmp_path / "cache", progress=False)
    assert data.tokenizer.vocab_size <= objs["model"].vocab_size
    check_data(recipe, data, train.eval.sequences)
