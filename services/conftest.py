"""Shared fixture for the services' end-to-end tests: run a service as a real subprocess, as `zaya run` does."""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SERVICES = Path(__file__).resolve().parent


@pytest.fixture
def run_service(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """`run_service(name, *overrides)`: the service's main.py with outputs under tmp_path/outputs/<name>/."""

    def run(name: str, *overrides: str, expect_ok: bool = True, timeout: float = 400) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, str(SERVICES / name / "main.py"), *overrides, f"paths.root_dir={tmp_path}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=tmp_path,
        )
        if expect_ok:
            assert proc.returncode == 0, proc.stderr[-4000:]
        return proc

    return run
