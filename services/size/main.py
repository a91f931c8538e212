"""size: collbench's sizing study for a hardware profile -> recommended zaya-model config (wiring only)."""

import logging
from pathlib import Path

import zaya_config
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from zaya_config.service_main import service_main

log = logging.getLogger(__name__)


@service_main("conf", "size", errors=("collbench.errors:CollbenchError", "zaya_model.errors:ZayaModelError"))
def main(cfg: DictConfig) -> None:
    """Validate, run the study, write its tables, plots and the recommended config into the run dir."""
    objs = zaya_config.validate_config(cfg)
    from collbench.sizing.study import run_sizing

    outcome = run_sizing(objs["sizing"], objs["model"], objs["hardware"], Path(HydraConfig.get().runtime.output_dir))
    c = outcome.chosen
    log.info(
        "recommended %d experts x %d, top-%d: %s",
        c.num_experts,
        c.moe_intermediate_size,
        c.num_experts_per_tok,
        outcome.files["recommended"],
    )


if __name__ == "__main__":
    main()
