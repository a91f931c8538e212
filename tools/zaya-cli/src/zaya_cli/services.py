"""Finding the workspace's services: thin Hydra apps in `services/<name>/main.py`."""

import os
from pathlib import Path

SERVICES_ENV = "ZAYA_SERVICES_DIR"


class ServiceNotFoundError(LookupError):
    """No such service, or no services folder at all; the message says where it looked."""


def _candidates(start: Path) -> list[Path]:
    found = []
    if os.environ.get(SERVICES_ENV):
        found.append(Path(os.environ[SERVICES_ENV]))
    found += [parent / "services" for parent in (start, *start.parents)]
    # An editable install of zaya-cli sits at <repo>/tools/zaya-cli/src/zaya_cli.
    found.append(Path(__file__).resolve().parents[4] / "services")
    return found


def services_dir(start: Path | None = None) -> Path:
    """The first services folder among $ZAYA_SERVICES_DIR, the working directory's ancestors, the checkout."""
    tried = _candidates(Path.cwd() if start is None else start)
    for folder in tried:
        if folder.is_dir() and any(folder.glob("*/main.py")):
            return folder
    raise ServiceNotFoundError(
        "no services folder found (looked in: " + ", ".join(map(str, dict.fromkeys(tried))) + "); "
        f"run from inside the zaya checkout or set {SERVICES_ENV}=<checkout>/services"
    )


def list_services(folder: Path) -> dict[str, Path]:
    """Service name -> its main.py."""
    return {main.parent.name: main for main in sorted(folder.glob("*/main.py"))}


def find_service(name: str, start: Path | None = None) -> Path:
    """The main.py of service `name`, or a clear error listing the ones that exist."""
    folder = services_dir(start)
    services = list_services(folder)
    if name not in services:
        raise ServiceNotFoundError(f"unknown service {name!r} in {folder}; available: {', '.join(services) or 'none'}")
    return services[name]
