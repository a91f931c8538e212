"""Named standards shipped as YAML presets in `memsim/conf/memsim/` (the Hydra group `memsim`)."""

from importlib.resources import files
from typing import Any

import yaml

from memsim.errors import MemsimError


def preset_names() -> list[str]:
    """Names of the shipped presets, e.g. `ddr4_8gb_x8_3200`."""
    folder = files("memsim.conf") / "memsim"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def preset_sections(name: str) -> dict[str, Any]:
    """The DRAMSim3-style sections of one preset."""
    path = files("memsim.conf") / "memsim" / f"{name}.yaml"
    if not path.is_file():
        raise MemsimError(f"unknown memory config {name!r}: not a file and not a preset; presets: "
                          f"{', '.join(preset_names())}")  # fmt: skip
    return yaml.safe_load(path.read_text())
