# Source this on a lent GPU machine (torch present, hydra/omegaconf/zarr not) from the repository root:
#     source infra/device/setup.sh
# It installs the wheels carried in .whl/ (hydra-core, omegaconf, antlr4, zarr, numcodecs, donfig, crc32c,
# poetry-core, fetched as zaya-train's BENCHMARKS.md says; diffusers, peft, transformers, tokenizers,
# safetensors, huggingface-hub, accelerate, regex for manta's bench_costs.py, as manta's BENCHMARKS.md says)
# into /tmp/site, builds our packages there so their entry points (config search path, `zaya` sub-commands)
# exist, and puts the working tree's sources first on PYTHONPATH, so the code that runs is the tree's own.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || return 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --upgrade \
  --target /tmp/site-zaya packages/zaya-config packages/zaya-model packages/zaya-train packages/collbench \
  tools/zaya-cli || return 1
PYTHONPATH=$(ls -d "$PWD"/packages/*/src "$PWD"/tools/*/src | paste -sd:):/tmp/site-zaya:/tmp/site
export PYTHONPATH PATH=/tmp/site-zaya/bin:$PATH PYTHONUNBUFFERED=1
