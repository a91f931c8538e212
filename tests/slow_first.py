"""Run the slowest tests first, so that no worker starts a minute-long test when the others are nearly done.

pytest-xdist hands tests to its workers in collection order; a long test collected last keeps one core busy
while the rest sit idle. The root conftest.py sorts the collected items by the seconds `durations.json`
records (longest first, collection order otherwise kept). A test the file does not know yet (new, or renamed)
counts as UNRECORDED_SLOW_SECONDS when it is marked `slow` and as 0 otherwise, so a new long test is not
left to the end. The file is a hint: a stale entry only changes the order. Refresh it from a full run's
JUnit report:

    make test PYTEST_ARGS="--junitxml=/tmp/suite.xml" && python tests/slow_first.py /tmp/suite.xml
"""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
RECORDED_FROM_SECONDS = 2.0  # tests shorter than this stay in collection order
UNRECORDED_SLOW_SECONDS = 20.0  # a `slow` test not in the file runs among the longer recorded ones (mean 11 s)


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    """Node id -> recorded seconds; empty when the file is absent."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def slowest_first(nodeids: list[str], durations: dict[str, float], slow: list[bool]) -> list[int]:
    """Indices of `nodeids` in the order to run them: longest first, by the recorded seconds or, for a test not
    recorded, UNRECORDED_SLOW_SECONDS where `slow` says it is marked slow; ties keep collection order."""
    guess = [UNRECORDED_SLOW_SECONDS if marked else 0.0 for marked in slow]
    return sorted(range(len(nodeids)), key=lambda i: -durations.get(nodeids[i], guess[i]))


def junit_durations(report: Path) -> dict[str, float]:
    """Node id -> seconds (setup + call + teardown) of every test in a pytest `--junitxml` report."""
    found = {}
    for case in ET.parse(report).iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        found[f"{module}::{case.get('name')}"] = float(case.get("time", 0.0))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: python tests/slow_first.py <pytest --junitxml report of a full run>", file=sys.stderr)
        return 2
    kept = {k: round(v, 1) for k, v in junit_durations(Path(argv[0])).items() if v >= RECORDED_FROM_SECONDS}
    tmp = DURATIONS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(sorted(kept.items())), indent=0) + "\n", encoding="utf-8")
    tmp.replace(DURATIONS)
    print(f"{DURATIONS}: {len(kept)} tests of {RECORDED_FROM_SECONDS:g} s or more")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
