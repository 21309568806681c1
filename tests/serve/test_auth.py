# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""The server's bearer token: every HTTP route but ``/health`` and the WebSocket refuse a missing,
malformed or wrong token with ``401`` (logged and counted, never opening a session); the
Gymnasium clients send it; a server beyond loopback refuses to start without one unless ``--insecure``."""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import subprocess
import sys
import urllib.parse

import gymnasium
import pytest

from lm_gym.core.errors import ConfigurationError

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

TOKEN = "correct-horse-battery-staple-0123"
WORDLE = "lm_gym/Wordle-v0"
#: Authorization headers that must be refused, and the reason the reply gives.
BAD_HEADERS = [
    (None, "missing token"),
    (b"Bearer wrong-token-of-enough-chars", "wrong token"),
    (b"Bearer " + TOKEN.encode() + b"x", "wrong token"),
    (b"Basic " + TOKEN.encode(), "malformed Authorization header"),
    (b"Bearer", "malformed Authorization header"),
    (b"Bearer    ", "malformed Authorization header"),
    (TOKEN.encode(), "malformed Authorization header"),
    (b"Bearer \xff\xfe\xe9", "wrong token"),  # not ASCII (a NUL never gets past uvicorn: 400)
    (b"Bearer " + TOKEN.encode() + b" " + TOKEN.encode(), "wrong token"),
]


def request(url: str, method: str, path: str, authorization: bytes | list[bytes] | None, body: bytes | None = None):
    """``(status, JSON body)`` of one HTTP request with ``authorization`` as the header's raw bytes (a list: sent
    once per item)."""
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    try:
        connection.putrequest(method, path)
        for value in [authorization] if isinstance(authorization, bytes) else authorization or []:
            connection.putheader("Authorization", value)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(body or b"")))
        connection.endheaders(body)
        reply = connection.getresponse()
        text = reply.read()
        return reply.status, json.loads(text) if text.startswith(b"{") else text
    finally:
        connection.close()


def bearer(token: str = TOKEN) -> bytes:
    return f"Bearer {token}".encode()


ROUTES = [
    ("GET", "/schema"),
    ("GET", "/metadata"),
    ("GET", "/state"),
    ("GET", "/openapi.json"),
    ("GET", "/lm-gym/task"),
    ("GET", "/lm-gym/tokenizer-corpus"),
    ("POST", "/reset"),
    ("POST", "/step"),
    ("POST", "/mcp"),
]


def test_every_http_route_but_health_refuses_a_bad_token_and_counts_it(start_server, caplog):
    url, served, _ = start_server(WORDLE, token=TOKEN)
    caplog.set_level(logging.WARNING, logger="lm_gym.serve.auth")
    refusals = 0
    for method, path in ROUTES:
        body = b"{}" if method == "POST" else None
        for authorization, reason in BAD_HEADERS:
            status, reply = request(url, method, path, authorization, body)
            refusals += 1
            assert status == 401, (path, authorization, reply)
            assert reply["error_type"] == "AuthenticationError" and reason in reply["detail"], reply
            assert TOKEN not in json.dumps(reply)
    status, reply = request(url, "GET", "/schema", [bearer(), bearer()])
    assert status == 401 and "sent more than once" in reply["detail"]
    refusals += 1
    assert served.auth.refused == refusals
    logged = [r for r in caplog.records if r.name == "lm_gym.serve.auth"]
    assert len(logged) == refusals and f"({refusals} refused so far)" in logged[-1].getMessage()
    assert all(TOKEN not in record.getMessage() for record in logged)
    assert request(url, "GET", "/health", None) == (200, {"status": "healthy"})
    assert request(url, "GET", "/health", b"Bearer wrong-token-of-enough-chars")[0] == 200
    status, schema = request(url, "GET", "/schema", bearer())
    assert status == 200 and "text" in schema["action"]["properties"]
    status, reply = request(url, "POST", "/reset", bearer(), b'{"seed": 3}')
    assert status == 200 and reply["observation"]["text"]
    assert served.auth.refused == refusals


def handshake_status(url: str, authorization: bytes | None) -> int:
    """The HTTP status of a WebSocket handshake with ``authorization`` (101: the connection opened)."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    headers = {} if authorization is None else {"Authorization": authorization.decode("latin-1")}
    try:
        with connect(url.replace("http://", "ws://") + "/ws", additional_headers=headers, proxy=None, open_timeout=10):
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


def test_the_websocket_refuses_a_bad_token_at_the_handshake(start_server):
    url, served, _ = start_server(WORDLE, token=TOKEN)
    for authorization, _ in BAD_HEADERS:
        assert handshake_status(url, authorization) == 401, authorization
    assert served.auth.refused == len(BAD_HEADERS)
    assert handshake_status(url, bearer()) == 101
    assert served.auth.refused == len(BAD_HEADERS)


