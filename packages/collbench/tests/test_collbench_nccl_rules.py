"""Every collective collbench sweeps is valid under NCCL's device rule: its buffers are made on the device it
measures, checked under strict devices (tests/strict_devices.py) on a one-rank gloo group."""

import pytest
import torch
from collbench.collectives import IN_PLACE_MODES, CollectiveOp, CollectivePoint
from strict_devices import one_rank_group, strict_devices

DEVICE = torch.device("cpu")


@pytest.mark.distributed
def test_every_collective_s_buffers_live_on_the_measured_device(tmp_path):
    import torch.distributed as dist

    with strict_devices(DEVICE) as strict, one_rank_group(tmp_path):
        for name, modes in IN_PLACE_MODES.items():
            for in_place in modes:
                op = CollectiveOp(CollectivePoint(name, "float32", 256, 1, in_place), 0, dist.group.WORLD, DEVICE)
                assert op.count_wrong() == 0, (name, in_place)
    assert len({key.split()[0] for key in strict.checked}) == len(IN_PLACE_MODES)  # each one's torch function
