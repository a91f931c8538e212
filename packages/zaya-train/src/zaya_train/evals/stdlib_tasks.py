"""Builds the data of our own tasks from Python standard-library files held out from training.

Held out means: in the validation split of the main job (`is_validation(name, HOLDOUT_FRACTION)`, the hash
of the file's path under the stdlib root, the same on every machine and for any `val_fraction` >= 0.05), so
`make pretrain` never trains on them. Everything is seeded; the same interpreter gives the same files.

- `nextline`: which line comes next in real code: the true line, its tokens shuffled, two characters swapped
  in two places, or a real line of similar length from another file (multiple choice, loglikelihood).
- `docstring`: the first docstring line of a function, given its `def` (multiple choice among four).
- `idioms`: complete a line that is common in the training code from its opening (`def __eq__(` ->
  `self, other):`) inside held-out code (generate_until, exact match).
- `arith`: doctest arithmetic (`>>> 37 + 45` -> `82`), three shots (generate_until, exact match).
- `ppl`: the opening of each held-out file (loglikelihood_rolling: word/byte perplexity, bits per byte).

Run `python -m zaya_train.evals.stdlib_tasks --out DIR` to rebuild (the shipped files: `--out` the package's
`tasks/data`).
"""

import argparse
import ast
import collections
import json
import operator
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from zaya_train.config import SourceConfig
from zaya_train.data.corpus import Document, is_validation, list_documents

HOLDOUT_FRACTION = 0.05  # the main job's train.data.val_fraction
SOURCE_FILE = "SOURCE.json"
SEED = 25
# The main job's two sources (train/tiny-cpu.yaml): library code and the test suite.
SOURCES = (
    SourceConfig(path="stdlib", glob="**/*.py", exclude=["**/site-packages/**", "**/test/**", "**/tests/**"]),
    SourceConfig(path="stdlib", glob="test/**/*.py", exclude=[]),
)
# Generated tables and data dumps, not code anyone writes.
SKIP = ("encodings/", "pydoc_data/", "idlelib/idle_test/", "unicodedata", "_pydecimal.py", "tkinter/constants.py")
CONTEXT_CHARS = 200
_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")
_DOCSTRING_OPEN = re.compile(r"^(\s*[rRuU]?(?:\"\"\"|'''))(.+?)(?:\"\"\"|''')?\s*$")


def corpus() -> tuple[list[Document], list[Document]]:
    """(held-out documents, training documents) of the main job's sources, sorted by name."""
    docs = {d.name: d for source in SOURCES for d in list_documents(source)}
    usable = [d for name, d in sorted(docs.items()) if not any(part in name for part in SKIP)]
    held = [d for d in usable if is_validation(d.name, HOLDOUT_FRACTION)]
    return held, [d for d in usable if not is_validation(d.name, HOLDOUT_FRACTION)]


def _context(lines: list[str], index: int, limit: int = CONTEXT_CHARS) -> str:
    """Whole lines before `index`, as many as fit in `limit` characters (at least one)."""
    taken: list[str] = []
    for line in reversed(lines[:index]):
        if taken and sum(len(t) + 1 for t in taken) + len(line) + 1 > limit:
            break
        taken.insert(0, line)
    return "".join(t + "\n" for t in taken)


def _split_indent(line: str) -> tuple[str, str]:
    content = line.lstrip()
    return line[: len(line) - len(content)], content


def shuffle_tokens(content: str, rng: random.Random) -> str:
    """The line's tokens (words, symbols) in another order, spaces kept in place."""
    parts = _TOKEN.findall(content)
    slots = [i for i, p in enumerate(parts) if not p.isspace()]
    for _ in range(20):
        order = slots[:]
        rng.shuffle(order)
        shuffled = parts[:]
        for slot, source in zip(slots, order, strict=True):
            shuffled[slot] = parts[source]
        if "".join(shuffled) != content:
            return "".join(shuffled)
    return content[::-1]


def swap_characters(content: str, rng: random.Random, swaps: int = 2) -> str:
    """Typos: `swaps` pairs of neighbouring, different word characters exchanged."""
    chars = list(content)
    spots = [
        i for i in range(len(chars) - 1) if chars[i].isalnum() and chars[i + 1].isalnum() and chars[i] != chars[i + 1]
    ]
    for i in sorted(rng.sample(spots, min(swaps, len(spots)))):
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


def _good_line(content: str) -> bool:
    return 16 <= len(content) <= 72 and not content.startswith(("#", '"', "'")) and len(content.split()) >= 2


