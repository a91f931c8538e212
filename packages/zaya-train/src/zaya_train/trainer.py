"""The training loop: one class, one step method, one obvious place per step for hooks.

`Trainer.run()` resumes from the latest checkpoint, then repeats: enter the phase the token count is in
(RoPE theta, context length, mixture), draw this rank's rows of the next global batch, call the hooks'
`before_step`, `train_step`, then `after_step` (logging, evaluation, checkpoints, then the hooks'
`after_step`).

A step runs the model's fast path: the wrapped module (DDP/FSDP2 hooks fire) is called with labels and returns
the fused chunked loss; blocks are compiled and checkpointed per `train.compile` / `train.activation_checkpointing`
(distributed/parallelize.py). The step reads one thing back to the host: the loss and gradient norm the
anomaly guard judges before the optimizer step may touch the weights. Everything else a step produces
(expert load, step timings) is read on logging steps only.

Everything else plugs in, built by the builder (`zaya_train.build.build_trainer`) and passed in: the
wrapped model, optimizer, progress, metrics writer and checkpoint manager (handed the checkpoint's Stateful
parts, `checkpoint/trainer_state.py`), `resilience` and `hooks` (router balancing, downstream evals, a test's
recorder). Every hook is a `zaya_train.hooks.TrainerHook` and gets every event by a direct call (Resilience
first): `before_step`, `after_optimizer_step`, `on_dropped_step`, `after_step`, `on_checkpoint_saved`,
`on_end`; tensors a hook puts into a step's metrics are read to the host on logging steps and dropped on the
others. Resilience decides (`judge` before the optimizer step, `decide` after the step: a `Decision`) and the
Trainer acts: it drops the batch, rolls back to the last checkpoint, or saves and stops.
"""

import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from zaya_model.context_parallel import shard_sequence

from zaya_train.config import TrainConfig
from zaya_train.data.pipeline import PreparedData
from zaya_train.data.sampler import MixtureSampler, validation_documents, validation_windows
from zaya_train.data.sampler_slot import SamplerSlot
from zaya_train.distributed import (
    DistributedContext,
    ParallelMesh,
    clip_grad_norm,
    finish_gradients,
    parallel_mesh,
    set_gradient_sync,
)
from zaya_train.errors import ZayaTrainError
from zaya_train.hooks import TrainerHook, check_hooks
from zaya_train.metrics import MetricsWriter, StepTimer, mfu, plot_run
from zaya_train.optim import learning_rate
from zaya_train.recipe import RecipeConfig, ramped_batch_size
from zaya_train.resilience.decision import Decision
from zaya_train.resilience.runtime import Resilience
from zaya_train.run_lock import release_run_dir
from zaya_train.sample import generate_text
from zaya_train.train_state import TrainProgress

if TYPE_CHECKING:  # torch.distributed.checkpoint loads only for runs that save
    from zaya_train.checkpoint import CheckpointManager

log = logging.getLogger("zaya_train")


