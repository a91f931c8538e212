"""The shell blocks of the repository's READMEs, split into the commands a reader would type.

A block is a fenced ```bash, ```sh, ```shell or ```console block (in a console block only the `$ ` lines are
commands). A command is one logical line: backslash continuations joined, a here-document kept whole.
"""

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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
    """README.md at the root and in every package, service, infra recipe and tool."""
    found = [root / "README.md"]
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
