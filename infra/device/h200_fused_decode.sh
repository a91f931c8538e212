#!/usr/bin/env bash
# One device call for zaya-model's fused decode layer (issue 17), from the repository root on a lent H200:
#     OUT=$OUT bash infra/device/h200_fused_decode.sh   # <= 570 s (run's timeout_s=600); logs, JSON under $OUT
# Needs only torch and triton (the GPU image has both): the sources come from the working tree. Runs the fused
# GPU tests (the plan's two options off, on and each alone), the launch-shape tuning at 40 layers, then the batch-1
# benchmark at 4 and 40 layers of the default plan and of TUNING (JSON over zaya_model.decode.fused.TUNING: the
# previous plan unless set); each step prints its exit code, seconds and last lines. Record what it prints in
# packages/zaya-model/BENCHMARKS.md.
set -u
: "${OUT:?set OUT to a folder for logs and results}"
export PYTHONPATH=$PWD/packages/zaya-model/src:$PWD/packages/zaya-config/src PYTHONUNBUFFERED=1
# the plan measured before both options were on (its one home: tune_fused_decode.PREVIOUS_PLAN)
TUNING=${TUNING:-$(cd packages/zaya-model/benchmarks && python3 -c \
  'import json, tune_fused_decode as t; print(json.dumps(t.PREVIOUS_PLAN))')}
source infra/device/step.sh
# most telling first (a slot that hangs loses only itself; the slots sum to 570 s, under a call's 600 s):
# the GPU tests gate adopting an option; the tuning times every variant against the defaults in one process
TAIL=12 step pytest 150 python3 -m pytest -m gpu -q -p no:cacheprovider -W ignore --tb=short -k fused \
  packages/zaya-model/tests/test_zaya_model_decoding.py
cd packages/zaya-model/benchmarks
TAIL=12 step tune40 220 python3 tune_fused_decode.py --out "$OUT/tune40" --layers 40 --tokens 128
TAIL=4 step bench_default 100 python3 bench_decode.py --out "$OUT/default" --layers 4,40 --batches 1 \
  --impls triton-graph --no-hf
TAIL=4 step bench_tuned 100 python3 bench_decode.py --out "$OUT/tuned" --layers 4,40 --batches 1 \
  --impls triton-graph --no-hf --tuning "$TUNING"
