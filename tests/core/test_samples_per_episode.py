"""pass@k and the K-samples statistics against brute force."""

import itertools
import math

import pytest

from lm_gym.results.samples_per_episode import pass_at_k, sample_statistics


def brute_force_pass_at_k(outcomes: list[int], k: int) -> float:
    """The share of the k-subsets of the samples that hold a success."""
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    return sum(any(outcomes[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_is_the_share_of_k_subsets_with_a_success(n):
    for c in range(n + 1):
        outcomes = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(outcomes, k), abs=1e-12)


def test_pass_at_k_on_large_counts_and_its_edges():
    assert pass_at_k(200, 0, 100) == 0.0 and pass_at_k(200, 200, 1) == 1.0
    assert pass_at_k(200, 10, 1) == pytest.approx(10 / 200)
    assert pass_at_k(200, 10, 50) == pytest.approx(1 - math.comb(190, 50) / math.comb(200, 50))
    for bad in ((3, 1, 0), (3, 1, 4), (3, 4, 1), (3, -1, 1), (2.0, 1, 1), (True, 1, 1)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_sample_statistics_of_a_small_evaluation():
    returns = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5]]
    solved = [[1, 0, 0], [0, 0, 0]]
    statistics = sample_statistics(returns, solved)
    assert statistics["mean@3"] == pytest.approx(2.5 / 6)
    assert statistics["best@3"] == pytest.approx((1.0 + 0.5) / 2)
    assert statistics["spread"] == pytest.approx((math.sqrt(2 / 9) + 0.0) / 2)
    assert [statistics[f"pass@{k}"] for k in (1, 2, 3)] == pytest.approx([1 / 6, 1 / 3, 1 / 2])
    assert set(sample_statistics(returns)) == {"mean@3", "best@3", "spread"}  # no success metric: no pass@k


def test_sample_statistics_refuses_ragged_or_non_binary_input():
    with pytest.raises(ValueError, match="same number"):
        sample_statistics([[1.0, 2.0], [1.0]])
    with pytest.raises(ValueError, match="at least one"):
        sample_statistics([])
    with pytest.raises(ValueError, match="0 or 1"):
        sample_statistics([[1.0, 2.0]], [[0.5, 1]])
    with pytest.raises(ValueError, match="shape"):
        sample_statistics([[1.0, 2.0]], [[1]])
