"""Steps per second of a served task (``python -m lm_gym.serve``) against the in-process native vector env.

    python benchmark/perf/serve_throughput.py [--clients 1 8 64] [--steps 20] [--tasks imdb wordle imdb-ngram]

Tasks, all offline:

* ``imdb``: IMDB (``source="synthetic"``) scored by a reward model of the hub task's size and
  shape, DistilBERT-base (6 layers, 768 wide; random weights, built here with a tokenizer trained
  on the reviews and saved under ``--model-dir``): the cost of ``lvwerra/distilbert-imdb``;
* ``wordle``: Wordle, no model (a step costs microseconds in process);
* ``imdb-ngram``: IMDB with its offline bag-of-n-grams classifier (also microseconds).

For each task and each N in ``--clients``:

* **native**: ``gymnasium.make_vec(task, N, vectorization_mode="vector_entry_point")`` stepped in
  this process, N utterances a step (one reward call);
* **served**: a server (``lm_gym.serve``, loopback, batch window ``--window-ms``) in a child process
  and N concurrent sessions in this one (``lm_gym/Remote-v0``'s vector form: N WebSocket sessions,
  each step sent concurrently and answered separately);
* **served, batching off**: the same server with ``--no-batching`` (every session's step its own
  reward call).

* **transport floor** (once per N): the same N sessions against an ASGI app that answers every
  message with a fixed reply, behind the same uvicorn and WebSocket stack and the same client:
  no OpenEnv, no env. No served task can be faster than this on the machine.

Steps per second count single-session steps (N per vector step). Prints each rate and the ratios
served/native and batched/unbatched. The issue's goals at 64 clients: served >= 0.8x native,
batched >= 5x unbatched. Loopback only; the server and the clients share this machine's cores. The
servers carry a fresh bearer token, as a server beyond loopback must (``--no-token``: none).
"""

from __future__ import annotations

import argparse
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import gymnasium
import torch

import lm_gym  # noqa: F401  (registers the tasks)
import lm_gym.serve  # noqa: F401  (registers lm_gym/Remote-v0)

CONTINUATIONS = [
    "and the second half is even better, with a moving score and two leads who make every scene count.",
    "but the plot falls apart in the last act and the jokes are too thin to carry a film this long.",
    "it is the kind of film you want to see again the moment it ends, funny and warm and honest.",
    "so I left the theatre bored, and nothing in the script or the acting gave me a reason to stay.",
]
TASKS = {
    "imdb": ("lm_gym/IMDB-v0", {"source": "synthetic"}, CONTINUATIONS),
    "wordle": ("lm_gym/Wordle-v0", {}, ["crane", "slate", "pious", "adieu"]),
    "imdb-ngram": ("lm_gym/IMDB-v0", {"source": "synthetic"}, CONTINUATIONS),
}


def distilbert_reward_model(directory: Path) -> str:
    """A sentiment classifier shaped as DistilBERT-base (random weights) saved in ``directory``."""
    if not (directory / "config.json").exists():
        from transformers import DistilBertConfig, DistilBertForSequenceClassification

        from lm_gym.core.tokenizer import train_tokenizer
        from lm_gym.tasks.imdb.data import load_reviews

        texts = [text for text, _ in load_reviews("synthetic", "train")]
        tokenizer = train_tokenizer(texts, "serve-benchmark-imdb", vocab_size=8192)
        config = DistilBertConfig(
            vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, id2label={0: "NEGATIVE", 1: "POSITIVE"}
        )
        torch.manual_seed(0)
        DistilBertForSequenceClassification(config).save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    return str(directory)


_ECHO_STATE = {
    "type": "state",
    "data": {
        "episode_id": None,
        "step_count": 0,
        "env_id": "echo",
        "task_digest": "echo",
        "spaces": {"action_level": "utterance", "max_observation_length": 1024, "max_action_length": 64},
    },
}
_ECHO_OBSERVATION = {
    "type": "observation",
    "data": {
        "reward": -1.0,
        "done": False,
        "observation": {
            "text": "Guess the five-letter word. You have 6 guesses.\ncrane: b b y b g\n",
            "terminated": False,
            "truncated": False,
            "info": {},
            "metadata": {},
        },
    },
}


