#!/usr/bin/env bash
# The main job on one H200 through the real service, with a SIGKILL and a resume in the middle:
#     source infra/device/setup.sh && infra/device/h200_main_job.sh OUT_DIR [EXTRA HYDRA OVERRIDES...]
# Prepares the standard library as BPE shards with `zaya data prepare` (outputs/data), starts
# `zaya run pretrain model=zaya1-base model.num_hidden_layers=8 hardware=h200 train=h200 recipe=h200-stdlib ...`,
# kills it with SIGKILL once the
# checkpoint of step KILL_AFTER exists, runs the same command again (it resumes from that checkpoint) to
# the end, and copies metrics.jsonl, summary.json, events and plots to OUT_DIR.
set -uo pipefail
out=${1:?usage: h200_main_job.sh OUT_DIR [overrides...]}; shift
run=${RUN_DIR:-outputs/pretrain/h200-main-job}
kill_after=${KILL_AFTER:-20}  # a step train=h200 checkpoints (checkpoint.every_steps: 20)
mkdir -p "$out" outputs/data
if [[ ! -d outputs/data/stdlib.zarr ]]; then
  stdlib=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['stdlib'])")
  zaya data prepare "$stdlib" --glob '**/*.py' --out outputs/data/stdlib.zarr --tokenizer bpe \
    --vocab-size 32768 --no-progress || exit 1
fi
# zaya1-base width at LAYERS layers (8: what benchmarks/train_step.py measures; the preset default is zaya1-tiny)
cmd=(zaya run pretrain model=zaya1-base "model.num_hidden_layers=${LAYERS:-8}" hardware=h200 train=h200
     recipe=h200-stdlib paths.data_dir=outputs/data
     "hydra.run.dir=$run" logging.progress=false "$@")
rm -rf "$run"
"${cmd[@]}" > "$out/attempt1.log" 2>&1 &
pid=$!
step_dir=$(printf '%s/checkpoints/step_%08d' "$run" "$kill_after")
while kill -0 "$pid" 2>/dev/null && [[ ! -f "$step_dir/manifest.json" ]]; do sleep 0.5; done
if kill -9 "$pid" 2>/dev/null; then echo "SIGKILL after the checkpoint of step $kill_after"
else echo "no SIGKILL: attempt 1 ended before the checkpoint of step $kill_after existed"; fi
wait "$pid"; echo "attempt 1 exit code $?"
"${cmd[@]}" > "$out/attempt2.log" 2>&1; echo "attempt 2 exit code $?"
cp "$run"/{metrics.jsonl,summary.json,config.yaml,*.png} "$out"/ 2>/dev/null
cp "$run"/events.jsonl "$out"/ 2>/dev/null
python3 - "$run" <<'PY'
import json, statistics, sys
from pathlib import Path
records = [json.loads(line) for line in Path(sys.argv[1], "metrics.jsonl").read_text().splitlines() if line.strip()]
train = [r for r in records if r.get("kind") == "train"]
# steady: timed logging steps (step_ms present) past the first few; a run's last record and a resumed
# attempt's first one average over compilation, evaluation or the restart and are left out
steady = [r for r in train if r["step"] > 3 and r.get("step_ms") and r.get("tokens_per_s")]
print(f"train records {len(train)}; steps {train[-1]['step']}; tokens {train[-1]['tokens']}")
if steady:
    print(f"median tokens/s {statistics.median(r['tokens_per_s'] for r in steady):.0f}, "
          f"median MFU {statistics.median(r['mfu'] for r in steady):.3f} (timed steps {[r['step'] for r in steady]})")
vals = [r for r in records if r.get("kind") == "val"]
print("val loss", [round(r["val_loss"], 3) for r in vals])
summary = json.loads(Path(sys.argv[1], "summary.json").read_text())
print("summary", {k: summary[k] for k in ("steps", "tokens", "first_val_loss", "final_val_loss", "wall_s")})
PY
