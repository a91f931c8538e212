#!/usr/bin/env bash
# Inside a Slurm allocation (sbatch, salloc): one torchrun per node under srun, rendezvous from Slurm's
# environment (node rank = SLURM_NODEID; the store on the first node of SLURM_JOB_NODELIST, at its NodeAddr,
# a port derived from SLURM_JOB_ID), every rank writing RUN_DIR. Extra arguments are Hydra overrides.
#   salloc -N 2 env RUN_DIR=$PWD/outputs/pretrain/two-nodes NPROC=1 infra/slurm/srun_torchrun.sh train.device=cpu
# NPROC: workers per node (default: the node's GPUs, else 1). PYTHON: the interpreter (default python3).
set -euo pipefail
: "${SLURM_JOB_ID:?run inside a Slurm allocation (sbatch or salloc): SLURM_JOB_ID is not set}"
: "${RUN_DIR:?set RUN_DIR to a run folder every node sees}"
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
NNODES=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:?}}
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
# NodeAddr, not the node name: several slurmd on one host (infra/slurm/cluster.sh) have names no resolver knows.
MASTER_ADDR=${MASTER_ADDR:-$(scontrol show node -o "$first" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)}
MASTER_PORT=${MASTER_PORT:-$((29500 + SLURM_JOB_ID % 1000))}
export MASTER_ADDR MASTER_PORT OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=${TORCH_DISABLE_SHARE_RDZV_TCP_STORE:-1}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3}
if [[ -z "${NPROC:-}" ]]; then
  NPROC=$("$PYTHON" -c "import torch; print(max(torch.cuda.device_count(), 1))")
fi
# --kill-on-bad-exit: one node's torchrun failing ends the step (and the job) instead of leaving the rest
# waiting on a dead peer; the supervisor (python -m zaya_train.cluster.supervise) resubmits.
# shellcheck disable=SC2016  # $SLURM_NODEID is expanded by each task, not here
exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c '"$0" -m torch.distributed.run \
  --nnodes="$1" --nproc_per_node="$2" --node_rank="$SLURM_NODEID" \
  --master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT" --max-restarts="${MAX_RESTARTS:-0}" \
  services/pretrain/main.py hydra.run.dir="$RUN_DIR" "${@:3}"' "$PYTHON" "$NNODES" "$NPROC" "$@"
