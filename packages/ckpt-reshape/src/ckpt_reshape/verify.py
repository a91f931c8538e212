"""Verify one checkpoint against its own checksums, or compare two logically and bitwise.

Logical comparison means: the same logical entries with the same shapes, dtypes and bytes, whatever layout
and format each is stored in (a DCP checkpoint on 8 ranks equals its HF export on the model weights).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from zaya_config.train_checkpoint.manifest import find_manifest, manifest_problems

from ckpt_reshape.checksums import DEFAULT_ALGORITHM, stored_checksum
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.index import CheckpointIndex
from ckpt_reshape.objects import load_object
from ckpt_reshape.stream_hash import max_abs_difference, stream_checksum

_HASH_THREADS = 2  # hashers release the GIL: two tensors (or both sides of one) are read and hashed at once


@dataclass
class VerifyReport:
    """Outcome of `verify` or `compare`: problems (empty means good) and what was checked."""

    checked_tensors: int = 0
    checked_objects: int = 0
    checked_files: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def verify(path: Path) -> VerifyReport:
    """Re-read every tensor (catching truncation) and recompute its checksum against the stored one."""
    report = VerifyReport()
    with open_checkpoint(path) as reader:
        manifest = find_manifest(reader.path) if reader.path.is_dir() else None
        if manifest is not None:
            report.problems += [str(problem) for problem in manifest_problems(reader.path, manifest)]
            report.checked_files = len(manifest["files"])
        stored = (reader.sidecar or {}).get("tensors", {})
        if not stored:
            report.notes.append("no stored tensor checksums (not written by ckpt-reshape); checked readability only")
        expected = {name: stored_checksum(reader.sidecar, stored.get(name, {})) for name in reader.index.tensors}

        def check(name: str) -> tuple[bool, str | None]:
            """(whether tensor `name` could be read, its problem if any); reads all of its bytes either way."""
            try:
                digest = stream_checksum(reader, name, expected[name][0] if expected[name] else DEFAULT_ALGORITHM)
            except Exception as err:
                return False, f"{name}: {err}"
            if expected[name] and digest != expected[name][1]:
                algorithm = expected[name][0]
                return (
                    True,
                    f"{reader.path}: tensor {name!r} {algorithm} checksum differs from the stored one (corrupt)",
                )
            return True, None

        with ThreadPoolExecutor(_HASH_THREADS, thread_name_prefix="ckpt-verify") as pool:
            for readable, problem in pool.map(check, reader.index.tensors):  # in index order, two in flight
                report.checked_tensors += readable
                if problem:
                    report.problems.append(problem)
        report.checked_objects = len(reader.index.objects)
    return report


def summarize_entries(names: list[str], shown: int = 8) -> str:
    """`N entries: model tensors by name, the rest counted by kind` (what convert drops, what compare excuses)."""
    model = [n for n in names if n.startswith("model.")]
    others: dict[str, int] = {}
    for name in names:
        if not name.startswith("model."):
            kind = name.split(".", 1)[0] + ".*"
            others[kind] = others.get(kind, 0) + 1
    parts = model[:shown] + ([f"{len(model) - shown} more model tensors"] if len(model) > shown else [])
    parts += [f"{count} {kind} entries" for kind, count in others.items()]
    return f"{len(names)} entries: {', '.join(parts)}"


def _without(index: CheckpointIndex, names: set[str]) -> CheckpointIndex:
    tensors = {k: v for k, v in index.tensors.items() if k not in names}
    objects = [k for k in index.objects if k not in names]
    return CheckpointIndex(tensors, objects, index.paths, index.layout, index.hf_config)


def _excuse_not_carried(a, b, path_b: Path, report: VerifyReport) -> CheckpointIndex:
    """A's index without the entries B lacks because B's format cannot hold them (noted, not problems)."""
    ia, ib = a.index, b.index
    excused = [n for n in b.not_carried(ia) if n not in ib.tensors and n not in ib.objects]
    if excused:
        report.notes.append(f"not carried by {b.format_name} ({path_b}): {summarize_entries(excused)}")
    return _without(ia, set(excused))


def compare(path_a: Path, path_b: Path) -> VerifyReport:
    """Bitwise logical comparison of two checkpoints (model weights only when either side holds only those).

    Entries one side's format cannot hold (HF: optimizer state, ours-only buffers, a tied head) are noted, not
    problems: exactly what `convert` reports as not carried.
    """
    report = VerifyReport()
    with (
        open_checkpoint(path_a) as a,
        open_checkpoint(path_b) as b,
        ThreadPoolExecutor(_HASH_THREADS, thread_name_prefix="ckpt-compare") as pool,
    ):
        ia, ib = _excuse_not_carried(a, b, path_b, report), _excuse_not_carried(b, a, path_a, report)
        if ia.has_optimizer() != ib.has_optimizer() or bool(ia.objects) != bool(ib.objects):
            ia, ib = ia.model_only(), ib.model_only()
            report.notes.append("one side holds model weights only; comparing the model weights")
        for name in sorted(set(ia.tensors) ^ set(ib.tensors)):
            side = path_a if name in ia.tensors else path_b
            report.problems.append(f"tensor {name!r} exists only in {side}")
        for name in [n for n in ia.tensors if n in ib.tensors]:
            ma, mb = ia.tensors[name], ib.tensors[name]
            if (ma.shape, ma.dtype) != (mb.shape, mb.dtype):
                report.problems.append(f"tensor {name!r}: {list(ma.shape)} {ma.dtype} vs {list(mb.shape)} {mb.dtype}")
                continue
            # equal checksums of the row-major bytes, each side read a window or a block at a time, both at once
            digest_a, digest_b = (pool.submit(stream_checksum, side, name) for side in (a, b))
            if digest_a.result() != digest_b.result():
                diff = max_abs_difference(a, b, name)
                report.problems.append(f"tensor {name!r}: bytes differ (max abs difference {diff})")
            report.checked_tensors += 1
        for name in sorted(set(ia.objects) ^ set(ib.objects)):
            report.problems.append(f"entry {name!r} exists only in {path_a if name in ia.objects else path_b}")
        for name in [n for n in ia.objects if n in ib.objects]:
            payload_a, payload_b = a.read_object(name), b.read_object(name)
            # the same bytes are the same value: an entry that holds more than plain data (Megatron-LM's `args`
            # in common.pt) is compared without unpickling it
            if payload_a != payload_b and load_object(payload_a, name) != load_object(payload_b, name):
                report.problems.append(f"entry {name!r}: values differ")
            report.checked_objects += 1
    return report
