"""The one exception type of zaya-model.

`ZayaModelError` is what callers catch. Config problems raise `ZayaModelConfigError`, which is also a
`zaya_config.ZayaConfigError` when zaya-config is importable, so `zaya_config.validate_config` reports
them like every other bad key; zaya_model itself must import without hydra (the GPU box has none).
"""


class ZayaModelError(ValueError):
    """Bad model config, checkpoint or call; the message names the offending key/value and the fix."""


try:  # zaya_config pulls in hydra; the model must work without it
    from zaya_config.errors import ZayaConfigError as _ConfigErrorBase
except ImportError:  # pragma: no cover - exercised on machines without hydra
    _ConfigErrorBase = ValueError  # type: ignore[misc,assignment]


class ZayaModelConfigError(ZayaModelError, _ConfigErrorBase):  # type: ignore[misc,valid-type]
    """An inconsistent `ZayaConfig`."""


def invalid(key: str, value: object, allowed: str) -> ZayaModelConfigError:
    """The standard config message (zaya_config's wording); `validate_config` puts the group (`model.`) in front."""
    return ZayaModelConfigError(f"invalid config: {key} = {value!r}; allowed: {allowed}")
