"""The local executor with datatrove's INFO lines kept out of the terminal (issue 39).

Datatrove logs through loguru: every task removes the sinks and adds stderr at INFO plus its task log file
(`OUT/.datatrove/<stage>/logs/task_NNNNN.log`, DEBUG), and the executor logs each completion, ~150 lines
for a small prepare. The user sees our progress bar and one summary line instead: while the executor runs,
in the main process and in every worker, `sys.stderr` (what datatrove hands loguru) drops loguru messages
below WARNING. The task log files keep every line; warnings, errors and anything not from loguru still
reach the terminal.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from datatrove.executor.local import LocalPipelineExecutor
from datatrove.utils.logging import setup_default_logger

WARNING = 30  # loguru's severity number of WARNING


class WarningsAndUp:
    """A stderr stand-in for loguru's sinks: a loguru message (a str carrying its `record`) passes only at
    WARNING and above; any other write passes as is."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Forward `text` unless it is a loguru record below WARNING."""
        record = getattr(text, "record", None)
        if record is not None and record["level"].no < WARNING:
            return len(text)
        return self.stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@contextmanager
def stderr_warnings_and_up() -> Iterator[None]:
    """Sinks datatrove adds meanwhile (and loguru's default one, re-added here) write through WarningsAndUp;
    afterwards the default sink writes to the real stderr again."""
    real = sys.stderr
    sys.stderr = WarningsAndUp(real)
    try:
        setup_default_logger()
        yield
    finally:
        sys.stderr = real
        setup_default_logger()


class QuietLocalExecutor(LocalPipelineExecutor):
    """LocalPipelineExecutor whose own and whose tasks' INFO lines go to the task logs only."""

    def run(self):
        """Run the stage (and the one it depends on) with INFO kept off stderr."""
        with stderr_warnings_and_up():
            return super().run()

    def _launch_run_for_rank(self, rank: int, ranks_q, completed=None, completed_lock=None):
        """One task and its completion line, in whichever process runs it (a pool worker has its own
        `sys.stderr` to wrap)."""
        with stderr_warnings_and_up():
            return super()._launch_run_for_rank(rank, ranks_q, completed, completed_lock)
