"""Downstream evals during pretraining: a trainer hook that runs lm-eval tasks on the live model.

The tasks are loaded once when the run starts (a misspelt task fails before the first step), then scored
at the first step, every `every_steps` steps and at the end. Each evaluation is one `kind: downstream`
record in metrics.jsonl (`<task>/<metric>` values, its step, tokens and wall time); the end of the run
plots them (`downstream.png`) and puts the last scores into the summary.

Evaluating changes nothing in training: the model is in eval mode (the routers count no load), and every
RNG is restored afterwards, so a run with downstream evals has the same losses as one without. Every rank
scores all documents (an FSDP model needs all ranks in each forward); rank 0 writes the records.
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zaya_train.evals.config import DownstreamConfig
from zaya_train.evals.harness import expand_tasks, headline, require_lm_eval, scores, task_manager
from zaya_train.hooks import TrainerHook
from zaya_train.metrics.writer import read_metrics
from zaya_train.train_state import rng_state, set_rng_state

if TYPE_CHECKING:
    from torch import nn

    from zaya_train.config import TrainConfig
    from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")


class DownstreamEvalHook(TrainerHook):
    """Trainer hook (`before_step`, `after_step`, `on_end`) for `train.eval.downstream`."""

    def __init__(
        self, cfg: DownstreamConfig, model: nn.Module, tokenizer: Any, train: TrainConfig, metrics: Path
    ) -> None:
        """Built before the Trainer from the parts it scores: the model, the run's tokenizer, the `train` group
        (seed, precision) and the run's metrics.jsonl (a resumed run continues its records)."""
        require_lm_eval()
        from zaya_train.evals.lm import ZayaLM

        self.cfg = cfg
        lm_eval_log = logging.getLogger("lm_eval")
        if lm_eval_log.level == logging.NOTSET:  # lm-eval narrates every task at INFO; keep the run's log readable
            lm_eval_log.setLevel(logging.WARNING)
        manager = task_manager(cfg.tasks, cfg.include_path)
        self.tasks = manager.load(expand_tasks(manager, cfg.tasks))
        for task in self.tasks["tasks"].values():
            if cfg.num_fewshot is not None and task.get_config("num_fewshot") != 0:
                task.set_config(key="num_fewshot", value=cfg.num_fewshot)
            elif task.get_config("num_fewshot") is None:
                task.set_config(key="num_fewshot", value=0)
            task.set_fewshot_seed(seed=train.seed)
        self.lm = ZayaLM(
            model=model,
            tokenizer=tokenizer,
            batch_size=cfg.batch_size,
            precision=train.precision,
            seed=train.seed,
            progress=False,
        )
        # A resumed run continues the record: the final weights are not scored twice.
        done = [r for r in read_metrics(metrics) if r.get("kind") == "downstream"] if metrics.is_file() else []
        self.last_step: int | None = done[-1]["step"] if done else None
        self.last: dict[str, float] = {k: v for k, v in done[-1].items() if "/" in k} if done else {}

    def before_step(self, trainer: Trainer) -> None:
        """Score the untrained model once, before the first step of a fresh run."""
        if self.cfg.at_start and self.last_step is None and trainer.progress.step == 0:
            self.evaluate(trainer)

    def after_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """Score on the cadence (a skipped or rolled-back batch is not a step)."""
        if "anomaly" not in metrics and trainer.progress.step % self.cfg.every_steps == 0:
            self.evaluate(trainer)

    def on_end(self, trainer: Trainer, summary: dict[str, Any]) -> None:
        """Score the final weights (unless just done), plot, and add the scores to the summary."""
        if self.last_step != trainer.progress.step:
            self.evaluate(trainer)
        summary["downstream"] = self.last
        if trainer.ctx.is_rank0 and trainer.cfg.plots:
            from zaya_train.metrics.downstream_plot import plot_downstream

            written = plot_downstream(trainer.run_dir)
            plots = summary.setdefault("plots", [])
            if written is not None and str(written) not in plots:
                plots.append(str(written))

    def evaluate(self, trainer: Trainer) -> dict[str, Any]:
        """Run the tasks now; write and return the `downstream` record."""
        from lm_eval.evaluator import evaluate
        from zaya_model.context_parallel import context_parallel_off

        rng = rng_state()
        start = time.perf_counter()
        try:
            # lm-eval draws progress bars on stderr for every task; they would break the run's own bar.
            # lm-eval feeds whole sequences: a context-parallel model runs them unsplit meanwhile.
            with contextlib.redirect_stderr(io.StringIO()), context_parallel_off(trainer.model):
                results = evaluate(
                    lm=self.lm,
                    task_dict=self.tasks,
                    limit=self.cfg.limit,
                    bootstrap_iters=self.cfg.bootstrap_iters,
                    log_samples=False,
                )
        finally:
            set_rng_state(rng)
        wall = time.perf_counter() - start
        self.last_step, self.last = trainer.progress.step, scores(results)
        record = {
            "kind": "downstream",
            "step": trainer.progress.step,
            "tokens": trainer.progress.tokens,
            "wall_s": wall,
            **self.last,
        }
        trainer.metrics.write(record)
        main = headline(results)
        log.info(
            "step %d downstream (%.1f s) %s",
            trainer.progress.step,
            wall,
            " ".join(f"{k}={v:.4f}" for k, v in main.items()),
        )
        return record
