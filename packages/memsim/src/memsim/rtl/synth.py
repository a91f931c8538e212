"""yosys on the generated channel: `synth` (yosys's generic flow), then its cell statistics and `check`.

The flow is yosys's `synth` script without `memory_map`: the write-data slot memory stays a memory (`$mem_v2`,
counted in bits), as an FPGA flow would map it to block RAM, instead of becoming hundreds of thousands of
flip-flops and multiplexers (for DDR4: 314 slots of 512 bits).

The channel module is synthesized alone (its data store is a port), with its arrays packed into vectors
(`memsim.rtl.packed_arrays`: the same logic, which yosys reads in minutes instead of hours); the write-data slot
memory stays a memory. A clean run has no latches (`$dlatch`,
`$_DLATCH_*`), no problems `check` reports, and no construct yosys refuses; flip-flops and cells are read
from `stat`.
"""

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memsim.errors import MemsimError
from memsim.rtl.generate import GeneratedRtl
from memsim.rtl.packed_arrays import pack_arrays


@dataclass(frozen=True)
class SynthReport:
    """Cell counts of the synthesized channel."""

    cells: int
    flip_flops: int
    latches: int
    memory_bits: int  # the write-data slot memory (left to the FPGA's RAM)
    cell_types: dict[str, int]
    warnings: int

    @property
    def clean(self) -> bool:
        return self.latches == 0


def parse_stat(text: str) -> tuple[int, dict[str, int]]:
    """(number of cells, cells per type) from yosys's `stat` output (the last design summary)."""
    cells = re.findall(r"Number of cells:\s+(\d+)", text)
    if not cells:
        raise MemsimError("yosys printed no cell statistics")
    block = text[text.rindex("Number of cells:") :]
    types = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\$\S+)\s+(\d+)\s*$", block, re.M)}
    return int(cells[-1]), types


def synthesize(rtl: GeneratedRtl, log: Path, timeout_s: int = 3600) -> SynthReport:
    """Run yosys `synth` on `<prefix>_channel`; raise if yosys fails or `check` finds a problem."""
    if shutil.which("yosys") is None:
        raise MemsimError("yosys is not installed: apt-get install -y yosys (make system-deps)")
    packed = log.with_name(rtl.channel.stem + "_packed.v")
    packed.write_text(pack_arrays(rtl.channel.read_text(), keep=frozenset({"slot_ram"})))
    # yosys's `synth` script, with the memory left as a memory: everything but `memory_map`
    script = "; ".join([
        f"read_verilog {packed}", f"synth -top {rtl.prefix}_channel -flatten -run begin:fine", "opt -fast -full",
        "opt -full", "techmap", "opt -fast", "abc -fast", "opt -fast", "hierarchy -check", f"tee -o {log}.stat stat",
        "check -assert",
    ])  # fmt: skip
    try:
        done = subprocess.run(["yosys", "-q", "-l", str(log), "-p", script], capture_output=True, text=True,
                              timeout=timeout_s)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise MemsimError(f"yosys did not finish within {timeout_s} s (log: {log})") from None
    if done.returncode != 0:
        raise MemsimError(f"yosys synth of {rtl.prefix}_channel failed (log: {log}):\n{done.stderr[-2000:]}")
    stat = Path(f"{log}.stat").read_text()
    cells, types = parse_stat(stat)
    ffs = sum(n for t, n in types.items() if "DFF" in t.upper())
    latches = sum(n for t, n in types.items() if "LATCH" in t.upper())
    described = json.loads(rtl.params.read_text())
    mem_bits = described["write_slots"] * described["data_bits"]  # the slot memory, kept as $mem_v2 cells
    text = log.read_text()
    warnings = len(re.findall(r"^Warning:", text, re.M))
    if re.search(r"^Warning: found logic loop", text, re.M):
        raise MemsimError(f"yosys found a combinational loop in {rtl.prefix}_channel (log: {log})")
    return SynthReport(cells, ffs, latches, mem_bits, types, warnings)
