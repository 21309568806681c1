# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""The server facing a network: typed error replies (each leaving the session and the server
working), limits, sessions freed on disconnect and idle timeout, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


async def exchange(ws, message) -> dict:
    await ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


def run(coroutine):
    return asyncio.run(coroutine)


def test_malformed_messages_get_typed_replies_and_the_session_goes_on(start_server):
    from websockets.asyncio.client import connect

    url, _, _ = start_server("lm_gym/Wordle-v0", max_message_bytes=4096)

    async def scenario():
        async with connect(ws_url(url)) as ws:
            replies = {
                "step before reset": await exchange(ws, {"type": "step", "data": {"text": "crane"}}),
                "malformed JSON": await exchange(ws, "{not json"),
                "unknown type": await exchange(ws, {"type": "jump"}),
                "wrong type": await exchange(ws, {"type": "step", "data": {"text": 5}}),
                "unknown field": await exchange(ws, {"type": "step", "data": {"utterance": "x"}}),
                "bad seed": await exchange(ws, {"type": "reset", "data": {"seed": -1}}),
                "bool seed": await exchange(ws, {"type": "reset", "data": {"seed": True}}),
                "unknown reset key": await exchange(ws, {"type": "reset", "data": {"env_id": "lm_gym/IMDB-v0"}}),
                "too long action": None,
                "oversized message": await exchange(ws, {"type": "step", "data": {"text": "x" * 5000}}),
                "binary frame": await exchange(ws, b"\x00\x01"),
            }
            assert (await exchange(ws, {"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
            replies["too long action"] = await exchange(ws, {"type": "step", "data": {"text": "x" * 100}})
            for _ in range(6):
                last = await exchange(ws, {"type": "step", "data": {"text": "zzzzz"}})
            assert last["data"]["done"]
            replies["step after the end"] = await exchange(ws, {"type": "step", "data": {"text": "crane"}})
            assert (await exchange(ws, {"type": "reset"}))["type"] == "observation"  # still working
            return replies

    replies = run(scenario())
    expected = {
        "step before reset": "ResetNeededError",
        "malformed JSON": "ProtocolError",
        "unknown type": "ProtocolError",
        "wrong type": "ProtocolError",
        "unknown field": "ProtocolError",
        "bad seed": "ConfigurationError",
        "bool seed": "ConfigurationError",
        "unknown reset key": "ConfigurationError",
        "too long action": "InvalidActionError",
        "oversized message": "LimitExceededError",
        "binary frame": "ProtocolError",
        "step after the end": "ResetNeededError",
    }
    for case, error_type in expected.items():
        reply = replies[case]
        assert reply["type"] == "error" and reply["data"]["error_type"] == error_type, (case, reply)
        assert reply["data"]["message"].startswith(error_type), (case, reply)


def test_the_remote_client_raises_the_typed_errors(start_server):
    import gymnasium

    import lm_gym.serve  # noqa: F401
    from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
    from lm_gym.serve.errors import SessionError

    url, _, _ = start_server("lm_gym/Wordle-v0")
    env = gymnasium.make("lm_gym/Remote-v0", url=url, disable_env_checker=True)
    with pytest.raises(ResetNeededError):
        env.unwrapped.step("crane")
    with pytest.raises(InvalidActionError):
        env.unwrapped.step(5)
    with pytest.raises(ConfigurationError, match="serves 'lm_gym/Wordle-v0'"):
        gymnasium.make("lm_gym/Remote-v0", url=url, env_id="lm_gym/IMDB-v0")
    with pytest.raises(SessionError):
        gymnasium.make("lm_gym/Remote-v0", url="http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(ConfigurationError, match="action_level 'token' was asked for"):
        gymnasium.make("lm_gym/Remote-v0", url=url, action_level="token")
    env.close()


def test_a_reply_later_than_timeout_s_ends_the_session(start_server):
    import gymnasium

    import lm_gym.serve  # noqa: F401
    from lm_gym.serve.errors import SessionError

    url, _, _ = start_server("serve_tasks:serve_test/Counting-v0")
    env = gymnasium.make("lm_gym/Remote-v0", url=url, timeout_s=0.2, disable_env_checker=True)
    env.reset(seed=0)
    with pytest.raises(SessionError, match="did not answer within 0.2 s"):
        env.step("slow")  # the reward sleeps 0.5 s
    with pytest.raises(SessionError, match="closed"):  # its late reply must not answer another request
        env.reset(seed=0)
    env.close()


def test_unknown_session_capacity_rate_and_idle_timeout(start_server):
    from websockets.asyncio.client import connect

    url, served, _ = start_server("lm_gym/Wordle-v0", max_sessions=2, max_steps_per_s=5, idle_timeout_s=0.5)

    async def scenario():
        async with connect(ws_url(url) + "?session_id=nope") as ws:
            unknown = json.loads(await ws.recv())
        async with connect(ws_url(url)) as a, connect(ws_url(url)) as b:
            assert (await exchange(a, {"type": "reset"}))["type"] == "observation"
            assert (await exchange(b, {"type": "reset"}))["type"] == "observation"
            async with connect(ws_url(url)) as c:  # refused at once: an error frame, then closed
                full = json.loads(await asyncio.wait_for(c.recv(), 10))
            replies = [await exchange(a, {"type": "state"}) for _ in range(8)]
            limited = [r for r in replies if r["type"] == "error"]
            await asyncio.sleep(1.0)  # a allowed again; both idle past the timeout
            idle = json.loads(await asyncio.wait_for(b.recv(), 5))
        await asyncio.sleep(0.2)
        async with connect(ws_url(url)) as d:  # the closed sessions are free again
            fresh = await exchange(d, {"type": "reset"})
        return unknown, full, limited, idle, fresh

    unknown, full, limited, idle, fresh = run(scenario())
    assert unknown["data"]["error_type"] == "SessionError" and "Unknown session_id" in unknown["data"]["message"]
    assert full["data"]["error_type"] == "CapacityError"
    assert limited and all(r["data"]["error_type"] == "LimitExceededError" for r in limited)
    assert idle["data"]["error_type"] == "SessionError" and "idle" in idle["data"]["message"]
    assert fresh["type"] == "observation"


def test_a_client_that_disconnects_mid_episode_frees_its_session(start_server):
    from websockets.asyncio.client import connect

    url, served, _ = start_server("lm_gym/Wordle-v0", max_sessions=1)

    async def scenario():
        ws = await connect(ws_url(url))
        await exchange(ws, {"type": "reset"})
        ws.transport.abort()  # gone without a close message
        for _ in range(50):
            if served.service.sessions == 0:
                break
            await asyncio.sleep(0.05)
        async with connect(ws_url(url)) as again:
            return await exchange(again, {"type": "reset"})

    assert run(scenario())["type"] == "observation"


def test_http_bodies_over_the_limit_and_http_errors_are_typed(start_server):
    url, _, _ = start_server("lm_gym/Wordle-v0", max_message_bytes=1024)
    body = json.dumps({"action": {"text": "x" * 2000}}).encode()
    request = urllib.request.Request(f"{url}/step", data=body, headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as too_big:
        urllib.request.urlopen(request, timeout=10)
    assert too_big.value.code == 413 and json.load(too_big.value)["error_type"] == "LimitExceededError"
    request = urllib.request.Request(f"{url}/step", data=b'{"action": {"text": "crane"}}')
    request.add_header("content-type", "application/json")
    with pytest.raises(urllib.error.HTTPError) as stateless:  # HTTP /step has no session: OpenEnv's rule
        urllib.request.urlopen(request, timeout=10)
    assert stateless.value.code == 400 and json.load(stateless.value)["error_type"] == "ResetNeededError"


def test_graceful_shutdown_answers_steps_in_flight_and_refuses_new_ones(start_server):
    from websockets.asyncio.client import connect

    url, served, server = start_server("serve_tasks:serve_test/Counting-v0", shutdown_grace_s=5)

    async def scenario():
        async with connect(ws_url(url)) as a, connect(ws_url(url)) as b:
            await exchange(a, {"type": "reset"})
            await exchange(b, {"type": "reset"})
            await a.send(json.dumps({"type": "step", "data": {"text": "slow"}}))  # 0.5 s in the reward model
            await asyncio.sleep(0.1)
            server.drain()
            refused = await exchange(b, {"type": "step", "data": {"text": "late"}})
            answered = json.loads(await asyncio.wait_for(a.recv(), 5))
            return answered, refused

    answered, refused = run(scenario())
    assert answered["type"] == "observation" and answered["data"]["reward"] == 4.0
    assert refused["data"]["error_type"] == "ServerShuttingDownError"
    deadline = time.monotonic() + 10
    while server.started and not server.should_exit and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.should_exit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two server processes start (about 20 s on two shared cores)
def test_the_command_serves_with_two_workers_and_stops_on_sigterm(tmp_path):
    import gymnasium

    import lm_gym.serve

    lm_gym.serve.register_remote()
    port = free_port()
    command = [sys.executable, "-m", "lm_gym.serve", "lm_gym/Wordle-v0", "--port", str(port), "--workers", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, process.stdout.read()
                time.sleep(0.2)
        time.sleep(1.0)  # the second worker
        remote = gymnasium.make_vec("lm_gym/Remote-v0", num_envs=4, vectorization_mode="vector_entry_point", url=url)
        native = gymnasium.make_vec("lm_gym/Wordle-v0", num_envs=4, vectorization_mode="vector_entry_point")
        assert remote.reset(seed=5)[0] == native.reset(seed=5)[0]
        for _ in range(3):
            assert remote.step(["crane"] * 4)[0] == native.step(["crane"] * 4)[0]
        remote.close()
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert "2 workers" in output
    assert os.environ.get("LM_GYM_SERVE_CONFIG") is None
