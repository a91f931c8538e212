#!/usr/bin/env bash
# Pretraining on one node under torchrun: one process per GPU (or NPROC CPU processes with gloo).
#   infra/torchrun/single_node.sh                                  # every visible GPU, the config's defaults
#   NPROC=8 infra/torchrun/single_node.sh model=zaya1-base train=zaya1-base recipe=zaya1-base hardware=h200
#   NPROC=2 infra/torchrun/single_node.sh train.device=cpu train.distributed.strategy=fsdp   # CPU, gloo
# Every rank gets the same run dir (RUN_DIR), so checkpoints and resume line up; rerunning with the same
# RUN_DIR resumes from its latest checkpoint. Extra arguments are Hydra overrides.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ -z "${NPROC:-}" ]]; then
  NPROC=$(python3 -c "import torch; print(max(torch.cuda.device_count(), 1))")
fi
RUN_DIR=${RUN_DIR:-outputs/pretrain/torchrun-$(date +%Y-%m-%d_%H-%M-%S)}
PYTHON=${PYTHON:-python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# A restarted group must not dial the previous attempt's dead gloo/NCCL peers through a shared store.
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=${TORCH_DISABLE_SHARE_RDZV_TCP_STORE:-1}
# NVLink multicast off (shared hosts); failed collectives raise instead of hanging (see infra/README.md).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3}
# DRY_RUN=1 prints the command line instead of running it (what tests/test_infra_torchrun.py checks).
exec ${DRY_RUN:+echo} "$PYTHON" -m torch.distributed.run \
  --standalone \
  --nproc_per_node="$NPROC" \
  --max-restarts="${MAX_RESTARTS:-0}" \
  services/pretrain/main.py \
  hydra.run.dir="$RUN_DIR" \
  "$@"
