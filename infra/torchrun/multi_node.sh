#!/usr/bin/env bash
# Pretraining over several nodes under torchrun (c10d rendezvous). Run the same command on every node:
#   MASTER_ADDR=node0 NNODES=16 RUN_ID=zaya1-base-01 RUN_DIR=/shared/runs/zaya1-base-01 \
#     infra/torchrun/multi_node.sh model=zaya1-base train=zaya1-base recipe=zaya1-base hardware=h200
# RUN_DIR must be on a file system every node sees (checkpoints are written by every rank).
# MAX_RESTARTS lets torchrun restart the whole group after a worker failure; training resumes from the
# latest checkpoint by itself. Extra arguments are Hydra overrides.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${MASTER_ADDR:?set MASTER_ADDR to the host of the rendezvous (e.g. the first node)}"
: "${NNODES:?set NNODES to the number of nodes}"
: "${RUN_ID:?set RUN_ID to a name shared by every node of this job}"
: "${RUN_DIR:?set RUN_DIR to a run folder on a shared file system}"
NPROC=${NPROC:-$(python3 -c "import torch; print(max(torch.cuda.device_count(), 1))")}
PYTHON=${PYTHON:-python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# A restarted group must not dial the previous attempt's dead gloo/NCCL peers through a shared store.
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=${TORCH_DISABLE_SHARE_RDZV_TCP_STORE:-1}
# NVLink multicast off (shared hosts); failed collectives raise instead of hanging (see infra/README.md).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3}
# DRY_RUN=1 prints the command line instead of running it (what tests/test_infra_torchrun.py checks).
exec ${DRY_RUN:+echo} "$PYTHON" -m torch.distributed.run \
  --nnodes="$NNODES" \
  --nproc_per_node="$NPROC" \
  --rdzv_backend=c10d \
  --rdzv_endpoint="$MASTER_ADDR:${MASTER_PORT:-29500}" \
  --rdzv_id="$RUN_ID" \
  --max-restarts="${MAX_RESTARTS:-3}" \
  services/pretrain/main.py \
  hydra.run.dir="$RUN_DIR" \
  "$@"
