"""The comparison statistics: the rate counts ties as half, the paired bootstrap interval holds 0.5 for a fair
coin and leaves it for a clear winner, and the sign test is the exact binomial test."""

import numpy as np
import pytest
from manta.evaluation.stats import compare_outcomes, sign_test
from scipy.stats import binomtest


def test_the_sign_test_is_the_exact_binomial_test():
    for wins, losses in ((0, 0), (3, 1), (10, 2), (45, 42), (0, 9)):
        expected = 1.0 if wins + losses == 0 else binomtest(wins, wins + losses, 0.5).pvalue
        assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-9)


def test_a_fair_coin_is_even_and_a_clear_winner_beats():
    rng = np.random.default_rng(0)
    fair = compare_outcomes(rng.choice([-1, 0, 1], size=200, p=[0.2, 0.6, 0.2]))
    assert fair.prompts == 200 and fair.even and not fair.beats and not fair.loses
    assert fair.ci[0] < fair.rate < fair.ci[1] and fair.ci[1] - fair.ci[0] < 0.15
    winner = compare_outcomes(rng.choice([-1, 0, 1], size=200, p=[0.1, 0.5, 0.4]), diffs=rng.normal(0.1, 0.2, 200))
    assert winner.beats and winner.sign_p < 1e-4 and winner.diff_ci[0] > 0
    assert compare_outcomes(-np.ones(20, dtype=int)).loses
    ties = compare_outcomes(np.zeros(30, dtype=int))
    assert ties.rate == 0.5 and ties.ci == (0.5, 0.5) and ties.sign_p == 1.0
    assert set(winner.to_dict()) == {"win", "tie", "loss", "rate", "ci", "sign_p", "diff", "diff_ci"}
    with pytest.raises(ValueError, match="-1, 0 or"):
        compare_outcomes(np.array([2, 0]))


def test_the_interval_covers_a_fair_coin_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    covered = [compare_outcomes(rng.choice([-1, 0, 1], size=200)).even for _ in range(200)]
    assert 0.90 <= np.mean(covered) <= 0.99
