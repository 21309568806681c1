"""A task's episodes by split and index (``lm_gym.core.episodes``): episode ``i`` of a split is what
``gymnasium.make(..., split=split).reset(seed=i)`` plays, for built-in tasks and a user's."""

from __future__ import annotations

import gymnasium
import pytest
import user_tasks  # noqa: F401  (registers user/CountUp-v0, user/Echo-v0, user/SayTheWord-v0)

import lm_gym  # noqa: F401
from lm_gym.core.episodes import MAX_RANGE, SEEDED_EPISODES, SPLITS, TaskEpisodes
from lm_gym.core.errors import ConfigurationError

COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})


@pytest.mark.parametrize(
    ("env_id", "env_kwargs"),
    [COMMONGEN, ("lm_gym/VisDial-v0", {"source": "synthetic"}), ("lm_gym/Wordle-v0", {}), ("user/CountUp-v0", {})],
)
def test_an_episode_is_the_reset_of_its_seed_on_its_split(env_id, env_kwargs):
    episodes = TaskEpisodes(env_id, env_kwargs)
    for split in ("validation", "test"):
        local = gymnasium.make(env_id, **episodes.split_kwargs(split))
        for index in (0, 7):
            entry = episodes.describe(split, index)
            observation, info = local.reset(seed=index)
            assert (entry["split"], entry["index"], entry["seed"]) == (split, index, index)
            assert entry["observation"] == observation
            if entry["single_turn"]:
                assert (entry["prompt"], entry["references"], entry["meta"]) == (
                    info["prompt"],
                    info["references"],
                    info["meta"],
                )
            else:
                assert entry["info"] == info


def test_a_single_turn_split_counts_its_samples_and_names_the_sample_it_plays():
    episodes = TaskEpisodes(*COMMONGEN)
    env = gymnasium.make(COMMONGEN[0], split="validation", **COMMONGEN[1]).unwrapped
    assert episodes.num_episodes("validation") == len(env.samples)
    assert episodes.num_episodes("train") > episodes.num_episodes("validation")  # another split's own env
    entry = episodes.describe("validation", 5)
    assert env.samples[entry["sample_index"]].prompt == entry["prompt"]
    echo = TaskEpisodes("user/Echo-v0", {"num_samples": 5})
    assert [echo.num_episodes(split) for split in SPLITS] == [5, 5, 5]  # a user's task without splits


def test_tasks_without_a_count_have_every_seed_and_splits_they_do_not_take_play_alike():
    wordle = TaskEpisodes("lm_gym/Wordle-v0")
    assert not wordle.takes_split and wordle.num_episodes("train") == SEEDED_EPISODES
    assert wordle.env("train") is wordle.env("test")
    assert wordle.describe("train", 3) | {"split": "test"} == wordle.describe("test", 3)
    assert [split["name"] for split in wordle.splits()] == list(SPLITS)
    assert "takes no split" in wordle.splits()[0]["description"]


def test_describing_changes_nothing_anyone_plays():
    episodes = TaskEpisodes("lm_gym/Wordle-v0")
    played, alone = episodes.env("validation"), gymnasium.make("lm_gym/Wordle-v0").unwrapped
    for env in (played, alone):
        env.reset(seed=11)
        env.step("crane")
    episodes.describe_range("validation", 0, 4)  # between two steps of the split's own env
    assert played.step("sloth") == alone.step("sloth")


def test_ranges_are_python_slices_and_bounded():
    episodes = TaskEpisodes(*COMMONGEN)
    count = episodes.num_episodes("validation")
    assert [e["index"] for e in episodes.describe_range("validation", 2, 5)] == [2, 3, 4]
    assert [e["index"] for e in episodes.describe_range("validation", -2)] == [count - 2, count - 1]
    assert episodes.describe_range("validation", 5, 2) == []
    with pytest.raises(ConfigurationError, match=rf"stop must be at most start \+ {MAX_RANGE}"):
        TaskEpisodes("lm_gym/Wordle-v0").describe_range("train", 0, MAX_RANGE + 1)
    with pytest.raises(ConfigurationError, match="start must be an int"):
        episodes.describe_range("validation", "0", 2)


@pytest.mark.parametrize(
    ("split", "index", "message"),
    [
        ("dev", 0, "split must be one of"),
        (None, 0, "split must be one of"),
        ("validation", -1, r"index must be an int in \[0, 300\)"),
        ("validation", 300, r"index must be an int in \[0, 300\)"),
        ("validation", "3", "index must be an int"),
        ("validation", 2.0, "index must be an int"),
        ("validation", True, "index must be an int"),
    ],
)
def test_a_bad_split_or_index_is_named(split, index, message):
    episodes = TaskEpisodes(*COMMONGEN)
    with pytest.raises(ConfigurationError, match=message):
        episodes.describe(split, index)
    assert episodes.describe("validation", 0)["index"] == 0  # still works


def test_a_bad_task_or_kwargs_is_named():
    with pytest.raises(ConfigurationError):
        TaskEpisodes("lm_gym/NoSuchTask-v0")
    with pytest.raises(ConfigurationError, match="env_kwargs must be a dict"):
        TaskEpisodes("lm_gym/Wordle-v0", ["mode"])


def test_reset_plays_the_indexed_episode_on_an_env_of_the_split():
    episodes = TaskEpisodes("user/CountUp-v0")
    env = gymnasium.make("user/CountUp-v0")
    observation, _ = episodes.reset(env, "train", 9)
    assert observation == episodes.describe("validation", 9)["observation"]
    with pytest.raises(ConfigurationError, match="index must be an int"):
        episodes.reset(env, "train", -3)
