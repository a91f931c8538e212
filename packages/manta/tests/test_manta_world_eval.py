"""The whole loop on the shipped tiny world, on this CPU, over 200 prompts: compose, render with diffusers + peft
LoRAs, judge the images with the world's judge (ties set by its own seed noise), and hold the statistics to
what they must show: the A/A run (manta against itself, other seeds) even on every criterion, and the
README's claims table exactly what the intervals support (manta beats a system only where the interval of its
rate lies above 50%; where it does not, the README says so).

The expensive parts are cached by content (tests/artifact_cache.py, keyed by manta's Python sources, the
shipped world, the library versions and this file's settings): the composed batches once, and the ~2,150 renders in
RENDER_SHARDS shards of whole plan set-ups, one test each (so the two xdist workers share them and no test
renders for long); the evaluation test then reads every image back (`RenderStore`) and judges them."""

import importlib.metadata
import pickle
import re
import sys
from pathlib import Path

import pytest
from manta.evaluation.judges import CRITERIA
from manta.evaluation.suite import AA_NAME, Prepared
from manta.evaluation.world_eval import (
    RENDER,
    WORLD_JUDGE,
    render_namespace,
    render_shards,
    world_evaluation,
    world_judge,
)
from manta.world.build import shipped_world

pytestmark = pytest.mark.slow
N_PROMPTS, BATCH, STEPS, RENDER_SHARDS = 200, 2, 4, 8
SRC = Path(__file__).resolve().parents[1] / "src" / "manta"
README = Path(__file__).resolve().parents[1] / "README.md"


def _key() -> str:
    from artifact_cache import content_hash

    versions = [importlib.metadata.version(n) for n in ("torch", "diffusers", "peft", "transformers", "numpy")]
    settings = f"{N_PROMPTS} {BATCH} {STEPS} {RENDER_SHARDS} {sys.version}"
    code = [p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts]  # what composes, renders and judges
    return content_hash(code, SRC / "data" / "world", " ".join(versions), settings)


@pytest.fixture(scope="module")
def prepared(embedder, cache_dir) -> Prepared:
    """Every batch of the evaluation, composed once per content (a pickle of plain dataclasses)."""
    from artifact_cache import cached_artifact
    from manta.evaluation.world_eval import prepare_world

    def build(out: Path) -> None:
        plans = prepare_world(shipped_world(), N_PROMPTS, BATCH, cache_dir=str(cache_dir), embedder=embedder)
        (out / "prepared.pkl").write_bytes(pickle.dumps(plans))

    folder = cached_artifact("manta-world-eval-plans", _key(), build)
    return pickle.loads((folder / "prepared.pkl").read_bytes())


def _shard(k: int, prepared: Prepared) -> Path:
    from artifact_cache import cached_artifact

    def build(out: Path) -> None:
        judge = world_judge(shipped_world(), STEPS, out)
        judge.prefetch(render_shards(prepared.requests(), RENDER_SHARDS)[k])

    return cached_artifact(f"manta-world-eval-renders{k}", _key(), build)


def test_the_evaluation_composes_every_batch(prepared):
    """200 prompts, a batch of 2 from every system, the A/A side composed with other seeds."""
    assert len(prepared.mine) == N_PROMPTS and all(len(plans) == BATCH for plans in prepared.mine)
    assert set(prepared.pairs) == {"stylus", "stylus-limited", "prompt-blind", "random-relevant", AA_NAME}
    assert all(len(rows) == N_PROMPTS for rows in prepared.pairs.values()) and len(prepared.cases) == 8


@pytest.mark.parametrize("k", range(RENDER_SHARDS))
def test_the_world_renders_each_set_up_once(k, prepared):
    """Shard k of the renders: whole plan set-ups, every image stored once under the render namespace."""
    shard = render_shards(prepared.requests(), RENDER_SHARDS)[k]
    folder = _shard(k, prepared) / render_namespace(shipped_world(), {**RENDER, "num_steps": STEPS})
    import numpy as np

    stored = sum(len(np.load(p).files) for p in folder.glob("*.npz"))
    from manta.evaluation.image_judge import render_key

    assert stored == len({render_key(plan, seed) for plan, seed in shard}) > 100


