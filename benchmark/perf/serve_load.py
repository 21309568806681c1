"""Load test of a served task: concurrent raw WebSocket clients, every reply checked against a local replay.

    python benchmark/perf/serve_load.py --clients 64 --steps 1000 [--env-id lm_gym/Wordle-v0] [--url URL]
    python benchmark/perf/serve_load.py --clients 8 --steps 200 --action-level token
    python benchmark/perf/serve_load.py --url http://127.0.0.1:8000 --token-file ~/.lm-gym-token

Without ``--url`` it starts the server itself (``python -m lm_gym.serve ENV_ID`` on a free loopback
port, with a fresh bearer token unless ``--no-token``), waits for ``GET /health`` and stops it
afterwards. With ``--url`` it plays a server that is already running (loopback only), serving
``--env-id`` with ``--env-kwargs`` at ``--action-level``, whose token ``--token-file`` holds.

Each client is one WebSocket session written against OpenEnv's protocol (the ``websockets``
package, not lm-gym's client); all clients run concurrently in one asyncio loop. Client ``c``
asks for the session's state, then plays episodes with seeds ``c * 100000 + e`` (``e`` = 0, 1,
...; every other episode through the Task API's ``reset(index=seed)``), choosing each action from
its episode's seed (a word of ``WORDS`` at utterance level, a token the action mask allows at token
level), resetting when ``done``, until it has sent
``--steps`` steps; it ends with a state request, whose ``step_count`` must be the steps it sent
in its last episode. It records every request, reply and latency.

Afterwards each client's whole transcript is replayed on a local env
(``gymnasium.make(ENV_ID, action_level=..., **env_kwargs)``, reset with the same seeds, stepped
with the same actions): every observation, reward, ``terminated``, ``truncated`` and info must be
the same, and every request must have exactly one reply, so a lost, duplicated or cross-talked
step shows up. Prints the latency of all requests (p50, p99, max), the steps, steps per second and
the failures; exits 1 on any failure. ``--timeout-s`` bounds the whole load (the clients stop and
the run fails cleanly).

With a token, ``--intruders`` more clients (default: as many as ``--clients``) knock during the
load, without the token, with a wrong one or a malformed header, on the WebSocket and on the Task
API's ``/splits``: each must be refused (``401``). The server it starts holds only ``--clients`` + 4
sessions, so an intruder that got a session would also cost a real client its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
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
    #: Requests without the token, or with a wrong or malformed one, that the server refused.
    refused_intruders: int = 0

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
            f"intruders refused: {self.refused_intruders}",
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


def auth_headers(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


async def play_client(
    url: str, transcript: Transcript, steps: int, env_id: str, action_level: str, deadline: float, token: str | None
):
    """Client ``transcript.client``'s episodes until it has sent ``steps`` steps; why it stopped early, if it
    did, goes to ``transcript.error``."""
    from websockets.asyncio.client import connect

    try:
        timeout = max(1.0, deadline - time.monotonic())
        headers = auth_headers(token)
        async with connect(
            websocket_url(url), open_timeout=timeout, max_size=None, proxy=None, additional_headers=headers
        ) as ws:
            client = Client(ws, transcript, deadline)
            state = (await client.request({"type": "state"}))["data"]
            if (state.get("env_id"), state.get("action_level")) != (env_id, action_level):
                raise RuntimeError(f"the server serves {state.get('env_id')} at {state.get('action_level')} level")
            sent, episode = 0, 0
            while sent < steps:
                seed = transcript.client * SEED_STRIDE + episode
                reset = {"seed": seed} if episode % 2 == 0 else {"index": seed}  # the Task API's reset
                reply = (await client.request({"type": "reset", "data": reset}))["data"]
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


#: What the intruders send as ``Authorization``: nothing, a wrong token, malformed headers.
INTRUDER_HEADERS = (None, "Bearer not-the-token-0123456789", "Bearer", "Basic dXNlcjpwYXNz", "bearer  x y")


async def intrude(url: str, env_id: str, number: int, deadline: float) -> tuple[int, list[str]]:
    """Intruder ``number``: one WebSocket handshake and one Task API request without a valid token; how many
    were refused with ``401``, and a failure for each that was not."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    header = INTRUDER_HEADERS[number % len(INTRUDER_HEADERS)]
    headers = {} if header is None else {"Authorization": header}
    refused, failures = 0, []
    try:
        timeout = max(1.0, deadline - time.monotonic())
        async with connect(websocket_url(url), open_timeout=timeout, proxy=None, additional_headers=headers) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            failures.append(f"intruder {number} ({header!r}) opened a WebSocket and got {str(await ws.recv())[:80]}")
    except InvalidStatus as error:
        status = error.response.status_code
        refused += status == 401
        if status != 401:
            failures.append(f"intruder {number} ({header!r}): the WebSocket handshake got {status}, not 401")
    route = f"{url}/{env_id.replace('/', '-')}/splits"
    status = await asyncio.to_thread(http_status, route, headers)
    refused += status == 401
    if status != 401:
        failures.append(f"intruder {number} ({header!r}): GET {route} got {status}, not 401")
    return refused, failures


