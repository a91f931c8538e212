"""Every shell command in every README runs as written (tests/readme_blocks.py finds them).

Each block runs as one `bash -euo pipefail` script in a fresh folder that looks like the checkout (its top-level
entries linked in, `../shared` beside it), with this interpreter's bin folder first on PATH, so `zaya`,
`python` and `python3` are the workspace's. Three tables say what does not run as written, each with its reason:
SETUP (installs and `make` targets: checked structurally), SKIP (GPU-only, multi-node, needs a download or the
reader's own files, or already run as written by a named test) and SIZE (overrides appended to keep a long
command short; it lives in readme_blocks.py, so a test that runs a README command in this test's place appends
the same, `readme_blocks.sized_command`). A table entry that matches no command fails the test, so the tables
cannot go stale.
"""

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from readme_blocks import REPO, SHARED, SIZE, Block, checkout_workdir, run_script, shell_blocks, sized, table_entry

# (README, start of a command) -> why it is not run here. Commands not listed run as written.
SKIP = {
    ("packages/ckpt-reshape/README.md", "python -c \"import torch, torch.distributed.checkpoint as dcp;"): "covered: "
    "packages/ckpt-reshape/tests/test_ckpt_reshape_readme.py runs the CLI block as written (one interpreter start)",
    ("packages/ckpt-reshape/README.md", "zaya ckpt "): "covered: test_ckpt_reshape_readme.py runs these lines as "
    "written (their words through ckpt-reshape's typer app, the one `zaya ckpt` mounts) and checks what they print",
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
    ("packages/zaya-train/README.md", "zaya data prepare /data/fineweb/"): "needs a Slurm cluster (sbatch) and the "
    "reader's corpus; packages/zaya-train/tests/test_train_prepare.py builds the same executor, checks its sbatch "
    "script and runs its array tasks' body",
    ("services/characterize/README.md", "python3 services/characterize/main.py  "): "covered: services/characterize/"
    "tests/test_service_characterize.py runs it as written (SIZE's overrides appended) and checks every file it writes",
    ("services/characterize/README.md", "python3 services/characterize/main.py bench=h200"): "GPU-only: an H200",
    ("services/compose/README.md", "python services/compose/main.py -m manta_hardware="): "covered: services/compose/"
    "tests/test_service_compose.py runs it as written (SIZE's batch appended) and checks each machine's plans",
    ("services/compose/README.md", "python services/compose/main.py prompt="): "covered: services/"
    "compose/tests/test_service_compose.py runs it as written (SIZE's batch appended) and checks plans and images",
    ("services/compose/README.md", "python services/compose/main.py manta.catalog=/data/"): "the reader's catalog "
    "(/data/catalog.parquet)",
    ("services/compose/README.md", "python services/compose/main.py manta.catalog=my_local_models"): "needs a download: "
    "local diffusers models and LoRA files for rendering",
    ("services/memstudy/README.md", "python services/memstudy/main.py -m memory="): "covered: services/memstudy/"
    "tests/test_service_memstudy.py runs it as written (SIZE's overrides appended) and checks the sweep summary",
    ("services/pretrain/README.md", "python services/pretrain/main.py  "): "covered: services/pretrain/tests/"
    "test_service_pretrain.py runs the main job as written (SIZE's overrides appended), checks its run dir, resumes it",
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
    ("services/size/README.md", "python3 services/size/main.py -m hardware="): "covered: services/size/tests/"
    "test_service_size.py runs it as written and checks each job's recommended config",
    ("services/size/README.md", "python3 services/size/main.py hardware=h200 model=zaya1-base sizing.measured_dir="):
    "needs the reader's characterize run dir (<characterize run dir>); services/size/tests run it on a real one",
    ("infra/README.md", "zaya run pretrain -m hydra/launcher=zaya_slurm"): "multi-node: submits a job array to Slurm "
    "(the dry run below renders the same script)",
    ("infra/README.md", "export SLURM_CONF="): "covered: tests/slurm_cluster.py sets it for every test that talks to "
    "the local cluster",
    ("infra/README.md", "sinfo"): "covered: tests/test_infra_slurm_cluster.py runs it as written (needs make slurm-up)",
    ("infra/README.md", "squeue"): "covered: tests/test_infra_slurm_cluster.py runs it as written (needs make slurm-up)",
    ("infra/README.md", "zaya run memstudy -m hydra/launcher=submitit_slurm"): "covered: tests/"
    "test_infra_slurm_submit.py runs it as written on the local cluster, sizes appended",
    ("infra/README.md", "zaya run pretrain -m hydra/launcher=zaya_slurm_cpu"): "covered: tests/"
    "test_infra_slurm_submit.py runs it as written on the local cluster, the tiny sizes appended",
    ("infra/README.md", "salloc -N 2 "): "covered: tests/test_infra_slurm_submit.py runs it as written on the local "
    "cluster (in a folder like the checkout), the tiny sizes appended",
    ("infra/README.md", "python -m zaya_train.cluster.supervise "): "covered: tests/test_infra_slurm_requeue.py runs it "
    "as written on the local cluster (in a folder like the checkout), the tiny sizes appended, through a lost node "
    "and a preemption",
    ("infra/torchrun/README.md", "NPROC=8 "): "GPU-only: 8 H200s",
    ("infra/torchrun/README.md", "NPROC=2 "): "covered: services/pretrain/tests/test_service_pretrain_torchrun.py runs "
    "single_node.sh with 2 gloo processes (FSDP2)",
}  # fmt: skip

SETUP = ("pip install ", "make ")  # checked, not run: they change the environment (or are the whole suite)
SLOW_BLOCKS = {"services/", "packages/manta/", "packages/collbench/", "packages/memsim/", "packages/zaya-train/"}

BLOCKS = shell_blocks()


def script(block: Block) -> tuple[str, list[str]]:
    """The block as a bash script (setup and skipped commands left out, size overrides appended) and what was
    left out."""
    lines, left_out = [], []
    for command in block.commands:
        why = "setup, checked structurally" if command.startswith(SETUP) else table_entry(SKIP, block.readme, command)
        if why:
            left_out.append(f"{command.splitlines()[0]}  <- {why}")
            continue
        lines.append(sized(block.readme, command))
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


def test_covered_entries_name_existing_tests():
    """A SKIP reason "covered: <test path> ..." names a test file that exists (the one that runs the command)."""
    named = [word.rstrip(",;:") for why in SKIP.values() if why.startswith("covered") for word in why.split()]
    paths = [word for word in named if "/" in word and word.endswith(".py")]
    assert len(paths) >= 10 and all((REPO / path).is_file() for path in paths), paths


def test_every_readme_with_commands_is_found():
    found = {b.readme for b in BLOCKS}
    assert {"README.md", "packages/memsim/README.md", "services/pretrain/README.md", "infra/README.md",
            "tools/zaya-cli/README.md"} <= found  # fmt: skip
