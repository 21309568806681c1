"""VisDial-v0's rewards: ILQL's yes/no tests, the cutoff rule and the reward variants in a scripted world,
and a vector env's games ranked with one call."""

import gymnasium
import pytest

from lm_gym.tasks.visdial import VisDialEnv
from lm_gym.tasks.visdial.rewards import cutoff_reached, is_yes_no


@pytest.mark.parametrize(
    "answer, hard, soft, conservative",
    [
        ("yes", True, True, True),
        ("No", True, True, True),
        ("no, it is not", False, True, True),
        ("snow", False, True, True),  # ILQL's soft test is a substring test
        ("maybe", False, False, True),
        ("i can\u2019t tell", False, False, True),
        ("two", False, False, False),
        ("brown", False, False, False),
    ],
)
def test_yes_no_tests_follow_ilql(answer, hard, soft, conservative):
    assert (is_yes_no(answer, "hard"), is_yes_no(answer, "soft"), is_yes_no(answer, "conservative")) == (
        hard,
        soft,
        conservative,
    )
    assert not is_yes_no(answer, "none")


def test_cutoff_rule():
    assert cutoff_reached(0.9, 0.95, 0.5, 1.0)  # a gain of exactly one half, up to rounding
    assert not cutoff_reached(0.9, 0.94, 0.5, 1.0)
    assert cutoff_reached(0.2, 0.6, 0.5, 1.0) and not cutoff_reached(0.2, 0.59, 0.5, 1.0)
    assert cutoff_reached(1.0, 0.3, 0.5, 1.0)  # p0 at the goal: reached (no gap to close)


class ScriptedWorld:
    """Answers and percentiles by turn, for hand-computed rewards; counts ranker calls."""

    def __init__(self, answers, percentiles):
        self.answers, self.table, self.calls = answers, percentiles, []

    def answer(self, image, dialogue, question):
        return self.answers[len(dialogue)]

    def percentiles(self, images, dialogues):
        self.calls.append(len(images))
        return [self.table[len(d)] for d in dialogues]


ANSWERS = ["yes", "maybe", "snow", "two"] + ["two"] * 6
PERCENTILES = [0.2, 0.3, 0.35, 0.45, 0.7]  # p0 = 0.2; gains 0.125, 0.1875, 0.3125, 0.625: the 4th turn reaches 0.5


@pytest.mark.parametrize(
    "kind, scale, shift, expected",
    [
        ("none", 1.0, 0.0, [-1, -1, -1, 0]),
        ("hard", 1.0, 0.0, [-3, -1, -1, 0]),
        ("soft", 1.0, 0.0, [-3, -1, -3, 0]),
        ("conservative", 1.0, 0.0, [-3, -3, -3, 0]),
        ("hard", 2.0, 0.5, [-5.5, -1.5, -1.5, 0.5]),
    ],
)
def test_reward_variants_match_hand_computed_values(kind, scale, shift, expected):
    world = ScriptedWorld(ANSWERS, PERCENTILES)
    env = VisDialEnv(
        num_images=10, answerer=world, ranker=world, yn_reward_kind=kind, reward_scale=scale, reward_shift=shift
    )
    _, info = env.reset(seed=0)
    assert info["percentile"] == 0.2
    rewards, terminated = [], False
    while not terminated:
        _, reward, terminated, _, info = env.step("anything?")
        rewards.append(reward)
    assert rewards == expected
    metrics = info["metrics"]
    assert metrics["return"] == sum(expected) and metrics["turns"] == 4 and metrics["reached_cutoff"] == 1.0
    assert metrics["final_percentile"] == 0.7 and metrics["percentile_gain"] == pytest.approx(0.625)
    assert (
        metrics["yes_no_answers"] == {"none": 1, "hard": 1, "soft": 2, "conservative": 3}[kind]
    )  # "none" counts with "hard"


def test_unsolved_game_ends_after_max_turns_and_p0_at_goal_ends_after_one_turn():
    world = ScriptedWorld(["two"] * 10, [0.2] * 11)
    env = VisDialEnv(num_images=10, answerer=world, ranker=world, max_turns=3)
    env.reset(seed=0)
    steps = [env.step("q?") for _ in range(3)]
    assert [s[1] for s in steps] == [-1, -1, -1] and [s[2] for s in steps] == [False, False, True]
    assert steps[-1][4]["metrics"]["reached_cutoff"] == 0.0 and steps[-1][4]["metrics"]["percentile_gain"] == 0.0

    at_goal = ScriptedWorld(["yes"], [1.0, 0.4])
    env = VisDialEnv(num_images=10, answerer=at_goal, ranker=at_goal, yn_reward_kind="hard", yn_reward=-0.5)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("is it?")
    assert (reward, terminated, info["metrics"]["percentile_gain"]) == (-0.5, True, 1.0)


def test_vector_env_ranks_all_games_with_one_call():
    world = ScriptedWorld(ANSWERS, PERCENTILES)
    venv = gymnasium.make_vec(
        "lm_gym/VisDial-v0",
        num_envs=3,
        vectorization_mode="vector_entry_point",
        num_images=10,
        answerer=world,
        ranker=world,
    )
    venv.reset(seed=0)
    world.calls.clear()
    _, rewards, _, _, infos = venv.step(["a?", "b?", "c?"])
    assert world.calls == [3] and rewards.tolist() == [-1.0] * 3 and infos["answer"].tolist() == ["yes"] * 3
    venv.close()
