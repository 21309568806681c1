# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""The env server: OpenEnv's own client plays it, sessions replay local episodes, steps of many
sessions share one reward call, and ``lm_gym/Remote-v0`` (scalar and vector) plays like the local env."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request

import gymnasium
import numpy as np
import pytest

from lm_gym.core.errors import ResetNeededError

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

IMDB_KWARGS = {"source": "synthetic"}


def normalized(info):
    """An info as it looks after the wire (JSON), the action mask aside."""
    from lm_gym.serve.wire import to_json

    return to_json({k: v for k, v in info.items() if k != "action_mask"})


def play_both(remote, local, actions, seed):
    """Reset both envs with ``seed`` and play ``actions`` (a callable of the step number); compare every step."""
    (obs_r, info_r), (obs_l, info_l) = remote.reset(seed=seed), local.reset(seed=seed)
    assert_same(obs_r, obs_l)
    assert normalized(info_r) == normalized(info_l)
    for t in range(200):
        action = actions(t)
        result_r, result_l = remote.step(action), local.step(action)
        assert_same(result_r[0], result_l[0])
        assert result_r[1:4] == result_l[1:4]
        assert normalized(result_r[4]) == normalized(result_l[4])
        if "action_mask" in result_l[4]:
            assert np.array_equal(result_r[4]["action_mask"], result_l[4]["action_mask"])
        if result_l[2] or result_l[3]:
            return t + 1
    return 200


def assert_same(a, b):
    if isinstance(b, dict):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in b)
    else:
        assert a == b


def test_openenv_generic_client_plays_a_served_task(start_server):
    from openenv.core.generic_client import GenericEnvClient

    url, served, _ = start_server("lm_gym/Wordle-v0")
    local = gymnasium.make("lm_gym/Wordle-v0")
    with GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=7)
        assert result.observation["text"] == local.reset(seed=7)[0] and result.done is False
        result = client.step({"text": "crane"})
        obs, reward, terminated, truncated, _ = local.step("crane")
        assert (result.observation["text"], result.reward, result.done) == (obs, reward, terminated or truncated)
        state = client.state()
        assert state["env_id"] == "lm_gym/Wordle-v0" and state["step_count"] == 1
        with pytest.raises(RuntimeError, match="InvalidActionError"):
            client.step({"text": "x" * 1000})
    schema = json.load(urllib.request.urlopen(f"{url}/schema", timeout=10))
    assert schema["action"]["properties"]["text"]["type"] == "string"
    assert schema["action"]["properties"]["text"]["maxLength"] == local.action_space.max_length
    assert json.load(urllib.request.urlopen(f"{url}/health", timeout=10))["status"] == "healthy"


@pytest.mark.parametrize(
    ("env_id", "kwargs", "level"),
    [
        ("lm_gym/Wordle-v0", {}, "utterance"),
        ("lm_gym/IMDB-v0", IMDB_KWARGS, "utterance"),
        ("lm_gym/Wordle-v0", {}, "token"),
    ],
)
def test_a_session_replays_the_local_env_with_the_same_seed(start_server, env_id, kwargs, level):
    import lm_gym.serve  # noqa: F401  (registers lm_gym/Remote-v0)

    url, _, _ = start_server(env_id, env_kwargs=kwargs, action_level=level)
    remote = gymnasium.make("lm_gym/Remote-v0", url=url, env_id=env_id, action_level=level)
    local = gymnasium.make(env_id, action_level=level, **kwargs)
    assert remote.observation_space == local.observation_space and remote.action_space == local.action_space
    rng = np.random.default_rng(0)
    if level == "token":
        actions = lambda t: int(rng.integers(local.action_space.n))  # noqa: E731
    else:
        words = ["crane", "slate", "pious", "a fine film, moving and warm", "bad"]
        actions = lambda t: words[int(rng.integers(len(words)))]  # noqa: E731
    for seed in (0, 1, 2):
        play_both(remote, local, actions, seed)
    remote.close()


def assert_same_vector_step(result_r, result_n):
    assert result_r[0] == result_n[0]
    for a, b in zip(result_r[1:4], result_n[1:4], strict=True):
        assert np.array_equal(a, b)
    infos_r, infos_n = result_r[4], result_n[4]
    assert infos_r.keys() == infos_n.keys()
    if "final_obs" in infos_n:
        assert infos_r["final_obs"].tolist() == infos_n["final_obs"].tolist()
        assert infos_r["final_info"]["answer"].tolist() == infos_n["final_info"]["answer"].tolist()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("servers", [1, 2])
