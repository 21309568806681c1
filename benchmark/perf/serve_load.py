"""Load test of a served task: concurrent raw WebSocket clients, every reply checked against a local replay.

    python benchmark/perf/serve_load.py --clients 64 --steps 1000 [--env-id lm_gym/Wordle-v0] [--url URL]
    python benchmark/perf/serve_load.py --clients 8 --steps 200 --action-level token

Without ``--url`` it starts the server itself (``python -m lm_gym.serve ENV_ID`` on a free loopback
port), waits for ``GET /health`` and stops it afterwards. With ``--url`` it plays a server that is
already running (loopback only), serving ``--env-id`` with ``--env-kwargs`` at ``--action-level``.

Each client is one WebSocket session written against OpenEnv's protocol (the ``websockets``
package, not lm-gym's client); all clients run concurrently in one asyncio loop. Client ``c``
asks for the session's state, then plays episodes with seeds ``c * 100000 + e`` (``e`` = 0, 1,
...), choosing each action from its episode's seed (a word of ``WORDS`` at utterance level, a
token the action mask allows at token level), resetting when ``done``, until it has sent
``--steps`` steps; it ends with a state request, whose ``step_count`` must be the steps it sent
in its last episode. It records every request, reply and latency.

Afterwards each client's whole transcript is replayed on a local env
(``gymnasium.make(ENV_ID, action_level=..., **env_kwargs)``, reset with the same seeds, stepped
with the same actions): every observation, reward, ``terminated``, ``truncated`` and info must be
the same, and every request must have exactly one reply, so a lost, duplicated or cross-talked
step shows up. Prints the latency of all requests (p50, p99, max), the steps, steps per second and
the failures; exits 1 on any failure. ``--timeout-s`` bounds the whole load (the clients stop and
the run fails cleanly).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

import lm_gym  # noqa: F401  (registers the tasks)
from lm_gym.core.errors import LMGymError
from lm_gym.serve.wire import encode_info, to_json

#: The utterances of the utterance-level clients: Wordle guesses, and one that is not a word.
WORDS = ("crane", "slate", "pious", "adieu", "mount", "light", "xqzvw")
#: Seeds of client ``c``: ``c * SEED_STRIDE + episode``.
SEED_STRIDE = 100_000
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: How long a client listens, after its last reply, for replies it did not ask for.
UNASKED_WAIT_S = 0.2
#: At most this many failures are kept per client (the first ones tell the story).
MAX_FAILURES_PER_CLIENT = 5


@dataclass
class Exchange:
    """One request of a client and its reply (``None``: none came)."""

    number: int
    request: dict[str, Any]
    reply: dict[str, Any] | None = None
    latency_s: float = math.nan


@dataclass
class Transcript:
    """Everything one client sent and received; ``error`` is why it stopped early, if it did."""

    client: int
    exchanges: list[Exchange] = field(default_factory=list)
    #: Frames that came after the last reply, unasked.
    unasked: list[str] = field(default_factory=list)
    error: str | None = None
    #: When its last reply came (``time.perf_counter()``).
    finished: float = math.nan

    @property
    def steps(self) -> int:
        return sum(1 for e in self.exchanges if e.request["type"] == "step" and e.reply is not None)


@dataclass
class LoadReport:
    """The outcome of a load test: latencies of all requests, step counts and the failures."""

    clients: int
    steps_per_client: int
    total_steps: int
    requests: int
    elapsed_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    failures: list[str]
    transcripts: list[Transcript] = field(repr=False, default_factory=list)

    @property
    def steps_per_s(self) -> float:
        return self.total_steps / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def ok(self) -> bool:
        return not self.failures and self.total_steps == self.clients * self.steps_per_client

    def summary(self) -> str:
        lines = [
            f"{self.clients} clients x {self.steps_per_client} steps: {self.total_steps} steps, "
            f"{self.requests} requests in {self.elapsed_s:.1f} s ({self.steps_per_s:.0f} steps/s)",
            f"latency p50 {self.p50_ms:.2f} ms, p99 {self.p99_ms:.2f} ms, max {self.max_ms:.2f} ms",
            f"failures: {len(self.failures)}",
        ]
        return "\n".join(lines + [f"  {failure}" for failure in self.failures[:20]])


# ---- the clients ---------------------------------------------------------------------------


def websocket_url(url: str) -> str:
    """The ``/ws`` address of the server at ``url`` (``http://host:port``)."""
    parts = urllib.parse.urlsplit(url)
    return f"ws://{parts.netloc}/ws"


def choose_action(rng: np.random.Generator, action_level: str, spaces: dict[str, Any], last: dict[str, Any]) -> dict:
    """The next action's ``data``: a word of ``WORDS``, or a token that ``last`` observation's mask allows."""
    if action_level == "utterance":
        return {"text": WORDS[int(rng.integers(len(WORDS)))]}
    masked = last["observation"]["info"].get("masked_token_ids") or []
    allowed = np.setdiff1d(np.arange(int(spaces["vocab_size"])), np.asarray(masked, dtype=np.int64))
    return {"token": int(rng.choice(allowed))}


class Client:
    """One WebSocket session that numbers its requests and records each with its reply and latency."""

    def __init__(self, ws: Any, transcript: Transcript, deadline: float):
        self.ws, self.transcript, self.deadline = ws, transcript, deadline

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        exchange = Exchange(len(self.transcript.exchanges), message)
        self.transcript.exchanges.append(exchange)
        start = time.perf_counter()
        await self.ws.send(json.dumps(message))
        text = await asyncio.wait_for(self.ws.recv(), max(0.0, self.deadline - time.monotonic()))
        self.transcript.finished = time.perf_counter()
        exchange.latency_s = self.transcript.finished - start
        exchange.reply = json.loads(text)
        if exchange.reply.get("type") == "error":
            raise RuntimeError(f"request {exchange.number} {message} got an error reply: {exchange.reply['data']}")
        return exchange.reply

    async def collect_unasked(self, wait_s: float) -> None:
        """Frames that arrive within ``wait_s`` though every request has had its reply (a duplicated reply)."""
        try:
            while True:
                self.transcript.unasked.append(str(await asyncio.wait_for(self.ws.recv(), wait_s))[:200])
        except (asyncio.TimeoutError, TimeoutError):
            pass


async def play_client(url: str, transcript: Transcript, steps: int, env_id: str, action_level: str, deadline: float):
    """Client ``transcript.client``'s episodes until it has sent ``steps`` steps; why it stopped early, if it
    did, goes to ``transcript.error``."""
    from websockets.asyncio.client import connect

    try:
        timeout = max(1.0, deadline - time.monotonic())
        async with connect(websocket_url(url), open_timeout=timeout, max_size=None, proxy=None) as ws:
            client = Client(ws, transcript, deadline)
            state = (await client.request({"type": "state"}))["data"]
            if (state.get("env_id"), state.get("action_level")) != (env_id, action_level):
                raise RuntimeError(f"the server serves {state.get('env_id')} at {state.get('action_level')} level")
            sent, episode = 0, 0
            while sent < steps:
                seed = transcript.client * SEED_STRIDE + episode
                reply = (await client.request({"type": "reset", "data": {"seed": seed}}))["data"]
                rng = np.random.default_rng(seed)
                while sent < steps and not reply["done"]:
                    action = choose_action(rng, action_level, state["spaces"], reply)
                    reply = (await client.request({"type": "step", "data": action}))["data"]
                    sent += 1
                episode += 1
            await client.request({"type": "state"})  # its step_count: the steps of the last episode
            await client.collect_unasked(UNASKED_WAIT_S)
    except (asyncio.TimeoutError, TimeoutError):
        transcript.error = "timed out"
    except Exception as error:  # a closed connection, an error reply: the client stops, the run fails
        transcript.error = f"{type(error).__name__}: {error}"


async def play_all(url: str, clients: int, steps: int, env_id: str, action_level: str, timeout_s: float):
    """All clients at once, in this loop; their transcripts (partial where one stopped early)."""
    deadline = time.monotonic() + timeout_s
    transcripts = [Transcript(c) for c in range(clients)]
    plays = [play_client(url, t, steps, env_id, action_level, deadline) for t in transcripts]
    try:
        await asyncio.wait_for(asyncio.gather(*plays), timeout_s + 10)  # a backstop: each request has the deadline
    except (asyncio.TimeoutError, TimeoutError):
        for transcript in transcripts:
            transcript.error = transcript.error or "timed out"
    return transcripts


# ---- the local replay ----------------------------------------------------------------------


def wire_observation(obs: Any, reward: Any, terminated: bool, truncated: bool, info: dict) -> dict[str, Any]:
    """What the server sends for a local reset (``reward=None``) or step, OpenEnv's ``metadata`` aside."""
    fields = {"text": obs} if isinstance(obs, str) else to_json(obs)
    observation = {**fields, "terminated": bool(terminated), "truncated": bool(truncated), "info": encode_info(info)}
    reward = None if reward is None else float(reward)
    return {"observation": observation, "reward": reward, "done": bool(terminated or truncated)}


def compare(exchange: Exchange, expected: dict[str, Any]) -> str | None:
    """Why ``exchange``'s reply differs from the local env's ``expected`` reply data, or ``None``."""
    reply = exchange.reply or {}
    if reply.get("type") != "observation":
        return f"a {reply.get('type')} reply where the local env gives an observation"
    data = reply["data"]
    got = {**data, "observation": {k: v for k, v in data["observation"].items() if k != "metadata"}}
    if got != expected:
        keys = [k for k in expected["observation"] if got["observation"].get(k) != expected["observation"][k]]
        keys += [k for k in ("reward", "done") if got.get(k) != expected[k]]
        return f"differs from the local env in {keys or sorted(set(got) ^ set(expected))}"
    return None


def compare_state(exchange: Exchange, steps_in_episode: int) -> str | None:
    """Why ``exchange``'s state reply is not one whose ``step_count`` is ``steps_in_episode``, or ``None``."""
    reply = exchange.reply or {}
    if reply.get("type") != "state":
        return f"a {reply.get('type')} reply to a state request"
    count = reply["data"].get("step_count")
    if count != steps_in_episode:
        return f"the server counts {count} steps in the episode, not {steps_in_episode}"
    return None


def replay(transcript: Transcript, env_id: str, env_kwargs: dict[str, Any], action_level: str) -> list[str]:
    """The differences between ``transcript`` and the same requests played on a local env."""
    env = gymnasium.make(env_id, action_level=action_level, **env_kwargs)
    failures: list[str] = []
    steps_in_episode = 0
    try:
        for exchange in transcript.exchanges:
            if exchange.reply is None:
                problem = "no reply"
            elif exchange.request["type"] == "state":
                problem = compare_state(exchange, steps_in_episode)
            elif exchange.request["type"] == "reset":
                obs, info = env.reset(seed=exchange.request["data"]["seed"])
                steps_in_episode = 0
                problem = compare(exchange, wire_observation(obs, None, False, False, info))
            else:
                action = exchange.request["data"].get("text", exchange.request["data"].get("token"))
                steps_in_episode += 1
                try:
                    problem = compare(exchange, wire_observation(*env.step(action)))
                except LMGymError as error:
                    problem = f"the local env raises {type(error).__name__}: {error}"
            if problem is not None:
                failures.append(f"client {transcript.client}, request {exchange.number} {exchange.request}: {problem}")
                if len(failures) >= MAX_FAILURES_PER_CLIENT:
                    break
    finally:
        env.close()
    return failures


def check(transcripts: list[Transcript], env_id: str, env_kwargs: dict[str, Any], action_level: str) -> list[str]:
    """Every client's failures: why it stopped early, a request without exactly one reply, a replay difference."""
    failures = []
    for transcript in transcripts:
        if transcript.error is not None:
            failures.append(f"client {transcript.client} stopped: {transcript.error}")
        replies = sum(e.reply is not None for e in transcript.exchanges) + len(transcript.unasked)
        if transcript.error is None and replies != len(transcript.exchanges):
            failures.append(
                f"client {transcript.client}: {replies} replies to {len(transcript.exchanges)} requests "
                f"(unasked: {transcript.unasked[:2]})"
            )
        answered = transcript.exchanges[:-1] if transcript.error else transcript.exchanges
        failures += replay(Transcript(transcript.client, answered), env_id, env_kwargs, action_level)
    return failures


# ---- the load test -------------------------------------------------------------------------


def run_load(
    url: str,
    env_id: str = "lm_gym/Wordle-v0",
    *,
    clients: int = 64,
    steps: int = 1000,
    env_kwargs: dict[str, Any] | None = None,
    action_level: str = "utterance",
    timeout_s: float = 600.0,
) -> LoadReport:
    """``clients`` concurrent sessions of the server at ``url``, ``steps`` steps each, checked by a local replay."""
    start = time.perf_counter()
    transcripts = asyncio.run(play_all(url, clients, steps, env_id, action_level, timeout_s))
    last_reply = max((t.finished for t in transcripts if not math.isnan(t.finished)), default=start)
    elapsed = last_reply - start
    failures = check(transcripts, env_id, env_kwargs or {}, action_level)
    latencies = [e.latency_s * 1000 for t in transcripts for e in t.exchanges if e.reply is not None]
    p50, p99, worst = np.percentile(latencies, [50, 99, 100]).tolist() if latencies else [math.nan] * 3
    return LoadReport(
        clients=clients,
        steps_per_client=steps,
        total_steps=sum(t.steps for t in transcripts),
        requests=len(latencies),
        elapsed_s=elapsed,
        p50_ms=p50,
        p99_ms=p99,
        max_ms=worst,
        failures=failures,
        transcripts=transcripts,
    )


# ---- the script ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_health(url: str, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server at {url} did not become healthy (exit code {process.poll()})") from None
            time.sleep(0.2)


@contextmanager
def local_server(env_id: str, env_kwargs: dict, action_level: str, max_sessions: int) -> Iterator[str]:
    """``python -m lm_gym.serve`` on a free loopback port while the block runs; yields its URL."""
    port = free_port()
    command = [sys.executable, "-m", "lm_gym.serve", env_id, "--env-kwargs", json.dumps(env_kwargs),
               "--action-level", action_level, "--port", str(port), "--max-sessions", str(max_sessions)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, process, 120)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=64, help="concurrent WebSocket sessions")
    parser.add_argument("--steps", type=int, default=1000, help="steps each client sends")
    parser.add_argument("--env-id", default="lm_gym/Wordle-v0", help="the served task (and the local replay's)")
    parser.add_argument("--env-kwargs", default="{}", help="the task's constructor arguments as a JSON object")
    parser.add_argument(
        "--action-level", default="utterance", choices=("utterance", "token"), help="the server's action level"
    )
    parser.add_argument("--url", help="a running server on loopback (default: start one for the test)")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="bound on the whole load (not the replay)")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.steps < 1 or args.timeout_s <= 0:
        parser.error("--clients, --steps and --timeout-s must be positive")
    if args.url is not None and urllib.parse.urlsplit(args.url).hostname not in LOOPBACK:
        parser.error(f"--url must be a loopback address ({', '.join(LOOPBACK)}), got {args.url!r}")
    try:
        args.env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as error:
        parser.error(f"--env-kwargs is not JSON: {error}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = dict(clients=args.clients, steps=args.steps, env_kwargs=args.env_kwargs, action_level=args.action_level)
    if args.url is not None:
        report = run_load(args.url, args.env_id, timeout_s=args.timeout_s, **settings)
    else:
        with local_server(args.env_id, args.env_kwargs, args.action_level, args.clients + 4) as url:
            report = run_load(url, args.env_id, timeout_s=args.timeout_s, **settings)
    print(report.summary(), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
