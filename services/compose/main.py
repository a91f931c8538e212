"""compose: a manta catalog + prompt + hardware profile -> composition plans (and optionally images).

Wiring only: validate the config, then hand it to `manta.service.run_compose`.
"""

import zaya_config
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from zaya_config.service_main import service_main


@service_main("conf", "compose", errors=("manta.errors:MantaError",))
def main(cfg: DictConfig) -> None:
    OmegaConf.resolve(cfg)  # interpolations across groups (manta.cache_dir -> paths.cache_dir) resolve first
    objects = zaya_config.validate_config(cfg)
    from manta.service import run_compose

    run_compose(
        objects["manta"],
        objects["manta_hardware"],
        cfg.prompt,
        HydraConfig.get().runtime.output_dir,
        render=objects.get("manta_render"),
    )


if __name__ == "__main__":
    main()
