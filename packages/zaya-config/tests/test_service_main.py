"""@service_main: a real Hydra app run as a subprocess ends bad input in one line (exit 2), bugs keep their
traceback, and --debug / HYDRA_FULL_ERROR=1 bring the traceback back."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

APP = '''
from zaya_config.errors import ZayaConfigError
from zaya_config.service_main import service_main


class AppError(ValueError):
    """The app's own error type, named to service_main as "module:Class"."""


@service_main("conf", "app", errors=("__main__:AppError",))
def main(cfg):
    if cfg.kind == "config":
        raise ZayaConfigError("timing key CL is missing from [timing]; DDR4 needs it")
    if cfg.kind == "app":
        raise AppError("catalog [my models] is empty")
    if cfg.kind == "bug":
        raise KeyError("not a user error")
    print("ran", cfg.kind, cfg.size, cfg.model.layers)


if __name__ == "__main__":
    main()
'''


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("app")
    (root / "conf" / "model").mkdir(parents=True)
    (root / "main.py").write_text(APP)
    (root / "conf" / "app.yaml").write_text(textwrap.dedent("""\
        defaults:
          - model: small
          - _self_
        kind: ok
        size: 1
    """))  # fmt: skip
    (root / "conf" / "model" / "small.yaml").write_text("layers: 2\n")
    (root / "conf" / "model" / "big.yaml").write_text("layers: 8\n")
    return root


def run(app: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"} | env
    return subprocess.run([sys.executable, str(app / "main.py"), *args], capture_output=True, text=True,
                          cwd=app, env=environ, timeout=120)  # fmt: skip


def test_a_good_run_and_a_sweep_are_untouched(app):
    assert "ran ok 1 2" in run(app).stdout
    sweep = run(app, "-m", "size=3,4", "model=big")
    assert sweep.returncode == 0 and "ran ok 3 8" in sweep.stdout and "ran ok 4 8" in sweep.stdout


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["kind=config"], "error: timing key CL is missing from [timing]; DDR4 needs it"),
        (["kind=app"], "error: catalog [my models] is empty"),
        (["colour=red"], "error: Could not override 'colour'; To append to your config use +colour=red; "
                         "Key 'colour' is not in struct"),
        (["model=smal"], "error: In 'app': Could not find 'model/smal'; Available options in 'model': big, small"),
        (["kind=a samurai, ukiyo-e"], "error: Ambiguous value for argument 'kind=a samurai, ukiyo-e'; "
                                      "1. To use it as a list, use key=[value1,value2]"),
        (["size=[1"], "error: no viable alternative at input '[1'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(app, args, line):
    result = run(app, *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), result.stderr


def test_a_bug_keeps_its_traceback(app):
    result = run(app, "kind=bug")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "KeyError: 'not a user error'" in result.stderr
    assert "Error executing job with overrides: ['kind=bug']" in result.stderr  # Hydra's context line kept


@pytest.mark.parametrize(("args", "env"), [(["--debug"], {}), ([], {"HYDRA_FULL_ERROR": "1"})])
def test_debug_or_hydra_full_error_shows_the_traceback(app, args, env):
    result = run(app, "kind=config", *args, **env)
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "ZayaConfigError: timing key CL is missing from [timing]; DDR4 needs it" in result.stderr
