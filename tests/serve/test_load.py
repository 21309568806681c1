# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""The server under load (benchmark/perf/serve_load.py): concurrent raw WebSocket clients, each
transcript replayed on a local env, so no step is lost, duplicated or answered with another
session's episode. Small sizes in the default run; the issue's 64 clients x 1,000 steps in the deep run."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

import serve_load  # noqa: E402  (benchmark/perf is on sys.path: pyproject.toml's pytest pythonpath)
from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

ROOT = Path(__file__).resolve().parents[2]
WORDLE = "lm_gym/Wordle-v0"


TOKEN = "the-load-test-token-0123456789"


def load(start_server, record_property, clients: int, steps: int, action_level: str = "utterance", token=None):
    """A load test of an in-process Wordle server (with ``token``: as many intruders as clients, and room for
    only four sessions more than the clients); prints and records its latencies."""
    settings = {} if token is None else {"token": token, "max_sessions": clients + 4}
    url, served, _ = start_server(WORDLE, action_level=action_level, **settings)
    intruders = 0 if token is None else clients
    report = serve_load.run_load(
        url, WORDLE, clients=clients, steps=steps, action_level=action_level, timeout_s=120, token=token,
        intruders=intruders,
    )  # fmt: skip
    print(f"\n{report.summary()}")
    for name in ("p50_ms", "p99_ms", "max_ms", "steps_per_s", "total_steps"):
        record_property(name, round(getattr(report, name), 3))
    assert not report.failures, "\n".join(report.failures[:10])
    assert report.ok and report.total_steps == clients * steps
    assert report.refused_intruders == 2 * intruders  # each: a WebSocket handshake and a Task API request
    if token is not None:
        assert served.auth.refused >= 2 * intruders
    return report, served


def test_concurrent_clients_each_replay_their_local_episodes(start_server, record_property):
    report, served = load(start_server, record_property, clients=8, steps=60)
    assert served.service.batcher.batched_steps > served.service.batcher.batches  # the steps went in batches


def test_token_level_clients_replay_their_local_episodes(start_server, record_property):
    load(start_server, record_property, clients=4, steps=40, action_level="token")


def test_with_a_token_no_intruder_reaches_an_env_or_a_session(start_server, record_property):
    report, served = load(start_server, record_property, clients=6, steps=40, token=TOKEN)
    assert served.service.sessions == 0  # every session closed; none was an intruder's


@pytest.mark.slow  # about 25 s on two cores: the server and 64 clients share this process
def test_64_clients_of_1000_steps_each_replay_their_local_episodes(start_server, record_property):
    load(start_server, record_property, clients=64, steps=1000, token=TOKEN)


def test_the_check_finds_lost_duplicated_crossed_and_unasked_replies(start_server):
    url, _, _ = start_server(WORDLE)
    report = serve_load.run_load(url, WORDLE, clients=2, steps=12, timeout_s=60)
    assert report.ok, report.failures
    a, b = report.transcripts
    first_step = next(i for i, e in enumerate(a.exchanges) if e.request["type"] == "step")

    def failures_of(tamper) -> list[str]:
        transcripts = copy.deepcopy(report.transcripts)
        tamper(*transcripts)
        return serve_load.check(transcripts, WORDLE, {}, "utterance")

    def crossed(a, b):  # a's first step answered with b's
        a.exchanges[first_step].reply = b.exchanges[first_step].reply

    def lost(a, b):  # one reply missing: every later reply answers the request before it
        for earlier, later in zip(a.exchanges[first_step:], a.exchanges[first_step + 1 :]):
            earlier.reply = later.reply
        a.exchanges[-1].reply = None

    def duplicated(a, b):  # a reply came twice: every later reply is one request late
        for later, earlier in zip(reversed(a.exchanges[first_step + 1 :]), reversed(a.exchanges[first_step:-1])):
            later.reply = earlier.reply

    def unasked(a, b):
        a.unasked.append('{"type": "observation"}')

    for tamper in (crossed, lost, duplicated, unasked):
        failures = failures_of(tamper)
        assert failures and all(f.startswith("client 0") for f in failures), (tamper.__name__, failures)


def test_a_load_past_its_timeout_fails_cleanly_and_the_server_goes_on(start_server):
    url, served, _ = start_server(WORDLE)
    report = serve_load.run_load(url, WORDLE, clients=4, steps=100_000, timeout_s=0.5)
    assert not report.ok and report.total_steps < 4 * 100_000
    assert [f for f in report.failures if f.endswith("stopped: timed out")], report.failures
    assert not [f for f in report.failures if "stopped" not in f], report.failures  # what was answered replays
    deadline = time.monotonic() + 10
    while served.service.sessions and time.monotonic() < deadline:  # the clients left with steps in flight
        time.sleep(0.05)
    assert served.service.sessions == 0
    assert serve_load.run_load(url, WORDLE, clients=2, steps=10, timeout_s=30).ok


def test_a_load_against_a_server_at_another_action_level_fails(start_server):
    url, _, _ = start_server(WORDLE, action_level="token")
    report = serve_load.run_load(url, WORDLE, clients=1, steps=5, timeout_s=30)  # expects utterance level
    assert not report.ok and "serves lm_gym/Wordle-v0 at token level" in report.failures[0]


def test_the_script_refuses_addresses_beyond_loopback():
    with pytest.raises(SystemExit):
        serve_load.parse_args(["--url", "http://10.0.0.1:8000"])
    assert serve_load.parse_args(["--url", "http://localhost:8000", "--clients", "2"]).clients == 2


@pytest.mark.slow  # the script starts its own server process (about 8 s on two cores)
def test_the_script_starts_a_server_plays_it_and_stops_it():
    command = [sys.executable, "benchmark/perf/serve_load.py", "--clients", "4", "--steps", "30", "--timeout-s", "120"]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr[-3000:]
    assert "4 clients x 30 steps: 120 steps" in completed.stdout and "failures: 0" in completed.stdout


def test_a_client_that_leaves_with_a_step_in_flight_logs_no_exception(start_server):
    from websockets.asyncio.client import connect

    url, served, _ = start_server("serve_tasks:serve_test/Counting-v0")
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append
    logging.getLogger("uvicorn.error").addHandler(handler)

    async def leave_mid_step():
        async with connect(url.replace("http://", "ws://") + "/ws") as ws:
            await ws.send(json.dumps({"type": "reset"}))
            await ws.recv()
            await ws.send(json.dumps({"type": "step", "data": {"text": "slow"}}))  # 0.5 s in the reward model
        await asyncio.sleep(1.0)  # the step's answer finds the session closed

    try:
        asyncio.run(leave_mid_step())
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    assert served.service.sessions == 0
    assert not records, records[0].getMessage()
