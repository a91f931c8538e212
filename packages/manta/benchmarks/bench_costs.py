"""Benchmark: measured peak memory and seconds per image of SD 1.5 / SDXL / the tiny world with 0-3 LoRAs of
rank 4-128, and the cost model (`manta.cost_model`) fitted to them.

    # one H200, from the repository root (infra/device/setup.sh installs the carried wheels listed in
    # BENCHMARKS.md: diffusers, peft, transformers, ...); about 3 minutes
    source infra/device/setup.sh && python3 packages/manta/benchmarks/bench_costs.py --device cuda \
        --arch sd15 sdxl --steps 20 --out $OUT
    python packages/manta/benchmarks/bench_costs.py --arch tiny-world --repeats 5 --out OUT   # the tiny world, CPU
    python packages/manta/benchmarks/bench_costs.py --smoke --out OUT     # CPU, scaled-down configs (CI)

The UNets, VAEs and text encoders are built locally from the published model configs (SD 1.5: the
runwayml v1-5 `unet/config.json` etc.; SDXL: the stabilityai base-1.0 configs), with random weights: cost
depends on shapes, not on weight values. LoRAs are peft adapters on every attention and feed-forward
projection, all active and unfused. One image = text encoding, `--steps` guided UNet steps (batch 2) and a
VAE decode. Peak memory is `torch.cuda.max_memory_allocated` on a GPU; on a CPU it is the bytes of weights
held (parameters and buffers), the memory a CPU run cannot do without. Seconds are the fastest of
`--repeats` images: wall time on a GPU, the process's CPU time on a CPU (one thread; wall time on a shared
machine measures its neighbours). Writes `costs.json` (command, devices, clocks, measurements, fitted model,
every prediction's error) and `costs.png`.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

SD15_UNET = {
    "block_out_channels": (320, 640, 1280, 1280),
    "down_block_types": ("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
    "up_block_types": ("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
    "cross_attention_dim": 768,
    "attention_head_dim": 8,
    "layers_per_block": 2,
    "sample_size": 64,
}
SDXL_UNET = {
    "block_out_channels": (320, 640, 1280),
    "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
    "up_block_types": ("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
    "cross_attention_dim": 2048,
    "attention_head_dim": (5, 10, 20),
    "transformer_layers_per_block": (1, 2, 10),
    "layers_per_block": 2,
    "use_linear_projection": True,
    "addition_embed_type": "text_time",
    "addition_time_embed_dim": 256,
    "projection_class_embeddings_input_dim": 2816,
    "sample_size": 128,
}
VAE = {
    "block_out_channels": (128, 256, 512, 512),
    "down_block_types": ("DownEncoderBlock2D",) * 4,
    "up_block_types": ("UpDecoderBlock2D",) * 4,
    "latent_channels": 4,
    "layers_per_block": 2,
}
CLIP_L = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12}
CLIP_BIGG = {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32, "num_attention_heads": 20}
ARCHES = {
    "sd15": {"unet": SD15_UNET, "vae": VAE, "text": [CLIP_L], "pixels": 512},
    "sdxl": {"unet": SDXL_UNET, "vae": VAE, "text": [CLIP_L, CLIP_BIGG], "pixels": 1024},
}
LORA_TARGETS = ["to_q", "to_k", "to_v", "to_out.0", "proj_in", "proj_out", "ff.net.0.proj", "ff.net.2"]


def shrink(arch: dict) -> dict:
    """The same architecture at 1/10 of the width and 32 x 32 pixels (smoke runs on a CPU)."""
    unet = dict(arch["unet"])
    unet["block_out_channels"] = tuple(max(32, c // 10 // 8 * 8) for c in unet["block_out_channels"])
    unet["cross_attention_dim"] = 64
    unet["attention_head_dim"] = 8
    unet["transformer_layers_per_block"] = 1
    if unet.get("addition_embed_type") == "text_time":
        unet["addition_time_embed_dim"] = 8
        unet["projection_class_embeddings_input_dim"] = 64 + 6 * 8
    vae = dict(arch["vae"], block_out_channels=(32, 32, 32, 32), layers_per_block=1)
    text = [{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}] * len(
        arch["text"]
    )
    return {"unet": unet, "vae": vae, "text": text, "pixels": 32}


def build(arch: dict, device: str, dtype):
    import torch
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    with torch.device(device):
        unet = UNet2DConditionModel(in_channels=4, out_channels=4, **arch["unet"]).to(dtype)
        vae = AutoencoderKL(in_channels=3, out_channels=3, **arch["vae"]).to(dtype)
        texts = [
            CLIPTextModel(CLIPTextConfig(vocab_size=49408, max_position_embeddings=77, **t)).to(dtype)
            for t in arch["text"]
        ]
    return unet.eval(), vae.eval(), [t.eval() for t in texts]


def held_bytes(*modules) -> int:
    return int(sum(t.numel() * t.element_size() for m in modules for t in [*m.parameters(), *m.buffers()]))


def one_image(unet, vae, texts, arch: dict, steps: int, device: str, dtype):
    import torch

    ids = torch.randint(0, 49408, (2, 77), device=device)
    hidden = [t(ids).last_hidden_state for t in texts]
    context = torch.cat(hidden, dim=-1)[..., : unet.config.cross_attention_dim]
    side = arch["pixels"] // 8
    latents = torch.randn(2, 4, side, side, device=device, dtype=dtype)
    extra = {}
    if unet.config.addition_embed_type == "text_time":
        pooled = unet.config.projection_class_embeddings_input_dim - 6 * unet.config.addition_time_embed_dim
        extra["added_cond_kwargs"] = {
            "text_embeds": torch.randn(2, pooled, device=device, dtype=dtype),
            "time_ids": torch.zeros(2, 6, device=device, dtype=dtype),
        }
    for step in range(steps):
        t = torch.full((2,), 999 - step * (1000 // steps), device=device)
        latents = latents - 0.01 * unet(latents, t, context, **extra).sample
    return vae.decode(latents[:1]).sample


def measure(name: str, arch: dict, ranks: list[int], counts: list[int], steps: int, device: str, repeats: int):
    """Rows {"arch", "ranks", "peak_bytes", "seconds_per_image"} for every (count, rank) of LoRAs."""
    import torch
    from peft import LoraConfig

    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    # On a CPU (one thread) the process's CPU time: wall time on a shared machine measures the neighbours.
    clock = time.perf_counter if device.startswith("cuda") else time.process_time
    unet, vae, texts = build(arch, device, dtype)
    rows = []
    configs = [[]] + [[r] * n for n in counts if n > 0 for r in ranks]
    with torch.inference_mode():  # one whole image first: allocator, kernels and caches warm for every config
        one_image(unet, vae, texts, arch, steps, device, dtype)
    for config in configs:
        names = []
        for i, rank in enumerate(config):
            unet.add_adapter(LoraConfig(r=rank, lora_alpha=rank, target_modules=LORA_TARGETS), adapter_name=f"l{i}")
            names.append(f"l{i}")
        if names:
            unet.set_adapters(names, [1.0] * len(names))
            unet.to(dtype)  # new adapters are created in float32
        with torch.inference_mode():
            one_image(unet, vae, texts, arch, 2, device, dtype)  # warm-up
            if device.startswith("cuda"):
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(repeats):
                start = clock()
                one_image(unet, vae, texts, arch, steps, device, dtype)
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                times.append(clock() - start)
        peak = torch.cuda.max_memory_allocated() if device.startswith("cuda") else held_bytes(unet, vae, *texts)
        rows.append({"arch": name, "ranks": config, "peak_bytes": int(peak), "seconds_per_image": min(times)})
        print(
            f"{name:10s} loras={len(config)} rank={config[0] if config else 0:4d} peak={peak / 2**30:7.3f} GiB "
            f"s/image={min(times):.3f}",
            flush=True,
        )
        if names:
            unet.delete_adapters(names)
    del unet, vae, texts
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


def tiny_world_arch() -> dict:
    """The tiny world's architecture, as its recipe builds it."""
    from manta.world.models import build_unet, build_vae

    unet, vae = build_unet(), build_vae()
    keep = (
        "block_out_channels",
        "down_block_types",
        "up_block_types",
        "cross_attention_dim",
        "attention_head_dim",
        "layers_per_block",
        "sample_size",
        "norm_num_groups",
        "addition_embed_type",
        "addition_embed_type_num_heads",
    )
    vae_keep = (
        "block_out_channels",
        "down_block_types",
        "up_block_types",
        "latent_channels",
        "layers_per_block",
        "norm_num_groups",
        "mid_block_add_attention",
    )
    return {
        "unet": {k: unet.config[k] for k in keep},
        "vae": {k: vae.config[k] for k in vae_keep},
        "text": [{"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}],
        "pixels": 32,
    }


def device_name(device: str) -> str:
    """The GPU's name, or the CPU model from /proc/cpuinfo."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "cpu"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arches = sorted({r["arch"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for arch in arches:
        mine = [r for r in rows if r["arch"] == arch]
        x = [sum(r["ranks"]) for r in mine]
        axes[0].scatter(x, [r["seconds_per_image"] for r in mine], label=arch, s=12)
        axes[0].scatter(x, [r["seconds_per_image_predicted"] for r in mine], marker="x", s=12)
        axes[1].scatter(x, [r["peak_bytes"] / 2**30 for r in mine], label=arch, s=12)
        axes[1].scatter(x, [r["peak_bytes_predicted"] / 2**30 for r in mine], marker="x", s=12)
    axes[0].set_ylabel("seconds per image (o measured, x model)")
    axes[1].set_ylabel("peak GiB (o measured, x model)")
    for ax in axes:
        ax.set_xlabel("summed LoRA rank")
        ax.set_xscale("symlog", linthresh=4)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fit_and_write(rows: list[dict], out: Path, meta: dict) -> dict[str, float]:
    """Fit the cost model to `rows`, write `costs.json` (meta, model, every prediction's error) and `costs.png`;
    returns each architecture's worst relative error."""
    from manta.cost_model import check, fit_costs, to_dict
    from zaya_config.atomic import write_text_atomic

    models = fit_costs(rows)
    checked = check(models, rows)
    worst = {
        a: max(max(r["peak_bytes_error"], r["seconds_per_image_error"]) for r in checked if r["arch"] == a)
        for a in models
    }
    out.mkdir(parents=True, exist_ok=True)
    result = {**meta, "model": to_dict(models), "worst_relative_error": worst, "measurements": checked}
    write_text_atomic(out / "costs.json", json.dumps(result, indent=1))
    plot(checked, out / "costs.png")
    for arch, err in worst.items():
        print(f"cost model {arch}: worst relative error {err:.1%} ({'within' if err <= 0.2 else 'OVER'} 20%)")
    return worst


def refit(sources: list[str], out: Path) -> None:
    """`--from-runs ARCH=COSTS_JSON ...`: one architecture's rows from each recorded run, fitted together.
    Each run's own metadata (command, device, clock, steps, date, torch) is kept per architecture."""
    rows, meta = [], {"command": " ".join(["python", *sys.argv]), "smoke": False, "runs": {}}
    for source in sources:
        arch, sep, path = source.partition("=")
        if not sep or not path:
            raise SystemExit(f"--from-runs {source!r}: write ARCH=PATH, e.g. sd15=results/costs-h200/runs/a.json")
        recorded = json.loads(Path(path).read_text())
        mine = [r for r in recorded["measurements"] if r["arch"] == arch]
        if not mine:
            raise SystemExit(f"--from-runs {source!r}: {path} has no {arch} measurements")
        rows += [{k: r[k] for k in ("arch", "ranks", "peak_bytes", "seconds_per_image")} for r in mine]
        meta["runs"][arch] = {"file": path, **{k: recorded[k] for k in ("command", "date", "torch")}}
        for key in ("devices", "clock", "steps"):
            meta.setdefault(key, {})[arch] = recorded[key][arch]
    fit_and_write(rows, out, meta)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--smoke", action="store_true", help="scaled-down configs, 2 steps, CPU-sized")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--arch", nargs="*", default=["sd15", "sdxl", "tiny-world"])
    parser.add_argument("--from-runs", nargs="+", metavar="ARCH=COSTS_JSON",
                        help="measure nothing: fit each ARCH's rows of a recorded costs.json")  # fmt: skip
    args = parser.parse_args()
    if args.from_runs:
        return refit(args.from_runs, args.out)

    import torch
    from zaya_config.atomic import write_text_atomic

    ranks, counts = ([4, 16, 64, 128], [1, 2, 3]) if not args.smoke else ([4, 32], [1, 3])
    steps = 2 if args.smoke else args.steps
    rows, steps_of, device_of = [], {}, {}
    for name in args.arch:
        if name == "tiny-world":  # the tiny world runs where its catalog says it runs: one CPU thread
            arch, steps_of[name], device_of[name] = tiny_world_arch(), 20 if not args.smoke else 2, "cpu"
            torch.set_num_threads(1)
        else:
            arch, steps_of[name], device_of[name] = (
                shrink(ARCHES[name]) if args.smoke else ARCHES[name],
                steps,
                args.device,
            )
        rows += measure(name, arch, ranks, counts, steps_of[name], device_of[name], args.repeats)
        args.out.mkdir(parents=True, exist_ok=True)  # a run cut short keeps the architectures it finished
        write_text_atomic(args.out / "measurements.json", json.dumps(rows, indent=1))
    meta = {
        "command": " ".join(["python", *sys.argv]),
        "smoke": args.smoke,
        "devices": {a: device_name(d) for a, d in device_of.items()},
        "clock": {
            a: "wall time after cuda.synchronize" if d.startswith("cuda") else "process CPU time, one thread"
            for a, d in device_of.items()
        },
        "steps": steps_of,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
    }
    fit_and_write(rows, args.out, meta)


if __name__ == "__main__":
    main()
