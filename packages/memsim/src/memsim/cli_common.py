"""What memsim's command groups (`zaya memsim ...`, `zaya memsim cosim ...`) share: the error exit, the config
notes, and the config-reading options. Messages are printed with rich markup escaped, so bracketed text
("missing from [timing]") reads as written.
"""

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

STRICT = typer.Option(False, "--strict", help="Unknown keys and misspelt values in the config are errors")
MODE = typer.Option(None, "--mode", help="dramsim3 (default for .ini files) or jedec (default for presets)")


def fail(err: Exception) -> None:
    """Print `err` as one line on stderr and exit with status 2."""
    Console(stderr=True).print(f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


@contextmanager
def config_notices() -> Iterator[None]:
    """Print what reading a config noticed (defaults, ignored keys, problems) as notes on stderr."""
    from memsim.config_report import MemsimConfigWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MemsimConfigWarning)
        try:
            yield
        finally:
            err = Console(stderr=True)
            for w in caught:
                if issubclass(w.category, MemsimConfigWarning):
                    err.print(f"[yellow]config:[/] {escape(str(w.message))}", highlight=False, soft_wrap=True)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
