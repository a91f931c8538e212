"""Every shell command in every README runs as written (tests/readme_blocks.py finds them).

Each block runs as one `bash -euo pipefail` script in a fresh folder that looks like the checkout (its top-level
entries linked in, `../shared` beside it), with this interpreter's bin folder first on PATH, so `zaya`,
`python` and `python3` are the workspace's. Three tables say what does not run as written, each with its reason:
SETUP (installs and `make` targets: checked structurally), SKIP (GPU-only, multi-node, needs a download or the
reader's own files, or already run as written by a named test) and SIZE (overrides appended to keep a long
command short). A table entry that matches no command fails the test, so the tables cannot go stale.
"""

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from readme_blocks import REPO, SHARED, Block, checkout_workdir, run_script, shell_blocks

# (README, start of a command) -> why it is not run here. Commands not listed run as written.
SKIP = {
    ("packages/collbench/README.md", "zaya bench nccl "): "GPU-only: nccl-tests binaries, mpirun and 8 GPUs",
    ("packages/collbench/README.md", "python3 services/characterize/main.py -m "): "covered: services/characterize/"
    "tests/test_service_characterize.py runs this sweep (the same dtypes, tiny sizes) and checks the merge",
    ("packages/collbench/README.md", "zaya bench merge "): "needs the sweep above; packages/collbench/tests/"
    "test_collbench_cli.py::test_merge_command merges a recorded multirun folder",
    ("packages/collbench/README.md", "python3 services/size/main.py sizing.measure=true"): "covered: services/size/"
    "tests/test_service_size_measured.py runs this command as written (twice: measured, then reused) and checks "
    "every file it writes",
    ("packages/collbench/README.md", "python3 -c \"import json; r = json.load(open('outputs/size-measured/"):
    "covered: test_service_size_measured.py runs it as written on the run above",
    ("packages/manta/README.md", "zaya manta "): "covered: packages/manta/tests/test_manta_readme.py runs the README's "
    "bash blocks as written (one test per block, the embedding cache shared with the session)",
    ("packages/memsim/README.md", "zaya memsim "): "covered: packages/memsim/tests/test_memsim_readme.py runs these "
    "lines as written (through memsim's typer app, the one `zaya memsim` mounts), with ../shared beside the checkout",
    ("packages/memsim/README.md", "python run_my_dma.py"): "covered: packages/memsim/tests/test_memsim_readme_cosim.py "
    "writes the section's `# file:` Python blocks, then runs its commands as written",
    ("packages/memsim/README.md", "zaya memsim cosim "): "covered: packages/memsim/tests/test_memsim_readme_cosim.py "
    "(needs Icarus Verilog and Verilator; runs the section as written)",
    ("packages/zaya-train/README.md", "zaya model generate outputs/"): "needs a trained run dir (the main job, minutes "
    "of training); packages/zaya-train/tests/test_train_model_cli.py generates from a run dir and a HF folder",
    ("packages/zaya-train/README.md", "zaya model generate ~/models/"): "the reader's HF folder; --compile is for GPUs",
    ("packages/zaya-train/README.md", "RUN=$(ls -d outputs/pretrain"): "covered: packages/zaya-train/tests/"
    "test_eval_readme.py runs this whole block as written in a folder holding a trained run dir",
    ("packages/zaya-train/README.md", "zaya eval $RUN"): "covered by test_eval_readme.py (the block above)",
    ("packages/zaya-train/README.md", "zaya lm-eval "): "covered by test_eval_readme.py (the block above)",
    ("packages/zaya-train/README.md", "mkdir -p my_tasks"): "covered by test_eval_readme.py (the block above)",
    ("packages/zaya-train/README.md", "python -c \"import json"): "covered by test_eval_readme.py (the block above)",
    ("packages/zaya-train/README.md", "cat > my_tasks/"): "covered by test_eval_readme.py (the block above)",
    ("packages/zaya-train/README.md", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 torchrun"): "multi-process restarts "
    "under torchrun; packages/zaya-train/tests/test_train_ft_restart.py runs the same torchrun restart drill",
    ("services/characterize/README.md", "python3 services/characterize/main.py bench=h200"): "GPU-only: an H200",
    ("services/compose/README.md", "python services/compose/main.py manta.catalog=/data/"): "the reader's catalog "
    "(/data/catalog.parquet)",
    ("services/compose/README.md", "python services/compose/main.py manta.catalog=my_local_models"): "needs a download: "
    "local diffusers models and LoRA files for rendering",
    ("services/pretrain/README.md", "python services/pretrain/main.py -m train.seed="): "covered: services/pretrain/"
    "tests/test_service_pretrain.py runs this sweep (two seeds, the same tiny overrides)",
    ("services/pretrain/README.md", "torchrun --nproc_per_node 2 services/pretrain"): "covered: services/pretrain/"
    "tests/test_service_pretrain_torchrun.py trains FSDP under torchrun with 2 processes",
    ("services/pretrain/README.md", "torchrun --standalone --nproc_per_node 2 services/pretrain/main.py train.distributed."
     "context_parallel=2"): "covered: services/pretrain/tests/test_service_pretrain_context_parallel.py runs it as "
    "written (the tiny overrides appended) and compares its losses with one process",
    ("services/pretrain/README.md", "zaya data prepare /usr/lib/python3.12"): "data for the H200 recipe below (a "
    "32768-token BPE over the whole standard library: minutes), and the path is the reader's Python",
    ("services/pretrain/README.md", "zaya run pretrain hardware=h200"): "GPU-only: an H200",
    ("services/size/README.md", "python3 services/size/main.py hardware=h200 model=zaya1-base sizing.measured_dir="):
    "needs the reader's characterize run dir (<characterize run dir>); services/size/tests run it on a real one",
    ("infra/README.md", "zaya run pretrain -m hydra/launcher=zaya_slurm"): "multi-node: submits a job array to Slurm "
    "(the dry run below renders the same script)",
    ("infra/torchrun/README.md", "NPROC=8 "): "GPU-only: 8 H200s",
    ("infra/torchrun/README.md", "NPROC=2 "): "covered: services/pretrain/tests/test_service_pretrain_torchrun.py runs "
    "single_node.sh with 2 gloo processes (FSDP2)",
}  # fmt: skip

# The same knobs as the services' own tests (services/*/tests): the same commands, smaller.
TINY_PRETRAIN = ("recipe.phases.0.tokens=49152 recipe.phases.1.tokens=16384 train.data.sources.library.max_files=60 "
                 "train.data.sources.tests.max_files=80 train.data.val_fraction=0.15 train.eval.every_steps=12 "
                 "train.eval.sequences=8 train.eval.sample_tokens=24 train.checkpoint.every_steps=12 "
                 "train.eval.downstream.limit=100")  # fmt: skip
TINY_CHARACTERIZE = ("bench.collectives.max_bytes=2K bench.collectives.iters=2 bench.gemm.square_sizes=[32,64] "
                     "bench.gemm.quant_m=32 bench.gemm.quant_k=32 bench.gemm.quant_n_min=16 bench.gemm.quant_n_max=64 "
                     "bench.gemm.quant_n_step=16 bench.gemm.tokens=32 bench.gemm.tokens_per_expert=8 bench.gemm.iters=2 "
                     "bench.membw.max_bytes=64K bench.membw.iters=2 logging.progress=false")  # fmt: skip
TINY_MEMSTUDY = "model=zaya1-tiny memstudy.sample_bytes=32768 memstudy.window_bytes=16384 logging.progress=false"
# (README, start of a command) -> text appended to it.
SIZE = {
    ("services/pretrain/README.md", "python services/pretrain/main.py "): TINY_PRETRAIN,
    ("services/characterize/README.md", "python3 services/characterize/main.py "): TINY_CHARACTERIZE,
    ("packages/collbench/README.md", "zaya bench characterize "): TINY_CHARACTERIZE,
    ("packages/collbench/README.md", "zaya bench collectives "): "-e 4K -n 2 -w 1",
    ("services/memstudy/README.md", "python services/memstudy/main.py"): TINY_MEMSTUDY,
}

SETUP = ("pip install ", "make ")  # checked, not run: they change the environment (or are the whole suite)
SLOW_BLOCKS = {"services/", "packages/manta/", "packages/collbench/", "packages/memsim/", "packages/zaya-train/"}

BLOCKS = shell_blocks()


def _match(table: dict, block: Block, command: str) -> str | None:
    """The entry for `command`: the longest matching start wins."""
    hits = [
        (len(start), v) for (readme, start), v in table.items() if readme == block.readme and command.startswith(start)
    ]
    return max(hits, key=lambda hit: hit[0])[1] if hits else None


def script(block: Block) -> tuple[str, list[str]]:
    """The block as a bash script (setup and skipped commands left out, size overrides appended) and what was
    left out."""
    lines, left_out = [], []
    for command in block.commands:
        why = "setup, checked structurally" if command.startswith(SETUP) else _match(SKIP, block, command)
        if why:
            left_out.append(f"{command.splitlines()[0]}  <- {why}")
            continue
        extra = _match(SIZE, block, command)
        if extra:
            command = f"{command.partition('  #')[0].rstrip()} {extra}"
        lines.append(command)
    return "\n".join(lines), left_out


def _params():
    for block in BLOCKS:
        text, _ = script(block)
        if not text:
            continue
        marks = [pytest.mark.slow] if any(block.readme.startswith(p) for p in SLOW_BLOCKS) else []
        yield pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", list(_params()))
def test_readme_block_runs_as_written(block: Block, tmp_path: Path):
    text, left_out = script(block)
    if "../shared" in text and not SHARED.is_dir():
        pytest.skip(f"{block.id} reads {SHARED}, which is absent")
    done = run_script(text, checkout_workdir(tmp_path))
    assert done.returncode == 0, (
        f"{block.id} failed (left out: {left_out})\n--- script\n{text}\n--- stdout\n{done.stdout[-3000:]}"
        f"\n--- stderr\n{done.stderr[-4000:]}"
    )


def test_root_readme_compose_example_runs_as_written(tmp_path: Path):
    """The root README's inline compose example (`zaya run compose 'prompt="..., ..."' ...`), quoted for Hydra."""
    (command,) = re.findall(r"`(zaya run compose [^`]+)`", (REPO / "README.md").read_text(encoding="utf-8"))
    done = run_script(command, checkout_workdir(tmp_path))
    assert done.returncode == 0, done.stderr[-4000:]
    assert "plan 0: " in done.stdout + done.stderr and "samurai" in done.stdout + done.stderr


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):", (REPO / "Makefile").read_text(encoding="utf-8"), re.M))


