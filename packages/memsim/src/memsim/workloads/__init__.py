"""Workloads for memsim: request streams of real programs, sampled, driven and reported.

`llm_step`: one decode or prefill step of a mixture-of-experts transformer, from plain byte counts
(`LlmStepShape`), laid out in memory and ordered layer by layer; `sampling`: a scaled, statistically
faithful sample of it; `saturating_driver`: all requests ready at once, as a GPU issues them;
`step_study` / `study_run`: bandwidth, latency and energy per token against the bandwidth roofline.
"""

from memsim.workloads.llm_step import PHASES, REGIONS, LlmStepShape, StepStream, build_step_stream
from memsim.workloads.sampling import SampledRequests, sample_stream
from memsim.workloads.saturating_driver import DriveResult, run_saturating
from memsim.workloads.step_study import fold_addresses, peak_bandwidth_gbps, simulate_step
from memsim.workloads.study_config import MemstudyConfig
from memsim.workloads.study_run import SCALING_NOTE, StudyCase, run_memstudy

__all__ = [
    "PHASES",
    "REGIONS",
    "SCALING_NOTE",
    "DriveResult",
    "LlmStepShape",
    "MemstudyConfig",
    "SampledRequests",
    "StepStream",
    "StudyCase",
    "build_step_stream",
    "fold_addresses",
    "peak_bandwidth_gbps",
    "run_memstudy",
    "run_saturating",
    "sample_stream",
    "simulate_step",
]
