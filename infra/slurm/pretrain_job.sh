#!/usr/bin/env bash
# The batch script the supervisor submits (python -m zaya_train.cluster.supervise): every node's health check
# (one task per node), then the run (srun_torchrun.sh). Exit 76 when a node is unhealthy: its report under
# RUN_DIR/health/job-<id>/ names it, and the supervisor drains it and resubmits without it.
# Environment: RUN_DIR (required), HEALTH_ARGS (extra health-check options), PYTHON, NPROC.
#SBATCH --ntasks-per-node=1
set -euo pipefail
: "${RUN_DIR:?set RUN_DIR}"
REPO=${ZAYA_REPO:-$SLURM_SUBMIT_DIR}  # sbatch runs a copy of this script: its own path says nothing
cd "$REPO"
PYTHON=${PYTHON:-python3}
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR=${MASTER_ADDR:-$(scontrol show node -o "$first" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)}
export MASTER_PORT=${MASTER_PORT:-$((29500 + SLURM_JOB_ID % 1000))}
report_dir="$RUN_DIR/health/job-$SLURM_JOB_ID"
# shellcheck disable=SC2086  # HEALTH_ARGS is a list of options
if ! srun --ntasks-per-node=1 "$PYTHON" -m zaya_train.cluster.health --report-dir "$report_dir" \
    --checkpoint-dir "$RUN_DIR/checkpoints" ${HEALTH_ARGS:-}; then
  echo "zaya job: a node failed its health check; reports in $report_dir" >&2
  exit 76
fi
exec "$REPO/infra/slurm/srun_torchrun.sh" "$@"
