"""Print the sbatch script that `zaya run SERVICE -m hydra/launcher=zaya_slurm ...` would submit (a dry run).

The script text comes from submitit's own sbatch renderer (the library hydra-submitit-launcher submits
through), fed with the launcher config Hydra composes for the service, so what this prints is what Slurm would
receive; it needs no Slurm installation. The array
size is the number of jobs in the sweep.

    python infra/slurm/render_sbatch.py pretrain train.lr=1e-3,3e-3 hydra.launcher.nodes=2
"""

import itertools
import shlex
import sys
import tempfile
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[2]


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """Expand comma sweeps (a=1,2 b=x,y) into one override list per job, as Hydra's basic sweeper does."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = []
    for override in parsed:
        key = override.get_key_element()
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
        choices.append([f"{key}={v}" for v in values])
    return [list(job) for job in itertools.product(*choices)]


def submitit_parameters(launcher: dict) -> dict:
    """Map the hydra-submitit-launcher config onto submitit's SlurmExecutor parameters."""
    params = {k: v for k, v in launcher.items() if k not in {"_target_", "submitit_folder", "max_num_timeout"}}
    renames = {"tasks_per_node": "ntasks_per_node", "timeout_min": "time", "name": "job_name"}
    params = {renames.get(k, k): v for k, v in params.items() if v is not None}
    mem_gb = params.pop("mem_gb", None)
    if mem_gb is not None:
        params["mem"] = f"{mem_gb}GB"
    return params


def render(service: str, overrides: list[str], services_dir: Path = REPO / "services") -> str:
    """The sbatch text for a sweep of `service` under the zaya_slurm launcher."""
    from submitit.slurm.slurm import _make_sbatch_string

    jobs = sweep_jobs(overrides)
    conf_dir = services_dir / service / "conf"
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        cfg = compose(service, ["hydra/launcher=zaya_slurm", *jobs[0]], return_hydra_config=True)
    launcher = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    # These two interpolate Hydra's run-time state (sweep dir, job name): fixed here, as submitit would see them.
    launcher.pop("submitit_folder", None)
    launcher["name"] = service
    params = submitit_parameters(OmegaConf.to_container(OmegaConf.create(launcher), resolve=True))
    if len(jobs) > 1:
        params["map_count"] = len(jobs)  # what submitit writes into --array for a sweep
    folder = Path(tempfile.mkdtemp(prefix="zaya-sbatch-")) / "%j"
    command = f"{shlex.quote(sys.executable)} -u -m submitit.core._submit {shlex.quote(str(folder))}"
    text = _make_sbatch_string(command=command, folder=folder, **params)
    jobs_text = "\n".join(f"#   job {i}: {' '.join(job)}" for i, job in enumerate(jobs))
    return f"# zaya: {len(jobs)} job(s) of service {service!r}\n{jobs_text}\n{text}"


def main(argv: list[str]) -> int:
    """CLI entry: SERVICE [OVERRIDES...]."""
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print(render(argv[0], argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
