"""Cluster-level fault tolerance on Slurm: node health checks, straggler detection, and the supervisor that
drains bad nodes and resubmits a failed job without them (infra/README.md, "Fault tolerance on Slurm").

Process-level fault tolerance (preemption, hangs, NaNs, crash loops, exact resume) stays in
`zaya_train.resilience`; this package acts on what it records (`events.jsonl`, `attempts/`, exit codes).
Nothing here is imported by `import zaya_train`.
"""
