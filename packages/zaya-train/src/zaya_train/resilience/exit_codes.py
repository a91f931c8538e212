"""Process exit codes of the fault-tolerance parts, distinct so a launcher or a person can tell them apart."""

from enum import IntEnum


class ExitCode(IntEnum):
    """Why a training process ended (0 is a finished or cleanly preempted run)."""

    OK = 0
    HANG = 72  # the heartbeat watchdog saw no progress; stacks were dumped
    PREEMPT_TIMEOUT = 73  # SIGTERM's grace time ran out before the save finished
    CRASH_LOOP = 74  # the same step failed repeatedly across restarts; see crash_loop.json
    ANOMALY_LIMIT = 75  # too many loss spikes / NaNs in a row, or too many rollbacks
    NODE_UNHEALTHY = 76  # a node failed its health check before the run (zaya_train.cluster.health)
    STRAGGLER = 77  # a straggler rank was found and action=stop: saved, resubmit without its node
