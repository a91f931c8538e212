"""The one exception type of ckpt-reshape."""


class ReshapeError(ValueError):
    """A checkpoint that cannot be read, reshaped or written; the message names the file, tensor and fix."""
