"""The shell blocks of the repository's READMEs, split into the commands a reader would type.

A block is a fenced ```bash, ```sh, ```shell or ```console block (in a console block only the `$ ` lines are
commands). A command is one logical line: backslash continuations joined, a here-document kept whole.
Commands run as a reader would run them: `run_script` in a folder that looks like the checkout (`checkout_workdir`).
`SIZE` holds the overrides appended to a long command to keep it short; `sized_command` is a README command with
them, as tests/test_readme_commands.py runs it (and a test that runs the command in its place).
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BIN = Path(sys.executable).parent
SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


@dataclass(frozen=True)
class Block:
    readme: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str
    commands: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.readme}:{self.line}"


def readmes(root: Path = REPO) -> list[Path]:
    """README.md at the root, of the tests, and in every package, service, infra recipe and tool."""
    found = [root / "README.md", root / "tests" / "README.md"]
    for pattern in ("packages/*/README.md", "services/README.md", "services/*/README.md", "infra/README.md",
                    "infra/*/README.md", "tools/*/README.md"):  # fmt: skip
        found += sorted(root.glob(pattern))
    return [p for p in found if p.is_file()]


def split_commands(body: str, console: bool = False) -> list[str]:
    """The logical commands of a block body."""
    lines = body.splitlines()
    if console:
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    commands: list[str] = []
    i = 0
    while i < len(lines):
        command = lines[i]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command += "\n" + lines[i]
        heredoc = HEREDOC.search(command.split("#")[0])
        if heredoc:
            while i + 1 < len(lines) and lines[i].strip() != heredoc.group(1):
                i += 1
                command += "\n" + lines[i]
        i += 1
        if command.strip() and not command.lstrip().startswith("#"):
            commands.append(command)
    return commands


def shell_blocks(root: Path = REPO) -> list[Block]:
    """Every shell block of every README, in file order."""
    blocks = []
    for path in readmes(root):
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group("lang") not in SHELL_LANGUAGES:
                continue
            line = text.count("\n", 0, match.start()) + 1
            commands = split_commands(match.group("body"), console=match.group("lang") == "console")
            blocks.append(Block(str(path.relative_to(root)), line, match.group("lang"), tuple(commands)))
    return blocks


def readme_command(readme: str, start: str) -> str:
    """The one command of `readme` (relative to the root) that starts with `start`: tests that run a README
    command as written take it from here, so an edit of the README is what they run."""
    found = [c for b in shell_blocks() if b.readme == readme for c in b.commands if c.startswith(start)]
    if len(found) != 1:
        raise LookupError(f"{readme}: {len(found)} commands start with {start!r}, expected one")
    return found[0]


# Overrides appended to a README command to keep a long one short (SIZE): the same knobs for
# tests/test_readme_commands.py and for a service's test that runs the command as written (`sized_command`).
# The main job's config, shrunk: 24 steps of 16 x 128, then 4 of 16 x 256 (the same two phases, context extension
# included), fewer files.
TINY_PRETRAIN = ("recipe.phases.0.tokens=49152 recipe.phases.1.tokens=16384 recipe.phases.0.schedule.warmup_fraction=0.1 "
                 "train.data.sources.library.max_files=60 train.data.sources.tests.max_files=80 "
                 "train.data.val_fraction=0.15 train.eval.every_steps=12 train.eval.sequences=8 "
                 "train.eval.sample_tokens=24 train.checkpoint.every_steps=12 train.eval.downstream.limit=100 "
                 "logging.log_every_steps=4")  # fmt: skip
# The expert-parallel command (4 processes on 2 cores): 2 steps of 16 x 128 and 1 of 16 x 256, no lm-eval task.
TINY_PRETRAIN_EP = ("recipe.phases.0.tokens=4096 recipe.phases.1.tokens=4096 train.data.sources.library.max_files=30 "
                    "train.data.sources.tests.max_files=30 train.data.val_fraction=0.2 train.eval.every_steps=100 "
                    "train.eval.sequences=4 train.eval.sample_tokens=8 train.eval.downstream.tasks=[] "
                    "train.checkpoint.every_steps=2 train.plots=false logging.progress=false")  # fmt: skip
TINY_CHARACTERIZE = ("bench.collectives.max_bytes=2K bench.collectives.iters=2 bench.gemm.square_sizes=[32,64] "
                     "bench.gemm.quant_m=32 bench.gemm.quant_k=32 bench.gemm.quant_n_min=16 bench.gemm.quant_n_max=64 "
                     "bench.gemm.quant_n_step=16 bench.gemm.tokens=32 bench.gemm.tokens_per_expert=8 bench.gemm.iters=2 "
                     "bench.membw.max_bytes=64K bench.membw.iters=2 logging.progress=false")  # fmt: skip
TINY_MEMSTUDY = "model=zaya1-tiny memstudy.sample_bytes=32768 memstudy.window_bytes=16384 logging.progress=false"
TINY_COMPOSE = "manta.batch=2"  # two plans (and images, when rendering) instead of four
# (README, start of a command) -> text appended to it.
SIZE = {
    ("services/pretrain/README.md", "python services/pretrain/main.py "): TINY_PRETRAIN,
    (
        "services/pretrain/README.md",
        "torchrun --standalone --nproc_per_node 4 services/pretrain/main.py train.distributed.expert_parallel=2",
    ): TINY_PRETRAIN_EP,
    ("services/characterize/README.md", "python3 services/characterize/main.py "): TINY_CHARACTERIZE,
    ("packages/collbench/README.md", "zaya bench characterize "): TINY_CHARACTERIZE,
    ("packages/collbench/README.md", "zaya bench collectives "): "-e 4K -n 2 -w 1",
    ("services/memstudy/README.md", "python services/memstudy/main.py"): TINY_MEMSTUDY,
    ("services/compose/README.md", "python services/compose/main.py "): TINY_COMPOSE,
}


def table_entry(table: dict, readme: str, command: str) -> str | None:
    """The entry of a (README, start of a command) table for `command`: the longest matching start wins."""
    hits = [(len(start), v) for (where, start), v in table.items() if where == readme and command.startswith(start)]
    return max(hits, key=lambda hit: hit[0])[1] if hits else None


def sized(readme: str, command: str) -> str:
    """`command` with its SIZE overrides appended (its trailing `  # comment` dropped first), unchanged if none."""
    extra = table_entry(SIZE, readme, command)
    return f"{command.partition('  #')[0].rstrip()} {extra}" if extra else command


def sized_command(readme: str, start: str) -> str:
    """`readme_command`, shortened by SIZE as tests/test_readme_commands.py would run it: a test that runs a
    README command as written in its place runs exactly this."""
    return sized(readme, readme_command(readme, start))


def checkout_workdir(tmp_path: Path) -> Path:
    """A folder that looks like the checkout (its top-level entries linked in), with ../shared beside it."""
    work = tmp_path / "zaya"
    work.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in {".git", ".venv", "outputs", "multirun", "data"}:
            (work / entry.name).symlink_to(entry)
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    return work


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"HYDRA_FULL_ERROR", "ZAYA_SERVICES_DIR"}}
    return env | {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}


def run_script(text: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """`text` under `bash -euo pipefail` with this interpreter's bin folder first on PATH (`zaya`, `python` and
    `python3` are the workspace's)."""
    return subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def run_script_ok(text: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """`run_script`, failing the calling test with the ends of its output unless it exits 0."""
    done = run_script(text, cwd, timeout)
    assert done.returncode == 0, (
        f"--- script\n{text}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-4000:]}"
    )
    return done