def test_refused_clients_do_not_use_up_the_session_limit(start_server):
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    url, served, _ = start_server(WORDLE, token=TOKEN, max_sessions=2)
    ws_url = url.replace("http://", "ws://") + "/ws"
    good = {"Authorization": bearer().decode()}

    async def scenario():
        async def refused(headers):
            with pytest.raises(InvalidStatus) as error:
                async with connect(ws_url, additional_headers=headers, proxy=None):
                    pass
            return error.value.response.status_code

        async with connect(ws_url, additional_headers=good, proxy=None) as first:
            await first.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(await first.recv())["type"] == "observation"
            bad = [{}, {"Authorization": "Bearer wrong-token-of-enough-chars"}, {"Authorization": "Basic x"}]
            statuses = await asyncio.gather(*(refused(bad[i % 3]) for i in range(12)))
            async with connect(ws_url, additional_headers=good, proxy=None) as second:
                await second.send(json.dumps({"type": "reset", "data": {"seed": 2}}))
                return statuses, json.loads(await asyncio.wait_for(second.recv(), 10))

    statuses, reply = asyncio.run(scenario())
    assert statuses == [401] * 12
    assert reply["type"] == "observation", reply
    assert served.auth.refused == 12


def test_the_gymnasium_clients_send_the_token(start_server, monkeypatch):
    import lm_gym.serve  # noqa: F401  (registers lm_gym/Remote-v0)
    from lm_gym.serve.errors import AuthenticationError

    url, served, _ = start_server(WORDLE, token=TOKEN)
    monkeypatch.delenv("LM_GYM_SERVE_TOKEN", raising=False)
    local = gymnasium.make(WORDLE)
    with pytest.raises(AuthenticationError, match="needs a token"):
        gymnasium.make("lm_gym/Remote-v0", url=url)
    with pytest.raises(AuthenticationError, match="token was refused"):
        gymnasium.make("lm_gym/Remote-v0", url=url, token="wrong-token-of-enough-chars")
    with pytest.raises(ConfigurationError, match="at least 16"):
        gymnasium.make("lm_gym/Remote-v0", url=url, token="short")
    env = gymnasium.make("lm_gym/Remote-v0", url=url, token=TOKEN)
    assert env.reset(seed=5)[0] == local.reset(seed=5)[0]
    assert env.step("crane")[:4] == local.step("crane")[:4]
    assert env.unwrapped.task_info["env_id"] == WORDLE  # read over HTTP (GET /lm-gym/task), with the token
    env.close()
    monkeypatch.setenv("LM_GYM_SERVE_TOKEN", TOKEN)
    envs = gymnasium.make_vec("lm_gym/Remote-v0", num_envs=3, vectorization_mode="vector_entry_point", url=url)
    observations, _ = envs.reset(seed=0)
    assert observations == tuple(local.reset(seed=s)[0] for s in range(3))
    envs.close()
    with pytest.raises(AuthenticationError):
        gymnasium.make_vec(
            "lm_gym/Remote-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            url=url,
            token="wrong-token-of-enough-chars",
        )
    assert served.auth.refused == 4  # one handshake per refused env, one per session of the vector env


def test_a_server_beyond_loopback_needs_a_token_unless_insecure(tmp_path, monkeypatch, capsys):
    from lm_gym.serve.config import ServeConfig, parse_args

    monkeypatch.delenv("LM_GYM_SERVE_TOKEN", raising=False)
    environment = {key: value for key, value in os.environ.items() if key != "LM_GYM_SERVE_TOKEN"}
    command = [sys.executable, "-m", "lm_gym.serve", WORDLE, "--host", "0.0.0.0", "--port", "0"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment, check=False)
    assert completed.returncode == 2, completed.stderr
    for named in ("--host 0.0.0.0 is not loopback", "--token-file", "LM_GYM_SERVE_TOKEN", "--insecure"):
        assert named in completed.stderr
    assert parse_args([WORDLE, "--host", "0.0.0.0", "--insecure"]).token is None
    for host in ("0.0.0.0", "::", "10.1.2.3", "cpu-host"):
        with pytest.raises(ConfigurationError, match="not loopback"):
            ServeConfig(env_id=WORDLE, host=host)
        assert ServeConfig(env_id=WORDLE, host=host, token=TOKEN).token == TOKEN
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        assert ServeConfig(env_id=WORDLE, host=host).token is None
    assert TOKEN not in repr(ServeConfig(env_id=WORDLE, token=TOKEN))

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    assert parse_args([WORDLE, "--host", "0.0.0.0", "--token-file", str(token_file)]).token == TOKEN
    monkeypatch.setenv("LM_GYM_SERVE_TOKEN", "from-the-environment-variable")
    assert parse_args([WORDLE, "--host", "0.0.0.0"]).token == "from-the-environment-variable"
    assert parse_args([WORDLE, "--token-file", str(token_file)]).token == TOKEN  # the flag wins
    monkeypatch.delenv("LM_GYM_SERVE_TOKEN")
    token_file.write_text("short")
    for argv, message in (
        ([WORDLE, "--token-file", str(token_file)], "has 5 characters; use at least 16"),
        ([WORDLE, "--token-file", str(tmp_path / "absent")], "cannot be read"),
    ):
        with pytest.raises(SystemExit):
            parse_args(argv)
        assert message in capsys.readouterr().err
    token_file.write_text("with a space in the middle")
    with pytest.raises(SystemExit):
        parse_args([WORDLE, "--token-file", str(token_file)])
    error = capsys.readouterr().err
    assert "printable ASCII without spaces" in error and "with a space" not in error


