"""tests/strict_devices.py: NCCL's device rule on a gloo group, by where the code put each tensor."""

import pytest
import torch
import torch.distributed as dist
from strict_devices import StrictDeviceError, one_rank_group, strict_devices

DEVICE = torch.device("cpu")  # the training device of these checks


def test_the_default_group_refuses_tensors_made_without_a_device(tmp_path):
    original = dist.all_reduce
    with strict_devices(DEVICE) as strict, one_rank_group(tmp_path):
        with pytest.raises(StrictDeviceError, match=r"all_reduce at .*test_strict_devices.py:\d+ got a tensor made"):
            dist.all_reduce(torch.ones(2))
        host = torch.ones(2)
        for refused in (host * 2, host.to("cpu"), torch.ones(2, device=DEVICE).cpu(), torch.from_numpy(host.numpy())):
            with pytest.raises(StrictDeviceError, match="made without a device"):
                dist.all_reduce(refused)
        placed = torch.ones(2, device=DEVICE)
        for served in (placed, host.to(DEVICE), host + placed, placed.new_zeros(3), torch.zeros_like(placed)):
            dist.all_reduce(served)
        with torch.device(DEVICE):  # a device context names the device too
            dist.broadcast(torch.ones(2), src=0)
        dist.all_gather([torch.empty(2, device=DEVICE)], placed)
        dist.all_reduce(torch.ones(2), group=dist.new_group(backend="gloo"))  # a group made for the CPU
        with pytest.raises(StrictDeviceError):
            dist.all_reduce(torch.ones(2), group=dist.new_group())  # the default group's backend: NCCL on a GPU
        dist.broadcast_object_list([{"step": 3}], src=0)  # object collectives: torch moves the bytes itself
    assert dist.all_reduce is original
    here = f"{__name__}.test_the_default_group_refuses_tensors_made_without_a_device"
    assert strict.checked[f"all_gather {here}"] == 2  # both tensors
    assert strict.checked[f"broadcast {here}"] == 1  # broadcast_object_list's own broadcasts are not checked


def test_a_device_map_naming_the_cpu_serves_host_tensors(tmp_path):
    with strict_devices(DEVICE), one_rank_group(tmp_path, "cpu:gloo"):
        dist.all_reduce(torch.ones(2))
        dist.all_reduce(torch.ones(2), group=dist.new_group())  # made from the default group's map
