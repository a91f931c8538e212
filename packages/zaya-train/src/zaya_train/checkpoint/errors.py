"""Errors of the checkpoint subsystem (a ZayaTrainError, the one exception type of zaya-train)."""

from zaya_train.errors import ZayaTrainError


class CheckpointError(ZayaTrainError):
    """A checkpoint cannot be written or read; the message names the folder or file and the fix."""
