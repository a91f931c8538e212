"""The shell blocks of the repository's READMEs, split into the commands a reader would type.

A block is a fenced ```bash, ```sh, ```shell or ```console block (in a console block only the `$ ` lines are
commands). A command is one logical line: backslash continuations joined, a here-document kept whole.
Commands run as a reader would run them: `run_script` in a folder that looks like the checkout (`checkout_workdir`).
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
