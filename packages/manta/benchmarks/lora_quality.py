"""Benchmark: what the tiny world's LoRAs do to its judge's quality and alignment reads.

The world evaluation's prompt-blind control (no adapters) wins too many quality comparisons; this measures
whether adapters lower the judge's quality score and by how much against its scatter across prompts. Each
case is rendered on `tiny-flat` with no adapter and with its LoRAs (one, or two stacked) at each `--weights`
value, `--seeds` images each (seed i for image i, as the evaluation does), read by the shipped world judge.

    python packages/manta/benchmarks/lora_quality.py --out OUT            # about 4 minutes on one CPU thread

Writes `lora_quality.json` (command, date, per case and weight: mean quality and alignment and their
standard deviation over the seeds, and that deviation pooled over the cases: the judge's noise from the seed
alone).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from tqdm import tqdm

CASES = (
    ("a red star", ("lora-star",)),
    ("a blue heart", ("lora-heart",)),
    ("a green circle with stripes", ("lora-stripes",)),
    ("a red square, checkered", ("lora-checks",)),
    ("a green square, watercolor", ("lora-watercolor",)),
    ("a blue triangle, line art", ("lora-line-art",)),
    ("a red star with stripes", ("lora-star", "lora-stripes")),
    ("a blue heart, watercolor", ("lora-heart", "lora-watercolor")),
    ("a green star, line art", ("lora-star", "lora-line-art")),
    ("a red heart, checkered", ("lora-heart", "lora-checks")),
)


def measure(seeds: int, weights: list[float]) -> list[dict]:
    """Mean quality and alignment per (case, weight); weight None is the bare base checkpoint."""
    import torch
    from manta.catalog import load_catalog
    from manta.composer import limits_from_config
    from manta.evaluation.image_judge import ImageJudge
    from manta.evaluation.image_scorers import WorldScorer
    from manta.evaluation.world_eval import RENDER
    from manta.generation import DiffusersBackend
    from manta.plan import plan_from_entries
    from manta.world.build import shipped_world

    torch.set_num_threads(1)
    world = shipped_world()
    catalog = load_catalog(world / "catalog.jsonl")
    scorer = WorldScorer(world / "judge")
    judge = ImageJudge(scorer, DiffusersBackend(catalog, keep_loaded=1, threads=1, **RENDER).render)
    limits = limits_from_config("tiny-cpu")
    rows = []
    runs = [(prompt, adapters, w) for prompt, adapters in CASES for w in (None, *weights)]
    for prompt, adapters, w in tqdm(runs, desc="renders", unit="case"):
        chosen = [] if w is None else [(catalog[a], "x", w, 0.5) for a in adapters]
        images = judge.images([plan_from_entries(prompt, catalog["tiny-flat"], chosen, (), limits)] * seeds)
        quality, alignment = scorer.quality(images), scorer.alignment(images, prompt)
        rows.append(
            {
                "prompt": prompt,
                "adapters": list(adapters) if w is not None else [],
                "weight": w,
                "quality": float(quality.mean()),
                "alignment": float(alignment.mean()),
                "quality_seed_std": float(quality.std(ddof=1)),  # the same plan, only the seed changing
                "alignment_seed_std": float(alignment.std(ddof=1)),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--weights", type=float, nargs="+", default=[1.0, 0.7])
    args = parser.parse_args(argv)
    rows = measure(args.seeds, args.weights)
    summary = {}
    for w in (None, *args.weights):
        picked = [r for r in rows if r["weight"] == w]
        summary["none" if w is None else str(w)] = {
            "quality": float(np.mean([r["quality"] for r in picked])),
            "alignment": float(np.mean([r["alignment"] for r in picked])),
        }
    bare = [r["quality"] for r in rows if r["weight"] is None]
    pooled = {k: float(np.sqrt(np.mean([r[f"{k}_seed_std"] ** 2 for r in rows]))) for k in ("quality", "alignment")}
    result = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.node(),
        "judge": "world-judge (shipped)",
        "seeds": args.seeds,
        "mean": summary,
        "bare_quality_range": [min(bare), max(bare)],
        "seed_std": pooled,  # per image, pooled over every case: the judge's noise from the seed alone
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    from zaya_config.atomic import write_text_atomic

    write_text_atomic(args.out / "lora_quality.json", json.dumps(result, indent=1))
    for key, v in summary.items():
        print(f"adapters {key:>4}: quality {v['quality']:.3f}, alignment {v['alignment']:.3f}")
    print(f"seed-to-seed std per image: quality {pooled['quality']:.3f}, alignment {pooled['alignment']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
