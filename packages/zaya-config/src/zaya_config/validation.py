"""Validation of a composed config against the registered structured configs.

OmegaConf's own errors say little ("Value 'x' could not be converted to Float"); these name the full
key, the bad value and what is allowed, and they fire before any work starts.
"""

import dataclasses
import types
import typing
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from zaya_config.errors import ZayaConfigError, invalid
from zaya_config.registry import broken_schemas, schemas
from zaya_config.validated import deferred_validation


def _select(cfg: DictConfig, dotted: str) -> Any:
    return OmegaConf.select(cfg, dotted, default=None)


def _describe_type(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_describe_type(a) for a in args) + " or null"
    if dataclasses.is_dataclass(tp):
        return f"a mapping with keys {', '.join(f.name for f in dataclasses.fields(tp))}"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _field_type(cls: type, rel_key: str) -> Any:
    tp: Any = cls
    for part in rel_key.split("."):
        if not dataclasses.is_dataclass(tp):
            return None
        hints = typing.get_type_hints(tp)
        if part not in hints:
            return None
        tp = hints[part]
    return tp


def _allowed_keys(cls: type, rel_key: str) -> str:
    parent = rel_key.rpartition(".")[0]
    tp = _field_type(cls, parent) if parent else cls
    if dataclasses.is_dataclass(tp):
        return "one of the keys " + ", ".join(f.name for f in dataclasses.fields(tp))
    return "a known key"


def validate_node(key: str, node: Any, cls: type) -> Any:
    """Check one config node against its dataclass; return the instantiated, validated object."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(cls), node)
        with deferred_validation():  # validated once below, from the root, so errors carry the full key
            obj = OmegaConf.to_object(merged)
    except ConfigKeyError as err:
        rel = (err.full_key or "").removeprefix(".") or "?"
        raise ZayaConfigError(f"invalid config: unknown key {key}.{rel}; allowed: {_allowed_keys(cls, rel)}") from None
    except (ValidationError, OmegaConfBaseException) as err:
        rel = (getattr(err, "full_key", None) or "").removeprefix(".")
        value = _select(OmegaConf.create(node) if not isinstance(node, DictConfig) else node, rel) if rel else node
        tp = _field_type(cls, rel) if rel else cls
        raise invalid(f"{key}.{rel}" if rel else key, value, _describe_type(tp) if tp else str(err)) from None
    check = getattr(obj, "validate", None)
    if callable(check):
        try:
            check()
        except ZayaConfigError as err:
            raise err.under(key) from None
    return obj


def validate_config(cfg: DictConfig) -> dict[str, Any]:
    """Validate every key of `cfg` that has a registered schema; return key -> validated object.

    Interpolations are resolved first on a copy (a group may point into another, e.g. `${paths.data_dir}`),
    so each node is checked with the values it will really have; `cfg` itself is left as it was.
    """
    try:
        resolved = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    except OmegaConfBaseException as err:
        raise ZayaConfigError(
            f"invalid config: cannot resolve {getattr(err, 'full_key', '') or 'an interpolation'}: {err}"
        ) from None
    objects: dict[str, Any] = {}
    known = schemas()
    for key, reason in sorted(broken_schemas().items()):
        if _select(resolved, key) is not None:
            raise ZayaConfigError(f"invalid config: cannot validate {key}: its schema {reason}; reinstall that package")
    for key, cls in sorted(known.items()):
        node = _select(resolved, key)
        if node is None:
            continue
        objects[key] = validate_node(key, node, cls)
    return objects
