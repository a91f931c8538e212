"""memstudy: zaya-model's decode/prefill byte accounting -> memsim step streams -> simulated vs roofline.

Wiring only: validate the config, restate zaya-model's `decode_bytes_per_token` breakdown as memsim's
plain `LlmStepShape` (per layer and per sequence), and hand both to `memsim.workloads.run_memstudy`.
"""

from pathlib import Path

import zaya_config
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from zaya_config.service_main import service_main


def decode_case(model, study):
    """One decode step of the batch at `context_len`, as zaya-model accounts it."""
    from memsim.workloads import LlmStepShape, StudyCase
    from zaya_model import decode_bytes_per_token, flops_per_token

    L, B, ctx, dt = model.num_hidden_layers, study.batch_size, study.context_len, study.dtype_bytes
    step = decode_bytes_per_token(model, ctx, B, dt)
    per_position = decode_bytes_per_token(model, 1, B, dt).kv_cache / (L * B)
    expert = 3 * model.moe_intermediate_size * model.hidden_size * dt
    head = (model.vocab_size + B) * model.hidden_size * dt  # LM head read whole + B embedding rows
    shape = LlmStepShape(
        phase="decode", layers=L, batch_size=B, tokens=B,
        dense_bytes_per_layer=round((step.dense_weights - head) / L), head_bytes=head,
        expert_bytes=expert, experts_per_layer=model.num_experts,
        active_experts_per_layer=step.expert_weights / (L * expert),
        kv_read_bytes_per_sequence=round(step.kv_cache / (L * B)), kv_write_bytes_per_sequence=round(per_position),
        kv_capacity_bytes_per_sequence=round(per_position * max(model.max_position_embeddings, ctx + 1)),
        state_bytes_per_sequence=round(step.conv_and_delayed_state / (L * B)), state_read=True,
    )  # fmt: skip
    flops = B * flops_per_token(model, ctx + 1, training=False, causal=False)  # one token attends ctx + 1
    return StudyCase(shape, step.total, flops, {"model": model.name, "context_len": ctx, "prompt_len": 0})


def prefill_case(model, study):
    """One prefill of `prompt_len` tokens per sequence: weights read once, the prompt's K/V and state written."""
    from memsim.workloads import LlmStepShape, StudyCase
    from zaya_model import decode_bytes_per_token, flops_per_token

    L, B, P, dt = model.num_hidden_layers, study.batch_size, study.prompt_len, study.dtype_bytes
    weights = decode_bytes_per_token(model, 0, B * P, dt)  # B * P tokens through the weights at once
    written = decode_bytes_per_token(model, P, B, dt)
    per_position = written.kv_cache / (L * B * P)
    expert = 3 * model.moe_intermediate_size * model.hidden_size * dt
    head = (model.vocab_size + B * P) * model.hidden_size * dt
    shape = LlmStepShape(
        phase="prefill", layers=L, batch_size=B, tokens=B * P,
        dense_bytes_per_layer=round((weights.dense_weights - head) / L), head_bytes=head,
        expert_bytes=expert, experts_per_layer=model.num_experts,
        active_experts_per_layer=weights.expert_weights / (L * expert),
        kv_read_bytes_per_sequence=0, kv_write_bytes_per_sequence=round(written.kv_cache / (L * B)),
        kv_capacity_bytes_per_sequence=round(per_position * max(model.max_position_embeddings, P)),
        state_bytes_per_sequence=round(written.conv_and_delayed_state / (L * B)), state_read=False,
    )  # fmt: skip
    accounting = weights.expert_weights + weights.dense_weights + written.kv_cache + written.conv_and_delayed_state
    flops = B * P * flops_per_token(model, P, training=False)
    return StudyCase(shape, accounting, flops, {"model": model.name, "context_len": 0, "prompt_len": P})


@service_main("conf", "memstudy", errors=("memsim.errors:MemsimError", "zaya_model.errors:ZayaModelError"))
def main(cfg: DictConfig) -> None:
    OmegaConf.resolve(cfg)  # interpolations across groups (paths.*) resolve before per-group validation
    objects = zaya_config.validate_config(cfg)
    from memsim.workloads import MemstudyConfig, run_memstudy

    study = zaya_config.validate_node("memstudy", cfg.memstudy, MemstudyConfig)
    model, hardware, spec = objects["model"], objects["hardware"], objects["memsim"].build_spec()
    builders = {"decode": decode_case, "prefill": prefill_case}
    cases = [builders[phase](model, study) for phase in study.phases]
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
