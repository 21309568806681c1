"""Statistics of an evaluation that samples K utterances (K episodes) per starting state.

An evaluation may play each of its N episodes K times, from the same reset seed, with K independent
samples of the policy (``python -m benchmark evaluate --samples K``). Over those N x K returns,
:func:`sample_statistics` reports what the field reports for such evaluations:

- ``mean@K``: the mean return over all N x K episodes;
- ``best@K``: the mean over the N starting states of the best of their K returns;
- ``spread``: the mean over the N starting states of the standard deviation of their K returns;
- ``pass@k`` for every ``k <= K`` on a task with a success metric (a 0/1 ``info["metrics"]`` entry:
  Wordle's ``solved``, VisDial's ``reached_cutoff``, a task's own ``success_metric``): the chance
  that at least one of ``k`` samples succeeds, estimated without bias from the ``c`` successes among
  each state's ``K`` samples (:func:`pass_at_k`, Chen et al. 2021, "Evaluating Large Language
  Models Trained on Code"), averaged over the states.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``c`` successes among ``n`` samples: ``1 - C(n-c, k) / C(n, k)``,
    the chance that ``k`` of the ``n`` samples drawn without replacement hold at least one success."""
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    if not 1 <= k <= n or c > n:
        raise ValueError(f"pass@k needs 1 <= k <= n and c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:  # every draw of k holds a success
        return 1.0
    # the product form of C(n-c, k) / C(n, k): exact enough, and no huge integers
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def sample_statistics(
    returns: Sequence[Sequence[float]], successes: Sequence[Sequence[float]] | None = None
) -> dict[str, float]:
    """``mean@K``, ``best@K``, ``spread`` and (with ``successes``) ``pass@1`` ... ``pass@K`` of
    ``returns[j][s]``, the return of sample ``s`` of starting state ``j`` (K samples for every state),
    and ``successes[j][s]`` its 0/1 success. See the module's docstring."""
    if not returns:
        raise ValueError("returns must hold at least one starting state's samples")
    samples = len(returns[0])
    if samples < 1 or any(len(row) != samples for row in returns):
        counts = [len(row) for row in returns]
        raise ValueError(f"every starting state needs the same number (>= 1) of samples, got {counts}")
    states = len(returns)
    statistics = {
        f"mean@{samples}": math.fsum(math.fsum(row) for row in returns) / (states * samples),
        f"best@{samples}": math.fsum(max(row) for row in returns) / states,
        "spread": math.fsum(_std(row) for row in returns) / states,
    }
    if successes is not None:
        if len(successes) != states or any(len(row) != samples for row in successes):
            raise ValueError("successes must have the shape of returns")
        counts = []
        for row in successes:
            if any(value not in (0, 1) for value in row):
                raise ValueError(f"a success metric must be 0 or 1, got {list(row)}")
            counts.append(int(sum(row)))
        for k in range(1, samples + 1):
            statistics[f"pass@{k}"] = math.fsum(pass_at_k(samples, count, k) for count in counts) / states
    return statistics


def _std(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((value - mean) ** 2 for value in values) / len(values))
