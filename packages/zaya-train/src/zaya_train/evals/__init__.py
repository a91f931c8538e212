"""Downstream evaluation with EleutherAI's lm-evaluation-harness (`pip install 'zaya-train[eval]'`).

`zaya_train.evals.lm.ZayaLM` is lm-eval's `zaya` model; `tasks/` holds our own tasks (local data, no
download); `harness` runs tasks and writes `eval.json`; `hook.DownstreamEvalHook` runs them during
pretraining (`train.eval.downstream`). Importing this package does not import lm-eval.
"""

from pathlib import Path

TASKS_DIR = Path(__file__).parent / "tasks"

__all__ = ["TASKS_DIR"]
