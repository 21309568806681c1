"""lm_gym.integrations.skyrl: SkyRL-Gym (skyrl-gym 0.4) plays lm-gym tasks as the local envs play them.

Every episode runs through ``skyrl_gym.make`` as SkyRL's generator makes its envs (``env_config``
and a dataset row's columns as ``extras``) and is compared with a fresh ``gymnasium.make`` env
replaying the same seed and replies, read through lm-gym's chat view.
"""

import json

import gymnasium
import pytest
import skyrl_gym
import user_tasks  # noqa: F401  (registers user/CountUp-v0 and user/Echo-v0)
from datasets import Dataset, load_dataset
from omegaconf import OmegaConf
from skyrl_gym.envs.registration import deregister
from skyrl_gym.metrics import aggregate_for_environment

from lm_gym.core.chat import ChatTranscript
from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.integrations.chat_session import CHARS_CUT_KEY, json_info
from lm_gym.integrations.skyrl import ENV_KWARGS_KEY, INDEX_KEY, SEED_KEY, LmGymTextEnv, prompt_rows, register_all

WORDLE = "lm_gym/Wordle-v0"
COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})
WORDLE_REPLIES = ["crane", "xylophonezzzzzzz" * 8, "moist", "pious", "  CLOUD ", "fghij", "tempo"]


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_all()


def local_episode(env_id, env_kwargs, replies, seed=None, index=None):
    """The local env's episode: its first chat messages and, per reply until it ends, (reward, done,
    user messages SkyRL should get, JSON info)."""
    env = gymnasium.make(env_id, **env_kwargs)
    observation, _ = env.reset(seed=seed, options=None if index is None else {"index": index})
    chat = ChatTranscript.start(env, observation)
    first = list(chat.messages)
    steps = []
    for reply in replies:
        action = reply[: env.action_space.max_length]  # the adapter's rule for over-long replies
        observation, reward, terminated, truncated, info = env.step(action)
        before = len(chat.messages)
        chat.record(action, observation, terminated, truncated)
        steps.append((reward, terminated or truncated, chat.messages[before + 1 :], json_info(info)))
        if terminated or truncated:
            break
    return first, steps


def skyrl_episode(env_id, replies, env_config=None, **extras):
    env = skyrl_gym.make(env_id, env_config=env_config, extras=extras)
    first, _ = env.init([])
    steps = []
    for reply in replies:
        output = env.step(reply)
        steps.append(output)
        if output["done"]:
            break
    return env, first, steps


def assert_same(local, played):
    (local_first, local_steps), (_, first, steps) = local, played
    assert first == local_first
    assert len(steps) == len(local_steps)
    for output, (reward, done, messages, info) in zip(steps, local_steps):
        assert output["reward"] == pytest.approx(reward)
        assert output["done"] == done
        assert output["observations"] == messages
        for key, value in info.items():
            assert output["metadata"][key] == value


def test_register_all_registers_every_task_once():
    ids = set(skyrl_gym.registry)
    assert {WORDLE, COMMONGEN[0], "user/CountUp-v0", "user/Echo-v0"} <= ids
    assert register_all() == []  # again: nothing new, no error
    spec = skyrl_gym.registry[WORDLE]
    deregister(WORDLE)
    skyrl_gym.register(id=WORDLE, entry_point="skyrl_gym.envs.gsm8k.env:GSM8kEnv")
    try:
        with pytest.raises(ConfigurationError, match="already has an environment 'lm_gym/Wordle-v0'"):
            register_all()
    finally:
        deregister(WORDLE)
        skyrl_gym.registry[WORDLE] = spec
    assert json.loads(spec.to_json())["kwargs"] == {"env_id": WORDLE}  # a spec SkyRL can serialise


@pytest.mark.parametrize("seed", [0, 7, 123])
def test_a_wordle_episode_is_the_local_envs(seed):
    played = skyrl_episode(WORDLE, WORDLE_REPLIES, **{SEED_KEY: seed, "max_turns": 16})
    assert_same(local_episode(WORDLE, {}, WORDLE_REPLIES, seed=seed), played)
    env, first, steps = played
    assert first[0]["role"] == "system" and "five-letter word" in first[0]["content"]
    assert first[1] == {"role": "user", "content": env.task.reset(seed=seed)[0]}
    assert steps[1]["metadata"][CHARS_CUT_KEY] == len(WORDLE_REPLIES[1]) - env.task.action_space.max_length
    assert steps[-1]["metadata"]["terminated"] and not steps[-1]["metadata"]["truncated"]
    assert env.get_metrics()["return"] == pytest.approx(sum(step["reward"] for step in steps))


def test_seeds_are_respected():
    feedback = {}
    for seed in range(6):
        episodes = [skyrl_episode(WORDLE, ["crane", "moist"], **{SEED_KEY: seed, "max_turns": 6}) for _ in range(2)]
        (_, _, first), (_, _, second) = episodes
        assert first == second  # a GRPO group's trajectories play one game
        feedback[seed] = tuple(output["observations"][0]["content"] for output in first)
    assert len(set(feedback.values())) > 1


