"""torchtitan 0.3 checkpoints (its `CheckpointManager`'s DCP step folders), read and written.

The files are plain DCP; only the names differ from ours (`torchtitan_names`: the model's keys at the top
level, `optimizer.*` torchtitan's flat FQN-keyed optimizer state). So the reader is the DCP reader under those
names, and the writer the DCP writer storing each entry under torchtitan's key and nested path, which is what
its `dcp.load` of `{**model_state, "optimizer": ..., ...}` asks for.
"""

from __future__ import annotations

from pathlib import Path

from zaya_config.train_checkpoint.manifest import find_manifest

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import read_sidecar
from ckpt_reshape.formats.dcp import DcpReader, DcpWriter, is_dcp_folder
from ckpt_reshape.index import CheckpointIndex
from ckpt_reshape.torchtitan_names import logical_name, logical_path, looks_like_torchtitan, torchtitan_key


def is_torchtitan_folder(path: Path) -> bool:
    """A DCP folder whose entries are torchtitan's (see `torchtitan_names.looks_like_torchtitan`)."""
    if not is_dcp_folder(path):
        return False
    sidecar = read_sidecar(Path(path))
    if sidecar is not None:  # ckpt-reshape wrote it: the sidecar names the format, no need to read .metadata
        return sidecar.get("checkpoint_format") == "torchtitan"
    if find_manifest(Path(path)) is not None:  # a zaya-train step folder
        return False
    from ckpt_reshape import dcp_light

    try:
        try:
            metadata = dcp_light.read_metadata(Path(path))  # its names only: no torch needed
        except dcp_light.NeedsTorch:
            from zaya_config.train_checkpoint.dcp_metadata import read_dcp_metadata

            metadata = read_dcp_metadata(Path(path))
    except (OSError, ValueError):
        return False  # the DCP reader reports what is wrong with it
    paths = metadata.planner_data if isinstance(metadata.planner_data, dict) else {}
    return looks_like_torchtitan(Path(path), list(metadata.state_dict_metadata), paths)


class TorchtitanReader(DcpReader):
    """A torchtitan DCP step folder under logical names."""

    format_name = "torchtitan"

    def _logical_name(self, key: str, path: tuple) -> str:
        return logical_name(key, path)

    def _logical_path(self, name: str, path: tuple) -> tuple:
        return logical_path(name)

    def not_carried(self, index: CheckpointIndex) -> list[str]:
        """Non-tensor entries with no torchtitan name (a Megatron checkpoint's `common.pt`)."""
        return [n for n in index.objects if torchtitan_key(n) is None]


class TorchtitanWriter(DcpWriter):
    """Writes logical entries as a torchtitan DCP step folder (its keys and nested paths)."""

    format_name = "torchtitan"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._keys = {n: torchtitan_key(n) for n in [*self.index.tensors, *self.index.objects]}
        unassigned = [n for n in self.index.tensors if self._keys[n] is None]
        if unassigned:
            raise ReshapeError(
                f"tensor {unassigned[0]!r} (and {len(unassigned) - 1} more) has no torchtitan key: only model.*, "
                "optim.* and train.* map to one; convert with --model-only or rename it"
            )
        self.dropped = [n for n in self.index.objects if self._keys[n] is None]

    def write_object(self, name: str, payload: bytes) -> None:
        if self._keys[name] is not None:  # the rest is reported as not carried
            super().write_object(name, payload)

    def _key(self, name: str) -> str:
        return self._keys[name][0]

    def _path(self, name: str) -> tuple:
        return self._keys[name][1]
