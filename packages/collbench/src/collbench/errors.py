"""The one exception type of collbench."""


class CollbenchError(ValueError):
    """Bad benchmark input or a failed run; the message names what is wrong and how to fix it."""
