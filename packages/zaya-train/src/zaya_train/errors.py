"""The one exception type of zaya-train."""


class ZayaTrainError(ValueError):
    """Bad training input (data, config, recipe) found before any step runs; the message names the fix."""