@pytest.mark.parametrize("index", [0, 3])
def test_a_single_turn_episode_is_the_local_envs(index):
    env_id, kwargs = COMMONGEN
    replies = ["a dog runs in the park", "x" * 2000]
    for reply in replies:
        played = skyrl_episode(env_id, [reply], env_config=OmegaConf.create(kwargs), **{INDEX_KEY: index})
        assert_same(local_episode(env_id, kwargs, [reply], index=index), played)
        env, first, (output,) = played
        assert output["done"] and output["observations"] == []
        assert output["metadata"]["references"] == list(env.task.samples[index].references)
        assert env.get_metrics()["return"] == output["reward"] and "meteor" in env.get_metrics()


def test_the_user_tasks_are_the_local_envs():
    countup = ["4", "5", "nine"]
    for seed in (0, 1, 2):
        played = skyrl_episode("user/CountUp-v0", countup, **{SEED_KEY: seed})
        assert_same(local_episode("user/CountUp-v0", {}, countup, seed=seed), played)
    for index in (0, 5):
        played = skyrl_episode("user/Echo-v0", ["word5"], **{INDEX_KEY: index, ENV_KWARGS_KEY: {"num_samples": 8}})
        assert_same(local_episode("user/Echo-v0", {"num_samples": 8}, ["word5"], index=index), played)


def test_a_parquet_dataset_drives_the_episodes(tmp_path):
    """Rows written to parquet and read back as SkyRL reads its data: the columns other than prompt
    and env_class are the extras, and the prompt is the chat ``init`` gives."""
    env_id, kwargs = COMMONGEN
    rows = prompt_rows(env_id, "validation", num_prompts=3, **kwargs) + prompt_rows(WORDLE, num_prompts=2)
    path = tmp_path / "train.parquet"
    Dataset.from_list(rows).to_parquet(path)
    for row in load_dataset("parquet", data_files=str(path), split="train"):
        prompt, env_class = row.pop("prompt"), row.pop("env_class")
        env = skyrl_gym.make(env_class, env_config=OmegaConf.create({}), extras={**row, "max_turns": 6})
        messages, _ = env.init(prompt)
        assert messages == prompt
        output = env.step("a dog runs in the park")
        seed, index = row[SEED_KEY], row[INDEX_KEY]
        local_kwargs = json.loads(row[ENV_KWARGS_KEY])
        (_, steps) = local_episode(env_class, local_kwargs, ["a dog runs in the park"], seed=seed, index=index)
        assert output["reward"] == pytest.approx(steps[0][0])
    assert json.loads(rows[0][ENV_KWARGS_KEY]) == {**kwargs, "split": "validation"}


def test_max_turns_truncates_and_metrics_aggregate():
    env, _, steps = skyrl_episode(WORDLE, ["crane", "moist", "pious"], **{SEED_KEY: 1, "max_turns": 2})
    assert [output["done"] for output in steps] == [False, True]
    assert steps[-1]["metadata"]["truncated"] and not steps[-1]["metadata"]["terminated"]
    assert steps[-1]["observations"] == []
    solved = skyrl_gym.make(WORDLE, env_config={"num_answers": 1}, extras={SEED_KEY: 0})
    solved.init([])
    answer = solved.task.vocabulary.answers[0]
    assert solved.step(answer)["done"] and solved.get_metrics()["solved"] == 1.0
    metrics = aggregate_for_environment(WORDLE, [env.get_metrics(), solved.get_metrics()])
    assert metrics["return"] == pytest.approx((sum(output["reward"] for output in steps) + 0.0) / 2)
    assert metrics["turns"] == pytest.approx(1.5)


def test_bad_actions_and_bad_extras_are_refused_as_the_env_refuses_them():
    env = skyrl_gym.make(WORDLE, extras={SEED_KEY: 0})
    env.init([])
    with pytest.raises(InvalidActionError, match="must be a str"):
        env.step(None)
    assert env.step("zzzzz")["reward"] == -1.0  # not a word: the task's own penalty, the episode goes on
    single = skyrl_gym.make(COMMONGEN[0], env_config=COMMONGEN[1], extras={INDEX_KEY: 0})
    single.init([])
    single.step("a dog")
    with pytest.raises(ResetNeededError):
        single.step("again")
    with pytest.raises(ConfigurationError, match=r"extras\['lm_gym_seed'\] must be an int >= 0"):
        LmGymTextEnv(extras={SEED_KEY: "one"}, env_id=WORDLE)
    with pytest.raises(ConfigurationError, match=r"extras\['max_turns'\] must be an int >= 1"):
        LmGymTextEnv(extras={"max_turns": 0}, env_id=WORDLE)
    with pytest.raises(ConfigurationError, match="lm_gym_env_kwargs.*JSON"):
        LmGymTextEnv(extras={ENV_KWARGS_KEY: "{source"}, env_id=COMMONGEN[0])
    with pytest.raises(ConfigurationError, match="env_config must be a mapping"):
        LmGymTextEnv(env_config=["source"], env_id=WORDLE)
    with pytest.raises(ConfigurationError, match="utterance level"):
        LmGymTextEnv(env_config={"action_level": "token"}, env_id=WORDLE)
    with pytest.raises(ConfigurationError, match="unknown reset option"):
        skyrl_gym.make(WORDLE, extras={INDEX_KEY: 2}).init([])  # Wordle has no samples
