"""Write the shipped catalogs' VRAM and per-step latency from the fitted cost model, and leave prices out.

    python packages/manta/benchmarks/catalog_costs.py                     # the recorded H200 model, in place
    python packages/manta/benchmarks/catalog_costs.py --check             # exit 1 if a catalog disagrees

Every `sd15` / `sdxl` checkpoint gets the model's base peak memory and seconds per image over the steps they
were measured at; every LoRA its per-adapter and per-rank terms at its rank (`manta.cost_model.costed_rows`).
Prices are the user's to give (`--prices` / `MantaConfig.prices`): a shipped catalog carries none.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "results" / "costs-h200" / "costs.json"
CATALOGS = [
    HERE.parent / "src" / "manta" / "data" / name for name in ("example_catalog.jsonl", "everyday_catalog.jsonl")
]


def costed_text(path: Path, recorded: Path = RECORDED) -> str:
    """The catalog file's text with the fitted costs and no prices."""
    from manta.cost_model import costed_rows, load_recorded

    models, steps, _ = load_recorded(recorded)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [{k: v for k, v in row.items() if k != "price_per_image"} for row in costed_rows(rows, models, steps)]
    return "".join(json.dumps(row) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--costs", type=Path, default=RECORDED, help="a recorded costs.json (bench_costs.py)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    args = parser.parse_args(argv)
    stale = []
    for path in CATALOGS:
        text = costed_text(path, args.costs)
        if path.read_text(encoding="utf-8") != text:
            stale.append(path.name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    print(("stale: " if args.check else "rewritten: ") + (", ".join(stale) or "none"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
