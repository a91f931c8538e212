"""Every `zaya` process imports each package's config module (Hydra's search path) and config schema: they must
not import torch, which alone costs ~2 s per process (tests start hundreds of processes; users wait for each)."""

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

MODULES = sorted(
    {ep.value for ep in entry_points(group="zaya.conf")}
    | {ep.value.partition(":")[0] for ep in entry_points(group="zaya.schema")}
)


def test_the_search_path_and_schema_modules_are_found():
    assert {"zaya_model.conf", "zaya_model.config", "zaya_train.resilience.config", "manta.conf"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_config_modules_do_not_import_torch(module: str):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False", f"importing {module} imports torch"


def test_composing_every_group_does_not_import_torch():
    code = (
        "import sys; from zaya_config import compose, group_options; "
        "compose('zaya', ['+manta_hardware=tiny-cpu']); group_options('hardware'); print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
