"""Context parallelism: the zigzag layout, and CP 2 and 4 over real gloo process groups giving the loss,
the gradients, the logits and the router counts of one rank (fp32, 1e-5), with and without padding."""

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from zaya_model import ZayaModelError
from zaya_model.context_parallel import ContextParallel, causal_mask, chunk_attention, padded_length, shard_sequence
from zaya_model.cp_traffic import context_parallel_traffic

WORKER = Path(__file__).with_name("zaya_model_cp_worker.py")


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("seq_len", [24, 29])
def test_zigzag_shards_cover_the_padded_sequence_once(size, seq_len):
    ids = torch.arange(seq_len)[None].repeat(2, 1) + 1
    S = padded_length(seq_len, size)
    assert S % (2 * size) == 0 and seq_len <= S < seq_len + 2 * size
    seen = torch.zeros(S, dtype=torch.long)
    L = S // (2 * size)
    for rank in range(size):
        cp = ContextParallel(None, size, rank)
        local_ids, local_labels, mask = shard_sequence(ids, ids + 1000, cp)
        pos = cp.positions(local_ids.shape[1])
        # rank r holds chunks r and 2N-1-r, in that order
        assert pos.tolist() == [
            *range(rank * L, (rank + 1) * L),
            *range((2 * size - 1 - rank) * L, (2 * size - rank) * L),
        ]
        seen[pos] += 1
        real = pos < seq_len
        assert torch.equal(local_ids[:, real], ids[:, pos[real]])  # real tokens where they belong
        assert (local_ids[:, ~real] == 0).all() and (local_labels[:, ~real] == -100).all()  # padding at the end
        assert (mask is None) == (seq_len == S)
        if mask is not None:
            assert torch.equal(mask[0].bool(), real)
    assert (seen == 1).all()


def test_chunk_mask_is_causal_in_global_positions():
    mask = causal_mask(chunk=2, chunk_len=3, device=torch.device("cpu"))
    assert mask.shape == (3, 9)
    assert mask[0].tolist() == [True] * 7 + [False] * 2  # query at global position 6 sees keys 0..6
    assert mask[2].all()


