"""The zaya-train checkpoint root contract: names, the `latest` pointer and manifest.json, byte for byte."""

import hashlib
import json
from pathlib import Path

from zaya_config.train_checkpoint.layout import (
    parse_step,
    read_latest,
    step_dir_name,
    step_dirs,
    tmp_dir_name,
    train_state_files,
    train_state_name,
    write_latest,
)
from zaya_config.train_checkpoint.manifest import (
    MANIFEST_NAME,
    find_manifest,
    manifest_problems,
    read_manifest,
    verify_manifest,
    write_manifest,
)

# manifest.json as zaya-train has written it since format 1 (indent 1, sorted keys, a newline-free end)
GOLDEN = """{{
 "created_unix": {created},
 "files": {{
  ".metadata": {{
   "sha256": "{meta}",
   "size_bytes": 4
  }},
  "__0_0.distcp": {{
   "sha256": "{shard}",
   "size_bytes": 5
  }},
  "sub/extra.bin": {{
   "sha256": "{extra}",
   "size_bytes": 0
  }},
  "train-rank00000.pkl": {{
   "sha256": "{state}",
   "size_bytes": 3
  }}
 }},
 "format": "zaya-train-checkpoint/1",
 "step": 120,
 "world_size": 2
}}"""


def _step_folder(root: Path) -> Path:
    folder = root / step_dir_name(120)
    (folder / "sub").mkdir(parents=True)
    (folder / ".metadata").write_bytes(b"meta")
    (folder / "__0_0.distcp").write_bytes(b"shard")
    (folder / "sub" / "extra.bin").write_bytes(b"")
    (folder / train_state_name(0)).write_bytes(b"pkl")
    return folder


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_names_of_the_root():
    assert step_dir_name(120) == "step_00000120" and tmp_dir_name(120) == ".tmp.step_00000120"
    assert parse_step("step_00000120") == 120 and parse_step("step_123456789") == 123456789
    assert parse_step(".tmp.step_00000120") is None and parse_step("step_12") is None
    assert train_state_name(3) == "train-rank00003.pkl"


def test_manifest_bytes_match_format_1(tmp_path):
    folder = _step_folder(tmp_path)
    manifest = write_manifest(folder, step=120, world_size=2)
    expected = GOLDEN.format(
        created=json.dumps(manifest["created_unix"]),
        meta=_sha(b"meta"),
        shard=_sha(b"shard"),
        extra=_sha(b""),
        state=_sha(b"pkl"),
    )
    assert (folder / MANIFEST_NAME).read_text(encoding="utf-8") == expected
    assert read_manifest(folder) == manifest == find_manifest(folder)
    assert verify_manifest(folder) is None


def test_verification_names_each_bad_file(tmp_path):
    folder = _step_folder(tmp_path)
    write_manifest(folder, step=120, world_size=2, durable=False)
    (folder / "__0_0.distcp").write_bytes(b"shar")
    (folder / ".metadata").write_bytes(b"mexa")
    (folder / train_state_name(0)).unlink()
    problems = list(manifest_problems(folder, read_manifest(folder)))
    assert [(p.path.name, p.reason) for p in problems] == [
        (".metadata", "sha256 differs from the manifest (corrupt)"),
        ("__0_0.distcp", "size 4 bytes, manifest says 5 (truncated?)"),
        ("train-rank00000.pkl", "listed in the manifest but missing"),
    ]
    assert verify_manifest(folder) == problems[0]
    assert str(problems[0]) == f"{folder / '.metadata'}: sha256 differs from the manifest (corrupt)"


def test_a_folder_without_a_manifest_is_not_a_step(tmp_path):
    folder = _step_folder(tmp_path)
    assert find_manifest(folder) is None
    assert "missing or unreadable manifest" in verify_manifest(folder).reason
    (folder / MANIFEST_NAME).write_text('{"format": "something-else/1", "files": {}}')
    assert find_manifest(folder) is None
    (folder / MANIFEST_NAME).write_text("[1, 2]")
    assert find_manifest(folder) is None and "not a zaya-train-checkpoint/1" in verify_manifest(folder).reason


def test_latest_pointer_and_step_folders(tmp_path):
    assert read_latest(tmp_path) is None and step_dirs(tmp_path / "absent") == {}
    for step in (40, 120):
        (tmp_path / step_dir_name(step)).mkdir()
    (tmp_path / tmp_dir_name(160)).mkdir()
    (tmp_path / "step_00000200").write_text("a file, not a step")
    write_latest(tmp_path, 120)
    assert (tmp_path / "latest").read_text(encoding="utf-8") == "step_00000120\n"
    assert read_latest(tmp_path) == 120
    assert step_dirs(tmp_path) == {40: tmp_path / "step_00000040", 120: tmp_path / "step_00000120"}
    (tmp_path / "latest").write_text("garbage")
    assert read_latest(tmp_path) is None


def test_train_state_files_by_rank(tmp_path):
    folder = _step_folder(tmp_path)
    (folder / train_state_name(1)).write_bytes(b"pkl")
    (folder / "train-rank1.pkl").write_bytes(b"not five digits")
    assert train_state_files(folder) == {0: folder / "train-rank00000.pkl", 1: folder / "train-rank00001.pkl"}
