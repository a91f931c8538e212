"""A mixture of many sources stays exact over save/resume when the data-parallel size changes (1 -> 2 -> 3 ranks):
every (source, window) the ranks read is counted, none repeats or is skipped within an epoch, proportions
hold at every step, and the stream is the one an uninterrupted single process reads."""

import json
from collections import Counter

import numpy as np
from zaya_train.data.sampler import MixtureSampler
from zaya_train.data.shards import TokenStream

SEQ_LEN = 4
GLOBAL_BATCH = 6  # splits over 1, 2 and 3 ranks
WEIGHTS = {"code": 4.0, "math": 2.0, "web": 1.5, "books": 0.5}  # shares 1/2, 1/4, 3/16, 1/16
WINDOWS = {"code": 11, "math": 7, "web": 5, "books": 3}  # epochs end at different steps per source


def _streams() -> dict[str, TokenStream]:
    """Sources whose window w starts with token 1000 * source + w * SEQ_LEN: each row names its pick."""
    out = {}
    for i, (name, n) in enumerate(sorted(WINDOWS.items())):
        tokens = (1000 * i + np.arange(n * SEQ_LEN + 1)).astype(np.uint32)
        out[name] = TokenStream(tokens, np.array([0, len(tokens)], dtype=np.uint64))
    return out


def _pick_of(row: np.ndarray) -> tuple[str, int]:
    source, offset = divmod(int(row[0]), 1000)
    return sorted(WINDOWS)[source], offset // SEQ_LEN


def _sampler(state: dict | None = None) -> MixtureSampler:
    sampler = MixtureSampler(_streams(), WEIGHTS, SEQ_LEN, seed=11, phase=2)
    if state is not None:  # as a checkpoint stores it: plain data, through a serialisation round trip
        sampler.load_state_dict(json.loads(json.dumps(state)))
    return sampler


def _run(world: int, steps: int, state: dict | None) -> tuple[list[list[tuple[str, int]]], dict]:
    """`steps` global batches read by `world` ranks, each with its own sampler resumed from `state`."""
    ranks = [_sampler(state) for _ in range(world)]
    batches = []
    for _ in range(steps):
        rows = [ranks[r].next_batch(GLOBAL_BATCH, r, world) for r in range(world)]
        assert all(len(part) == GLOBAL_BATCH // world for part in rows)
        batches.append([_pick_of(row) for part in rows for row in part])
    states = [sampler.state_dict() for sampler in ranks]
    assert all(s == states[0] for s in states)  # every rank saves the same position
    return batches, states[0]


def test_many_source_mixture_is_exact_across_resumes_on_other_dp_sizes():
    served, state = [], None
    for world, steps in ((1, 5), (2, 7), (3, 9), (1, 3)):
        batches, state = _run(world, steps, state)
        served += batches
    uninterrupted, _ = _run(1, len(served), None)
    assert served == uninterrupted  # the same rows in the same order whatever the world size

    picks = [pick for batch in served for pick in batch]
    share = {name: w / sum(WEIGHTS.values()) for name, w in WEIGHTS.items()}
    counts: Counter[str] = Counter()
    for total, (name, _) in enumerate(picks, start=1):
        counts[name] += 1
        assert all(abs(counts[s] - share[s] * total) < 1 for s in WEIGHTS)  # proportions exact at every pick
    assert len(picks) == 144 and all(counts[s] == share[s] * 144 for s in WEIGHTS)  # 72, 36, 27, 9
    for name, n in WINDOWS.items():
        windows = [w for s, w in picks if s == name]
        assert len(windows) > 2 * n  # several epochs of every source
        for epoch in range(len(windows) // n):  # each whole epoch serves every window once
            assert sorted(windows[epoch * n : (epoch + 1) * n]) == list(range(n))
        partial = windows[len(windows) // n * n :]
        assert len(set(partial)) == len(partial)  # the epoch under way repeats none
