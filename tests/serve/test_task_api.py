# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""OpenEnv 0.10's Task API on a served task: the splits, how many episodes each has, an episode's
description by index, ranges, and ``reset(split=, index=)`` playing exactly the episode a local
``gymnasium.make(..., split=split).reset(seed=index)`` plays; bad splits and indices are named.
The client is OpenEnv's own ``GenericEnvClient`` (and plain HTTP for the listing routes)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import gymnasium
import pytest

import lm_gym  # noqa: F401
from lm_gym.core.episodes import SEEDED_EPISODES, TaskEpisodes

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from servers import register_user_tasks, restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})


def call(url: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, object]:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    data = None if body is None else json.dumps(body).encode()
    method = "GET" if data is None else "POST"
    request = urllib.request.Request(f"{url}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def route(env_id: str, name: str) -> str:
    return f"/{env_id.replace('/', '-')}/{name}"


def play(client, local, split: str, index: int, actions: list[str]) -> None:
    """Episode ``index`` of ``split`` through the client equals the local env's reset with seed ``index``."""
    reply = client.reset(split=split, index=index)
    observation, _ = local.reset(seed=index)
    assert reply.observation["text"] == observation
    for action in actions:
        reply = client.step({"text": action})
        observation, reward, terminated, truncated, _ = local.step(action)
        assert (reply.observation["text"], reply.reward, reply.done) == (observation, reward, terminated or truncated)
        if reply.done:
            break


def test_the_listing_routes_answer_what_the_task_has(start_server):
    url, _, _ = start_server(COMMONGEN[0], env_kwargs=COMMONGEN[1])
    episodes = TaskEpisodes(*COMMONGEN)
    status, splits = call(url, route(COMMONGEN[0], "splits"))
    assert status == 200 and [s["name"] for s in splits] == ["train", "validation", "test"]
    assert call(url, route(COMMONGEN[0], "num_tasks"), {"split": "validation"}) == (200, {"num_tasks": 300})
    assert call(url, route(COMMONGEN[0], "num_tasks"), {"split": "train"})[1]["num_tasks"] == episodes.num_episodes(
        "train"
    )
    status, reply = call(url, route(COMMONGEN[0], "task"), {"split": "test", "index": 12})
    assert status == 200 and reply["task"] == episodes.describe("test", 12)
    status, reply = call(url, route(COMMONGEN[0], "task_range"), {"split": "validation", "start": 3, "stop": 6})
    assert [task["index"] for task in reply["tasks"]] == [3, 4, 5]
    status, reply = call(url, route(COMMONGEN[0], "tasks"), {"split": "validation"})
    assert status == 200 and len(reply["tasks"]) == 100  # a preview; num_tasks counts them all


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("task", {"split": "validation", "index": 300}, r"index must be an int in [0, 300)"),
        ("task", {"split": "validation", "index": -1}, "index must be an int"),
        ("task", {"split": "dev", "index": 0}, "split must be one of ['train', 'validation', 'test'], got 'dev'"),
        ("num_tasks", {"split": "dev"}, "split must be one of"),
        ("task_range", {"split": "train", "start": 0, "stop": 5000}, "stop must be at most start + 1000"),
    ],
)
def test_a_bad_split_index_or_range_is_a_named_400(start_server, path, body, message):
    url, _, _ = start_server(COMMONGEN[0], env_kwargs=COMMONGEN[1])
    status, reply = call(url, route(COMMONGEN[0], path), body)
    assert status == 400 and reply["error_type"] == "ConfigurationError" and message in reply["message"]
    assert call(url, route(COMMONGEN[0], "task"), {"split": "validation", "index": 0})[0] == 200


@pytest.mark.parametrize(
    ("env_id", "env_kwargs", "actions"),
    [
        (*COMMONGEN, ["a boy eats a cut apple"]),
        ("lm_gym/Wordle-v0", {}, ["crane", "sloth", "xx", "pudgy", "mimic", "fjord", "vivid"]),
        ("user/CountUp-v0", {}, ["1", "2", "seven"]),
        ("user/Echo-v0", {"num_samples": 6}, ["word3"]),
    ],
)
def test_reset_with_split_and_index_plays_that_episode(start_server, env_id, env_kwargs, actions):
    register_user_tasks()

    url, _, _ = start_server(env_id, env_kwargs=env_kwargs)  # started on the task's default split
    episodes = TaskEpisodes(env_id, env_kwargs)
    with GenericEnvClient(base_url=url).sync() as client:
        for split, index in (("validation", 0), ("validation", 5), ("test", 2), ("validation", 5)):
            play(client, gymnasium.make(env_id, **episodes.split_kwargs(split)), split, index, actions)
            assert client.state()["split"] == (split if episodes.takes_split else None)
        reply = client.reset(index=4)  # the session's split, kept
        assert client.state()["split"] == (split if episodes.takes_split else None)
        assert reply.observation["text"] == episodes.describe(split, 4)["observation"]


def test_a_bad_reset_is_named_and_the_session_goes_on(start_server):
    url, _, _ = start_server(COMMONGEN[0], env_kwargs=COMMONGEN[1])
    with GenericEnvClient(base_url=url).sync() as client:
        for kwargs, message in (
            ({"split": "validation", "index": 300}, "index must be an int in [0, 300)"),
            ({"split": "eval", "index": 0}, "split must be one of"),
            ({"split": "test", "index": 2, "seed": 3}, "the index is the seed"),
        ):
            with pytest.raises(Exception, match="ConfigurationError") as raised:
                client.reset(**kwargs)
            assert message in str(raised.value)
        assert (
            client.reset(split="test", index=2, seed=2).observation["text"]
            == TaskEpisodes(*COMMONGEN).describe("test", 2)["observation"]
        )


def test_the_token_level_server_plays_the_indexed_episode(start_server):
    url, served, _ = start_server("lm_gym/Wordle-v0", action_level="token")
    local = gymnasium.make("lm_gym/Wordle-v0", action_level="token")
    with GenericEnvClient(base_url=url).sync() as client:
        reply = client.reset(split="validation", index=8)
        observation, _ = local.reset(seed=8)
        assert reply.observation["prompt_ids"] == observation["prompt_ids"].tolist()
        for token in (5, 9, local.unwrapped.tokenizer.eos_token_id):
            reply = client.step({"token": int(token)})
            assert reply.reward == local.step(int(token))[1]
    assert call(url, route("lm_gym/Wordle-v0", "num_tasks"), {"split": "train"})[1] == {"num_tasks": SEEDED_EPISODES}


def test_the_task_api_needs_the_token(start_server):
    token = "a-task-api-token-0123456789"
    url, _, _ = start_server(COMMONGEN[0], env_kwargs=COMMONGEN[1], token=token)
    for path, body in (("splits", None), ("task", {"split": "test", "index": 0}), ("tasks", {"split": "test"})):
        assert call(url, route(COMMONGEN[0], path), body)[0] == 401
        assert call(url, route(COMMONGEN[0], path), body, token=token)[0] == 200