def http_status(url: str, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code


async def play_all(
    url: str,
    clients: int,
    steps: int,
    env_id: str,
    action_level: str,
    timeout_s: float,
    token: str | None = None,
    intruders: int = 0,
):
    """All clients at once, in this loop, and the intruders among them; the clients' transcripts (partial
    where one stopped early), how many intruders' requests were refused, and the intruders' failures."""
    deadline = time.monotonic() + timeout_s
    transcripts = [Transcript(c) for c in range(clients)]
    plays = [play_client(url, t, steps, env_id, action_level, deadline, token) for t in transcripts]
    knocks = [intrude(url, env_id, number, deadline) for number in range(intruders)]
    outcomes: list[Any] = []
    try:
        # a backstop: each request has the deadline
        outcomes = await asyncio.wait_for(asyncio.gather(*knocks, *plays), timeout_s + 10)
    except (asyncio.TimeoutError, TimeoutError):
        for transcript in transcripts:
            transcript.error = transcript.error or "timed out"
    knocked = outcomes[:intruders]
    refused = sum(count for count, _ in knocked)
    failures = [failure for _, found in knocked for failure in found]
    if len(knocked) < intruders:
        failures.append("the intruders did not finish before the deadline")
    return transcripts, refused, failures


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
                data = exchange.request["data"]
                obs, info = env.reset(seed=data.get("seed", data.get("index")))
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
    token: str | None = None,
    intruders: int = 0,
) -> LoadReport:
    """``clients`` concurrent sessions of the server at ``url`` (with its bearer ``token``), ``steps`` steps each,
    checked by a local replay; with a token, ``intruders`` requests without it among them, each to be refused."""
    if token is None:
        intruders = 0
    start = time.perf_counter()
    played = play_all(url, clients, steps, env_id, action_level, timeout_s, token, intruders)
    transcripts, refused, intruder_failures = asyncio.run(played)
    last_reply = max((t.finished for t in transcripts if not math.isnan(t.finished)), default=start)
    elapsed = last_reply - start
    failures = intruder_failures + check(transcripts, env_id, env_kwargs or {}, action_level)
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
        refused_intruders=refused,
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
def local_server(
    env_id: str, env_kwargs: dict, action_level: str, max_sessions: int, token: str | None = None
) -> Iterator[str]:
    """``python -m lm_gym.serve`` on a free loopback port (bearer ``token``) while the block runs; yields its URL."""
    port = free_port()
    command = [sys.executable, "-m", "lm_gym.serve", env_id, "--env-kwargs", json.dumps(env_kwargs),
               "--action-level", action_level, "--port", str(port), "--max-sessions", str(max_sessions)]  # fmt: skip
    folder = tempfile.TemporaryDirectory()
    if token is not None:
        token_file = Path(folder.name) / "token"
        token_file.write_text(token, encoding="utf-8")
        command += ["--token-file", str(token_file)]
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
        folder.cleanup()


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
    parser.add_argument("--token-file", help="the running server's bearer token (with --url), in a file")
    parser.add_argument("--no-token", action="store_true", help="start the server without a token (no --url)")
    parser.add_argument(
        "--intruders", type=int, help="requests without a valid token during the load (default: --clients)"
    )
    args = parser.parse_args(argv)
    if args.clients < 1 or args.steps < 1 or args.timeout_s <= 0:
        parser.error("--clients, --steps and --timeout-s must be positive")
    if args.url is not None and urllib.parse.urlsplit(args.url).hostname not in LOOPBACK:
        parser.error(f"--url must be a loopback address ({', '.join(LOOPBACK)}), got {args.url!r}")
    if args.token_file is not None and (args.url is None or args.no_token):
        parser.error("--token-file names a running server's token: give it with --url (and without --no-token)")
    if args.intruders is not None and args.intruders < 0:
        parser.error("--intruders must be >= 0")
    try:
        args.env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as error:
        parser.error(f"--env-kwargs is not JSON: {error}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    intruders = args.clients if args.intruders is None else args.intruders
    settings = dict(clients=args.clients, steps=args.steps, env_kwargs=args.env_kwargs, action_level=args.action_level)
    settings |= dict(timeout_s=args.timeout_s, intruders=intruders)
    if args.url is not None:
        token = None if args.token_file is None else Path(args.token_file).expanduser().read_text("utf-8").strip()
        report = run_load(args.url, args.env_id, token=token, **settings)
    else:
        token = None if args.no_token else secrets.token_urlsafe(24)
        with local_server(args.env_id, args.env_kwargs, args.action_level, args.clients + 4, token) as url:
            report = run_load(url, args.env_id, token=token, **settings)
    print(report.summary(), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