async def echo_app(scope, receive, send) -> None:
    """The transport floor: an ASGI app answering ``state`` with a fixed state and anything else with a
    fixed observation (``python -m uvicorn serve_throughput:echo_app``)."""
    import json

    if scope["type"] == "http":  # /health
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        return
    if scope["type"] != "websocket":
        return
    state, observation = json.dumps(_ECHO_STATE), json.dumps(_ECHO_OBSERVATION)
    await receive()
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return
        kind = json.loads(message["text"]).get("type")
        if kind == "close":
            return
        await send({"type": "websocket.send", "text": state if kind == "state" else observation})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env_id: str, kwargs: dict, batching: bool, window_ms: float, max_sessions: int, token_file=None):
    import json

    port = free_port()
    command = [
        sys.executable,
        "-m",
        "lm_gym.serve",
        env_id,
        "--env-kwargs",
        json.dumps(kwargs),
        "--port",
        str(port),
        "--max-sessions",
        str(max_sessions + 4),
        "--batch-window-ms",
        str(window_ms),
    ]
    if not batching:
        command.append("--no-batching")
    if token_file is not None:
        command += ["--token-file", str(token_file)]
    return launch(command, port, env_id)


def start_echo_server():
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "serve_throughput:echo_app",
        "--app-dir",
        str(Path(__file__).parent),
        "--port",
        str(port),
        "--ws-per-message-deflate",
        "false",
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    return launch(command, port, "the transport floor")


def launch(command: list[str], port: int, name: str):
    """Start ``command`` (a server on ``port``) and wait for its ``/health``: ``(process, url)``."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return process, url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server for {name} did not start") from None
            time.sleep(0.2)


def remote_rate(url: str, n: int, utterances: list[str], steps: int, token: str | None = None) -> float:
    remote = gymnasium.make_vec(
        "lm_gym/Remote-v0", num_envs=n, vectorization_mode="vector_entry_point", url=url, token=token
    )
    try:
        return rate(remote, utterances, steps)
    finally:
        remote.close()


def rate(env, utterances: list[str], steps: int) -> float:
    """Single-session steps per second of ``env`` (a vector env), after a warm-up."""
    n = env.num_envs
    env.reset(seed=0)
    actions = [[utterances[(t + i) % len(utterances)] for i in range(n)] for t in range(steps + 2)]
    for t in range(2):
        env.step(actions[t])
    start = time.perf_counter()
    for t in range(2, steps + 2):
        env.step(actions[t])
    return n * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--steps", type=int, default=20, help="vector steps timed per measurement")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--window-ms", type=float, default=2.0, help="the server's --batch-window-ms")
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=Path("/tmp/lm-gym-serve-benchmark-distilbert"),
        help="where the imdb task's DistilBERT-sized reward model is built (once) and read",
    )
    parser.add_argument("--no-token", action="store_true", help="serve without a bearer token (default: with one)")
    args = parser.parse_args()
    token = None if args.no_token else secrets.token_urlsafe(24)
    folder = tempfile.TemporaryDirectory()
    token_file = None if token is None else Path(folder.name) / "token"
    if token_file is not None:
        token_file.write_text(token, encoding="utf-8")
    echo, echo_url = start_echo_server()
    try:
        for n in args.clients:
            print(
                f"echo    N={n:3d}  transport floor {remote_rate(echo_url, n, ['crane'], args.steps):9.1f}/s",
                flush=True,
            )
    finally:
        echo.terminate()
        echo.wait(30)
    for task in args.tasks:
        env_id, kwargs, utterances = TASKS[task]
        if task == "imdb":
            kwargs = {**kwargs, "reward_model": distilbert_reward_model(args.model_dir)}
        servers = {
            b: start_server(env_id, kwargs, b, args.window_ms, max(args.clients), token_file) for b in (True, False)
        }
        try:
            for n in args.clients:
                native = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point", **kwargs)
                result = {"native": rate(native, utterances, args.steps)}
                native.close()
                for batching, (_, url) in servers.items():
                    result["served" if batching else "unbatched"] = remote_rate(url, n, utterances, args.steps, token)
                print(
                    f"{task:7s} N={n:3d}  native {result['native']:9.1f}/s  served {result['served']:9.1f}/s  "
                    f"unbatched {result['unbatched']:9.1f}/s  served/native {result['served'] / result['native']:.2f}  "
                    f"batched/unbatched {result['served'] / result['unbatched']:.2f}",
                    flush=True,
                )
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(30)
    folder.cleanup()


if __name__ == "__main__":
    main()
