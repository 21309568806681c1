"""``lm_gym/Mixture-v0``: tasks drawn by weight, info["task"], one reward call per task, each task's token protocol."""

from __future__ import annotations

import collections

import gymnasium
import numpy as np
import pytest

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core.errors import ConfigurationError
from lm_gym.core.registration import task_class
from lm_gym.metrics import corpus_metrics
from lm_gym.tasks.mixture import MixtureEnv, MixtureReward, TaskMeta

IMDB, COMMONGEN, WORDLE = "lm_gym/IMDB-v0", "lm_gym/CommonGen-v0", "lm_gym/Wordle-v0"
SYNTHETIC = {IMDB: {"source": "synthetic"}, COMMONGEN: {"source": "synthetic"}}
KWARGS = MixtureEnv.offline_kwargs


def arguments(kwargs):
    """The offline mixture's arguments with ``kwargs``; ``task_kwargs``: the synthetic sources of ``tasks``."""
    kwargs = {**KWARGS, **kwargs}
    if "task_kwargs" not in kwargs or kwargs["task_kwargs"] is KWARGS["task_kwargs"]:
        kwargs["task_kwargs"] = {task: SYNTHETIC[task] for task in kwargs["tasks"] if task in SYNTHETIC}
    return kwargs


def mixture(**kwargs):
    return gymnasium.make("lm_gym/Mixture-v0", **arguments(kwargs))


def vector(num_envs=6, **kwargs):
    return gymnasium.make_vec(
        "lm_gym/Mixture-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **arguments(kwargs)
    )


def episodes(env, seed, count):
    """``count`` episodes of fixed actions: (task, first observation, rewards) each."""
    played = []
    observation, info = env.reset(seed=seed)
    for _ in range(count):
        task, first, rewards = info["task"], observation, []
        done = False
        while not done:
            observation, reward, terminated, truncated, info = env.step("a fine crane story")
            assert info["task"] == task
            rewards.append(reward)
            done = terminated or truncated
        played.append((task, first, rewards))
        observation, info = env.reset()
    return played


def test_same_seed_same_episodes_and_tasks_drawn_by_weight():
    env = mixture()
    first, again = episodes(env, 3, 12), episodes(mixture(), 3, 12)
    assert first == again
    assert episodes(env, 4, 12) != first
    env = mixture(tasks={IMDB: 3.0, COMMONGEN: 1.0, WORDLE: 0.0})
    counts = collections.Counter(env.reset(seed=seed)[1]["task"] for seed in range(400))
    assert counts[WORDLE] == 0 and 0.65 < counts[IMDB] / 400 < 0.85
    observation, info = env.reset(options={"task": WORDLE})  # a weight-0 task still plays when asked
    assert info["task"] == WORDLE and env.unwrapped.current_task == WORDLE


def test_a_list_of_ids_weighs_them_alike_and_task_options_reach_the_task():
    env = mixture(tasks=[IMDB, COMMONGEN])
    assert env.unwrapped.probabilities == (0.5, 0.5)
    observation, info = env.reset(seed=0, options={"task": IMDB, "task_options": {"index": 7}})
    imdb = gymnasium.make(IMDB, source="synthetic")
    assert (observation, info["meta"]) == (imdb.reset(options={"index": 7})[0], imdb.unwrapped.current_sample.meta)


def test_episodes_and_metrics_are_the_tasks_own():
    env = mixture(tasks={WORDLE: 1.0})
    observation, info = env.reset(seed=5)
    wordle = gymnasium.make(WORDLE)
    assert observation == wordle.reset()[0] and info["task"] == WORDLE
    for _ in range(6):
        observation, reward, terminated, _, info = env.step("crane")
        assert reward == -1.0 or terminated
        if terminated:
            break
    assert set(info["metrics"]) == {"solved", "num_guesses", "return"} and info["task"] == WORDLE


