"""Decision: what Resilience tells the training loop to do; the Trainer carries it out.

The anomaly guard judges a step before the optimizer may touch the weights (accept, skip or roll back);
after a step, Resilience decides whether the loop goes on or stops (a preemption). Resilience only decides
and records; saving, reloading and moving the sampler are the Trainer's.
"""

from enum import Enum


class Decision(Enum):
    """What the loop does with the step just computed, or after it."""

    ACCEPT = "accept"  # apply the optimizer step / go on
    SKIP = "skip"  # drop this batch: zero the grads, no optimizer step, move on to the next batch
    ROLLBACK = "rollback"  # reload the last checkpoint and skip the data between it and this step
    STOP = "stop"  # save (when checkpoints are on) and end the process: a preemption
