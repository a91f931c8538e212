"""Dump every thread's Python stack to a file and stderr: what a person needs to see why a rank is stuck."""

import faulthandler
import sys
import traceback
from pathlib import Path

from zaya_config.atomic import write_text_atomic


def format_all_stacks() -> str:
    """Every live thread's stack as text, with thread names (faulthandler's dump lacks names)."""
    import threading

    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f'Thread {ident} "{names.get(ident, "?")}" (most recent call last):\n')
        parts.append("".join(traceback.format_stack(frame)))
    return "".join(parts)


def dump_all_stacks(path: Path) -> str:
    """Write all thread stacks to `path` (atomically) and to stderr; return the text."""
    text = format_all_stacks()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    sys.stderr.write(text)
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)  # C-level view, works without names
    return text
