"""size: collbench's sizing study for a hardware profile -> recommended zaya-model config (wiring only)."""

import logging
from pathlib import Path

import zaya_config
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from zaya_config.service_main import service_main

log = logging.getLogger(__name__)


@service_main(
    "conf",
    "size",
    errors=("collbench.errors:CollbenchError", "zaya_model.errors:ZayaModelError", "zaya_train.errors:ZayaTrainError"),
)
def main(cfg: DictConfig) -> None:
    """Validate, run the study (measured with the composed `train`/`recipe` when `sizing.measure`), write its
    tables, plots and the recommended config into the run dir."""
    objs = zaya_config.validate_config(cfg)
    from collbench.sizing.study import run_sizing

    out = Path(HydraConfig.get().runtime.output_dir)
    setup = None
    if objs["sizing"].measure:
        from collbench.sizing.measure_train import TrainSetup
        from zaya_train.build import data_cache_dir

        cache = data_cache_dir(cfg, objs["train"])
        setup = TrainSetup(objs["train"], objs["recipe"], objs["hardware"], cache, out / "runs")
    progress = objs["logging"].progress
    outcome = run_sizing(objs["sizing"], objs["model"], objs["hardware"], out, setup, progress)
    c = outcome.chosen
    log.info(
        "recommended %d experts x %d, top-%d: %s",
        c.num_experts,
        c.moe_intermediate_size,
        c.num_experts_per_tok,
        outcome.files["recommended"],
    )
    if outcome.summary is not None:
        err = outcome.summary["estimator_error"]
        log.info(
            "measured %d candidates; estimator error on held-out candidates: median %.1f%%, worst %.1f%%; %s",
            len(outcome.candidates),
            100 * err["median"],
            100 * err["worst"],
            outcome.files["results"],
        )


if __name__ == "__main__":
    main()
