"""manta's `manta_hardware` presets by name, composed through zaya-config like any shared group."""

from zaya_config import compose, group_options
from zaya_config.validation import validate_node

from manta.errors import MantaError
from manta.limits import HardwareLimits

GROUP = "manta_hardware"


def hardware_limit_names() -> list[str]:
    """Every `manta_hardware` preset the installed packages provide."""
    return group_options(GROUP)


def hardware_limits(name: str) -> HardwareLimits:
    """The validated `HardwareLimits` preset `name` (e.g. laptop-8gb, desktop-24gb, h200, cpu)."""
    known = hardware_limit_names()
    if name not in known:
        raise MantaError(f"unknown hardware profile {name!r}; allowed: one of {', '.join(known)}")
    cfg = compose("zaya", [f"+{GROUP}={name}"], validate=False)
    return validate_node(GROUP, cfg[GROUP], HardwareLimits)
