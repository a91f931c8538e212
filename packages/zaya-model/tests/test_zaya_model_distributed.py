"""update_router_biases all-reduces the load over a real gloo process group (2 processes)."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).with_name("zaya_model_dist_worker.py")


@pytest.mark.distributed
@pytest.mark.slow
def test_bias_update_uses_the_global_load(tmp_path, load_worker):
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), str(r), str(tmp_path / "init"), str(tmp_path)]) for r in (0, 1)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1))
    assert torch.equal(r0["biases"], r1["biases"])  # every rank applies the same step
    worker = load_worker(WORKER)
    single = worker.make_model()
    for layer, a, b in zip(single.layers, worker.rank_counts(0), worker.rank_counts(1), strict=True):
        layer.moe.router.load_counts.copy_(a + b)
    expected = single.update_router_biases()
    assert torch.allclose(r0["fractions"], expected)
    assert torch.allclose(r0["biases"], torch.stack([layer.moe.router.balancing_biases for layer in single.layers]))
    assert not torch.allclose(expected, single.expert_load())  # counts were reset after the step
