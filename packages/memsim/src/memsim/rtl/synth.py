"""yosys on the generated channel: `synth` (yosys's generic flow), then its cell statistics and `check`.

The channel module is synthesized alone (its data store is a port). A clean run has no latches (`$dlatch`,
`$_DLATCH_*`), no problems `check` reports, and no construct yosys refuses; flip-flops and cells are read
from `stat`.
"""

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memsim.errors import MemsimError
from memsim.rtl.generate import GeneratedRtl


@dataclass(frozen=True)
class SynthReport:
    """Cell counts of the synthesized channel."""

    cells: int
    flip_flops: int
    latches: int
    memory_bits: int
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
    script = (f"read_verilog {rtl.channel}; synth -top {rtl.prefix}_channel -flatten; tee -o {log}.stat stat; "
              "check -assert")  # fmt: skip
    try:
        done = subprocess.run(["yosys", "-q", "-l", str(log), "-p", script], capture_output=True, text=True,
                              timeout=timeout_s)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise MemsimError(f"yosys did not finish within {timeout_s} s (log: {log})") from None
    if done.returncode != 0:
        raise MemsimError(f"yosys synth of {rtl.prefix}_channel failed (log: {log}):\n{done.stderr[-2000:]}")
    cells, types = parse_stat(Path(f"{log}.stat").read_text())
    ffs = sum(n for t, n in types.items() if "DFF" in t.upper())
    latches = sum(n for t, n in types.items() if "LATCH" in t.upper())
    mem_bits = sum(n for t, n in types.items() if t.startswith("$mem"))
    warnings = len(re.findall(r"^Warning:", log.read_text(), re.M))
    return SynthReport(cells, ffs, latches, mem_bits, types, warnings)
