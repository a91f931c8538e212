"""The generated channel takes its scheduler choices from `ChannelParams` (one table): the scheduler (frfcfs or
fcfs) and frfcfs's hit cap, the same constant the Python engine and the C++ engine's header use."""

import pytest
from memsim.compiled import layout
from memsim.presets import preset_sections
from memsim.rtl.channel_params import channel_params
from memsim.rtl.channel_verilog import channel_verilog
from memsim.scheduling import ROW_HIT_CAP
from memsim.spec import spec_from_sections


def _params(scheduler: str):
    sections = preset_sections("ddr4_8gb_x8_3200")
    return channel_params(spec_from_sections({**sections, "system": {**sections["system"], "scheduler": scheduler}},
                                             name="ddr4"))  # fmt: skip


@pytest.mark.parametrize(("scheduler", "fcfs"), [("frfcfs", 0), ("fcfs", 1)])
def test_the_scheduler_and_hit_cap_come_from_channel_params(scheduler: str, fcfs: int) -> None:
    p = _params(scheduler)
    text = channel_verilog(p, "m")
    assert p.fcfs == bool(fcfs) and text.count(f".FCFS({fcfs})") == 2  # both picks (the second is dual issue's)
    cap = f"{p.hit_bits}'d{p.row_hit_cap}"
    assert p.row_hit_cap == ROW_HIT_CAP == layout.ROW_HIT_CAP and p.hit_bits == ROW_HIT_CAP.bit_length()
    assert f".hits_cap(bank_hits[gq] >= {cap})" in text and f"hitscap2[b] = bank_hits[b] >= {cap};" in text
    assert f"bank_hits[b] >= {p.hit_bits}'d{p.row_hit_cap - 1};" in text  # one more hit reaches the cap
    assert f"  reg {f'[{p.hit_bits - 1}:0]':<11} bank_hits [0:NB-1];" in text
