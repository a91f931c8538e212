"""GPU paths (skipped without CUDA): CUDA-event and CUDA-graph timing, and NCCL collectives on 2+ GPUs."""

import pytest
import torch
from collbench.config import CollectivesConfig
from collbench.gemm import run_gemm_sweep, square_shapes
from collbench.launch import run_collectives
from collbench.membw import run_membw_sweep

pytestmark = pytest.mark.gpu


def test_membw_graph_and_plain_paths_on_gpu():
    dev = torch.device("cuda")
    results = run_membw_sweep(["copy", "triad"], [1 << 16, 1 << 20], dev, 3, 1, graph_below_bytes=1 << 18)
    assert len(results) == 4 and all(r.bw_gbps > 0 for r in results)


def test_gemm_on_gpu_uses_cuda_events():
    (r,) = run_gemm_sweep(square_shapes([1024]), "bfloat16", torch.device("cuda"), 5, 2, units=132)
    assert r.tflops > 1.0


@pytest.mark.distributed
def test_nccl_collectives_on_two_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    cfg = CollectivesConfig(
        backend="nccl",
        dtypes=["bfloat16"],
        min_bytes="1K",
        max_bytes="1M",
        step_factor=32,
        rank_counts=[2],
        iters=5,
        timeout_s=60,
    )
    rows = run_collectives(cfg, progress=False)
    assert rows and all(r.wrong == 0 and r.backend == "nccl" for r in rows)


@pytest.mark.slow
def test_measured_sizing_on_gpu_trains_and_graph_decodes(tmp_path):
    """The measured mode's GPU path at tiny width: the trainer on CUDA (bf16, eager blocks), the decoder in a CUDA
    graph, the GEMM sweep with the GPU timing policy; three candidates, so a held-out error exists."""
    import dataclasses

    from collbench.config import MeasureConfig, SizingConfig
    from collbench.sizing.measure_train import TrainSetup
    from collbench.sizing.study import run_sizing
    from zaya_config import hardware
    from zaya_model import ZayaConfig
    from zaya_train.config import CheckpointConfig, DataConfig, SourceConfig, TrainConfig
    from zaya_train.recipe import PhaseConfig, RecipeConfig

    train = TrainConfig(global_batch_size=8, micro_batch_size=4, precision="bf16", device="cuda", compile=False,
                        data=DataConfig(sources={"lib": SourceConfig(max_files=40)}, val_fraction=0.2),
                        checkpoint=CheckpointConfig(enabled=False))  # fmt: skip
    recipe = RecipeConfig(phases=[PhaseConfig(name="p", tokens=1 << 20, seq_len=128, mixture={"lib": 1.0})])
    setup = TrainSetup(train, recipe, hardware("h200"), tmp_path / "cache", tmp_path / "runs")
    sizing = SizingConfig(num_experts=[2, 4], top_k=[1, 2], iso_params=False, iso_active_params=True,
                          decode_batches=[1, 8], latency_batch=8, context_len=32, measure=True,
                          measurement=MeasureConfig(steps=2, decode_tokens=4, decode_compile=False))  # fmt: skip
    base = dataclasses.replace(ZayaConfig.from_preset("zaya1-tiny"), name="tiny")
    out = run_sizing(sizing, base, hardware("h200"), tmp_path / "out", setup, progress=False)
    assert len(out.summary["candidates"]) == 4 and out.summary["meta"]["device"] != "cpu"
    assert all(c["measured"]["train_tokens_per_s"] > 0 for c in out.summary["candidates"])
    assert out.summary["estimator_error"]["worst"] >= out.summary["estimator_error"]["median"] >= 0