class Trainer:
    """Trains a causal LM on a phased recipe under single-process, DDP or FSDP2 data parallelism."""

    def __init__(
        self,
        *,
        train: TrainConfig,
        recipe: RecipeConfig,
        data: PreparedData,
        ctx: DistributedContext,
        run_dir: Path,
        model: nn.Module,
        wrapped: nn.Module,
        compiled: bool,
        optimizer: torch.optim.Optimizer,
        zero1: bool,
        mesh: ParallelMesh,
        progress: TrainProgress,
        sampler: SamplerSlot,
        metrics: MetricsWriter,
        checkpoints: "CheckpointManager | None",
        resilience: Resilience,
        hooks: Sequence[TrainerHook] = (),
        run_lock: Path | None = None,
        hardware: Any = None,
        flops_per_token: Callable[[int], float] | None = None,
        log_every: int = 10,
        progress_bar: bool = True,
    ) -> None:
        """Every part comes built (`build_trainer`); the Trainer owns them from here (`close`)."""
        check_hooks([resilience, *hooks])
        self.cfg, self.recipe, self.data, self.ctx = train, recipe, data, ctx
        self.run_dir = Path(run_dir)
        self._run_lock = run_lock  # rank 0's lock on the run dir (run_lock.py): one trainer per run dir
        self.hardware, self.flops_per_token = hardware, flops_per_token
        self.log_every, self.show_progress = log_every, progress_bar and ctx.is_rank0
        self.model, self.wrapped, self.compiled = model, wrapped, compiled
        self.optimizer, self.zero1 = optimizer, zero1
        self.mesh = mesh  # the phase's dp x cp (enter_phase)
        self.progress = progress
        self._sampler = sampler
        self.val_windows: dict[str, np.ndarray] = {}
        self.val_documents: dict[str, np.ndarray] = {}  # their tokens' document indices (document masking)
        self.metrics = metrics
        self.checkpoints = checkpoints
        self.resilience = resilience
        self.hooks: list[TrainerHook] = list(hooks)
        self._window_start = (time.perf_counter(), 0)
        self._last_saved_step = -1
        self._announced = 0  # how many of the checkpoint manager's committed saves the hooks were told of

    # ------------------------------------------------------------------ phases
    @property
    def sampler(self) -> MixtureSampler | None:
        """The current phase's sampler (None before the first phase)."""
        return self._sampler.sampler

    @property
    def phase(self):
        return self.recipe.phases[self.progress.phase]

    def global_batch_size(self) -> int:
        """Sequences per optimizer step at the current token count (a phase's batch ramp included)."""
        target = self.phase.global_batch_size or self.cfg.global_batch_size
        granule = self.cfg.micro_batch_size * self.mesh.dp
        into_phase = self.progress.tokens - self.recipe.phase_start(self.progress.phase)
        return ramped_batch_size(self.phase.batch_ramp, target, granule, into_phase)

    def enter_phase(self, index: int, sampler_state: dict | None = None) -> None:
        """Switch context length, RoPE theta, mixture and LR segment to phase `index`."""
        phase = self.recipe.phases[index]
        self.progress.phase = index
        self.model.set_rope_theta(phase.rope_theta)
        self.set_context_parallel(phase.context_parallel or self.ctx.context_parallel)
        sampler = MixtureSampler(self.data.train, phase.mixture, phase.seq_len, self.cfg.seed, index)
        if sampler_state is not None:
            sampler.load_state_dict(sampler_state)
        self._sampler.sampler = sampler
        world = self.mesh.dp  # a CP group shares its windows
        per_source = max(self.cfg.eval.sequences, world)
        windows = validation_windows(self.data.val, phase.seq_len, per_source)
        # Every rank must run the same number of forwards (FSDP gathers per forward): a multiple of dp.
        self.val_windows = {name: w[: len(w) // world * world] for name, w in windows.items() if len(w) >= world}
        if self.cfg.data.document_masking:
            documents = validation_documents(self.data.val, phase.seq_len, per_source)
            self.val_documents = {name: documents[name][: len(w)] for name, w in self.val_windows.items()}
        self.metrics.write(
            {
                "kind": "phase",
                "step": self.progress.step,
                "tokens": self.progress.tokens,
                "index": index,
                "name": phase.name,
                "seq_len": phase.seq_len,
                "rope_theta": phase.rope_theta,
                "context_parallel": self.mesh.cp,
                "mixture": dict(phase.mixture),
                "resumed": sampler_state is not None,
            }
        )
        log.info(
            "phase %d %r: seq_len %d, rope_theta %g, mixture %s",
            index,
            phase.name,
            phase.seq_len,
            phase.rope_theta,
            dict(phase.mixture),
        )

    def set_context_parallel(self, cp: int) -> None:
        """Split each sequence over `cp` ranks from now on (1: off); the mesh of that cp is made once."""
        self.mesh = parallel_mesh(self.ctx, cp)
        if hasattr(self.model, "set_context_parallel"):
            self.model.set_context_parallel(self.mesh.context_parallel())
        elif cp > 1:
            raise ZayaTrainError(
                f"context_parallel {cp} needs a model that can split its sequences (set_context_parallel); "
                f"{type(self.model).__name__} cannot: set context_parallel to 1"
            )

    def current_lr(self, step_tokens: int = 0) -> float:
        """The LR of the step that ends `step_tokens` from now, within the phase's schedule segment.

        Evaluated at the step's end, so the first warmup step already moves the weights."""
        start = self.recipe.phase_start(self.progress.phase)
        return learning_rate(self.phase.schedule, (self.progress.tokens + step_tokens - start) / self.phase.tokens)

    # ------------------------------------------------------------------ one step
    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.cfg.precision == "bf16":
            return torch.autocast(self.ctx.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _loss(self, module: nn.Module, tokens: torch.Tensor, documents: torch.Tensor | None = None) -> torch.Tensor:
        """Mean next-token loss of a [B, T + 1] window batch through the module's fused path.

        Under context parallelism every rank of a CP group has the same windows and passes its zigzag chunks
        (padded at the end to a multiple of 2·cp, padding unlabelled); the loss is then the group's mean.
        documents: [B, T + 1] document index of each token (train.data.document_masking; never with CP): the
        inputs' go to the model as `document_ids`; labels are unchanged, so a document's last token (its EOS)
        still has the next document's first token as target."""
        inputs, labels, mask = tokens[:, :-1], tokens[:, 1:], None
        cp = self.model.context_parallel if self.mesh.cp > 1 else None
        if cp is not None:
            inputs, labels, mask = shard_sequence(inputs, labels, cp)
        with self._autocast():
            if documents is not None:
                return module(inputs, labels=labels, document_ids=documents[:, :-1])
            if mask is None:
                return module(inputs, labels=labels)
            return module(inputs, attention_mask=mask, labels=labels)

    def train_step(self, batch: np.ndarray, documents: np.ndarray | None = None) -> dict[str, Any]:
        """Forward/backward over micro-batches, clip, judge, step the optimizer, then the hooks' step events.

        documents: the document index of each token of `batch` (document masking), else None."""
        logging_now = self._logging_now()
        timer = StepTimer(self.ctx.device) if logging_now else None
        if timer is not None:
            timer.mark("start")
        tokens = torch.from_numpy(batch).to(self.ctx.device, non_blocking=True)
        docs = None if documents is None else torch.from_numpy(documents).to(self.ctx.device, non_blocking=True)
        micro = min(self.cfg.micro_batch_size, len(tokens))
        n_micro = len(tokens) // micro
        tokens_in_step = len(batch) * (batch.shape[1] - 1) * self.mesh.dp
        lr = self.current_lr(tokens_in_step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = torch.zeros((), device=self.ctx.device)
        for i in range(n_micro):
            set_gradient_sync(self.wrapped, i == n_micro - 1)
            rows = slice(i * micro, (i + 1) * micro)
            loss = self._loss(self.wrapped, tokens[rows], None if docs is None else docs[rows])
            loss = self.resilience.poison_loss(self.progress.step + 1, loss)
            # DDP/FSDP2 average gradients over all dp x cp ranks, but a CP rank's gradient is its share of the
            # group's sequences, to be summed over the group: x cp gives the DP average of the CP sums.
            (loss * self.mesh.cp / n_micro).backward()
            loss_sum += loss.detach()
        finish_gradients(self.model, self.ctx)  # DDP with expert parallelism: the experts' reduction
        max_norm = self.cfg.grad_clip if self.cfg.grad_clip > 0 else math.inf
        grad_norm = clip_grad_norm(self.model.parameters(), max_norm)
        loss_mean = self.ctx.all_reduce_sum(loss_sum / n_micro) / self.ctx.world_size
        if timer is not None:
            timer.mark("backward")
        # The step's one host read: the guard must see both values before the optimizer touches the weights.
        loss_value, norm_value = torch.stack((loss_mean.float(), grad_norm.float())).tolist()
        metrics = {"loss": loss_value, "grad_norm": norm_value, "lr": lr, "tokens_in_step": tokens_in_step,
                   "global_batch": len(batch) * self.mesh.dp}  # fmt: skip
        decision = self.resilience.judge(self.progress.step + 1, loss_value, norm_value)
        if decision is not Decision.ACCEPT:  # a NaN or spiking batch never reaches the weights (skip or roll back)
            self.optimizer.zero_grad(set_to_none=True)
            metrics["anomaly"] = decision.value
            for hook in self._all_hooks():
                hook.on_dropped_step(self, metrics)
            return self._to_host(metrics, timer is not None)
        self.optimizer.step()
        for hook in self._all_hooks():
            hook.after_optimizer_step(self, metrics)
        if timer is not None:
            timer.mark("optimizer")
            metrics["optimizer_ms"] = timer.ms("backward", "optimizer")
            metrics["step_ms"] = timer.ms("start", "optimizer")
            if self.ctx.device.type == "cuda":
                metrics["peak_gib"] = torch.cuda.max_memory_allocated(self.ctx.device) / 2**30
        return self._to_host(metrics, timer is not None)

    def _logging_now(self) -> bool:
        return (self.progress.step + 1) % self.log_every == 0 or self.progress.step == 0

    @staticmethod
    def _to_host(metrics: dict[str, Any], logging_now: bool) -> dict[str, Any]:
        """Device tensors in the metrics read to the host on logging steps (one read each), dropped otherwise."""
        if logging_now:
            return {k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in metrics.items()}
        return {k: v for k, v in metrics.items() if not isinstance(v, torch.Tensor)}

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self) -> dict[str, Any]:
        """Held-out loss per source and overall, over a fixed set of validation windows (all ranks)."""
        self.model.eval()
        micro, rank, world = self.cfg.micro_batch_size, self.mesh.dp_rank, self.mesh.dp
        per_source, total = {}, torch.zeros(2, dtype=torch.float64, device=self.ctx.device)
        for name, windows in self.val_windows.items():
            k = len(windows) // world
            mine = torch.from_numpy(windows[rank * k : (rank + 1) * k]).to(self.ctx.device)
            documents = self.val_documents.get(name)
            docs = None if documents is None else torch.from_numpy(documents[rank * k : (rank + 1) * k]).to(mine.device)
            acc = torch.zeros(2, dtype=torch.float64, device=self.ctx.device)
            for i in range(0, k, micro):
                chunk = mine[i : i + micro]
                chunk_docs = None if docs is None else docs[i : i + micro]
                acc[0] += self._loss(self.model, chunk, chunk_docs).double() * chunk[:, 1:].numel()
                acc[1] += chunk[:, 1:].numel()
            self.ctx.all_reduce_sum(acc)  # each CP rank adds its group's numbers: the ratio is unchanged
            per_source[name] = float(acc[0] / acc[1])
            total += acc
        self.model.train()
        record = {
            "kind": "val",
            "step": self.progress.step,
            "tokens": self.progress.tokens,
            "val_loss": float(total[0] / total[1]),
            **{f"val_loss/{k}": v for k, v in per_source.items()},
        }
        self.progress.val_history.append({"step": self.progress.step, "val_loss": record["val_loss"]})
        self.metrics.write(record)
        log.info(
            "step %d val_loss %.4f %s",
            self.progress.step,
            record["val_loss"],
            " ".join(f"{k}={v:.4f}" for k, v in per_source.items()),
        )
        return record

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> None:
        """Save the current state (every rank writes its shards; the parts: `checkpoint/trainer_state.py`)."""
        if self.checkpoints is None or self._last_saved_step == self.progress.step:
            return
        from zaya_train.checkpoint.trained_record import step_files

        self.checkpoints.save(self.progress.step, files=step_files(self))
        self._last_saved_step = self.progress.step

    def resume(self) -> bool:
        """Load the latest valid checkpoint, if any, and continue exactly where it stopped."""
        from zaya_config.train_checkpoint.layout import step_dirs

        if self.checkpoints is None or not self.cfg.checkpoint.resume or not step_dirs(self.checkpoints.root):
            return False
        step = self.checkpoints.load_latest()  # weights, optimizer, progress, RNG, sampler position, resilience
        if step is None:
            return False
        if self.progress.phase >= 0:  # the saved phase, its sampler at the saved position
            self.enter_phase(self.progress.phase, self._sampler.loaded)
        self.resilience.resumed(step)
        log.info("resumed from step %d (%d tokens, phase %d)", step, self.progress.tokens, self.progress.phase)
        self._last_saved_step = step
        return True

    def _announce_checkpoints(self) -> None:
        """`on_checkpoint_saved` once per checkpoint, when it is committed: an asynchronous save finishes steps
        after it started, and nothing may call a folder saved while it is still `.tmp.step_N`."""
        committed = self.checkpoints.committed if self.checkpoints is not None else []
        while self._announced < len(committed):
            step = committed[self._announced]
            self._announced += 1
            for hook in self._all_hooks():
                hook.on_checkpoint_saved(self, step, self.checkpoints.folder(step))

    def _roll_back(self, bad_step: int) -> None:
        """Resilience judged ROLLBACK: reload the last checkpoint, then jump the sampler past the data that led
        to the anomaly (when the checkpoint is of the same phase)."""
        position, phase = self.sampler.state_dict(), self.progress.phase
        if self.checkpoints is None:
            self.resilience.rollback_unavailable(bad_step, "checkpoints are disabled; batch skipped")
            return
        self.checkpoints.wait()
        if not self.resume():
            self.resilience.rollback_unavailable(bad_step, "no checkpoint yet; batch skipped")
            return
        skipped = self.progress.phase == phase
        if skipped:  # the windows drawn between the checkpoint and the bad batch are not trained on again
            self.sampler.load_state_dict(position)
        step = self.progress.step
        self.resilience.rolled_back(bad_step, step, skipped, self.checkpoints.folder(step))

    def _stop(self, step: int) -> None:
        """Resilience decided STOP (a preemption): save now when checkpoints are on, then let it end the process."""
        saved = self.checkpoints is not None
        if saved:
            self.save_checkpoint()
            self.checkpoints.wait()
            self._announce_checkpoints()
        self.resilience.stop(step, saved)

    # ------------------------------------------------------------------ the loop
    def _all_hooks(self) -> list[TrainerHook]:
        return [self.resilience, *self.hooks]

    def done(self) -> bool:
        """Whether the recipe's token budget (or train.max_steps) is used up."""
        if self.cfg.max_steps is not None and self.progress.step >= self.cfg.max_steps:
            return True
        return self.recipe.phase_at(self.progress.tokens) >= len(self.recipe.phases)

    def after_step(self, metrics: dict[str, Any]) -> None:
        """Advance counters, then log, evaluate and checkpoint on their cadences."""
        if "anomaly" in metrics:  # a skipped or rolled-back batch is not a step
            return
        self.progress.step += 1
        self.progress.tokens += metrics["tokens_in_step"]
        self.progress.record_loss(metrics["loss"])
        step = self.progress.step
        # step_ms: a logging step's timings; the last step is always logged (the run's final train record)
        if "step_ms" in metrics or step % self.log_every == 0 or self.done():
            t0, tok0 = self._window_start
            now = time.perf_counter()
            tps = (self.progress.tokens - tok0) / max(now - t0, 1e-9)
            self._window_start = (now, self.progress.tokens)
            record = {
                "kind": "train",
                "step": step,
                "tokens": self.progress.tokens,
                "phase": self.progress.phase,
                "tokens_per_s": tps,
                **{k: v for k, v in metrics.items() if k != "tokens_in_step"},
            }
            if self.flops_per_token is not None and self.hardware is not None:
                fpt = self.flops_per_token(self.phase.seq_len)
                record["mfu"] = mfu(tps, fpt, self.hardware, self.cfg.precision, self.ctx.world_size)
            self.metrics.write(record)
            log.info(
                "step %d loss %.4f lr %.2e gnorm %.3f %.0f tok/s",
                step,
                metrics["loss"],
                metrics["lr"],
                metrics["grad_norm"],
                tps,
            )
        if step % self.cfg.eval.every_steps == 0:
            self.evaluate()
        if self.checkpoints is not None and step % self.cfg.checkpoint.every_steps == 0:
            self.save_checkpoint()

    def end_step(self, metrics: dict[str, Any]) -> None:
        """Everything after `train_step`: `after_step`, then what Resilience decided (roll back; heartbeat;
        announce committed saves; stop on a preemption), then every hook's `after_step`."""
        self.after_step(metrics)
        step = self.progress.step
        if metrics.get("anomaly") == Decision.ROLLBACK.value:
            self._roll_back(bad_step=step + 1)
        self.resilience.heartbeat(step)
        saved_now = self.checkpoints is not None and self._last_saved_step == step and "anomaly" not in metrics
        if saved_now and self.resilience.needs_committed_saves:
            self.checkpoints.wait()
        self._announce_checkpoints()
        if self.resilience.decide(step) is Decision.STOP:
            self._stop(step)
        for hook in self._all_hooks():
            hook.after_step(self, metrics)

    def end_run(self, summary: dict[str, Any]) -> None:
        """The run is complete: announce the last committed saves, then every hook's `on_end`."""
        self._announce_checkpoints()
        for hook in self._all_hooks():
            hook.on_end(self, summary)

    def run(self) -> dict[str, Any]:
        """Train to the end of the recipe (resuming first); returns a summary of the run."""
        from zaya_train.progress import TrainingProgressBar

        check_hooks(self._all_hooks())  # `trainer.hooks` may have grown since construction
        started = time.perf_counter()
        self.resume()
        if self.progress.phase < 0:
            self._enter_next()
        if self.progress.step == 0:
            self.evaluate()
        total_tokens = self.recipe.boundaries()[-1]
        with TrainingProgressBar(total_tokens, self.cfg.max_steps, enabled=self.show_progress) as bar:
            bar.update(self.progress)
            while not self.done():
                if self.recipe.phase_at(self.progress.tokens) != self.progress.phase:
                    self._enter_next()
                # this DP rank's rows; every rank of its CP group reads the same ones (`_loss` takes its chunks)
                batch, documents = self.next_batch()
                for hook in self._all_hooks():
                    hook.before_step(self)
                metrics = self.train_step(batch, documents)
                self.end_step(metrics)
                bar.update(self.progress, metrics["loss"], self.phase.name)
        final_val = self.evaluate()
        self.save_checkpoint()
        if self.checkpoints is not None:
            self.checkpoints.wait()
        summary = {
            "steps": self.progress.step,
            "tokens": self.progress.tokens,
            "wall_s": time.perf_counter() - started,
            "final_val_loss": final_val["val_loss"],
            "first_val_loss": self.progress.val_history[0]["val_loss"],
            "final_train_loss": self.progress.loss_history[-1] if self.progress.loss_history else None,
            "run_dir": str(self.run_dir),
            "world_size": self.ctx.world_size,
            "nodes": self.ctx.rank_nodes(),  # by rank
        }
        summary["sample"] = self.sample()
        if self.ctx.is_rank0 and self.cfg.plots:
            summary["plots"] = [str(p) for p in plot_run(self.run_dir)]
        self.end_run(summary)
        return summary

    def next_batch(self) -> tuple[np.ndarray, np.ndarray | None]:
        """This DP rank's rows of the next global batch, with their document indices under document masking."""
        args = (self.global_batch_size(), self.mesh.dp_rank, self.mesh.dp)
        if self.cfg.data.document_masking:
            return self.sampler.next_batch_with_documents(*args)
        return self.sampler.next_batch(*args), None

    def _enter_next(self) -> bool:
        self.enter_phase(self.recipe.phase_at(self.progress.tokens))
        return True

    @torch.no_grad()
    def sample(self) -> str | None:
        """A short generation from the eval prompt (what the model has learned, at a glance)."""
        n = self.cfg.eval.sample_tokens
        if n <= 0 or not hasattr(self.model, "generate"):
            return None
        if self.ctx.strategy != "fsdp" and self.ctx.expert_parallel == 1 and not self.ctx.is_rank0:
            return None  # unsharded weights: rank 0 alone can generate, with no collectives (FSDP, EP: all ranks)
        ev = self.cfg.eval
        # Compiled blocks would recompile for every cache position: decode eagerly.
        stance = torch.compiler.set_stance("force_eager") if self.compiled else contextlib.nullcontext()
        with stance:
            text = generate_text(
                self.model,
                self.data.tokenizer,
                ev.sample_prompt,
                n,
                temperature=ev.sample_temperature,
                top_p=ev.sample_top_p,
                seed=self.cfg.seed,
            )
        self.metrics.write(
            {"kind": "sample", "step": self.progress.step, "prompt": self.cfg.eval.sample_prompt, "text": text}
        )
        return text

    def close(self) -> None:
        """Finish pending saves and close files (the process group belongs to the caller)."""
        self.resilience.close()
        if self.checkpoints is not None:
            self.checkpoints.close()
        self.metrics.close()
        release_run_dir(self._run_lock)
        self._run_lock = None
