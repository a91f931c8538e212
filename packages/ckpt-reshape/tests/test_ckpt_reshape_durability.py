"""Durable conversions fsync every file they publish; `durable=False` (`--no-fsync`) fsyncs nothing and is
still atomic and exact. The spy wraps the real `os.fsync` (it still syncs) and records which files it saw."""

import os
from pathlib import Path

import pytest
from ckpt_reshape.convert import convert
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.verify import compare, verify


@pytest.fixture
def fsynced(monkeypatch, src_dcp: Path) -> list[str]:
    """Names of the files and folders `os.fsync` was called on (through any module's `os`) after the source was
    written; a single-file output is fsynced under its temporary name `.tmp.<name>.<pid>`, recorded as `<name>`."""
    seen: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        seen.append(name.split(".")[2] + "." + name.split(".")[3] if name.startswith(".tmp.") else name)
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name fsynced descriptors")
@pytest.mark.parametrize("fmt", ["dcp", "torch", "hf", "zarr"])
def test_durable_conversion_fsyncs_every_output_file(tmp_path: Path, src_dcp: Path, fmt: str, fsynced: list[str]):
    dst = tmp_path / f"out.{fmt}"
    convert(src_dcp, dst, fmt, ParallelLayout(dp=2, ep=2, fsdp=True) if fmt == "dcp" else None)
    files = [dst] if dst.is_file() else [p for p in dst.rglob("*") if p.is_file()]
    missing = sorted({p.name for p in files} - set(fsynced))
    assert files and not missing, f"published without fsync: {missing}"
    assert tmp_path.name in fsynced  # the folder holding the rename, so the new name itself is durable


@pytest.mark.parametrize("fmt", ["dcp", "torch", "hf", "zarr"])
def test_no_fsync_conversion_is_exact_and_atomic_without_syncing(
    tmp_path: Path, src_dcp: Path, fmt: str, fsynced: list[str]
):
    dst = tmp_path / f"fast.{fmt}"
    convert(src_dcp, dst, fmt, ParallelLayout(dp=3, fsdp=True) if fmt == "dcp" else None, durable=False)
    assert fsynced == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp.")] == []
    assert verify(dst).ok
    assert compare(src_dcp, dst).ok
