"""The `zaya` command: one typer app that mounts a sub-app from every installed zaya package, lazily.

A package adds commands by declaring an entry point in the `zaya.cli` group, name -> `module:typer_app`.
A group's module is imported only when that group is used: `zaya --help` lists the groups from entry-point
metadata and each group's help line read from its source with `ast`, so it starts without importing any package's CLI (and
none of torch). Sub-app modules should import heavy libraries inside their commands so `zaya <group> --help`
stays fast too. A package whose sub-app fails to load is reported, not fatal: the other commands keep working.
"""

import os
import sys
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup
from zaya_config.cli_errors import fail

from zaya_cli.services import ServiceNotFoundError, find_service, list_services, services_dir

CLI_GROUP = "zaya.cli"


@cache
def cli_entry_points() -> dict[str, EntryPoint]:
    """The installed packages' command groups by name (metadata only: nothing is imported)."""
    return {ep.name: ep for ep in entry_points(group=CLI_GROUP)}


def _package(ep: EntryPoint) -> str:
    return ep.dist.name if ep.dist else "?"


def _module_file(module: str) -> Path | None:
    """The source file of `module`, found on sys.path without importing it (or its package)."""
    relative = Path(*module.split("."))
    for entry in sys.path:
        for candidate in (Path(entry) / relative.with_suffix(".py"), Path(entry) / relative / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def static_help(ep: EntryPoint) -> str:
    """A group's help line without importing it: the `help=` of its `typer.Typer(...)`, read from the source
    with `ast`; the package's summary when the source does not say."""
    import ast

    module, _, attr = ep.value.partition(":")
    source = _module_file(module)
    text = None
    if source is not None:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == attr for t in node.targets):
                call = node.value
                for kw in getattr(call, "keywords", []):
                    if kw.arg == "help" and isinstance(kw.value, ast.Constant):
                        text = str(kw.value.value)
    if text is None:
        text = ((ep.dist.metadata.get("Summary") or "") if ep.dist else "").split(". ")[0]
    return f"{text.rstrip('.')} (from {_package(ep)})".strip()


class LazyGroup(TyperGroup):
    """The root group: `run` is built in; every other group is loaded from its entry point on first use."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(cli_entry_points()))

    def get_command(self, ctx: typer.Context, name: str) -> Any:
        command = super().get_command(ctx, name)
        if command is not None or name not in cli_entry_points():
            return command
        ep = cli_entry_points()[name]
        try:
            sub = ep.load()
        except Exception as err:  # a broken plugin must not take the whole CLI down
            from rich.console import Console

            Console(stderr=True).print(
                f"[yellow]warning:[/] cannot load `zaya {name}` from {ep.value}: {err}", markup=True, highlight=False
            )
            return None
        command = typer.main.get_group(sub)  # a group even when the sub-app has a single command
        command.name = name
        command.help = f"{sub.info.help or ''} (from {_package(ep)})".strip()
        return command

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:
        rows = [(name, cmd.get_short_help_str(120)) for name, cmd in self.commands.items() if not cmd.hidden]
        rows += [(name, static_help(ep)) for name, ep in cli_entry_points().items() if name not in self.commands]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))


def run_service(
    ctx: typer.Context,
    service: str = typer.Argument(None, help="Service name (a folder of services/), e.g. pretrain"),
    list_: bool = typer.Option(False, "--list", "-l", help="List the services and exit"),
) -> None:
    """Run a workflow service (a Hydra app); extra arguments are Hydra overrides, `-m` for a sweep."""
    try:
        if list_ or service is None:
            for name, main in list_services(services_dir()).items():
                typer.echo(f"{name}\t{main}")
            return
        main = find_service(service)
    except ServiceNotFoundError as err:
        fail(err)
    argv = [sys.executable, str(main), *ctx.args]
    if os.name == "posix":  # become the service: a signal sent to `zaya`'s PID (SIGKILL too) reaches the trainer
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, argv)
    import subprocess

    raise typer.Exit(code=subprocess.call(argv))


def build_app() -> typer.Typer:
    """The root app; the installed packages' groups are mounted by `LazyGroup` when they are used."""
    app = typer.Typer(
        name="zaya",
        cls=LazyGroup,
        help="zaya: LLM systems tools. Each command group below comes from an installed zaya package.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(lambda: None)  # a group, even with `run` as its only built-in command
    app.command(
        "run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(run_service)
    return app


def main() -> None:
    """Console-script entry point."""
    build_app()(prog_name="zaya")


if __name__ == "__main__":
    sys.exit(main())