def test_one_batched_reward_call_per_task_per_step():
    venv = vector(num_envs=8)
    envs = venv.unwrapped.envs
    reward = envs[0].reward_fn
    assert isinstance(reward, MixtureReward) and all(env.reward_fn is reward for env in envs)
    calls = collections.Counter()
    for task, fn in list(reward.reward_fns.items()):
        if fn is None:
            continue

        def counted(*args, _fn=fn, _task=task):
            calls[_task] += 1
            return _fn(*args)

        reward.reward_fns[task] = counted
    observations, infos = venv.reset(seed=0)
    for _ in range(6):
        before = dict(calls)
        _, _, _, _, infos = venv.step(["a crane"] * 8)
        stepped = collections.Counter({task: calls[task] - before.get(task, 0) for task in calls})
        assert all(count <= 1 for count in stepped.values()) and WORDLE not in stepped
        played = {infos["task"][i] for i in range(8) if infos["_task"][i]}
        assert {task for task, count in stepped.items() if count} <= played
    assert calls[IMDB] and calls[COMMONGEN]


def test_queries_carry_their_task_and_the_reward_refuses_others():
    env = mixture(tasks={IMDB: 1.0}).unwrapped
    env.reset(seed=0)
    _, query = env.prepare_step("great")
    assert isinstance(query.meta, TaskMeta) and query.meta.task == IMDB and "task" not in query.meta
    with pytest.raises(ConfigurationError, match="MixtureReward"):
        env.reward_fn(["p"], ["u"], [()], [{}])


def test_vector_copy_i_plays_the_scalar_env_seeded_i():
    venv, env = vector(num_envs=3), mixture()
    observations, infos = venv.reset(seed=10)
    for i in range(3):
        observation, info = env.reset(seed=10 + i)
        assert (observations[i], infos["task"][i]) == (observation, info["task"])


def test_corpus_metrics_per_task():
    env = mixture(tasks={COMMONGEN: 1.0, IMDB: 1.0})
    finals = []
    for seed in range(8):
        env.reset(seed=seed)
        finals.append(env.step("dogs catch a frisbee in the park")[4])
    tasks = {final["task"] for final in finals}
    assert tasks == {COMMONGEN, IMDB}
    metrics = env.unwrapped.task_corpus_metrics(finals)
    assert metrics and all(key.split("/", 2)[:2] == ["lm_gym", key.split("/")[1]] for key in metrics)
    assert any(key.startswith(COMMONGEN + "/") for key in metrics)
    commongen = [final for final in finals if final["task"] == COMMONGEN]
    assert "distinct_2" in corpus_metrics(env.unwrapped.task_envs[COMMONGEN], commongen)


@pytest.fixture(scope="module")
def token_venv():
    return vector(num_envs=6, action_level="token")


def test_token_level_each_copy_follows_its_tasks_protocol(token_venv):
    venv = token_venv
    protocols = {name: venv.envs[0].task_protocol(name) for name in venv.envs[0].task_names}
    assert protocols[IMDB]["min_new_tokens"] == 48 and protocols[WORDLE]["max_new_tokens"] == 8
    assert (venv.max_prompt_length, venv.max_new_tokens, venv.min_new_tokens) == (128, 48, 0)
    observations, infos = venv.reset(seed=1)
    tasks = list(infos["task"])
    assert len(set(tasks)) > 1
    masks = venv.action_masks()
    for i, task in enumerate(tasks):
        protocol = protocols[task]
        assert observations["prompt_mask"][i].sum() <= protocol["max_prompt_length"]
        assert masks[i, venv.eos_token_id] == (protocol["min_new_tokens"] == 0)
    token = next(t for t in range(10, venv.vocab_size) if t != venv.eos_token_id)
    ends = {}
    for step in range(1, 49):
        _, _, _, _, infos = venv.step(np.full(6, token))
        for i in range(6):
            if infos.get("_num_tokens", np.zeros(6, bool))[i] and i not in ends:
                ends[i] = (step, infos["task"][i])
    for i, task in enumerate(tasks):
        assert ends[i] == (min(protocols[task]["max_new_tokens"], 48), task)


