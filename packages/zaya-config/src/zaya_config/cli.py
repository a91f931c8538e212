"""`zaya config ...` and `zaya hardware ...`: look at composed configs and hardware profiles."""

import dataclasses

import typer
from omegaconf import OmegaConf
from rich.console import Console
from rich.table import Table

from zaya_config.cli_errors import fail
from zaya_config.compose import BASE_CONFIG, compose
from zaya_config.errors import ZayaConfigError
from zaya_config.profiles import hardware, hardware_names

config_app = typer.Typer(help="Compose and print configs from every installed zaya package.", no_args_is_help=True)
hardware_app = typer.Typer(
    help="List and show hardware profiles (datasheet and measured ceilings).", no_args_is_help=True
)
console = Console()


@config_app.command("show")
def show_config(
    overrides: list[str] = typer.Argument(None, help="Hydra overrides, e.g. hardware=h200 logging.level=DEBUG"),
    name: str = typer.Option(BASE_CONFIG, "--name", "-n", help="Primary config to compose"),
) -> None:
    """Print the composed, resolved and validated config as YAML."""
    try:
        cfg = compose(name, overrides or [])
    except ZayaConfigError as err:
        fail(err)
    typer.echo(OmegaConf.to_yaml(cfg), nl=False)


@hardware_app.command("list")
def list_hardware() -> None:
    """Table of every hardware preset the installed packages provide."""
    table = Table("name", "vendor", "bf16 TFLOP/s", "HBM GB/s", "HBM GB", "SM/CU", "link GB/s")
    try:
        for name in hardware_names():
            hw = hardware(name)
            table.add_row(
                hw.name,
                hw.vendor,
                f"{hw.peak_bf16_flops / 1e12:.1f}",
                f"{hw.hbm_bw_gbps:.0f}",
                f"{hw.hbm_capacity_bytes / 1e9:.0f}",
                str(hw.compute_units),
                f"{hw.intra_node_bw_gbps:.0f}",
            )
    except ZayaConfigError as err:
        fail(err)
    console.print(table)


@hardware_app.command("show")
def show_hardware(name: str = typer.Argument(..., help="Preset name, e.g. h200, mi300x, cpu")) -> None:
    """Print one hardware profile, datasheet and measured fields, as YAML."""
    try:
        hw = hardware(name)
    except ZayaConfigError as err:
        fail(err)
    typer.echo(OmegaConf.to_yaml(OmegaConf.structured(dataclasses.asdict(hw))), nl=False)