@pytest.fixture(scope="module")
def evaluation(prepared, embedder, cache_dir, tmp_path_factory):
    """The 200-prompt evaluation, its images read back from every shard."""
    namespace = render_namespace(shipped_world(), {**RENDER, "num_steps": STEPS})
    merged = tmp_path_factory.mktemp("renders") / namespace
    merged.mkdir()
    for k in range(RENDER_SHARDS):
        for path in (_shard(k, prepared) / namespace).glob("*.npz"):
            (merged / f"{k}-{path.name}").symlink_to(path)
    return world_evaluation(
        shipped_world(),
        n_prompts=N_PROMPTS,
        batch=BATCH,
        cache_dir=str(cache_dir),
        embedder=embedder,
        num_steps=STEPS,
        render_store=merged.parent,
        prepared=prepared,
    )


CELL = re.compile(r"\**(beats|does not beat|loses|even)\**: ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]")


def _readme_claims() -> dict[str, dict[str, tuple[str, list[float]]]]:
    """The README's claims table: {system: {criterion: (verdict, [rate, lo, hi])}}."""
    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- claims: test_manta_world_eval.py -->", 1)[1].split("\n\n", 1)[0]
    claims = {}
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        name = re.sub(r" \((control|A/A)\)$", "", cells[0]).replace("`", "")
        found = [CELL.fullmatch(cell) for cell in cells[1:]]
        assert all(found), line
        claims[name] = {
            c: (m.group(1), [float(v) for v in m.groups()[1:]]) for c, m in zip(CRITERIA, found, strict=True)
        }
    return claims


def _verdict(k) -> str:
    return "beats" if k.beats else "loses" if k.loses else "does not beat"


def test_the_world_evaluation_is_even_against_itself_and_claims_only_what_its_intervals_support(evaluation):
    report = evaluation.to_dict()
    assert report["judge"] == WORLD_JUDGE and report["prompts"] == N_PROMPTS >= 200
    assert set(report["opponents"]) == {"stylus", "stylus-limited"}
    assert set(report["controls"]) == {"prompt-blind", "random-relevant"}
    for per in [report["aa"], *report["opponents"].values(), *report["controls"].values()]:
        for c in CRITERIA:
            k = per[c]
            assert k["win"] + k["tie"] + k["loss"] == N_PROMPTS and k["ci"][0] <= k["rate"] <= k["ci"][1]
    assert report["judge_accuracy"]["object"] > 0.8 and report["world_seeds"]["judge_recipe"] == 1000
    for c in CRITERIA:  # every margin from the measured seed noise, none a constant
        assert report["seed_noise"][c] > 0
        assert report["margins"][c] == pytest.approx(2**0.5 * report["seed_noise"][c], abs=2e-4)
    aa = evaluation.aa.comparisons()
    assert all(aa[c].even for c in CRITERIA), report["aa"]  # the A/A run within its interval of 50/50
    claims = _readme_claims()
    assert {c: v for c, (v, _) in claims[AA_NAME].items()} == {c: "even" for c in CRITERIA}
    measured = {n: {c: _verdict(k) for c, k in per.items()} for g in ("opponents", "controls")
                for n, per in evaluation.comparisons(g).items()}  # fmt: skip
    said = {n: {c: v for c, (v, _) in claims[n].items()} for n in measured}
    assert said == measured  # the README claims what the intervals support, no more and no less
    for name, per in evaluation.comparisons("controls").items():  # where the README says manta beats a control
        assert all(per[c].beats for c, verdict in said[name].items() if verdict == "beats"), name
    every = {AA_NAME: aa, **{n: per for g in ("opponents", "controls") for n, per in evaluation.comparisons(g).items()}}
    for name, per in every.items():  # and its numbers are these
        for c, k in per.items():
            assert claims[name][c][1] == pytest.approx([k.rate, *k.ci], abs=0.006), (name, c)
