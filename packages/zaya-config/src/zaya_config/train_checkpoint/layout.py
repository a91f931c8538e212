"""Names inside a zaya-train checkpoint root: committed step folders, in-progress temporaries, the `latest`
pointer, each rank's training-state file.

root/
  step_00000120/        committed: renamed from its temporary after the manifest was written
    .metadata, __0_0.distcp, __1_0.distcp   torch.distributed.checkpoint shards (one file per rank)
    train-rank00000.pkl, train-rank00001.pkl   each rank's plain training state
    trained_model.json  the model config as trained at this step, and its tokenizer (`trained_model.py`)
    manifest.json       size + sha256 of every file above (`manifest.py`)
  .tmp.step_00000140/   a save in progress (or killed mid-way): never loaded, removed by the next save
  latest                the name of the newest committed folder and a newline; written last, atomically
"""

import re
from pathlib import Path

from zaya_config.atomic import write_text_atomic

LATEST_NAME = "latest"
TRAINED_MODEL_NAME = "trained_model.json"
STEP_PREFIX = "step_"
TMP_PREFIX = ".tmp."
_STEP_RE = re.compile(r"^step_(\d{8,})$")
_TRAIN_STATE_RE = re.compile(r"^train-rank(\d{5,})\.pkl$")


def step_dir_name(step: int) -> str:
    """Folder name of the checkpoint taken after `step` optimizer steps."""
    return f"{STEP_PREFIX}{step:08d}"


def tmp_dir_name(step: int) -> str:
    """Folder name of a save of `step` still in progress."""
    return f"{TMP_PREFIX}{step_dir_name(step)}"


def parse_step(name: str) -> int | None:
    """Step number of a committed folder name, None for anything else."""
    match = _STEP_RE.match(name)
    return int(match.group(1)) if match else None


def train_state_name(rank: int) -> str:
    """File holding one rank's plain training state (sampler, RNG, counters)."""
    return f"train-rank{rank:05d}.pkl"


def train_state_files(folder: Path) -> dict[int, Path]:
    """Rank -> training-state file of a step folder."""
    found = {}
    for path in Path(folder).iterdir():
        match = _TRAIN_STATE_RE.match(path.name)
        if match and path.is_file():
            found[int(match.group(1))] = path
    return found


def step_dirs(root: Path) -> dict[int, Path]:
    """Step -> folder for every committed-looking folder under root (not verified)."""
    root = Path(root)
    if not root.is_dir():
        return {}
    found = {}
    for path in root.iterdir():
        step = parse_step(path.name)
        if step is not None and path.is_dir():
            found[step] = path
    return found


def read_latest(root: Path) -> int | None:
    """Step named by the `latest` pointer, None when there is no (readable) pointer."""
    try:
        return parse_step((Path(root) / LATEST_NAME).read_text(encoding="utf-8").strip())
    except OSError:
        return None


def write_latest(root: Path, step: int, *, durable: bool = True) -> Path:
    """Point `latest` at `step`'s folder (atomically: readers see the old pointer or the new one)."""
    return write_text_atomic(Path(root) / LATEST_NAME, step_dir_name(step) + "\n", durable=durable)
