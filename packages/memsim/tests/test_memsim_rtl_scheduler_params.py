"""The generated channel and the C++ engine take their scheduler choices from `memsim.channel_params.ChannelParams`
(one table): the scheduler (frfcfs or fcfs), frfcfs's hit cap (the same constant the Python engine and the C++
engine's header use) and the row policy's column commands; one they do not implement is refused by name."""

import re
from dataclasses import replace

import pytest
from memsim.channel_params import ChannelParams
from memsim.compiled import layout
from memsim.compiled.bridge import engine_config, unsupported
from memsim.errors import MemsimError
from memsim.memory_system import MemorySystem
from memsim.presets import preset_sections
from memsim.rtl.channel_params import channel_params
from memsim.rtl.channel_verilog import channel_verilog
from memsim.scheduling import ROW_HIT_CAP, ROW_POLICIES, SCHEDULERS
from memsim.spec import load_spec, spec_from_sections


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


@pytest.mark.parametrize("policy", sorted(ROW_POLICIES))
@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_every_python_scheduler_and_row_policy_reaches_the_cpp_engine_and_the_rtl(scheduler: str, policy: str) -> None:
    """Each one the Python engine offers is implemented by both, from ChannelParams: the C++ engine's K array and the
    RTL's Verilog carry the FCFS flag and the column commands the Python controller uses."""
    sections = preset_sections("ddr4_8gb_x8_3200")
    system_keys = {**sections["system"], "scheduler": scheduler, "row_buf_policy": policy}
    spec = spec_from_sections({**sections, "system": system_keys}, name="ddr4")
    assert unsupported(spec) is None
    p = channel_params(spec)
    assert p.fcfs == (scheduler == "fcfs") and p.following[:2] == (p.read_column, p.write_column)
    system = MemorySystem(spec, functional=False)
    ctrl = system.channels[0]
    assert (p.read_column, p.write_column) == (ctrl.column_command(False), ctrl.column_command(True))
    K, _ = engine_config(system)
    assert (K[layout.K_FCFS], K[layout.K_RD_CMD], K[layout.K_WR_CMD]) == (p.fcfs, p.read_column, p.write_column)
    assert channel_verilog(p, "m").count(f".FCFS({int(p.fcfs)})") == 2


@pytest.mark.parametrize(("key", "value"), [("scheduler", "bliss"), ("row_buf_policy", "ADAPTIVE_PAGE")])
def test_a_scheduler_or_row_policy_they_lack_is_refused_by_name(key: str, value: str) -> None:
    spec = replace(load_spec("ddr4_8gb_x8_3200"), **{key: value})
    named = f"{key} = {value} (the C++ engine and the RTL implement "
    assert unsupported(spec).startswith(named)  # so trace runs leave it to the Python engine
    for make in (ChannelParams, channel_params):
        with pytest.raises(MemsimError, match=re.escape(named)) as err:
            make(spec)
        assert "\n" not in str(err.value)
