"""`events.jsonl`: one JSON line per fault-tolerance event (preemption, hang, NaN, rollback, restart ...).

Every rank appends to the same file; each event is one `write` on an O_APPEND descriptor, which POSIX
keeps whole, and is fsynced because the process may be about to die.
"""

import json
import os
import time
from pathlib import Path
from typing import Any

EVENTS_NAME = "events.jsonl"


class EventLog:
    """Appends events for one rank; `read_events` gives them back for reports and tests."""

    def __init__(self, run_dir: Path, rank: int = 0) -> None:
        self.path = Path(run_dir) / EVENTS_NAME
        self.rank = rank
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def emit(self, kind: str, step: int | None = None, **fields: Any) -> dict[str, Any]:
        """Record one event durably and return it."""
        event = {"time_unix": round(time.time(), 3), "rank": self.rank, "step": step, "kind": kind, **fields}
        line = (json.dumps(event, default=str, sort_keys=False) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        return event


def read_events(run_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """All events of a run (optionally of one kind), in file order; a torn last line is ignored."""
    path = Path(run_dir) / EVENTS_NAME
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if kind is None or event.get("kind") == kind:
            events.append(event)
    return events
