"""`@service_main(...)`: `hydra.main` for zaya's services, ending bad input the way the `zaya` CLIs do.

A bad config or override prints one line, `error: <message>`, on stderr and exits with code 2: our error
types (`ZayaConfigError` and the ones the service names) and Hydra's config errors (an unknown override key,
a misspelt group option, "Ambiguous value", an override that does not parse, a `???` left unset). The
traceback is printed only with `--debug` (taken off the command line before Hydra parses it) or
`HYDRA_FULL_ERROR=1`. Any other exception is a bug and keeps its traceback.

Hydra prints its own report unless HYDRA_FULL_ERROR=1, so the runner sets it for Hydra and writes the
report itself.
"""

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from zaya_config.cli_errors import EXIT_BAD_INPUT, print_error

FULL_ERROR_ENV = "HYDRA_FULL_ERROR"
DEBUG_FLAG = "--debug"
# "module:Class" names, so that checking an error never imports a package (zaya_model's imports torch).
ALWAYS_REPORTED = ("zaya_config.errors:ZayaConfigError",)
HYDRA_CONFIG_ERRORS = (
    "hydra.errors:ConfigCompositionException",  # unknown key, misspelt group option, ambiguous value
    "hydra.errors:OverrideParseException",
    "hydra.errors:SearchPathException",
    "omegaconf.errors:MissingMandatoryValue",  # a `???` the command line did not set
)


JOB_ERROR_LINE = "Error executing job with overrides:"  # Hydra writes it to stderr before re-raising


class _HoldJobErrorLine:
    """stderr that holds back Hydra's "Error executing job with overrides" line: dropped when the error is
    reported in one line, written out before the traceback of a bug."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.held = stream, []

    def write(self, text: str) -> int:
        if text.startswith(JOB_ERROR_LINE):
            self.held.append(text)
            return len(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _names(err: BaseException) -> set[str]:
    return {f"{cls.__module__}:{cls.__qualname__}" for cls in type(err).__mro__}


def is_reported(err: BaseException, error_types: Iterable[str | type[BaseException]] = ()) -> bool:
    """Whether `err` is bad input (one clean line) rather than a bug (a traceback)."""
    names = _names(err)
    for kind in (*ALWAYS_REPORTED, *HYDRA_CONFIG_ERRORS, *error_types):
        if (kind in names) if isinstance(kind, str) else isinstance(err, kind):
            return True
    return False


def one_line(err: BaseException) -> str:
    """The message of `err` (and of the OmegaConf error Hydra wraps) on one line; Hydra's indented lists of
    options become comma-separated."""
    parts = [str(err)]
    cause = err.__cause__
    if cause is not None and str(cause) not in parts[0] and "omegaconf" in type(cause).__module__:
        parts.append(str(cause).splitlines()[0])
    pieces: list[str] = []
    for line in "\n".join(parts).splitlines():
        if line.startswith(("\t", " ")) and pieces:  # an item of a list ("Available options in 'recipe':")
            pieces[-1] += (" " if pieces[-1].endswith(":") else ", ") + line.strip()
        elif line.startswith("Config search path:"):  # Hydra's search path: noise for a misspelt option
            break
        elif line.strip():
            pieces.append(line.strip())
    return "; ".join(p.rstrip(".") for p in pieces[:-1]) + ("; " if len(pieces) > 1 else "") + pieces[-1]


def service_main(
    config_path: str, config_name: str, errors: Iterable[str | type[BaseException]] = ()
) -> Callable[[Callable[[Any], Any]], Callable[[], None]]:
    """Decorate a service's task function as `hydra.main(version_base="1.3", ...)` does; `errors` are the
    package error types (classes or "module:Class") that are bad input, besides ZayaConfigError and Hydra's."""
    error_types = tuple(errors)

    def decorate(task: Callable[[Any], Any]) -> Callable[[], None]:
        import hydra

        hydra_entry = hydra.main(version_base="1.3", config_path=config_path, config_name=config_name)(task)

        def entry() -> None:
            debug = DEBUG_FLAG in sys.argv[1:]
            if debug:
                sys.argv = [a for a in sys.argv if a != DEBUG_FLAG]
            full = debug or os.environ.get(FULL_ERROR_ENV) == "1"
            os.environ[FULL_ERROR_ENV] = "1"  # Hydra re-raises; the report is ours
            stderr = sys.stderr = _HoldJobErrorLine(sys.stderr)
            try:
                hydra_entry()
            except Exception as err:
                sys.stderr = stderr.stream
                if full or not is_reported(err, error_types):
                    sys.stderr.write("".join(stderr.held))
                    raise
                print_error(one_line(err))
                sys.exit(EXIT_BAD_INPUT)
            finally:
                sys.stderr = stderr.stream

        entry.__doc__, entry.__name__ = task.__doc__, task.__name__
        return entry

    return decorate
