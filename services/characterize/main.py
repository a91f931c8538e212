"""characterize: collbench's collective, GEMM and bandwidth sweeps on this machine (no logic of its own)."""

import logging
from pathlib import Path

import zaya_config
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from zaya_config.service_main import service_main

log = logging.getLogger(__name__)


@service_main("conf", "characterize", errors=("collbench.errors:CollbenchError",))
def main(cfg: DictConfig) -> None:
    """Validate, run the sweeps, write results into the run dir."""
    objs = zaya_config.validate_config(cfg)
    from collbench.characterize import run_characterization

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    summary = run_characterization(
        objs["bench"], objs["hardware"], run_dir, objs.get("model"), progress=objs["logging"].progress
    )
    log.info("measured ceilings: %s", summary["measured"])
    log.info("use them with: %s", " ".join(summary["override"]))


if __name__ == "__main__":
    main()
