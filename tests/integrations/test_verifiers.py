"""lm-gym's tasks in verifiers 0.4 (lm_gym.integrations.verifiers), against the real library.

The tasksets' episodes are checked against the local env; whole evaluations run ``vf-eval`` on
exported packages and verifiers' own ``OpenEnvTaskset`` on a served task, the model being a small
OpenAI-compatible server in this process whose replies are scripted from the chat it is sent
(the generation stubbed at the server boundary). Each rollout's rewards must equal the local env
replaying the same seed with the same replies.

verifiers 0.4 pins mcp==2.0.0, which openenv 0.10's fastmcp refuses, so these tests run in a venv of
their own (.ci/run); its chat harness runs as a ``uv`` script, so ``uv`` must be on that venv's PATH.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip(
    "verifiers.v1",
    reason="verifiers 0.4 is not installed: it pins mcp==2.0.0, which openenv 0.10 refuses, so its tests run "
    "in a venv of their own (see .ci/run)",
)
import gymnasium  # noqa: E402
import tomli_w  # noqa: E402  (a dependency of verifiers)
import user_tasks  # noqa: E402,F401  (registers user/CountUp-v0 and user/Echo-v0)
from aiohttp import web  # noqa: E402

from lm_gym.core.chat import ChatTranscript, chat_task  # noqa: E402
from lm_gym.core.errors import ConfigurationError, InvalidActionError  # noqa: E402
from lm_gym.core.registration import split_kwargs  # noqa: E402
from lm_gym.integrations.verifiers import (  # noqa: E402
    RETURN_REWARD,
    TRACE_INFO_KEY,
    LmGymTaskset,
    LmGymTasksetConfig,
    export,
    package_names,
)

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

TESTS_DIR = Path(__file__).resolve().parents[1]
BIN_DIR = Path(sys.executable).parent
WORDLE_KWARGS = {"unknown_word_penalty": 2.0}  # so a word outside the list gets the task's own penalty


# ---- the scripted model: replies from the chat, chosen by the request's model name ----------------------------------


def scripted_reply(model: str, messages: list[dict]) -> str:
    """What the stub model answers ``messages`` with; depends on the chat only, so a local replay gives the same."""
    turn = sum(message["role"] == "assistant" for message in messages)
    last = messages[-1]["content"]
    if model == "wordle":  # a word, a word outside the list (penalty), an over-long reply (cut), words
        return ["crane", "zzzzz", "x" * 100, "slate", "pious", "dodge"][turn % 6]
    if model == "openenv-wordle":  # the served task refuses an over-long action, so none here
        return ["crane", "zzzzz", "slate", "pious", "dodge", "mummy"][turn % 6]
    if model == "countup":  # the next number, then a wrong one, then the next again
        numbers = re.findall(r"\d+", last)
        right = str(int(numbers[-1]) + 1) if numbers else "1"
        return "nope" if turn == 1 else right
    if model == "single":  # the prompt's last word, with more words on every other prompt
        words = re.findall(r"\w+", last) or ["nothing"]
        return words[-1] if len(last) % 2 else f"{words[-1]} and {' '.join(words[:3])}"
    raise AssertionError(f"no script for model {model!r}")


def _completion(body: dict) -> dict:
    return {"id": "stub", "created": int(time.time()), "model": body.get("model", "stub")}


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    text = scripted_reply(body["model"], body["messages"])
    base = _completion(body)
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if not body.get("stream"):
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        return web.json_response({**base, "object": "chat.completion", "choices": [choice], "usage": usage})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
    ]
    for chunk in chunks:
        await response.write(f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', **chunk})}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def model_url():
    """The base URL of the scripted OpenAI-compatible server (streaming and plain chat completions)."""
    import asyncio

    port = _free_port()
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _chat_completions)
    runner = web.AppRunner(app)

    def serve():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/v1"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


# ---- the local env, replaying a seed with the same replies ---------------------------------------------------------


def local_episode(env_id: str, env_kwargs: dict, seed: int, model: str) -> tuple[list[float], list[dict]]:
    """Per-turn rewards and chat of episode ``seed`` played locally with the scripted replies (cut to fit the task)."""
    env = gymnasium.make(env_id, **split_kwargs(env_id, env_kwargs, "train"))
    observation, _ = env.reset(seed=seed)
    chat = ChatTranscript.start(env, observation)
    rewards = []
    while not chat.done:
        reply = scripted_reply(model, chat.messages)[: env.action_space.max_length]
        observation, reward, terminated, truncated, _ = env.step(reply)
        rewards.append(float(reward))
        chat.record(reply, observation, terminated, truncated)
    env.close()
    return rewards, chat.messages


def _prompted(messages: list[dict]) -> list[tuple[str, str]]:
    """The system and user messages of a chat (what the env said), in order."""
    return [(message["role"], message["content"]) for message in messages if message["role"] != "assistant"]


# ---- the taskset --------------------------------------------------------------------------------------------------

TASKS = [
    ("lm_gym/Wordle-v0", WORDLE_KWARGS),
    ("lm_gym/CommonGen-v0", {"source": "synthetic"}),
    ("user/CountUp-v0", {}),
    ("user/Echo-v0", {}),
]


@pytest.mark.parametrize(("env_id", "env_kwargs"), TASKS)
def test_taskset_holds_each_episodes_seed_rules_and_first_observation(env_id, env_kwargs):
    tasks = list(LmGymTaskset(LmGymTasksetConfig(env_id=env_id, env_kwargs=env_kwargs, num_episodes=4)))
    assert [task.data.seed for task in tasks] == [task.data.idx for task in tasks] == [0, 1, 2, 3]
    for task in tasks:
        env = gymnasium.make(env_id, **split_kwargs(env_id, env_kwargs, "train"))
        observation, _ = env.reset(seed=task.data.seed)
        assert task.data.prompt == observation
        assert task.data.system_prompt == chat_task(env).chat_system_message()
        assert (task.data.env_id, task.data.env_kwargs, task.data.split) == (env_id, env_kwargs, "train")


def test_taskset_of_a_counted_task_has_its_episodes():
    env = gymnasium.make("user/Echo-v0", num_samples=5)
    assert len(list(LmGymTaskset(LmGymTasksetConfig(env_id="user/Echo-v0", env_kwargs={"num_samples": 5})))) == 5
    assert chat_task(env).num_episodes() == 5


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({}, "env_id"),
        ({"env_id": "user/CountUp-v0", "split": "dev"}, "split"),
        ({"env_id": "lm_gym/CommonGen-v0", "env_kwargs": {"source": "synthetic", "split": "test"}}, "env_kwargs"),
    ],
)
def test_taskset_refuses_bad_configs_by_name(config, named):
    with pytest.raises(ConfigurationError, match=named):
        list(LmGymTaskset(LmGymTasksetConfig(**config)))


def test_export_refuses_a_non_empty_folder_and_a_bad_task_writing_nothing(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="directory"):
        export("lm_gym/Wordle-v0", tmp_path / "taken")
    with pytest.raises(ConfigurationError):
        export("lm_gym/NoSuchTask-v0", tmp_path / "new")
    assert not (tmp_path / "new").exists()


# ---- vf-eval on exported packages -------------------------------------------------------------------------------


def _eval_env() -> dict[str, str]:
    if shutil.which("uv", path=f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}") is None:
        pytest.skip("verifiers' chat harness runs as a uv script: install uv in this venv (pip install uv)")
    python_path = [str(TESTS_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **os.environ,
        "OPENAI_API_KEY": "unused",
        "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(python_path),
    }


def run_vf_eval(args: list[str], output: Path, python_path: list[Path] = ()) -> list[dict]:
    """``vf-eval ARGS`` in a subprocess; the episodes it wrote (``traces.jsonl``)."""
    env = _eval_env()
    env["PYTHONPATH"] = os.pathsep.join([*map(str, python_path), env["PYTHONPATH"]])
    command = [str(BIN_DIR / "vf-eval"), *args, "--no-push", "--no-rich", "-o", str(output)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=output.parent)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (traces,) = output.glob("*/traces.jsonl")
    return [json.loads(line) for line in traces.read_text().splitlines()]


EXPORTED = [  # env id as exported, env kwargs, the script, episodes, rollouts per episode
    ("lm_gym/Wordle-v0", WORDLE_KWARGS, "wordle", 2, 2),
    ("lm_gym/CommonGen-v0", {"source": "synthetic"}, "single", 2, 2),
    ("user_tasks:user/CountUp-v0", {}, "countup", 2, 2),
    ("user_tasks:user/Echo-v0", {}, "single", 3, 1),
]


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "env_kwargs", "model", "num_episodes", "rollouts"), EXPORTED)
def test_vf_eval_of_an_exported_package_equals_the_local_env(
    tmp_path, model_url, env_id, env_kwargs, model, num_episodes, rollouts
):
    package = tmp_path / "package"
    export(env_id, package, env_kwargs)
    distribution, module = package_names(env_id)
    assert {path.name for path in package.iterdir()} == {"pyproject.toml", "README.md", module}
    site = tmp_path / "site"  # installed as a user installs it (its dependencies are this venv's)
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site)]
    subprocess.run([*install, str(package)], check=True, capture_output=True, timeout=300)
    args = [distribution, "-m", model, "--client.base-url", model_url, "--client.api-key-var", "OPENAI_API_KEY"]
    episodes = run_vf_eval([*args, "-n", str(num_episodes), "-r", str(rollouts)], tmp_path / "outputs", [site])

    assert len(episodes) == num_episodes * rollouts
    seeds = sorted(episode["task"]["data"]["seed"] for episode in episodes)
    assert seeds == sorted(list(range(num_episodes)) * rollouts)  # every rollout of a group plays its task's seed
    for episode in episodes:
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        played = trace["info"][TRACE_INFO_KEY]
        rewards, messages = local_episode(env_id, env_kwargs, played["seed"], model)
        assert played["turn_rewards"] == rewards
        assert trace["rewards"][RETURN_REWARD]["score"] == pytest.approx(sum(rewards))
        assert played["episode_ended"]
        sent = [node["message"] for node in trace["nodes"]]
        assert _prompted(sent) == _prompted(messages)  # the model saw the chat view of the local episode
        if model == "wordle":  # the unknown word got the task's penalty; the over-long reply was cut, not refused
            assert played["turn_rewards"][1] == -WORDLE_KWARGS["unknown_word_penalty"]
            assert played["steps"][2]["info"]["lm_gym_chars_cut"] == 100 - 64
    if model == "wordle":
        env = gymnasium.make(env_id, **env_kwargs)
        env.reset(seed=0)
        with pytest.raises(InvalidActionError):
            env.step("x" * 100)


@pytest.mark.slow
def test_the_agents_turn_limit_ends_an_episode_early_with_the_rewards_so_far(tmp_path, model_url):
    export("user_tasks:user/CountUp-v0", tmp_path / "package")  # three turns an episode
    args = [package_names("user_tasks:user/CountUp-v0")[0], "-m", "countup", "--client.base-url", model_url]
    args += ["--client.api-key-var", "OPENAI_API_KEY", "-n", "1", "--env.player.max-turns", "2"]
    (episode,) = run_vf_eval(args, tmp_path / "outputs", [tmp_path / "package"])
    played = episode["traces"][0]["info"][TRACE_INFO_KEY]
    rewards, _ = local_episode("user/CountUp-v0", {}, played["seed"], "countup")
    assert not played["episode_ended"]
    assert played["turn_rewards"] == rewards[:2]
    assert episode["traces"][0]["rewards"][RETURN_REWARD]["score"] == sum(rewards[:2])


@pytest.mark.slow
def test_vf_validate_loads_an_exported_package_without_errors(tmp_path):
    export("user_tasks:user/CountUp-v0", tmp_path / "package")
    command = [str(BIN_DIR / "vf-validate"), package_names("user_tasks:user/CountUp-v0")[0], "-n", "2"]
    command += ["--runtime.type", "subprocess", "--no-rich", "-o", str(tmp_path / "outputs")]
    env = _eval_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "package"), env["PYTHONPATH"]])
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (summary,) = (tmp_path / "outputs").glob("*/summary.json")
    outcomes = json.loads(summary.read_text())["outcomes"]
    # no gold answer to check a task against (an lm-gym task scores replies, it holds no solution): unchecked
    assert outcomes["error"] == outcomes["timeout"] == 0 and outcomes["unchecked"] == 2


# ---- verifiers' OpenEnvTaskset over a served task (issue #55 item 5) --------------------------------------------

SERVE_PYTHON = os.environ.get("LM_GYM_SERVE_PYTHON")  # a python with lm-gym[serve] (openenv 0.10), e.g. /work/venv's


@pytest.fixture
def serve_task(tmp_path):
    """Starts ``python -m lm_gym.serve ENV_ID`` in the serve venv (``LM_GYM_SERVE_PYTHON``); gives its URL."""
    pytest.importorskip("openenv", reason="verifiers' OpenEnvTaskset needs its openenv extra: verifiers[openenv]")
    if not SERVE_PYTHON:
        pytest.skip("LM_GYM_SERVE_PYTHON must name a python with lm-gym[serve] (openenv 0.10 cannot share this venv)")
    servers = []

    def serve(env_id: str, env_kwargs: dict) -> str:
        port = _free_port()
        log_path = tmp_path / f"serve-{port}.log"
        command = [SERVE_PYTHON, "-m", "lm_gym.serve", env_id, "--port", str(port)]
        with log_path.open("w") as log:
            servers.append(subprocess.Popen([*command, "--env-kwargs", json.dumps(env_kwargs)], stdout=log, stderr=log))
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return f"http://127.0.0.1:{port}"
            except OSError:
                assert servers[-1].poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.5)

    yield serve
    for server in servers:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "env_kwargs", "model"),
    [("lm_gym/Wordle-v0", {}, "openenv-wordle"), ("lm_gym/CommonGen-v0", {"source": "synthetic"}, "single")],
)
def test_openenv_taskset_over_a_served_task_equals_the_local_env(
    tmp_path, model_url, serve_task, env_id, env_kwargs, model
):
    url = serve_task(env_id, env_kwargs)
    resets = [{"split": "train", "index": index} for index in range(2)]  # the Task API: index = reset seed
    config = tmp_path / "eval.toml"
    settings = {
        "model": model,
        "push": False,
        "client": {"base_url": model_url, "api_key_var": "OPENAI_API_KEY"},
        "env": {
            "taskset": {"id": "openenv", "base_url": url, "resets": resets},
            "player": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}},
        },
    }
    config.write_text(tomli_w.dumps(settings))
    episodes = run_vf_eval(["@", str(config)], tmp_path / "outputs")
    assert len(episodes) == 2
    for episode in sorted(episodes, key=lambda episode: episode["task"]["data"]["reset"]["index"]):
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        reset = trace["task"]["data"]["reset"]
        sent = [node["message"] for node in trace["nodes"]]
        replies = [message["content"] for message in sent if message["role"] == "assistant"]
        env = gymnasium.make(env_id, **split_kwargs(env_id, env_kwargs, reset["split"]))
        observation, _ = env.reset(seed=reset["index"])
        observations, total, done = [observation], 0.0, False
        for reply in replies:
            assert not done
            observation, reward, terminated, truncated, _ = env.step(reply)
            total, done = total + float(reward), terminated or truncated
            observations += [] if done else [observation]
        assert done
        assert trace["rewards"]["openenv_reward"]["score"] == pytest.approx(total)
        payloads = [json.loads(message["content"]) for message in sent if message["role"] == "user"]
        assert [payload["observation"]["text"] for payload in payloads] == observations  # the episode of that seed
