"""The configuration file memsim's native engine reads (`native/memsim_engine.cc`): one memsim part, as data.

It carries what the compiled engine runs on (the K array of `memsim.compiled.bridge.engine_config`:
organisation, controller settings, activation windows and the timing table's offsets), the channel row's
length, the address mapping and tCK as an exact fraction. Python decides every number; C++ only reads them,
so the native engine can never disagree with memsim about a timing.
"""

from fractions import Fraction
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from memsim.address_mapping import FIELDS
from memsim.compiled.bridge import engine_config
from memsim.memory_system import MemorySystem
from memsim.spec import DramSpec

VERSION = 1


def native_config_text(spec: DramSpec | str | Path) -> str:
    """The file's text for `spec` (a preset name, a DRAMSim3 .ini path or a DramSpec)."""
    system = MemorySystem(spec, functional=False)
    K, layout = engine_config(system)
    _, row_len = layout.offsets()
    tck = Fraction(str(system.spec.tCK_ns))
    mapping = system.mapping
    lines = [
        f"memsim-native-config {VERSION}",
        f"name {system.spec.name.replace(' ', '_')}",
        f"tck_ns {tck.numerator} {tck.denominator}",
        f"line_bytes {system.line_bytes}",
        f"channels {system.spec.channels}",
        f"address_bits {mapping.address_bits}",
        f"shift {mapping.shift_bits}",
        *(f"field {f} {mapping.positions[f]} {mapping.widths[f]}" for f in FIELDS),
        f"row_len {row_len}",
        f"K {len(K)} " + " ".join(str(int(v)) for v in K),
    ]
    return "\n".join(lines) + "\n"


def write_native_config(spec: DramSpec | str | Path, path: Path) -> Path:
    """Write the file atomically; return its path."""
    return write_text_atomic(path, native_config_text(spec))
