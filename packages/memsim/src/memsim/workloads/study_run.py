"""Run a memory study: each case (one LLM step and its byte accounting) on one standard, then write it."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsim.spec import DramSpec
from memsim.workloads.llm_step import LlmStepShape
from memsim.workloads.step_study import simulate_step
from memsim.workloads.study_config import MemstudyConfig
from memsim.workloads.study_report import write_study

SCALING_NOTE = (
    "Each step is simulated on a sample of its request stream: `sample_windows` windows of "
    "`sample_window_bytes` contiguous bytes, one at a random place in each equal stride of the stream (stratified sampling, seeded). "
    "Bandwidth is the sample's steady state (middle 80% of its column commands); the step time is the "
    "stream's bytes at that bandwidth plus the sample's fill-and-drain overhead once; command energy scales "
    "with bytes (`sample_scale` = stream bytes / sampled bytes), background and refresh energy with time; "
    "latency and energy per bit are the sample's own. Addresses beyond the memory's capacity "
    "are folded into it (low bits kept). All requests are ready at once (a saturating frontend)."
)


@dataclass(frozen=True)
class StudyCase:
    """One step to simulate, the bytes the model's accounting says it reads, and labels for the report."""

    shape: LlmStepShape
    accounting_bytes: float
    flops: float | None = None  # model FLOPs of the whole step, for the compute side of the roofline
    labels: dict[str, Any] = field(default_factory=dict)


def _compute_bound(metrics: dict[str, Any], flops: float | None, peak_flops: float | None) -> None:
    if flops is None or not peak_flops:
        return
    compute_ns = flops / peak_flops * 1e9
    metrics["flops_per_token"] = flops / metrics["tokens"]
    metrics["compute_time_per_token_ns"] = compute_ns / metrics["tokens"]
    metrics["arithmetic_intensity_flop_per_byte"] = flops / metrics["accounting_bytes"]
    metrics["memory_bound"] = metrics["roofline_step_time_ns"] >= compute_ns


def run_memstudy(spec: DramSpec, cases: Sequence[StudyCase], study: MemstudyConfig, out: Path,
                 header: dict[str, Any] | None = None, peak_flops: float | None = None,
                 progress: bool = True) -> dict[str, Any]:  # fmt: skip
    """Simulate every case on `spec`, write memstudy.json/.csv and plots under `out`; return the JSON document."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    results = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, disable=not progress, transient=True) as bar:
        for case in cases:
            task = bar.add_task(f"{spec.name} {case.shape.phase}", total=None)
            metrics = simulate_step(
                spec, case.shape, case.accounting_bytes, sample_bytes=study.sample_bytes,
                window_bytes=study.window_bytes, include_writes=study.include_writes, seed=study.seed,
                progress=lambda done, total, task=task: bar.update(task, completed=done, total=total),
            )  # fmt: skip
            _compute_bound(metrics, case.flops, peak_flops)
            metrics.update(case.labels)
            results.append(metrics)
    doc_header = {"standard": spec.name, "protocol": spec.protocol, "scaling": SCALING_NOTE, **(header or {})}
    return write_study(Path(out), results, doc_header, plots=study.plots)
