#!/usr/bin/env bash
# Issue 41 on one lent GPU: benchmarks/layer_mfu.py for the model alone and the Trainer at 4 and 8 layers, each
# kernel choice in the same process, the baseline first, with the profile's top kernels; then liger's kernels
# against the reference (the gpu tests, their differences printed; ~170 s on an H100, most of it compiling). From the repository root, after
# `source infra/device/setup.sh` (the carried .whl/ holds liger-kernel and the Trainer's wheels) with the BPE
# data of `zaya data prepare` carried in .bench-data (packages/zaya-train/BENCHMARKS.md says how):
#     infra/device/layer_mfu.sh OUT_DIR [layer_mfu.py options...]
# Pass --commit $(git rev-parse --short HEAD) as read here: the device's copy of .git can name an older HEAD.
set -uo pipefail
out=${1:?usage: layer_mfu.sh OUT_DIR [layer_mfu.py options...]}; shift
source infra/device/step.sh
mkdir -p "$out/lm"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import torch, triton, liger_kernel; print(torch.__version__, triton.__version__)"
TAIL=60 step layer_mfu "${LAYER_MFU_S:-420}" python3 packages/zaya-train/benchmarks/layer_mfu.py \
  --data-dir .bench-data --out "$out/lm" --run-dir /tmp/layer_mfu_run "$@"
TAIL=${KTAIL:-12} step kernels_gpu "${KERNEL_TEST_S:-180}" python3 -m pytest -q -s -n 0 -m gpu \
  packages/zaya-model/tests/test_zaya_model_kernels.py
