"""Soak test: many random SIGKILLs (some inside checkpoint saves) over tiny real training runs.

    python packages/zaya-train/benchmarks/soak.py --kills 100 --out OUT [--async-save] [--smoke]

The run is `zaya_train.resilience.drill` (the real Trainer on zaya1-tiny). A round starts the drill,
SIGKILLs it at a random moment — 40% of kills wait for a save to be in flight — restarts it, and
repeats until the drill completes; rounds repeat until `--kills` kills were made. It reports restarts,
steps recomputed (completed steps newer than the checkpoint the next attempt resumed from), checkpoints
lost (a committed `latest` that the next attempt did not resume from: must be 0), and whether every
round's final state hash equals the uninterrupted run's (must). Writes soak.json and soak.png.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

SRC = [str(Path(__file__).resolve().parents[2] / p / "src") for p in ("zaya-train", "zaya-model", "zaya-config")]
sys.path[:0] = [p for p in SRC if p not in sys.path]

from zaya_config.train_checkpoint.layout import read_latest  # noqa: E402
from zaya_train.resilience.drill import FINAL_STATE_NAME  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}


def _drill(run_dir: Path, args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, "-m", "zaya_train.resilience.drill", "--run-dir", str(run_dir), "--cache-dir",
           str(args.out / "cache"), "--steps", str(args.steps), "--every", str(args.every), "--eval-every", "1000",
           "--max-same-step-failures", "1000000"]  # fmt: skip  # random kills are not a crash loop
    return cmd + (["--async-save"] if args.async_save else [])


def _attempts(run_dir: Path) -> list[dict]:
    records = []
    for path in sorted((run_dir / "attempts").glob("attempt-*.json")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            records.append({"current_step": -1, "resume_step": None})
    return records


def _in_save(run_dir: Path, since_unix: float) -> bool:
    """A save of this attempt is in flight (a killed attempt's leftover `.tmp.` folder does not count)."""
    root = run_dir / "checkpoints"
    try:
        return root.is_dir() and any(
            p.name.startswith(".tmp.") and p.stat().st_mtime >= since_unix for p in root.iterdir()
        )
    except FileNotFoundError:  # renamed or removed while we looked
        return False


def _kill_moment(proc: subprocess.Popen, run_dir: Path, known: int, rng: random.Random) -> tuple[bool, bool]:
    """Wait for this attempt's loop to run, then SIGKILL at a random moment; (killed, inside a save)."""
    aim_at_save, delay = rng.random() < 0.4, rng.uniform(0.0, 2.5)
    started, launched_unix = None, time.time()
    while proc.poll() is None:
        if started is None and len(list((run_dir / "attempts").glob("attempt-*.json"))) > known:
            started = time.monotonic()
        if started is not None:
            in_save = _in_save(run_dir, launched_unix)
            if (aim_at_save and in_save) or (not aim_at_save and time.monotonic() - started > delay):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True, in_save
            if aim_at_save and time.monotonic() - started > 30:  # no save came: kill anyway
                aim_at_save, delay = False, 0.0
        time.sleep(0.002)
    return False, False


def run_round(run_dir: Path, args: argparse.Namespace, kills_left: int, rng: random.Random) -> dict:
    """One drill to completion under up to `kills_left` kills."""
    stats = {"kills": 0, "kills_in_save": 0, "steps_recomputed": 0, "checkpoints_lost": 0, "restarts": 0}
    latest_at_kill: int | None = None
    while True:
        known = len(_attempts(run_dir))
        proc = subprocess.Popen(_drill(run_dir, args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        if latest_at_kill is not None or known:
            stats["restarts"] += 1
        killed, in_save = _kill_moment(proc, run_dir, known, rng) if stats["kills"] < kills_left else (False, False)
        if not killed:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"drill failed with exit code {proc.returncode}:\n{err.decode()[-3000:]}")
        attempts = _attempts(run_dir)
        if latest_at_kill is not None and len(attempts) > known:  # how the attempt after a kill resumed
            resumed = attempts[known].get("resume_step") or 0
            stats["checkpoints_lost"] += int(resumed < latest_at_kill)
            stats["steps_recomputed"] += max(0, attempts[known - 1]["current_step"] - 1 - resumed)
        if not killed:
            break
        stats["kills"] += 1
        stats["kills_in_save"] += int(in_save)
        latest_at_kill = read_latest(run_dir / "checkpoints") or 0
    final = json.loads((run_dir / FINAL_STATE_NAME).read_text())
    return {**stats, "state_hash": final["state_hash"], "metrics_digest": final["metrics_digest"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--kills-per-round", type=int, default=10)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--async-save", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="1 kill over 4 steps (checks the script works)")
    args = parser.parse_args()
    if args.smoke:
        args.kills, args.kills_per_round, args.steps = 1, 1, 4
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    from rich.progress import Progress

    started = time.time()
    reference_dir = args.out / "reference"
    subprocess.run(_drill(reference_dir, args), check=True, env=ENV, stdout=subprocess.DEVNULL)
    reference = json.loads((reference_dir / FINAL_STATE_NAME).read_text())
    rounds = []
    with Progress() as bar:
        task = bar.add_task("SIGKILLs", total=args.kills)
        while sum(r["kills"] for r in rounds) < args.kills:
            left = min(args.kills_per_round, args.kills - sum(r["kills"] for r in rounds))
            result = run_round(args.out / f"round-{len(rounds):03d}", args, left, rng)
            result["hash_equal"] = result["state_hash"] == reference["state_hash"]
            result["metrics_equal"] = result["metrics_digest"] == reference["metrics_digest"]
            rounds.append(result)
            bar.update(task, advance=result["kills"])
    summary = {key: sum(r[key] for r in rounds) for key in ("kills", "kills_in_save", "restarts", "steps_recomputed",
                                                            "checkpoints_lost")}  # fmt: skip
    summary.update(
        rounds=len(rounds),
        steps_per_round=args.steps,
        checkpoint_every=args.every,
        async_save=args.async_save,
        all_hashes_equal=all(r["hash_equal"] for r in rounds),
        all_metrics_equal=all(r["metrics_equal"] for r in rounds),
        reference_hash=reference["state_hash"],
        wall_s=round(time.time() - started, 1),
    )
    (args.out / "soak.json").write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=1))
    _plot(rounds, args.out / "soak.png")
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    if summary["checkpoints_lost"] or not summary["all_hashes_equal"] or not summary["all_metrics_equal"]:
        sys.exit(1)


def _plot(rounds: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    index = range(len(rounds))
    ax.bar(index, [r["kills"] for r in rounds], label="SIGKILLs", color="#999")
    ax.bar(index, [r["kills_in_save"] for r in rounds], label="of which inside a save", color="#d62728")
    ax.plot(index, [r["steps_recomputed"] for r in rounds], "ko-", label="steps recomputed")
    ax.set_xlabel("round (one drill to completion)")
    ax.set_title("soak: every round ended with the uninterrupted run's state hash" if all(r["hash_equal"] for r in rounds)
                 else "soak: HASH MISMATCH in some round")  # fmt: skip
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
