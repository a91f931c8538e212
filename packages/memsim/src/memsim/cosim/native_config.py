"""The configuration file memsim's native engine reads (`native/memsim_engine.cc`): one memsim part, as data.

It carries what the compiled engine runs on (the K array of `memsim.compiled.bridge.engine_config`:
organisation, controller settings, activation windows and the timing table's offsets), the channel row's
length, the address mapping and tCK as an exact fraction. Python decides every number; C++ only reads them,
so the native engine can never disagree with memsim about a timing.

The native engine is the compiled engine (one C++ controller), driven one request at a time, so it models what
trace runs on it model: a part with self-refresh, power-down, jedec-mode aggressive precharging, DDR5 same-bank
refresh or RFM (`memsim.compiled.bridge.unsupported`, which trace runs leave to the Python engine) is refused
here, by name, rather than simulated differently.
"""

from fractions import Fraction
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from memsim.address_mapping import FIELDS
from memsim.compiled.bridge import engine_config, unsupported
from memsim.compiled.layout import NATIVE_CONFIG_VERSION
from memsim.errors import MemsimError
from memsim.memory_system import MemorySystem
from memsim.spec import DramSpec

VERSION = NATIVE_CONFIG_VERSION  # its home is memsim.compiled.layout, beside the K layout it versions


def native_config_text(spec: DramSpec | str | Path, mode: str | None = None, strict: bool = False) -> str:
    """The file's text for `spec` (a preset name, a DRAMSim3 .ini path or a DramSpec); `mode` ("dramsim3" or
    "jedec") overrides the config's and `strict` makes config problems errors, as for `MemorySystem`."""
    system = MemorySystem(spec, functional=False, mode=mode, strict=strict)
    missing = unsupported(system.spec)
    if missing is not None:
        raise MemsimError(f"config {system.spec.name}: memsim's native engine (like its compiled engine) does not "
                          f"model {missing}; turn it off in the config, or simulate this part on the Python engine "
                          "(memsim.cosim.axi_port.AxiMemory under cocotb)")  # fmt: skip
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


def write_native_config(spec: DramSpec | str | Path, path: Path, mode: str | None = None, strict: bool = False) -> Path:
    """Write the file atomically; return its path."""
    return write_text_atomic(path, native_config_text(spec, mode, strict))
