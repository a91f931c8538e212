"""Config dataclasses that validate themselves when they are built, with nested keys prefixed in one place.

Every structured config subclasses `ValidatedConfig` and puts the checks of its own fields in `validate_fields()`.
Building one (`TrainConfig(...)`, Hydra's `OmegaConf.to_object`) runs `validate()`, which validates the nested
configs first and prefixes their errors with the field path (`optimizer.betas[0]`, `phases[1].schedule.peak_lr`,
`sources.web.path`) — the only place a prefix is added. `validate_config` builds a group's object with
validation deferred, then validates the whole tree once, so its errors carry the full key (`train.optimizer.eps`).
Call `validate()` again after mutating an object.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields, is_dataclass
from typing import Any

from zaya_config.errors import ZayaConfigError

_DEFERRED: ContextVar[bool] = ContextVar("zaya_config_validation_deferred", default=False)


@contextmanager
def deferred_validation() -> Iterator[None]:
    """Build configs without validating them (a tree is then validated once, from its root)."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def nested_configs(obj: Any) -> Iterator[tuple[str, "ValidatedConfig"]]:
    """(field path, config) of every config held by `obj`'s fields: directly, in a list/tuple, or in a dict."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, ValidatedConfig):
            yield f.name, value
        elif isinstance(value, list | tuple):
            yield from ((f"{f.name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, ValidatedConfig))
        elif isinstance(value, dict):
            yield from ((f"{f.name}.{k}", v) for k, v in value.items() if isinstance(v, ValidatedConfig))


class ValidatedConfig:
    """Base of the structured configs: `validate_fields()` its own fields; building it validates the whole tree."""

    def __post_init__(self) -> None:
        if not _DEFERRED.get():
            self.validate()

    def validate_fields(self) -> None:
        """The checks of this config's own fields (nested configs check theirs); raise ZayaConfigError."""

    def validate(self) -> None:
        """Validate the nested configs (errors prefixed with their field path), then this one's own fields."""
        assert is_dataclass(self), f"{type(self).__name__} must be a dataclass"
        for path, child in nested_configs(self):
            try:
                child.validate()
            except ZayaConfigError as err:
                raise err.under(path) from None
        self.validate_fields()