def test_openenv_generic_client_plays_with_the_token_in_its_headers(start_server):
    from openenv.core.generic_client import GenericEnvClient

    url, served, _ = start_server(WORDLE, token=TOKEN)
    with GenericEnvClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}).sync() as env:
        result = env.reset(seed=3)
        assert result.observation["text"] == gymnasium.make(WORDLE).reset(seed=3)[0]
    assert served.auth.refused == 0


def test_refused_clients_flooding_a_server_under_load_reach_no_env_and_lose_no_step(start_server):
    """16 sessions play 200 steps each as the native vector env does, while refused clients flood the server."""
    import threading

    import numpy as np

    import lm_gym.serve  # noqa: F401  (registers lm_gym/Remote-v0)

    url, served, _ = start_server(WORDLE, token=TOKEN, max_sessions=16)
    envs_made = []
    new_env = served.service.new_env
    make = dict(num_envs=16, vectorization_mode="vector_entry_point")
    remote = gymnasium.make_vec("lm_gym/Remote-v0", url=url, token=TOKEN, **make)
    served.service.new_env = lambda: envs_made.append(1) or new_env()  # counted from here: refused ones must add none
    native = gymnasium.make_vec(WORDLE, **make)
    stop, flooded = threading.Event(), []

    def flood():
        while not stop.is_set():
            flooded.append(handshake_status(url, None if len(flooded) % 2 else b"Bearer wrong-token-of-enough-chars"))
            flooded.append(request(url, "POST", "/reset", b"Basic x", b"{}")[0])

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    try:
        assert remote.reset(seed=7)[0] == native.reset(seed=7)[0]
        words = ["crane", "slate", "pious", "adieu", "mount", "words"]
        for t in range(200):
            actions = [words[(t + i) % 6] for i in range(16)]
            result_r, result_n = remote.step(actions), native.step(actions)
            assert result_r[0] == result_n[0]
            for a, b in zip(result_r[1:4], result_n[1:4], strict=True):
                assert np.array_equal(a, b)
    finally:
        stop.set()
        flooder.join(30)
        remote.close()
    assert len(flooded) > 20 and set(flooded) == {401} and served.auth.refused == len(flooded)
    assert not envs_made  # the sessions' envs were made before; no refused request made one


def test_the_baselines_task_setup_and_trl_pass_the_token_from_the_env_kwargs(start_server, monkeypatch):
    """What the baselines build from ``--env-kwargs '{"url": ..., "token": ...}'``, and TRL's served task."""
    pytest.importorskip("datasets")
    from lm_gym.core.task_setup import make_split_envs
    from lm_gym.integrations.trl import prompt_dataset, reward_function
    from lm_gym.serve.errors import AuthenticationError

    monkeypatch.delenv("LM_GYM_SERVE_TOKEN", raising=False)
    imdb = {"source": "synthetic"}
    url, served, _ = start_server("lm_gym/IMDB-v0", env_kwargs=imdb, token=TOKEN)
    envs = make_split_envs("lm_gym/Remote-v0", {"url": url, "token": TOKEN}, {"train": 2}, served=True)
    assert envs["train"].num_envs == 2 and envs["train"].single_turn
    envs["train"].close()
    with pytest.raises(AuthenticationError):
        make_split_envs("lm_gym/Remote-v0", {"url": url}, {"train": 2}, served=True)
    local = prompt_dataset("lm_gym/IMDB-v0", "train", num_prompts=3, **imdb)
    remote = prompt_dataset("lm_gym/Remote-v0", "train", num_prompts=3, url=url, token=TOKEN)
    assert remote.to_list() == local.to_list()
    columns = {"lm_gym_index": local["lm_gym_index"]}
    completions = ["a fine film", "bad", "moving and warm"]
    expected = reward_function("lm_gym/IMDB-v0", "train", **imdb)(local["prompt"], completions, **columns)
    monkeypatch.setenv("LM_GYM_SERVE_TOKEN", TOKEN)  # the variable, as a run would export it
    assert reward_function("lm_gym/Remote-v0", "train", url=url)(remote["prompt"], completions, **columns) == expected
    assert served.auth.refused == 2  # the two sessions of the vector env without a token
