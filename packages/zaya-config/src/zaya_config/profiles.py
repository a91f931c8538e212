"""Hardware profiles by name, for code that needs the ceilings without composing a whole config."""

from zaya_config.compose import BASE_CONFIG, compose, group_options
from zaya_config.errors import ZayaConfigError
from zaya_config.hardware import HardwareProfile
from zaya_config.validation import validate_node


def hardware(name: str) -> HardwareProfile:
    """The validated `HardwareProfile` of preset `name` (from any installed package's `hardware/`)."""
    known = group_options("hardware")
    if name not in known:
        raise ZayaConfigError(f"unknown hardware profile {name!r}; allowed: one of {', '.join(known)}")
    cfg = compose(BASE_CONFIG, [f"hardware={name}"], validate=False)
    return validate_node("hardware", cfg.hardware, HardwareProfile)


def hardware_names() -> list[str]:
    """Every hardware preset the installed packages provide."""
    return group_options("hardware")
