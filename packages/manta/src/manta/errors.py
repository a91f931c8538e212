"""The one exception type of manta."""


class MantaError(ValueError):
    """Bad input or an impossible request; the message names what is wrong and how to fix it."""
