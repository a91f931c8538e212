"""`zaya eval RUN --tasks ...` and `zaya lm-eval ...`: lm-evaluation-harness on zaya models from the shell.

lm-eval 0.4 has no plug-in mechanism for models from other packages (its CLI knows only the models listed
inside lm-eval; EleutherAI/lm-evaluation-harness#1621), so the `zaya` model is registered here, in-process:
`zaya eval` calls lm-eval's `simple_evaluate`, and `zaya lm-eval ARGS` is lm-eval's own command line with
the `zaya` model and our tasks added (`zaya lm-eval --model zaya --model_args path=RUN --tasks ...`).
"""

import sys
from pathlib import Path

import typer
from typer.core import TyperGroup
from zaya_config.cli_errors import reports

from zaya_train.errors import ZayaTrainError


class _CommandLikeGroup(TyperGroup):
    """A sub-app that is one command (`zaya eval PATH ...`): no `COMMAND [ARGS]...` in its usage line."""

    def collect_usage_pieces(self, ctx):
        return [p for p in super().collect_usage_pieces(ctx) if p != self.subcommand_metavar]


eval_app = typer.Typer(
    help="Score a run dir or HF folder on lm-evaluation-harness tasks; prints the table, writes eval.json.",
    cls=_CommandLikeGroup,
)
lm_eval_app = typer.Typer(
    help="lm-eval's own command line, with the `zaya` model and zaya's tasks registered.", cls=_CommandLikeGroup
)


@eval_app.callback(invoke_without_command=True, context_settings={"allow_interspersed_args": True})
@reports(ZayaTrainError, ValueError)
def evaluate(
    path: Path = typer.Argument(..., help="A zaya-train run dir (latest checkpoint), a step folder, or a HF folder"),
    tasks: str = typer.Option(..., "--tasks", "-t", help="Comma-separated task or group names or patterns, e.g. zaya"),
    limit: int | None = typer.Option(None, help="Documents per task (the first N)"),
    num_fewshot: int | None = typer.Option(None, help="Shots per question (default: each task's own)"),
    batch_size: int = typer.Option(16, help="Sequences per forward pass"),
    device: str | None = typer.Option(None, help="cpu, cuda, cuda:1 ... (default: cuda when there is a GPU)"),
    step: int | None = typer.Option(None, help="Checkpoint step of a run dir (default: the latest verified)"),
    tokenizer: Path | None = typer.Option(None, help="Tokenizer folder or tokenizer.json (default: the run's own)"),
    precision: str = typer.Option("fp32", help="fp32 | bf16 (autocast)"),
    include_path: list[Path] = typer.Option([], help="Extra folder of task YAML files (repeatable)"),
    output: Path | None = typer.Option(None, help="Folder for eval.json (default: the run dir or HF folder)"),
    seed: int = typer.Option(1234, help="Seed of lm-eval's sampling (fewshot examples) and of generation"),
) -> None:
    """Evaluate PATH on TASKS with lm-eval; print the results table and merge the scores into eval.json."""

    from zaya_train.evals.harness import expand_tasks, require_lm_eval, table, task_manager, write_eval_json

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    if not names:
        raise ZayaTrainError("--tasks is empty; name at least one task, e.g. --tasks zaya_stdlib_nextline")
    require_lm_eval()
    from lm_eval import simple_evaluate

    from zaya_train.evals.lm import ZayaLM

    lm = ZayaLM(
        str(path),
        step=step,
        tokenizer=None if tokenizer is None else str(tokenizer),
        device=device,
        batch_size=batch_size,
        precision=precision,
        seed=seed,
    )
    manager = task_manager(names, include_path)
    results = simple_evaluate(
        model=lm,
        tasks=expand_tasks(manager, names),
        task_manager=manager,
        limit=limit,
        num_fewshot=num_fewshot,
        random_seed=seed,
        numpy_random_seed=seed,
        torch_random_seed=seed,
        fewshot_random_seed=seed,
    )
    subject = lm.subject.describe()
    settings = {"limit": limit, "num_fewshot": num_fewshot, "precision": precision, "seed": seed}
    written = write_eval_json(output or lm.subject.path, results, subject, settings)
    where = f"step {subject['step']}, " if subject["step"] is not None else ""
    typer.echo(f"{path} ({where}{subject['model']}, {lm.device})")
    typer.echo(table(results))
    typer.echo(f"wrote {written}")


@lm_eval_app.callback(
    invoke_without_command=True,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
@reports(ZayaTrainError)
def lm_eval_command(args: list[str] = typer.Argument(None, help="lm-eval's arguments, e.g. --model zaya ...")) -> None:
    """Run lm-eval's command line (`lm_eval ...`) with the `zaya` model and zaya's tasks available."""
    from zaya_train.evals.harness import builtin_index_only_when_needed, quiet_custom_dataset_notice, require_lm_eval

    require_lm_eval()
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    from zaya_train.evals import TASKS_DIR

    args = list(args or [])
    if not args or args[0] not in ("-h", "--help"):  # lm-eval's help needs no model (nor torch)
        import zaya_train.evals.lm  # noqa: F401 - registers the `zaya` model
    if any(a == "--include_path" or a.startswith("--include_path=") for a in args):
        typer.echo(f"note: --include_path given, so zaya's own tasks ({TASKS_DIR}) are not added", err=True)
    elif args and args[0] not in ("-h", "--help"):
        args += ["--include_path", str(TASKS_DIR)]
    quiet_custom_dataset_notice()
    sys.argv = ["lm-eval", *args]
    setup_logging()  # lm-eval's `cli_evaluate`, with the tasks known before its TaskManager indexes them
    parser = HarnessCLI()
    parsed = parser.parse_args()
    tasks = parsed.tasks if parsed.command == "run" and not getattr(parsed, "config", None) else None
    with builtin_index_only_when_needed(tasks):
        parser.execute(parsed)
