"""Atomic writes on real files: complete or absent, never half written, and no temporary left behind."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from zaya_config.atomic import (
    DestinationExists,
    atomic_output,
    durable_rename,
    write_atomic,
    write_bytes_atomic,
    write_dir_atomic,
    write_file_atomic,
    write_text_atomic,
)


class Boom(RuntimeError):
    pass


def test_write_text_creates_parents_and_returns_path(tmp_path):
    target = tmp_path / "a" / "b" / "out.json"
    assert write_text_atomic(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


def test_write_bytes_replaces_existing_file(tmp_path):
    target = tmp_path / "blob.bin"
    target.write_bytes(b"old")
    write_bytes_atomic(str(target), b"\x00new\xff")
    assert target.read_bytes() == b"\x00new\xff"


def test_write_streams_through_handle(tmp_path):
    target = tmp_path / "chunks.bin"
    write_atomic(target, lambda handle: [handle.write(bytes([i]) * 1000) for i in range(5)])
    data = target.read_bytes()
    assert len(data) == 5000 and data[:1000] == b"\x00" * 1000 and data[-1] == 4


def test_error_inside_write_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "state.json"
    target.write_text("old")

    def half_write(handle):
        handle.write(b"partial")
        raise Boom("disk full")

    with pytest.raises(Boom):
        write_atomic(target, half_write)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_error_without_old_file_leaves_nothing(tmp_path):
    def fail(handle):
        raise Boom("no")

    with pytest.raises(Boom):
        write_atomic(tmp_path / "new.bin", fail)
    assert list(tmp_path.iterdir()) == []


def test_write_dir_builds_and_replaces_folder(tmp_path):
    target = tmp_path / "store.zarr"

    def fill(version):
        def _fill(folder):
            (folder / "sub").mkdir()
            (folder / "sub" / "chunk").write_text(version)
            (folder / "meta").write_text(version)

        return _fill

    assert write_dir_atomic(target, fill("v1")) == target
    assert (target / "sub" / "chunk").read_text() == "v1"
    write_dir_atomic(target, fill("v2"))
    assert (target / "meta").read_text() == "v2" and (target / "sub" / "chunk").read_text() == "v2"
    assert [p.name for p in tmp_path.iterdir()] == ["store.zarr"]


def test_write_dir_error_keeps_old_folder_and_leaves_no_temp(tmp_path):
    target = tmp_path / "store"
    write_dir_atomic(target, lambda folder: (folder / "x").write_text("old"))

    def fail(folder):
        (folder / "x").write_text("new")
        raise Boom("interrupted")

    with pytest.raises(Boom):
        write_dir_atomic(target, fail)
    assert (target / "x").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["store"]


@pytest.fixture
def fsynced(monkeypatch) -> list[str]:
    """Names of what `os.fsync` was called on; the spy still syncs."""
    seen: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        seen.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return seen


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name fsynced descriptors")


@needs_proc
def test_durable_writes_fsync_the_data_and_the_folder(tmp_path, fsynced):
    write_text_atomic(tmp_path / "out" / "a.txt", "a")
    assert len(fsynced) == 2 and fsynced[0].startswith(".a.txt.") and fsynced[1] == "out"
    fsynced.clear()
    write_dir_atomic(tmp_path / "store", lambda folder: (folder / "meta").write_text("v1"))
    assert "meta" in fsynced and fsynced[-1] == tmp_path.name


@needs_proc
def test_non_durable_writes_sync_nothing_and_are_still_whole(tmp_path, fsynced):
    write_text_atomic(tmp_path / "a.txt", "old")
    fsynced.clear()
    write_text_atomic(tmp_path / "a.txt", "new", durable=False)
    write_dir_atomic(tmp_path / "store", lambda folder: (folder / "meta").write_text("v1"), durable=False)
    with atomic_output(tmp_path / "blob.bin", durable=False) as tmp:
        tmp.write_bytes(b"blob")
    assert fsynced == []
    assert (tmp_path / "a.txt").read_text() == "new" and (tmp_path / "store" / "meta").read_text() == "v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "blob.bin", "store"]


def test_atomic_output_publishes_a_file_or_a_folder_under_its_name(tmp_path):
    target = tmp_path / "model.pt"
    with atomic_output(target) as tmp:
        assert tmp.name == f".tmp.model.pt.{os.getpid()}" and not tmp.exists()
        tmp.write_bytes(b"v1")
    with atomic_output(target) as tmp:
        tmp.write_bytes(b"v2")
    assert target.read_bytes() == b"v2"
    with atomic_output(target) as tmp:  # a folder replaces a file (two renames through .old.)
        tmp.mkdir()
        (tmp / "shard").write_bytes(b"v3")
    assert (target / "shard").read_bytes() == b"v3"
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]


def test_atomic_output_without_replace_refuses_an_output_that_appeared(tmp_path):
    target = tmp_path / "out.dcp"
    match = r"out\.dcp: appeared while it was being written"
    with pytest.raises(DestinationExists, match=match), atomic_output(target, replace=False) as tmp:
        tmp.mkdir()
        target.mkdir()  # someone else got there first
    assert [p.name for p in tmp_path.iterdir()] == ["out.dcp"] and not list(target.iterdir())


def test_atomic_output_error_removes_the_temporary_and_a_stale_one(tmp_path):
    target = tmp_path / "out.dcp"
    stale = tmp_path / f".tmp.out.dcp.{os.getpid()}"
    stale.mkdir()
    (stale / "junk").write_text("from a killed run")
    with pytest.raises(Boom), atomic_output(target) as tmp:
        assert not tmp.exists()
        tmp.mkdir()
        raise Boom("interrupted")
    assert list(tmp_path.iterdir()) == []


@needs_proc
def test_durable_rename_fsyncs_the_folder(tmp_path, fsynced):
    (tmp_path / ".tmp.step").mkdir()
    durable_rename(tmp_path / ".tmp.step", tmp_path / "step")
    assert (tmp_path / "step").is_dir() and fsynced == [tmp_path.name]


def test_importable_without_hydra_omegaconf_or_yaml(tmp_path):
    """GPU benchmark machines lack Hydra: `zaya_config.atomic` must import there (the package init is lazy)."""
    code = (
        "import sys\n"
        "for name in ('hydra', 'omegaconf', 'yaml'):\n"
        "    sys.modules[name] = None\n"
        "from zaya_config.atomic import write_text_atomic\n"
        f"write_text_atomic({str(tmp_path / 'x.txt')!r}, 'ok')\n"
        "assert 'zaya_config.compose' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tmp_path / "x.txt").read_text() == "ok"


def test_package_exports_still_win_over_same_named_submodules():
    import zaya_config
    import zaya_config.compose
    import zaya_config.hardware

    assert callable(zaya_config.compose) and callable(zaya_config.hardware)
    assert "cpu" in zaya_config.hardware_names()


@needs_proc
def test_write_file_hands_a_name_and_publishes_the_file_whole(tmp_path, fsynced):
    """For writers that take a file name (safetensors, a compiler's -o): fsynced, shared mode, then renamed."""
    target = tmp_path / "lib" / "model.bin"
    assert write_file_atomic(target, lambda name: name.write_bytes(b"v1")) == target
    assert target.read_bytes() == b"v1" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert fsynced == [".tmp.model.bin." + str(os.getpid()), "lib"]

    def fails(name: Path) -> None:
        name.write_bytes(b"half")
        raise Boom("disk full")

    with pytest.raises(Boom):
        write_file_atomic(target, fails)
    with pytest.raises(FileNotFoundError, match=r"the writer for .*model\.bin created no file"):
        write_file_atomic(target, lambda name: None)
    assert target.read_bytes() == b"v1" and [p.name for p in target.parent.iterdir()] == ["model.bin"]