def _extras(project: Path) -> set[str]:
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"].get("optional-dependencies", {}))


def test_setup_commands_name_real_targets_packages_and_extras():
    """`make X` names a Makefile target; `pip install PATH[extra,...]` names a package folder and its extras."""
    checked = 0
    for block in BLOCKS:
        for command in block.commands:
            code = command.split("  #")[0]
            if command.startswith("make "):
                target = shlex.split(code)[1]
                assert target in _makefile_targets(), f"{block.id}: no Makefile target {target!r}"
                checked += 1
            elif command.startswith("pip install "):
                for arg in shlex.split(code)[2:]:
                    path, _, extras = arg.partition("[")
                    assert (REPO / path / "pyproject.toml").is_file(), f"{block.id}: {path} is not a package folder"
                    missing = {e for e in extras.rstrip("]").split(",") if e} - _extras(REPO / path)
                    assert not missing, f"{block.id}: {path} has no extra(s) {sorted(missing)}"
                checked += 1
    assert checked >= 15


def test_every_table_entry_matches_a_command():
    for table in (SKIP, SIZE):
        for readme, start in table:
            commands = [c for b in BLOCKS if b.readme == readme for c in b.commands]
            assert any(c.startswith(start) for c in commands), f"stale entry: {readme}: {start!r}"


def test_every_readme_with_commands_is_found():
    found = {b.readme for b in BLOCKS}
    assert {"README.md", "packages/memsim/README.md", "services/pretrain/README.md", "infra/README.md",
            "tools/zaya-cli/README.md"} <= found  # fmt: skip
