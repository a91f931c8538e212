"""The one exception type of memsim."""


class MemsimError(ValueError):
    """Bad input to memsim (config, trace, address, API use); the message names what is wrong and the fix."""
