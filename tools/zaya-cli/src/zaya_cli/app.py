"""The `zaya` command: one typer app that mounts a sub-app from every installed zaya package.

A package adds commands by declaring an entry point in the `zaya.cli` group, name -> `module:typer_app`.
Sub-app modules should import heavy libraries (torch) inside their commands so `zaya --help` stays fast.
A package whose sub-app fails to load is reported, not fatal: the other commands keep working.
"""

import subprocess
import sys
from importlib.metadata import entry_points

import typer
from rich.console import Console

from zaya_cli.services import ServiceNotFoundError, find_service, list_services, services_dir

CLI_GROUP = "zaya.cli"


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
        Console(stderr=True).print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=2) from None
    raise typer.Exit(code=subprocess.call([sys.executable, str(main), *ctx.args]))


def build_app() -> typer.Typer:
    """The root app with every installed package's sub-app mounted under its entry-point name."""
    app = typer.Typer(
        name="zaya",
        help="zaya: LLM systems tools. Each command group below comes from an installed zaya package.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.command(
        "run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(run_service)
    for ep in sorted(entry_points(group=CLI_GROUP), key=lambda e: e.name):
        try:
            sub = ep.load()
        except Exception as err:  # a broken plugin must not take the whole CLI down
            Console(stderr=True).print(f"[yellow]warning:[/] cannot load `zaya {ep.name}` from {ep.value}: {err}")
            continue
        package = ep.dist.name if ep.dist else "?"
        help_text = (sub.info.help or "") + f" (from {package})"
        app.add_typer(sub, name=ep.name, help=help_text)
    return app


def main() -> None:
    """Console-script entry point."""
    build_app()(prog_name="zaya")


if __name__ == "__main__":
    sys.exit(main())
