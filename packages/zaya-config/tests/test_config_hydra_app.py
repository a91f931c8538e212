"""The search-path plugin, multirun and start-up validation, in a fresh venv with real installed packages.

A small real package (`zaya-demo-conf`, built here) declares a `zaya.conf` entry point; once it is installed
next to zaya-config, any Hydra app composes its group, as services compose `model=...` from zaya-model.
"""

import subprocess
import textwrap
import venv
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1]

APP = textwrap.dedent(
    """
    import hydra
    from omegaconf import OmegaConf
    from zaya_config import validate_config

    @hydra.main(version_base="1.3", config_path=None, config_name="zaya")
    def main(cfg):
        validate_config(cfg)
        print("COMPOSED", OmegaConf.to_yaml(cfg).replace(chr(10), " | "))

    if __name__ == "__main__":
        main()
    """
)


def _demo_package(root: Path) -> Path:
    """A minimal installable package: a config group `demo` with two presets, and one broken schema entry point."""
    pkg = root / "zaya-demo-conf"
    conf = pkg / "src" / "zaya_demo" / "conf" / "demo"
    conf.mkdir(parents=True)
    (pkg / "src" / "zaya_demo" / "__init__.py").write_text("")
    (pkg / "src" / "zaya_demo" / "conf" / "__init__.py").write_text("")
    (conf / "hello.yaml").write_text("greeting: hello\nrepeat: 2\n")
    (conf / "bye.yaml").write_text("greeting: bye\nrepeat: 1\n")
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [project]
            name = "zaya-demo-conf"
            version = "0.0.1"
            requires-python = ">=3.11"
            [project.entry-points."zaya.conf"]
            zaya_demo = "zaya_demo.conf"
            [project.entry-points."zaya.schema"]
            broken = "zaya_demo.missing_module:Missing"
            [tool.poetry]
            packages = [{ include = "zaya_demo", from = "src" }]
            [build-system]
            requires = ["poetry-core>=2.0,<3"]
            build-backend = "poetry.core.masonry.api"
            """
        )
    )
    return pkg


def _build_venv(folder: Path) -> None:
    venv.EnvBuilder(with_pip=True).create(folder / "venv")
    install = subprocess.run(
        [folder / "venv" / "bin" / "python", "-m", "pip", "install", "-q", str(PACKAGE_DIR),
         str(_demo_package(folder))],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]


@pytest.fixture
def app_env(tmp_path: Path) -> tuple[Path, Path]:
    """(python of a fresh venv holding zaya-config + the demo package, folder with app.py). The venv is built
    once for every test process of a session (tests/artifact_cache.py, keyed by zaya-config's sources, the demo
    package and this interpreter's version; called by its own path, the venv works from the folder it is
    renamed into); each test runs the app in a folder of its own."""
    import platform
    import sys

    from artifact_cache import cached_artifact, content_hash

    key = content_hash(PACKAGE_DIR / "src", PACKAGE_DIR / "pyproject.toml", Path(__file__), sys.version,
                       platform.platform())  # fmt: skip
    python = cached_artifact("zaya-config-hydra-app", key, _build_venv) / "venv" / "bin" / "python"
    (tmp_path / "app.py").write_text(APP)
    return python, tmp_path


def _run(app_env, *args: str) -> subprocess.CompletedProcess:
    python, root = app_env
    return subprocess.run([python, "app.py", *args], cwd=root, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_zaya_config_installs_alone_and_the_cli_group_declares_itself(app_env):
    python, _ = app_env
    out = subprocess.run(
        [
            python,
            "-c",
            "import zaya_config, importlib.metadata as m; print(zaya_config.__version__, "
            "sorted(e.name for e in m.entry_points(group='zaya.cli')))",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "0.1.0" in out.stdout and "'config', 'hardware'" in out.stdout


@pytest.mark.slow
def test_group_from_another_installed_package_composes_through_the_plugin(app_env):
    result = _run(app_env, "+demo=hello", "hardware=h200")
    assert result.returncode == 0, result.stderr
    assert "greeting: hello" in result.stdout and "name: h200" in result.stdout


@pytest.mark.slow
def test_multirun_over_two_values_makes_two_run_dirs(app_env, tmp_path):
    sweep = tmp_path / "sweep"
    result = _run(app_env, "-m", "+demo=hello,bye", f"hydra.sweep.dir={sweep}")
    assert result.returncode == 0, result.stderr
    runs = sorted(p.name for p in sweep.iterdir() if p.is_dir() and p.name.isdigit())
    assert runs == ["0", "1"]
    greetings = {(sweep / r / ".hydra" / "overrides.yaml").read_text().strip() for r in runs}
    assert greetings == {"- +demo=hello", "- +demo=bye"}


@pytest.mark.slow
def test_bad_override_fails_at_start_with_key_value_and_allowed(app_env):
    result = _run(app_env, "hardware.hbm_bw_gbps=fast")
    assert result.returncode != 0
    assert "invalid config: hardware.hbm_bw_gbps = 'fast'; allowed: a number" in result.stderr
    assert "COMPOSED" not in result.stdout


@pytest.mark.slow
def test_a_broken_schema_entry_point_fails_only_configs_that_use_its_key(app_env):
    fine = _run(app_env, "+demo=bye")
    assert fine.returncode == 0, fine.stderr
    broken = _run(app_env, "+broken.x=1")
    assert broken.returncode != 0
    assert "cannot validate broken: its schema zaya_demo.missing_module:Missing (from zaya-demo-conf)" in broken.stderr
