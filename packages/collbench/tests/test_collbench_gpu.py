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
