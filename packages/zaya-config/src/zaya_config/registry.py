"""Discovery of what installed zaya packages contribute: config folders and schemas.

Packages declare themselves through entry points, so installing a package is all it takes:
- `zaya.conf`: name -> importable module holding YAML config groups (added as `pkg://<module>`);
- `zaya.schema`: config key (dotted, e.g. `model` or `train.optimizer`) -> `module:Dataclass`.
"""

import functools
from importlib.metadata import entry_points
from typing import Any

from hydra.core.config_store import ConfigStore

CONF_GROUP = "zaya.conf"
SCHEMA_GROUP = "zaya.schema"
CLI_GROUP = "zaya.cli"


def conf_modules() -> dict[str, str]:
    """Provider name -> config module of every installed package, zaya_config first."""
    found = {ep.name: ep.value for ep in entry_points(group=CONF_GROUP)}
    ordered = dict(sorted(found.items(), key=lambda kv: (kv[0] != "zaya_config", kv[0])))
    return ordered


@functools.cache
def broken_schemas() -> dict[str, str]:
    """Config key -> why its schema entry point failed to load (filled by `schemas()`)."""
    return {}


@functools.cache
def schemas() -> dict[str, type]:
    """Config key -> structured-config dataclass, loaded from the `zaya.schema` entry points.

    Each dataclass is also stored in Hydra's ConfigStore as `schema/<group>/<name>` (e.g.
    `schema/hardware/hardware`), out of the way of the presets, so YAML files may extend it.
    """
    found: dict[str, type] = {}
    store = ConfigStore.instance()
    for ep in entry_points(group=SCHEMA_GROUP):
        try:
            cls: Any = ep.load()
        except Exception as err:  # one broken package must not stop every other package's configs
            broken_schemas()[ep.name] = f"{ep.value} (from {ep.dist.name if ep.dist else '?'}) cannot be loaded: {err}"
            continue
        found[ep.name] = cls
        group, _, name = ("schema/" + ep.name.replace(".", "/")).rpartition("/")
        store.store(group=f"{group}/{name}", name=name, node=cls, provider=ep.dist.name if ep.dist else None)
    return found