def nextline(held: list[Document], rng: random.Random, n: int = 500, per_file: int = 20) -> list[dict]:
    """Multiple choice: the real next line of held-out code against three corruptions."""
    files = {d.name: d.read().splitlines() for d in held}
    pool = [(name, i) for name, lines in files.items() for i in range(3, len(lines)) if _good_line(lines[i].strip())]
    by_length = collections.defaultdict(list)
    for name, i in pool:
        by_length[len(files[name][i].strip()) // 8].append((name, i))
    rng.shuffle(pool)
    taken, per = [], collections.Counter()
    for name, i in pool:
        if per[name] >= per_file or len(taken) >= n:
            continue
        indent, content = _split_indent(files[name][i])
        others = [(o, j) for o, j in by_length[len(content) // 8] if o != name]
        if not others:
            continue
        other_name, other_index = others[rng.randrange(len(others))]
        foreign = files[other_name][other_index].strip()
        choices = [content, shuffle_tokens(content, rng), swap_characters(content, rng), foreign]
        if len(set(choices)) < 4:
            continue
        order = list(range(4))
        rng.shuffle(order)
        taken.append(
            {
                "source": f"{name}:{i + 1}",
                "context": _context(files[name], i) + indent,
                "choices": [choices[k] + "\n" for k in order],
                "gold": order.index(0),
            }
        )
        per[name] += 1
    return taken


def docstring(held: list[Document], rng: random.Random, n: int = 300) -> list[dict]:
    """Multiple choice: the first line of a function's docstring among those of three other functions."""
    found = []
    for doc in held:
        text = doc.read()
        lines = text.splitlines()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not ast.get_docstring(node):
                continue
            first = node.body[0]
            match = _DOCSTRING_OPEN.match(lines[first.lineno - 1])
            if not match or not 12 <= len(match.group(2).strip()) <= 90:
                continue
            header = "".join(line + "\n" for line in lines[node.lineno - 1 : first.lineno - 1])
            found.append((doc.name, node.lineno, header + match.group(1), match.group(2).rstrip()))
    found.sort(key=lambda f: (f[0], f[1]))
    rng.shuffle(found)
    items = []
    for name, lineno, context, answer in found[:n]:
        distractors = [f[3] for f in found if f[0] != name and f[3] != answer]
        picked = rng.sample(sorted(set(distractors)), 3)
        choices = [answer, *picked]
        rng.shuffle(choices)
        items.append(
            {"source": f"{name}:{lineno}", "context": context, "choices": choices, "gold": choices.index(answer)}
        )
    return items


def common_lines(training: list[Document], min_count: int = 8) -> set[str]:
    """Stripped lines that recur in the training code: the idioms a model picks up first."""
    counts = collections.Counter(line.strip() for doc in training for line in doc.read().splitlines())
    return {
        line
        for line, count in counts.items()
        if count >= min_count
        and 12 <= len(line) <= 60
        and not line.startswith(("#", '"', "'"))
        and any(c.isalpha() for c in line)
    }


def line_prefix(content: str) -> str:
    """The line's opening tokens, about a third of it (at least 4 characters), as an editor's completion
    would be asked for: `def __eq__(` -> `self, other):`."""
    prefix = ""
    for token in _TOKEN.findall(content):
        if len(prefix) >= max(4, len(content) // 3):
            break
        prefix += token
    return prefix if len(prefix) < len(content) else content[: len(content) // 2]


def idioms(held: list[Document], training: list[Document], rng: random.Random, n: int = 300) -> list[dict]:
    """Generation: complete a common line in held-out code, given the code before it and the line's opening."""
    common = common_lines(training)
    pool = []
    for doc in held:
        lines = doc.read().splitlines()
        pool += [(doc.name, i, lines) for i in range(2, len(lines)) if lines[i].strip() in common]
    rng.shuffle(pool)
    items, per_line, per_file = [], collections.Counter(), collections.Counter()
    for name, i, lines in pool:
        indent, content = _split_indent(lines[i])
        if per_line[content] >= 3 or per_file[name] >= 15 or len(items) >= n:
            continue
        prefix = line_prefix(content)
        items.append(
            {
                "source": f"{name}:{i + 1}",
                "context": _context(lines, i) + indent + prefix,
                "target": content[len(prefix) :],
            }
        )
        per_line[content] += 1
        per_file[name] += 1
    return items


def arith(rng: random.Random, n: int) -> list[dict]:
    """Doctest arithmetic: sums and differences of numbers below 100, products of numbers up to 20."""
    items = []
    for _ in range(n):
        op = rng.choice("+-*")
        a, b = (rng.randint(0, 20), rng.randint(0, 20)) if op == "*" else (rng.randint(0, 99), rng.randint(0, 99))
        items.append({"question": f">>> {a} {op} {b}\n", "answer": str(_OPS[op](a, b))})
    return items


def ppl(held: list[Document], n: int = 60, chars: int = 3000) -> list[dict]:
    """The opening lines of held-out files (whole lines, up to `chars` characters)."""
    items = []
    for doc in held[:n]:
        text = doc.read()
        cut = text[:chars]
        if len(text) > chars and "\n" in cut:
            cut = cut[: cut.rindex("\n") + 1]
        items.append({"source": doc.name, "text": cut})
    return items


def build() -> dict[str, list[dict]]:
    """Every task's records, from this interpreter's standard library."""
    held, training = corpus()
    make: dict[str, Callable[[], list[dict]]] = {
        "zaya_stdlib_nextline.jsonl": lambda: nextline(held, random.Random(SEED)),
        "zaya_stdlib_docstring.jsonl": lambda: docstring(held, random.Random(SEED + 1)),
        "zaya_stdlib_idioms.jsonl": lambda: idioms(held, training, random.Random(SEED + 2)),
        "zaya_arith.jsonl": lambda: arith(random.Random(SEED + 3), 400),
        "zaya_arith_fewshot.jsonl": lambda: arith(random.Random(SEED + 4), 20),
        "zaya_stdlib_ppl.jsonl": lambda: ppl(held),
    }
    return {name: fn() for name, fn in make.items()}


def write(out: Path) -> dict[str, int]:
    """Write every task file under `out` (atomically, file by file) and `SOURCE.json` (the interpreter the
    files were built from, their record counts); returns the record counts."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, records in build().items():
        write_text_atomic(out / name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        counts[name] = len(records)
    source = {"python": sys.version.split()[0], "holdout_fraction": HOLDOUT_FRACTION, "seed": SEED, "records": counts}
    write_text_atomic(out / SOURCE_FILE, json.dumps(source, indent=2) + "\n")
    return counts


def main(argv: list[str] | None = None) -> None:
    """Command line: rebuild the task files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the .jsonl files")
    args = parser.parse_args(argv)
    for name, count in write(args.out).items():
        print(f"{args.out / name}: {count} records")
    print(f"from the standard library of Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