@pytest.mark.parametrize(
    ("fused", "compiled"),
    [(False, False), (True, False), (True, True)],
    ids=["bool-mask", "lower-right-bias", "lower-right-bias-compiled"],
)
def test_chunk_attention_is_the_causal_attention_of_its_rows(fused, compiled):
    """Both kernels' paths (the CUDA one, lower-right causal bias on repeated K/V heads, runs here too), also
    under torch.compile (dynamo cannot build the bias: a graph break, then the same call)."""
    attend = torch.compile(chunk_attention, backend="aot_eager") if compiled else chunk_attention
    gen = torch.Generator().manual_seed(0)
    B, H, K, S, d, L = 2, 4, 2, 24, 8, 6
    q, k, v = (torch.randn(B, n, S, d, generator=gen) for n in (H, K, K))
    full = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    for chunk in range(S // L):
        end = (chunk + 1) * L
        got = attend(q[:, :, chunk * L : end], k[:, :, :end], v[:, :, :end], chunk, fused=fused)
        assert torch.allclose(got, full[:, :, chunk * L : end], atol=1e-6), chunk


# name: (world size, sequence length, biases, compile backend of the blocks)
CASES = {
    "cp2": (2, 32, False, None),
    "cp2-padded-bias": (2, 29, True, None),
    "cp4-bias": (4, 32, True, None),
    "cp4-padded": (4, 61, False, None),
    "cp2-compiled-blocks": (2, 29, True, "aot_eager"),
}


def _group(case: str) -> tuple[int, bool]:
    """The worker group that runs a case: its world size, and whether its blocks are compiled (a compiled case
    gets a group of its own, so that its test does not also wait for the eager cases)."""
    world, _, _, backend = CASES[case]
    return world, backend is not None


def _run_group(folder: Path, group: tuple[int, bool]) -> None:
    """Every case of the group in one gloo group of worker processes (each imports torch once for all of
    them); rank 0 writes folder/<case>.pt."""
    world = group[0]
    cases = [[name, *CASES[name][1:]] for name in CASES if _group(name) == group]
    with tempfile.TemporaryDirectory() as tmp:
        args = [str(world), str(Path(tmp) / "init"), str(folder), json.dumps(cases)]
        procs = [
            subprocess.Popen([sys.executable, str(WORKER), str(r), *args], stderr=subprocess.PIPE, text=True)
            for r in range(world)
        ]
        errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, "\n".join(e[-3000:] for e in errors)


@functools.cache
def _group_results(group: tuple[int, bool]) -> Path:
    """The folder of a group's results, shared by its cases, the xdist workers and later sessions: cached
    under the content hash of what they depend on (the worker, the model's and config's sources, the cases,
    the Python and torch versions), so any change to those runs the group again."""
    import platform

    from artifact_cache import cached_artifact, content_hash

    packages = Path(__file__).parents[2]
    key = content_hash(
        WORKER,
        packages / "zaya-model" / "src",
        packages / "zaya-config" / "src",
        json.dumps({name: case for name, case in CASES.items() if _group(name) == group}),
        f"python {platform.python_version()} torch {torch.__version__}",
    )
    kind = f"zaya-model-cp{group[0]}{'-compiled' if group[1] else ''}"
    return cached_artifact(kind, key, lambda folder: _run_group(folder, group))


_REFERENCES: dict[tuple[int, bool], dict] = {}


def _one_rank(worker, seq_len: int, bias: bool) -> dict:
    """The single-process reference of a (sequence length, biases) pair, computed once per process for the
    cases that share it (cp2-padded-bias and cp2-compiled-blocks): loss, gradients, router counts, eval logits."""
    if (seq_len, bias) not in _REFERENCES:
        _REFERENCES[seq_len, bias] = _reference(worker, seq_len, bias)
    return _REFERENCES[seq_len, bias]


def _reference(worker, seq_len: int, bias: bool) -> dict:
    model = worker.make_model(bias)
    ids, labels = worker.make_batch(seq_len)
    loss = model(ids, labels=labels)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    counts = worker.router_counts(model)
    with torch.no_grad():
        logits = model.eval()(ids)
    return {"loss": loss.detach(), "grads": grads, "counts": counts, "logits": logits, "config": model.config}


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_context_parallel_matches_one_rank(load_worker, case):
    world, seq_len, bias, _ = CASES[case]
    got = torch.load(_group_results(_group(case)) / f"{case}.pt")
    assert got["local_len"] == padded_length(seq_len, world) // world
    worker = load_worker(WORKER)
    ref = _one_rank(worker, seq_len, bias)
    assert torch.allclose(got["losses"], ref["loss"].expand(world), atol=1e-5, rtol=0)  # same value on each rank
    ref_grads = ref["grads"]
    assert got["grads"].keys() == ref_grads.keys()
    for name, grad in ref_grads.items():
        assert torch.allclose(got["grads"][name], grad, atol=1e-5, rtol=0), name
    assert torch.equal(got["counts"], ref["counts"])  # padding is not counted
    assert torch.allclose(got["logits"], ref["logits"], atol=1e-5, rtol=1e-5)
    per_sequence = {k: v / worker.BATCH for k, v in got["bytes"].items() if "gathered" in k or "backward" in k}
    _assert_traffic_is_what_moved(
        ref["config"], seq_len, world, {**per_sequence, "loss": got["bytes"]["forward_reduced"]}
    )


def _assert_traffic_is_what_moved(cfg, seq_len: int, world: int, moved: dict) -> None:
    """`context_parallel_traffic` (fp32 here) is the ring-algorithm share, (N-1)/N, of the tensors the model's
    collectives carried per sequence: K/V and halos gathered forward, their gradients reduced backward (all-reduce
    on gloo, reduce-scatter on NCCL: the same tensor), and two fp32 numbers for the loss (per batch)."""
    traffic = context_parallel_traffic(cfg, seq_len, world, dtype_bytes=4)
    assert moved["backward_gathered"] == 0 and moved["loss"] == 8  # the loss's count and sum
    assert moved["backward_reduced"] == moved["forward_gathered"] > 0  # each gathered tensor's gradient, once
    share = (world - 1) / world
    assert traffic.kv_forward + traffic.halo / 2 == pytest.approx(share * moved["forward_gathered"], abs=4)
    assert traffic.kv_backward + traffic.halo / 2 == pytest.approx(share * moved["backward_reduced"], abs=4)
    assert traffic.loss == round(2 * share * moved["loss"])


def test_context_parallel_refuses_bad_local_inputs():
    from zaya_model import ZayaConfig, build_model

    model = build_model(ZayaConfig.from_preset("zaya1-tiny"))
    model.set_context_parallel(ContextParallel(None, 2, 0))
    with pytest.raises(ZayaModelError, match="two zigzag chunks"):
        model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(ZayaModelError, match="position_ids cannot be given"):
        model(torch.zeros(1, 8, dtype=torch.long), position_ids=torch.arange(8))
    with pytest.raises(ZayaModelError, match="fewer than the 2"):
        model(torch.zeros(1, 2, dtype=torch.long))  # chunks of 1 token cannot hold the conv halo of 2
    with pytest.raises(ZayaModelError, match="padding at the end"):
        model(torch.zeros(1, 8, dtype=torch.long), attention_mask=torch.tensor([[0, 1, 1, 1, 1, 1, 1, 1]]))
