"""The one exception type of zaya-config."""


class ZayaConfigError(ValueError):
    """A config that cannot be composed or does not validate; the message names key, value and fix."""

    PREFIX = "invalid config: "

    def under(self, path: str) -> "ZayaConfigError":
        """The same error for a config nested at `path` (the key in the message gets `path.` in front)."""
        message = str(self)
        if message.startswith(self.PREFIX):
            return type(self)(f"{self.PREFIX}{path}.{message[len(self.PREFIX) :]}")
        return type(self)(f"{path}: {message}")


def invalid(key: str, value: object, allowed: str) -> ZayaConfigError:
    """Build the standard message: which key, which bad value, what is allowed."""
    return ZayaConfigError(f"{ZayaConfigError.PREFIX}{key} = {value!r}; allowed: {allowed}")
