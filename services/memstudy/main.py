"""memstudy: zaya-model's decode/prefill byte accounting -> memsim step streams -> simulated vs roofline.

Wiring only: validate the config, take each phase's per-layer traffic from zaya-model's `step_traffic` (the
one place that knows the model) as memsim's plain `LlmStepShape`, and hand them to `run_memstudy`.
"""

from pathlib import Path

import zaya_config
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from zaya_config.service_main import service_main


def study_case(model, study, phase: str):
    """One step of `phase` as zaya-model's `step_traffic` accounts it, in memsim's terms."""
    from memsim.workloads import LlmStepShape, StudyCase
    from zaya_model import step_traffic

    ctx = study.context_len if phase == "decode" else study.prompt_len
    traffic = step_traffic(model, phase, study.batch_size, ctx, study.dtype_bytes)
    labels = {"model": model.name, "context_len": ctx if phase == "decode" else 0,
              "prompt_len": ctx if phase == "prefill" else 0}  # fmt: skip
    return StudyCase(LlmStepShape(**traffic.per_layer()), traffic.accounting_bytes, traffic.flops, labels)


@service_main("conf", "memstudy", errors=("memsim.errors:MemsimError", "zaya_model.errors:ZayaModelError"))
def main(cfg: DictConfig) -> None:
    OmegaConf.resolve(cfg)  # interpolations across groups (paths.*) resolve before per-group validation
    objects = zaya_config.validate_config(cfg)
    from memsim.workloads import MemstudyConfig, run_memstudy

    study = zaya_config.validate_node("memstudy", cfg.memstudy, MemstudyConfig)
    model, hardware, spec = objects["model"], objects["hardware"], objects["memsim"].build_spec()
    cases = [study_case(model, study, phase) for phase in study.phases]
    out = Path(HydraConfig.get().runtime.output_dir)
    header = {"model": model.name, "hardware": hardware.name, "memstudy": OmegaConf.to_container(cfg.memstudy)}
    doc = run_memstudy(spec, cases, study, out, header, peak_flops=hardware.peak_bf16_flops,
                       progress=cfg.logging.progress)  # fmt: skip
    for r in doc["results"]:
        print(f"{spec.name} {r['phase']}: {r['achieved_bw_gbps']:.1f} of {r['peak_bw_gbps']:.1f} GB/s, "
              f"{r['time_per_token_ns'] / 1e3:.4g} us/token (roofline {r['roofline_time_per_token_ns'] / 1e3:.4g}), "
              f"p99 read {r['read_latency_p99_ns']:.0f} ns, {r['energy_per_token_nj'] / 1e6:.4g} mJ/token")  # fmt: skip
    print(f"run dir: {out}")


if __name__ == "__main__":
    main()
