"""The board's figures (leaderboard/plots.py) and number format (leaderboard/numbers.py): one colour per
algorithm in every figure, integer step ticks, values with 3 significant digits."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.container import ErrorbarContainer
from matplotlib.ticker import MaxNLocator

from leaderboard.numbers import significant
from leaderboard.plots import (
    ALGORITHM_COLOURS,
    Bar,
    algorithm_colour,
    learning_curves_figure,
    score_bars_figure,
)

IMDB, WORDLE = "lm_gym/IMDB-v0", "lm_gym/Wordle-v0"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def entry(name, method, steps=(1, 2), tasks=(IMDB, WORDLE)):
    """An entry with one run per task whose curve has a point at each of ``steps`` (the smoke suite's
    RL runs: 2 iterations)."""
    curve = [[step, 0.1 * step] for step in steps]
    return {
        "name": name,
        "method": method,
        "tasks": {env_id: {"runs": [{"seed": 1, "curve": curve}]} for env_id in tasks},
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.500"),
        (0.0123456, "0.0123"),
        (12.5, "12.5"),
        (123.4, "123"),
        (-0.04567, "-0.0457"),
        (0.0, "0.00"),
        (999.6, "1.00e+3"),
        (1234.0, "1.23e+3"),
        (1.234e-7, "1.23e-7"),
        (0.000123, "0.000123"),
        (0.9996, "1.00"),
        (1.125, "1.13"),  # a tie (1.125 is exact in binary) rounds up, as JavaScript's toPrecision does on the page
    ],
)
def test_numbers_have_3_significant_digits_as_on_the_page(value, text):
    assert significant(value) == text


def test_each_algorithm_has_one_colour_in_every_figure():
    ppo, grpo, mine = entry("PPO", "ppo"), entry("GRPO", "grpo"), entry("mine", "my-method")
    ppo_again = entry("PPO, other settings", "ppo", tasks=(IMDB,))
    figures = [
        learning_curves_figure([ppo, grpo, mine, ppo_again], IMDB),
        learning_curves_figure([mine, grpo, ppo], WORDLE),
    ]
    for figure in figures:
        for line in figure.axes[0].get_lines():
            method = {"PPO": "ppo", "PPO, other settings": "ppo", "GRPO": "grpo", "mine": "my-method"}[line.get_label()]
            assert to_hex(line.get_color()) == algorithm_colour(method)
    # two entries of one algorithm in one figure: its colour, told apart by the line style
    first, _, _, again = figures[0].axes[0].get_lines()
    assert first.get_color() == again.get_color() and first.get_linestyle() != again.get_linestyle()
    bars = score_bars_figure([Bar("mine", "my-method", 0.2, None, 1), Bar("PPO", "ppo", 0.5, (0.4, 0.6), 3)], "scores")
    assert [to_hex(patch.get_facecolor()) for patch in bars.axes[0].patches] == [
        algorithm_colour("my-method"),
        algorithm_colour("ppo"),
    ]
    # the baselines' colours are distinct, and another method's is fixed by its name
    assert len(set(ALGORITHM_COLOURS.values())) == len(ALGORITHM_COLOURS)
    assert algorithm_colour("my-method") == algorithm_colour("my-method") not in ALGORITHM_COLOURS.values()


def test_step_axes_have_integer_ticks():
    figure = learning_curves_figure([entry("PPO", "ppo", steps=(1, 2)), entry("SFT", "sft", steps=(3,))], IMDB)
    axes = figure.axes[0]
    figure.canvas.draw()
    low, high = axes.get_xlim()
    ticks = [tick for tick in axes.get_xticks() if low <= tick <= high]
    assert isinstance(axes.xaxis.get_major_locator(), MaxNLocator)
    assert len(ticks) >= 2 and np.array_equal(ticks, np.round(ticks))  # 1, 2, 3: never 1.5


def test_score_bars_show_values_with_3_significant_digits_and_intervals_from_3_seeds():
    bars = [Bar("three seeds", "ppo", 0.51234, (0.4, 0.6), 3), Bar("one seed", "sft", -0.0123456, None, 1)]
    axes = score_bars_figure(bars, "task score").axes[0]
    assert [text.get_text() for text in axes.texts] == ["0.512", "-0.0123 (n=1)"]
    (errors,) = [container for container in axes.containers if isinstance(container, ErrorbarContainer)]
    (segments,) = errors.lines[2]
    assert len(segments.get_segments()) == 1  # the one-seed entry has no error bar
    assert segments.get_segments()[0][:, 0].tolist() == pytest.approx([0.4, 0.6])