def test_token_level_scalar_env_plays_a_task_as_its_own_token_env(token_venv):
    tokenizer = token_venv.tokenizer
    env = mixture(tasks={WORDLE: 1.0}, action_level="token", tokenizer=tokenizer)
    own = gymnasium.make(WORDLE, action_level="token", tokenizer=tokenizer)
    observation, info = env.reset(seed=2)
    expected, _ = own.reset(seed=2)
    assert np.array_equal(observation["prompt_ids"], expected["prompt_ids"]) and info["task"] == WORDLE
    for token in [20, 30, 40, 50, 60, 70, 80, 90]:
        observation, reward, *_ = env.step(token)
        expected, expected_reward, *_ = own.step(token)
        assert np.array_equal(observation["prompt_ids"], expected["prompt_ids"]) and reward == expected_reward


def test_task_kwargs_set_a_tasks_token_protocol():
    env = MixtureEnv({IMDB: 1, WORDLE: 1}, {IMDB: {"source": "synthetic", "max_new_tokens": 6, "min_new_tokens": 2}})
    assert env.task_protocol(IMDB)["max_new_tokens"] == 6 and env.task_protocol(IMDB)["min_new_tokens"] == 2
    assert env.token_level_defaults == {"max_prompt_length": 128, "max_new_tokens": 8}


def test_tokenizer_corpus_is_the_union_of_the_tasks():
    env = MixtureEnv({IMDB: 1, WORDLE: 1}, {IMDB: {"source": "synthetic"}})
    key, corpus = env.tokenizer_corpus()
    texts = list(corpus)
    imdb_texts = list(env.task_envs[IMDB].tokenizer_corpus()[1])
    wordle_texts = list(env.task_envs[WORDLE].tokenizer_corpus()[1])
    assert key.startswith("mixture-") and texts == imdb_texts + wordle_texts


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tasks": {"lm_gym/Nope-v0": 1.0}}, "tasks"),
        ({"tasks": {IMDB: -1.0}}, "tasks"),
        ({"tasks": {IMDB: 0, WORDLE: 0.0}}, "tasks: the weights"),
        ({"tasks": {IMDB: "1"}}, "tasks"),
        ({"tasks": {IMDB: True}}, "tasks"),
        ({"tasks": {IMDB: float("nan")}}, "tasks"),
        ({"tasks": {}}, "tasks"),
        ({"tasks": "lm_gym/IMDB-v0"}, "tasks"),
        ({"tasks": [IMDB, IMDB]}, "tasks"),
        ({"tasks": {"lm_gym/Mixture-v0": 1.0}}, "mixture"),
        ({"tasks": {WORDLE: 1.0}, "task_kwargs": {IMDB: {}}}, "task_kwargs"),
        ({"tasks": {WORDLE: 1.0}, "task_kwargs": {WORDLE: {"nope": 1}}}, "task_kwargs"),
        ({"tasks": {WORDLE: 1.0}, "task_kwargs": {WORDLE: {"tokenizer": "gpt2"}}}, "task_kwargs"),
        ({"tasks": {WORDLE: 1.0}, "task_kwargs": {WORDLE: {"max_new_tokens": 0}}}, "task_kwargs"),
        ({"tasks": {WORDLE: 1.0}, "task_kwargs": [1]}, "task_kwargs"),
    ],
)
def test_bad_arguments_raise_configuration_errors_naming_them(kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        MixtureEnv(**kwargs)


def test_a_task_that_fails_to_build_closes_those_built_before(monkeypatch):
    closed = []
    wordle = task_class(WORDLE)
    monkeypatch.setattr(wordle, "close", lambda self: closed.append(self), raising=False)
    with pytest.raises(ConfigurationError) as error:
        MixtureEnv({WORDLE: 1.0, IMDB: 1.0}, {IMDB: {"source": "nowhere"}})
    assert len(closed) == 1 and any(IMDB in note for note in error.value.__notes__)


def test_bad_reset_options_are_refused_and_change_nothing():
    env = mixture()
    reference = episodes(env, 9, 3)
    env.reset(seed=9)
    for options in ({"task": "lm_gym/Nope-v0"}, {"task_options": {"index": 1}}, {"task": IMDB, "task_options": 3}):
        with pytest.raises(ConfigurationError):
            env.reset(options=options)
    with pytest.raises(ConfigurationError):  # the task refuses its own option: the mixture's RNG is as it was
        env.reset(options={"task": IMDB, "task_options": {"index": 10**9}})
    assert episodes(env, 9, 3) == reference
