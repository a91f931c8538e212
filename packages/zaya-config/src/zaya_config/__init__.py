"""zaya-config: the shared Hydra config layer of the zaya monorepo.

`compose(name, overrides)` builds a config from every installed zaya package's config groups (found
through the `zaya.conf` entry points), and validates each key that has a registered schema
(`zaya.schema` entry points) so bad values fail at start with the key, the value and what is allowed.
"""

from importlib.metadata import PackageNotFoundError, version

from zaya_config.cluster import ClusterConfig, LinkConfig
from zaya_config.compose import compose, group_options
from zaya_config.errors import ZayaConfigError
from zaya_config.hardware import HardwareProfile, MeasuredHardware
from zaya_config.log_config import LoggingConfig
from zaya_config.paths import PathsConfig
from zaya_config.profiles import hardware, hardware_names
from zaya_config.validation import validate_config, validate_node

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
