"""One way for every `zaya` command to fail: a single clean line on stderr, exit code 2.

`fail(err)` prints `error: <message>` with rich markup escaped (a message that names `[timing]` or a list keeps
its brackets) and raises `typer.Exit(2)`. `reports(*error_types)` wraps a command so that those exception types
end the same way, without a traceback; anything else is a bug and keeps its traceback.
"""

from collections.abc import Callable
from functools import wraps
from typing import NoReturn, ParamSpec, TypeVar

import typer

P = ParamSpec("P")
R = TypeVar("R")
EXIT_BAD_INPUT = 2


def print_error(err: BaseException | str) -> None:
    """Print `error: <message>` on stderr: markup escaped, one logical line (the terminal may wrap it)."""
    from rich.console import Console  # here, not at import: every command's start-up would pay for it
    from rich.markup import escape

    message = " ".join(str(err).split("\n"))
    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def fail(err: BaseException | str) -> NoReturn:
    """Print `error: <message>` on stderr (markup escaped, one logical line) and exit with code 2."""
    print_error(err)
    raise typer.Exit(code=EXIT_BAD_INPUT)


def reports(*error_types: type[BaseException]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a command: `error_types` raised inside it become `fail(err)`."""
    types = error_types or (ValueError,)

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        @wraps(command)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return command(*args, **kwargs)
            except types as err:
                fail(err)

        return wrapper

    return decorate
