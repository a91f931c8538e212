"""The one exception type of zaya-config."""


class ZayaConfigError(ValueError):
    """A config that cannot be composed or does not validate; the message names key, value and fix."""


def invalid(key: str, value: object, allowed: str) -> ZayaConfigError:
    """Build the standard message: which key, which bad value, what is allowed."""
    return ZayaConfigError(f"invalid config: {key} = {value!r}; allowed: {allowed}")
