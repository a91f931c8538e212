#!/usr/bin/env bash
# Fetch, on a machine that reaches the package registries, the wheels a lent GPU machine lacks, into .whl/
# (git-ignored; a `run` call names it in `carry`; infra/device/setup.sh installs them there).
# The GPU image has torch, numpy, pandas, pyarrow, typer, rich, sacrebleu, scikit-learn; what it lacks:
#   zaya-config / zaya-train:  hydra-core, omegaconf, antlr4, zarr, numcodecs, donfig, google-crc32c, poetry-core
#   manta's bench_costs.py:    diffusers, peft, transformers, tokenizers, safetensors, huggingface_hub,
#                              accelerate, regex (transformers checks regex >= 2025.10.22 at import)
#   zaya-train's lm-eval model: lm_eval, dill, chardet
#   zaya-model[kernels]:       liger-kernel (pure Python; torch and Triton are in the image)
# Versions follow poetry.lock where it pins them. Usage: infra/device/fetch_wheels.sh [DIR]
set -euo pipefail
dir=${1:-.whl}
mkdir -p "$dir"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
wheels=(
  hydra-core==1.3.2 omegaconf==2.3.0 zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 google-crc32c==1.8.0
  "poetry-core>=2.0,<3"
  diffusers==0.42.1 peft==0.21.2 transformers==5.24.0 tokenizers==0.23.3 safetensors==0.8.0
  huggingface_hub==1.33.0 accelerate==1.16.0 regex==2026.11.19
  lm_eval==0.4.13 dill==0.4.1 chardet==6.0.0.post1
  liger-kernel==0.8.5
)
for spec in "${wheels[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$dir" "$spec"
done
python3 -m pip wheel -q --no-deps -w "$dir" antlr4-python3-runtime==4.9.3  # an sdist only
du -sh "$dir"
