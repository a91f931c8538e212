"""The `pretrain` service: compose -> validate -> zaya_train.run_pretraining -> run dir. No logic of its own."""

from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from zaya_config.service_main import service_main


@service_main("conf", "pretrain", errors=("zaya_train.errors:ZayaTrainError", "zaya_model.errors:ZayaModelError"))
def main(cfg: DictConfig) -> None:
    """Train per the composed config; print where the results are and what the model writes."""
    from zaya_config import validate_config

    OmegaConf.resolve(cfg)  # interpolations across groups (paths.*) resolve before per-group validation
    validate_config(cfg)
    from zaya_train import run_pretraining

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    summary = run_pretraining(cfg, run_dir)
    if summary.get("sample") is not None:
        print(f"--- sample after {summary['steps']} steps ({summary['tokens']} tokens) ---")
        print(summary["sample"])
        print("---")
    first, last = summary.get("first_val_loss"), summary.get("final_val_loss")
    if first is not None and last is not None:
        print(f"validation loss {first:.4f} -> {last:.4f} in {summary['wall_s']:.0f} s")
    print(f"run dir: {run_dir}")


if __name__ == "__main__":
    main()
