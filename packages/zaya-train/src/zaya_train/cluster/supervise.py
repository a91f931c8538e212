"""The supervisor: submit the pretraining job to Slurm, watch it, and when it fails resubmit it (bounded
retries with backoff) without the nodes that failed their health check or straggled; the run resumes from
its last committed checkpoint by itself (zaya_train.checkpoint). Ends with one line: done, or why it gave up.

    python -m zaya_train.cluster.supervise --run-dir outputs/pretrain/ft --nodes 2 -- train.device=cpu

What each failure leads to (infra/README.md, "Fault tolerance on Slurm"):
- exit 76 (a node failed the job's health check): its report names it; drained, excluded, resubmitted;
- exit 77 (a straggler, train.cluster.straggler.action=stop): the node in events.jsonl excluded, resubmitted;
- exit 74 (crash loop: the same step failed on the last attempts): not resubmitted, the step is named;
- any other non-zero exit, NODE_FAIL, TIMEOUT, or a preempted job that ended without its summary: the job's
  nodes are health-checked again (a node that fails is drained and excluded, one that is down is excluded as
  lost), then resubmitted;
- a job Slurm requeued (a preemption, `scontrol requeue`): a `job_requeued` event, and Slurm runs it again;
  but if one of its nodes is down (a lost node), the requeued job is cancelled, the node excluded, resubmitted.
Every decision is an event (rank -1) in the run's events.jsonl.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from zaya_config.checks import non_negative, positive
from zaya_config.errors import ZayaConfigError, invalid
from zaya_config.validated import ValidatedConfig

from zaya_train.cluster import slurm
from zaya_train.resilience.events import EventLog, read_events
from zaya_train.resilience.exit_codes import ExitCode

SUPERVISOR_RANK = -1  # the rank of the supervisor's events in events.jsonl


@dataclass
class SupervisorConfig(ValidatedConfig):
    """How the supervisor submits and how hard it tries."""

    run_dir: str = "outputs/pretrain/slurm"
    nodes: int = 2
    min_nodes: int = 1  # resubmit on fewer nodes (down to this) when excluded nodes leave too few
    max_retries: int = 3  # resubmissions after the first job
    backoff_s: float = 10.0  # wait before the first resubmission, doubled each time (capped)
    max_backoff_s: float = 600.0
    partition: str | None = None
    time_min: int = 60
    nproc: int | None = None  # workers per node (default: the node's GPUs, else 1)
    poll_s: float = 1.0
    job_script: str = "infra/slurm/pretrain_job.sh"
    health_args: str = ""  # extra options of python -m zaya_train.cluster.health
    drain: bool = True  # drain bad nodes in Slurm (needs admin rights), else only exclude them
    overrides: list[str] = field(default_factory=list)

    def validate_fields(self) -> None:
        """Node counts coherent, budgets and times non-negative, the job script present."""
        positive("nodes", self.nodes)
        positive("min_nodes", self.min_nodes)
        if self.min_nodes > self.nodes:
            raise invalid("min_nodes", self.min_nodes, f"an integer <= nodes ({self.nodes})")
        non_negative("max_retries", self.max_retries)
        non_negative("backoff_s", self.backoff_s)
        positive("max_backoff_s", self.max_backoff_s)
        positive("time_min", self.time_min)
        positive("poll_s", self.poll_s)
        positive("nproc", self.nproc, optional=True)
        if not Path(self.job_script).is_file():
            raise invalid("job_script", self.job_script, "the batch script (run from the repo root)")


class GiveUp(Exception):
    """The supervisor stops without a finished run; the message is its one line."""


class Supervisor:
    """One run's job, resubmitted until it finishes or the budget is spent."""

    def __init__(self, cfg: SupervisorConfig, log=print) -> None:
        self.cfg = cfg
        self.run_dir = Path(cfg.run_dir).resolve()
        self.events = EventLog(self.run_dir, SUPERVISOR_RANK)
        self.excluded: dict[str, str] = {}  # node -> why
        self.jobs: list[slurm.JobInfo] = []
        self.log = log

    # ------------------------------------------------------------------ submit and wait
    def submit(self) -> str:
        """sbatch the job on as many usable, non-excluded nodes as asked (at least min_nodes)."""
        usable = [n for n in slurm.usable_nodes(self.cfg.partition) if n not in self.excluded]
        nodes = min(self.cfg.nodes, len(usable))
        if nodes < self.cfg.min_nodes:
            raise GiveUp(f"only {len(usable)} usable node(s) left (excluded: {self._excluded_text()}); "
                         f"min_nodes is {self.cfg.min_nodes}")  # fmt: skip
        env = {"RUN_DIR": str(self.run_dir), "PYTHON": sys.executable, "ZAYA_REPO": os.getcwd(),
               "HEALTH_ARGS": self.cfg.health_args}  # fmt: skip
        if self.cfg.nproc:
            env["NPROC"] = str(self.cfg.nproc)
        (self.run_dir / "slurm").mkdir(parents=True, exist_ok=True)
        args = [f"--nodes={nodes}", "--ntasks-per-node=1", f"--time={self.cfg.time_min}", "--job-name=zaya-pretrain",
                f"--output={self.run_dir / 'slurm' / 'job-%j.out'}", "--export=ALL," + ",".join(f"{k}={v}" for k, v in env.items())]  # fmt: skip
        if self.cfg.partition:
            args.append(f"--partition={self.cfg.partition}")
        if self.excluded:
            args.append("--exclude=" + ",".join(sorted(self.excluded)))
        if any("," in v for v in env.values()):
            raise GiveUp("a comma in RUN_DIR, the interpreter path or health_args: sbatch --export cannot carry it")
        job_id = slurm.sbatch([*args, self.cfg.job_script, *self.cfg.overrides])
        self.events.emit("job_submitted", job_id=job_id, nodes=nodes, exclude=sorted(self.excluded),
                         attempt=len(self.jobs))  # fmt: skip
        self.log(f"supervisor: job {job_id} submitted on {nodes} node(s)"
                 + (f", excluding {self._excluded_text()}" if self.excluded else ""))  # fmt: skip
        return job_id

    def wait(self, job_id: str) -> tuple[slurm.JobInfo, dict[str, str]]:
        """Poll until the job ends, and the nodes it lost if Slurm requeued it after a node failure.

        Slurm requeues a job by itself when it is preempted (or `scontrol requeue`d) and when one of its nodes
        fails: a requeue is a `job_requeued` event; after a preemption the job runs again as it is (the trainer
        saved on SIGTERM), but a requeue that left one of the job's nodes down (or not responding) is cancelled
        here, so that the supervisor resubmits it itself without that node (and on fewer nodes, down to
        min_nodes, where too few are left; Slurm's requeued job would wait for them)."""
        nodes: list[str] = []
        restarts = 0
        while True:
            info = slurm.job_info(job_id)
            if info.state == "RUNNING":
                nodes = info.nodes
            if info.restarts > restarts:
                restarts = info.restarts
                lost = self.lost_nodes(nodes)
                self.events.emit("job_requeued", job_id=job_id, restarts=info.restarts, nodes=nodes,
                                 lost=sorted(lost), reason=info.reason)  # fmt: skip
                self.log(f"supervisor: job {job_id} requeued by Slurm (restart {info.restarts})"
                         + (f"; lost {', '.join(sorted(lost))}: cancelling it" if lost else ""))  # fmt: skip
                if lost:  # cancelled, it never runs again: no need to wait for it to leave the lost node
                    slurm.cancel(job_id)
                    return slurm.job_info(job_id), lost
            if not info.active:
                return info, {}
            time.sleep(self.cfg.poll_s)

    def lost_nodes(self, nodes: list[str]) -> dict[str, str]:
        """The nodes among `nodes` that Slurm now has down or not responding (the machine is gone)."""
        states = slurm.node_states(self.cfg.partition)
        lost = {}
        for node in nodes:
            state, reason = states.get(node, ("gone", "not in sinfo"))
            if not slurm.usable(state) and not state.startswith("drain"):
                lost[node] = f"lost: {state}" + (f" ({reason})" if reason and reason != "none" else "")
        return lost

    # ------------------------------------------------------------------ after a failure
    def unhealthy(self, report_dir: Path, nodes: list[str]) -> dict[str, str]:
        """Nodes whose report says unhealthy (the failed checks), or that wrote no report."""
        bad = {}
        for node in nodes:
            path = report_dir / f"{node}.json"
            if not path.is_file():
                bad[node] = "no health report (the node did not run its check)"
                continue
            report = json.loads(path.read_text(encoding="utf-8"))
            failed = [f"{c['name']}: {c['detail']}" for c in report["checks"] if c["ok"] is False]
            if failed and not all(f.startswith("collective") for f in failed):
                bad[node] = "; ".join(f for f in failed if not f.startswith("collective"))
        return bad

    def check_after_failure(self, info: slurm.JobInfo) -> dict[str, str]:
        """Health-check the failed job's nodes that still answer (one srun task each, no collective)."""
        nodes = [n for n in info.nodes if n in slurm.usable_nodes(self.cfg.partition)]
        if not nodes:
            return {}
        report_dir = self.run_dir / "health" / f"after-job-{info.job_id}"
        cmd = ["srun", f"--nodes={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}",
               "--time=5", sys.executable, "-m", "zaya_train.cluster.health", "--report-dir", str(report_dir),
               "--checkpoint-dir", str(self.run_dir / "checkpoints"), "--no-collective",
               *shlex.split(self.cfg.health_args)]  # fmt: skip
        with contextlib.suppress(slurm.SlurmError):  # an unhealthy node exits 76: its report says why
            slurm.run(cmd, timeout=300)
        return self.unhealthy(report_dir, nodes)

    def stragglers_of(self, since: float) -> dict[str, str]:
        """Nodes named by straggler events written after `since`."""
        out = {}
        for e in read_events(self.run_dir, "straggler"):
            if e["time_unix"] >= since:
                out[e["node"]] = (f"straggler: rank {e['straggler_rank']} forward {e['forward_ms']} ms vs median "
                                  f"{e['median_ms']} ms (k={e['k']}) for {e['windows']} windows")  # fmt: skip
        return out

    def exclude(self, bad: dict[str, str], job_id: str) -> None:
        """Drain (with the reason) and exclude each bad node."""
        for node, why in bad.items():
            self.excluded[node] = why
            drained = False
            if self.cfg.drain and not why.startswith("lost: "):  # a lost node is down already
                try:
                    slurm.drain(node, f"zaya job {job_id}: {why}")
                    drained = True
                except slurm.SlurmError as err:
                    self.log(f"supervisor: could not drain {node} ({err}); excluding it from this run only")
            self.events.emit("node_excluded", node=node, reason=why, drained=drained, job_id=job_id)
            self.log(f"supervisor: {'drained' if drained else 'excluded'} {node}: {why}")

    def _excluded_text(self) -> str:
        return ", ".join(sorted(self.excluded)) or "none"

    def _finished(self) -> bool:
        return (self.run_dir / "summary.json").is_file()

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        """Submit until the run finishes (0) or the supervisor gives up (1); prints one final line."""
        failures: list[str] = []
        try:
            while True:
                started = time.time()
                job_id = self.submit()
                info, lost = self.wait(job_id)
                self.jobs.append(info)
                if info.state == "COMPLETED" and info.exit_code == 0 and self._finished():
                    self.events.emit("run_completed", job_id=job_id, jobs=len(self.jobs))
                    self.log(f"supervisor: run finished in job {job_id} after {len(self.jobs)} job(s): {self.run_dir}")
                    return 0
                # Exit codes of the training processes do not survive torchrun (its agent exits 1), so what the
                # run recorded says why: straggler and crash_loop events since this job started.
                stragglers = self.stragglers_of(started)
                crashed = [e for e in read_events(self.run_dir, "crash_loop") if e["time_unix"] >= started]
                what = self.failure(info, stragglers, lost)
                failures.append(what)
                self.events.emit("job_failed", job_id=job_id, state=info.state, exit_code=info.exit_code,
                                 nodes=info.nodes, failure=what)  # fmt: skip
                self.log(f"supervisor: job {job_id} {what}")
                if crashed:
                    raise GiveUp(f"the same step failed on every recent attempt (step {crashed[-1]['step']}); "
                                 f"not resubmitting: see {self.run_dir / 'crash_loop.json'}")  # fmt: skip
                if info.exit_code == ExitCode.NODE_UNHEALTHY:
                    bad = self.unhealthy(self.run_dir / "health" / f"job-{job_id}", info.nodes)
                elif lost or stragglers:  # a known cause needs no second look
                    bad = lost or stragglers
                else:  # an unexplained failure: the nodes that are gone, and a health check of the others
                    bad = {**self.check_after_failure(info), **self.lost_nodes(info.nodes)}
                self.exclude(bad, job_id)
                retries = len(self.jobs) - 1
                if retries >= self.cfg.max_retries:
                    raise GiveUp(f"retry budget spent: {len(self.jobs)} job(s), {self.cfg.max_retries} resubmission(s); "
                                 f"failures: {' | '.join(failures)}")  # fmt: skip
                delay = min(self.cfg.backoff_s * 2**retries, self.cfg.max_backoff_s)
                self.events.emit("resubmit", after_job=job_id, backoff_s=delay, retry=retries + 1)
                self.log(f"supervisor: resubmitting in {delay:.0f} s (retry {retries + 1} of {self.cfg.max_retries})")
                time.sleep(delay)
        except GiveUp as err:
            self.events.emit("gave_up", reason=str(err), jobs=len(self.jobs))
            print(f"supervisor: gave up: {err}", file=sys.stderr)
            return 1

    def failure(self, info: slurm.JobInfo, stragglers: dict[str, str], lost: dict[str, str]) -> str:
        """What happened to a job, in words."""
        if lost:
            return f"lost {', '.join(sorted(lost))}: requeued by Slurm, cancelled to resubmit without it"
        if stragglers:
            return f"stopped on a straggler: {', '.join(sorted(stragglers))}"
        if info.exit_code == ExitCode.NODE_UNHEALTHY:
            return "failed: a node failed its health check (exit 76)"
        if info.state == "COMPLETED":
            return "ended without finishing the run (preempted: saved and exited)"
        if info.state in ("NODE_FAIL", "BOOT_FAIL", "TIMEOUT", "PREEMPTED", "OUT_OF_MEMORY", "CANCELLED"):
            return f"{info.state.lower()} on {','.join(info.nodes)}"
        return f"failed: exit {info.exit_code}" + (f", signal {info.signal}" if info.signal else "")


def parse_args(argv: list[str]) -> SupervisorConfig:
    """Options before `--`, Hydra overrides of the pretrain service after it."""
    own, overrides = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="python -m zaya_train.cluster.supervise", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    defaults = SupervisorConfig()
    for name, value in vars(defaults).items():
        if name == "overrides":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=value)
        else:
            kind = {"nproc": int, "partition": str}.get(name, type(value))
            parser.add_argument(flag, type=kind, default=value)
    cfg = SupervisorConfig(**vars(parser.parse_args(own)), overrides=overrides)
    cfg.validate()
    return cfg


def main(argv: list[str] | None = None) -> int:
    """CLI entry; a bad option is one line and exit 2."""
    try:
        cfg = parse_args(sys.argv[1:] if argv is None else argv)
        return Supervisor(cfg).run()
    except (ZayaConfigError, slurm.SlurmError) as err:
        print(f"supervisor: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
