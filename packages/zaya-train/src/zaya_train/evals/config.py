"""`train.eval.downstream`: lm-eval tasks run on the live model during pretraining."""

from dataclasses import dataclass, field

from zaya_config.checks import non_negative, positive
from zaya_config.errors import invalid


@dataclass
class DownstreamConfig:
    """Which lm-eval tasks to run, how often and on how many documents; no tasks: off.

    Runs at the first step, every `every_steps` steps and at the end of the run; scores go to
    metrics.jsonl (`kind: downstream`) and `downstream.png`. Needs the `eval` extra (lm-evaluation-harness).
    """

    tasks: list[str] = field(default_factory=list)  # lm-eval task/group names or patterns, e.g. [zaya_stdlib_nextline]
    every_steps: int = 100
    limit: int | None = None  # documents per task (the first N); null: all
    num_fewshot: int | None = None  # null: each task's own default
    batch_size: int = 16  # sequences per forward pass
    bootstrap_iters: int = 1000  # for the stderr of non-mean metrics (perplexities); 0: no stderr
    include_path: list[str] = field(default_factory=list)  # extra folders of task YAML files
    at_start: bool = True  # also score the untrained model (step 0)

    def validate(self) -> None:
        """Cadence, sizes and counts are in range; task names are checked when the run starts."""
        positive("every_steps", self.every_steps)
        positive("limit", self.limit, optional=True)
        positive("batch_size", self.batch_size)
        non_negative("bootstrap_iters", self.bootstrap_iters)
        if self.num_fewshot is not None:
            non_negative("num_fewshot", self.num_fewshot)
        for i, task in enumerate(self.tasks):
            if not isinstance(task, str) or not task.strip():
                raise invalid(f"tasks[{i}]", task, "an lm-eval task or group name")
