"""Compose a config by name from every installed package's config groups, as a Hydra app would."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hydra import compose as hydra_compose
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from zaya_config.errors import ZayaConfigError
from zaya_config.validation import validate_config

BASE_CONFIG = "zaya"


@contextmanager
def _hydra() -> Iterator[GlobalHydra]:
    """A Hydra context rooted at zaya_config's conf; the search-path plugin adds the other packages."""
    outer = GlobalHydra.instance()
    if outer.is_initialized():
        # Inside a running Hydra app: reuse its search path, leave it as it was.
        yield outer
        return
    with initialize_config_module(config_module="zaya_config.conf", version_base="1.3"):
        yield GlobalHydra.instance()


def compose(config_name: str = BASE_CONFIG, overrides: Sequence[str] = (), *, validate: bool = True) -> DictConfig:
    """Compose `config_name` with Hydra overrides, validate it, and return it (interpolations resolved)."""
    with _hydra():
        try:
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
        except (HydraException, OmegaConfBaseException) as err:
            raise ZayaConfigError(
                f"cannot compose config {config_name!r} with overrides {list(overrides)}: {err}"
            ) from None
    try:
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as err:
        raise ZayaConfigError(f"cannot resolve config {config_name!r}: {err}") from None
    if validate:
        validate_config(cfg)
    return cfg


def group_options(group: str) -> list[str]:
    """Names of the presets in a config group across every installed package (e.g. `hardware`)."""
    with _hydra() as gh:
        return sorted(set(gh.config_loader().get_group_options(group)))