def test_the_vector_client_matches_the_native_vector_env(start_server, mode, servers):
    import lm_gym.serve  # noqa: F401

    urls = [start_server("lm_gym/Wordle-v0")[0] for _ in range(servers)]
    make = dict(num_envs=5, vectorization_mode="vector_entry_point", autoreset_mode=mode)
    remote = gymnasium.make_vec("lm_gym/Remote-v0", url=urls if servers > 1 else urls[0], **make)
    native = gymnasium.make_vec("lm_gym/Wordle-v0", **make)
    assert remote.metadata["autoreset_mode"] == native.metadata["autoreset_mode"]
    obs_r, _ = remote.reset(seed=11)
    obs_n, _ = native.reset(seed=11)
    assert obs_r == obs_n
    words = ["crane", "slate", "pious", "adieu", "mount"]
    for t in range(14):  # past the first episodes' ends (6 guesses)
        actions = [words[(t + i) % 5] for i in range(5)]
        if mode == "Disabled" and t in (6, 12):  # every game ended after 6 guesses
            with pytest.raises(ResetNeededError, match="reset_mask"):
                remote.step(actions)
            mask = np.array([True, False, True, False, True])
            assert (
                remote.reset(seed=[1, 0, 3, 0, 5], options={"reset_mask": mask})[0]
                == native.reset(seed=[1, 0, 3, 0, 5], options={"reset_mask": mask})[0]
            )
            remote.reset(seed=40 + t)
            native.reset(seed=40 + t)
        assert_same_vector_step(remote.step(actions), native.step(actions))
    remote.close()


def test_a_vector_env_over_servers_of_different_tasks_is_refused(start_server):
    import lm_gym.serve  # noqa: F401
    from lm_gym.core.errors import ConfigurationError

    wordle, _, _ = start_server("lm_gym/Wordle-v0")
    other_words, _, _ = start_server("lm_gym/Wordle-v0", env_kwargs={"max_guesses": 3})
    with pytest.raises(ConfigurationError, match="serve different tasks"):
        gymnasium.make_vec("lm_gym/Remote-v0", num_envs=2, vectorization_mode="vector_entry_point",
                           url=[wordle, other_words])  # fmt: skip
    with pytest.raises(ConfigurationError, match="url must be"):
        gymnasium.make_vec("lm_gym/Remote-v0", num_envs=2, vectorization_mode="vector_entry_point", url=[])


def test_steps_of_concurrent_sessions_share_one_reward_call(start_server):
    import serve_tasks

    import lm_gym.serve  # noqa: F401

    url, served, _ = start_server("serve_tasks:serve_test/Counting-v0", batch_window_ms=50)
    remote = gymnasium.make_vec("lm_gym/Remote-v0", num_envs=8, vectorization_mode="vector_entry_point", url=url)
    remote.reset(seed=0)
    serve_tasks.CALLS.clear()
    _, rewards, terminated, _, _ = remote.step(["abc"] * 8)
    assert serve_tasks.CALLS == [8] and rewards.tolist() == [3.0] * 8 and terminated.all()
    remote.close()


def test_a_reward_that_raises_fails_only_its_session(start_server):
    from lm_gym.serve.client import Session, _run
    from lm_gym.serve.errors import RewardFunctionError

    url, _, _ = start_server("serve_tasks:serve_test/Counting-v0", batch_window_ms=50)

    async def scenario():
        a, b = await Session(url, 10).open(), await Session(url, 10).open()
        await asyncio.gather(a.request({"type": "reset", "data": {"seed": 1}}), b.request({"type": "reset"}))
        results = await asyncio.gather(
            a.request({"type": "step", "data": {"text": "boom"}}),
            b.request({"type": "step", "data": {"text": "fine"}}),
            return_exceptions=True,
        )
        retry = await a.request({"type": "step", "data": {"text": "ok"}})  # the episode is as before the step
        await a.close(), await b.close()
        return results, retry

    (failed, fine), retry = _run(scenario(), 30)
    assert isinstance(failed, RewardFunctionError) and "the reward model broke" in str(failed)
    assert fine["reward"] == 4.0 and retry["reward"] == 2.0 and retry["done"]


def test_importing_lm_gym_needs_no_server_package():
    code = "import sys, lm_gym; assert 'openenv' not in sys.modules and 'lm_gym.serve' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_server_refuses_bad_settings():
    from lm_gym.core.errors import ConfigurationError
    from lm_gym.serve.config import ServeConfig, parse_args

    with pytest.raises(ConfigurationError, match="action_level"):
        ServeConfig(env_id="lm_gym/Wordle-v0", action_level="word")
    with pytest.raises(ConfigurationError, match="max_sessions"):
        ServeConfig(env_id="lm_gym/Wordle-v0", max_sessions=0)
    config = parse_args(["lm_gym/IMDB-v0", "--env-kwargs", '{"source": "synthetic"}', "--no-batching"])
    assert config.env_kwargs == IMDB_KWARGS and not config.batching and config.host == "127.0.0.1"
    from lm_gym.serve.environment import TaskService

    with pytest.raises(ConfigurationError, match="not a registered lm-gym task"):
        TaskService(ServeConfig(env_id="lm_gym/Nothing-v0"))
