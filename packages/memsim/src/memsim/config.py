"""`memsim` as a Hydra structured config: DRAMSim3's sections under the `memsim` key.

`memsim=ddr4_8gb_x8_3200` composes a preset; any key can be overridden (`memsim.timing.CL=24`).
`validate()` builds the spec, so a missing timing key or an unknown protocol fails at start.
"""

from dataclasses import dataclass, field
from typing import Any

from zaya_config.errors import ZayaConfigError

from memsim.errors import MemsimError
from memsim.spec import DramSpec, spec_from_sections


@dataclass
class MemsimConfig:
    """One memory system, in DRAMSim3's keys (see `memsim.spec`)."""

    name: str = "ddr4_8gb_x8_3200"
    dram_structure: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    power: dict[str, Any] = field(default_factory=dict)
    system: dict[str, Any] = field(default_factory=dict)
    other: dict[str, Any] = field(default_factory=dict)
    strict: bool = False  # config problems (unknown keys, misspelt values) are errors, not warnings

    def sections(self) -> dict[str, Any]:
        return {"name": self.name, "dram_structure": dict(self.dram_structure), "timing": dict(self.timing),
                "power": dict(self.power), "system": dict(self.system), "other": dict(self.other)}  # fmt: skip

    def build_spec(self) -> DramSpec:
        return spec_from_sections(self.sections(), name=self.name, strict=self.strict)

    def validate(self) -> None:
        """Turn memsim's own error into the config layer's, keeping its message."""
        if not self.dram_structure:
            return  # an empty node: nothing composed yet
        try:
            self.build_spec()
        except MemsimError as err:
            message = str(err).removeprefix(f"config {self.name}: ")
            raise ZayaConfigError(f"invalid config: {self.name}: {message}") from None
