"""zaya-config: the shared Hydra config layer of the zaya monorepo.

`compose(name, overrides)` builds a config from every installed zaya package's config groups (found
through the `zaya.conf` entry points), and validates each key that has a registered schema
(`zaya.schema` entry points) so bad values fail at start with the key, the value and what is allowed.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from zaya_config.lazy import lazy_exports

# Exports resolve lazily (PEP 562), so `import zaya_config.atomic` (stdlib only) does not pull in Hydra,
# OmegaConf or PyYAML: GPU benchmark scripts import it on machines without them.
_EXPORTS = {
    "ClusterConfig": "zaya_config.cluster",
    "LinkConfig": "zaya_config.cluster",
    "compose": "zaya_config.compose",
    "group_options": "zaya_config.compose",
    "ZayaConfigError": "zaya_config.errors",
    "HardwareProfile": "zaya_config.hardware",
    "MeasuredHardware": "zaya_config.hardware",
    "LoggingConfig": "zaya_config.log_config",
    "PathsConfig": "zaya_config.paths",
    "hardware": "zaya_config.profiles",
    "hardware_names": "zaya_config.profiles",
    "validate_config": "zaya_config.validation",
    "validate_node": "zaya_config.validation",
}

if TYPE_CHECKING:
    from zaya_config.cluster import ClusterConfig, LinkConfig
    from zaya_config.compose import compose, group_options
    from zaya_config.errors import ZayaConfigError
    from zaya_config.hardware import HardwareProfile, MeasuredHardware
    from zaya_config.log_config import LoggingConfig
    from zaya_config.paths import PathsConfig
    from zaya_config.profiles import hardware, hardware_names
    from zaya_config.validation import validate_config, validate_node


lazy_exports(__name__, _EXPORTS)

try:
    __version__ = version("zaya-config")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = [
    "ClusterConfig",
    "HardwareProfile",
    "LinkConfig",
    "LoggingConfig",
    "MeasuredHardware",
    "PathsConfig",
    "ZayaConfigError",
    "compose",
    "group_options",
    "hardware",
    "hardware_names",
    "validate_config",
    "validate_node",
]
