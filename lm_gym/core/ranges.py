"""Ranges of values: what a metric or a task's return can be, declared once beside it.

A metric module declares the range of each value it computes (``lm_gym.metrics.diversity.RANGES``:
``distinct_2`` in [0, 1], ``vocab_size`` a non-negative integer, ...), and a task declares the range
of its episode return and of each value of ``info["metrics"]`` for given constructor arguments
(:meth:`lm_gym.core.text_env.TextEnv.value_ranges`: Wordle's return in [-6, 0]). A value outside
its range cannot come from the metric or the task: ``lm_gym.results.evaluation_ranges`` gives the
range of every key of an evaluation, which ``result.json``'s validation and the leaderboard check.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, NamedTuple


class Range(NamedTuple):
    """The closed interval ``[low, high]`` (``±inf``: unbounded on that side); ``integer``: whole numbers only."""

    low: float = -math.inf
    high: float = math.inf
    integer: bool = False

    def contains(self, value: float) -> bool:
        """Whether ``value`` (a finite number) lies in the range."""
        if not self.low <= value <= self.high:
            return False
        return not self.integer or float(value).is_integer()

    def mean(self) -> Range:
        """The range of a mean of values of this range (a mean of whole numbers need not be whole)."""
        return Range(self.low, self.high)

    def spread(self) -> Range:
        """The range of the standard deviation of values of this range: at most half its width."""
        return Range(0.0, (self.high - self.low) / 2)

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if math.isinf(self.low) and math.isinf(self.high):
            return f"any {kind[2:] if self.integer else 'number'}"
        if math.isinf(self.high):
            return f"{kind} >= {_number(self.low)}"
        if math.isinf(self.low):
            return f"{kind} <= {_number(self.high)}"
        return f"{kind} in [{_number(self.low)}, {_number(self.high)}]"


def _number(value: float) -> str:
    return f"{value:g}"


UNIT = Range(0.0, 1.0)  #: probabilities, rates, F-measures: ROUGE, METEOR, BLEU, distinct-n, ...
NON_NEGATIVE = Range(0.0)
COUNT = Range(0.0, math.inf, integer=True)  #: counts: words, guesses, turns, a vocabulary's size


def scaled(values: Range, scale: float, shift: float = 0.0) -> Range:
    """The range of ``value * scale + shift`` for values in ``values``."""
    ends = [_times(values.low, scale) + shift, _times(values.high, scale) + shift]
    return Range(min(ends), max(ends))


def sum_of_turns(turn: Range, max_turns: int, min_turns: int = 1) -> Range:
    """The range of a sum of ``min_turns`` to ``max_turns`` values of ``turn`` (an episode's return)."""
    low = turn.low * (max_turns if turn.low < 0 else min_turns)
    high = turn.high * (max_turns if turn.high > 0 else min_turns)
    return Range(low, high)


def _times(value: float, scale: float) -> float:
    return 0.0 if scale == 0 else value * scale


def argument(cls: type, kwargs: dict[str, Any], name: str) -> Any:
    """Constructor argument ``name`` of ``cls`` as ``kwargs`` give it, else its default."""
    if name in kwargs:
        return kwargs[name]
    parameter = inspect.signature(cls.__init__).parameters.get(name)
    return None if parameter is None or parameter.default is inspect.Parameter.empty else parameter.default
