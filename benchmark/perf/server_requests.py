"""Requests per second of the evaluation's server client against a server answering in a fixed time.

    python -m benchmark.perf.server_requests [--concurrency 32] [--latency-s 0.05] [--requests 2048] [--api chat]

(from the repository's root: the client is ``benchmark.evaluation.completions``). A stub
OpenAI-compatible server (a bare ASGI app under uvicorn, in a process of its own so that it does
not share the client's interpreter) answers every completion request after ``--latency-s``, with
the same short text. The client (:class:`~benchmark.evaluation.completions.CompletionClient`, no
cache) asks ``--requests`` distinct requests with ``--concurrency`` in flight; the whole call is
timed, its check of ``GET /v1/models`` included. The goal is 80% of what the concurrency allows,
``0.8 * concurrency / latency`` (512 requests/s at 32 and 50 ms); the script prints the rate, the
goal and their ratio, and the client's CPU time a request (its rate on a core of its own: on a
machine busy with other work the rate falls below it), and exits 1 below the goal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import sys
import time
import urllib.request

from benchmark.evaluation.completions import CompletionClient, CompletionRequest

MODEL = "stub"
GOAL_SHARE = 0.8


def stub_app(latency_s: float):
    """An ASGI app: ``GET /v1/models`` lists ``stub``; a POST to ``/v1/chat/completions`` or ``/v1/completions``
    is answered after ``latency_s`` with one choice, in the API's shape."""
    models = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "stub"}]}).encode()
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    chat = {"index": 0, "message": {"role": "assistant", "content": "a reply"}, "finish_reason": "stop"}
    replies = {
        "/v1/chat/completions": json.dumps(
            {"id": "c", "object": "chat.completion", "created": 0, "model": MODEL, "choices": [chat], "usage": usage}
        ).encode(),
        "/v1/completions": json.dumps(
            {
                "id": "c",
                "object": "text_completion",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "text": "a reply", "logprobs": None, "finish_reason": "stop"}],
                "usage": usage,
            }
        ).encode(),
    }

    async def app(scope, receive, send):
        if scope["type"] != "http":  # lifespan: nothing to set up
            return
        while (await receive()).get("more_body"):  # the request's body, unread
            pass
        if scope["method"] == "GET" and scope["path"] == "/v1/models":
            body, status = models, 200
        elif scope["method"] == "POST" and scope["path"] in replies:
            await asyncio.sleep(latency_s)
            body, status = replies[scope["path"]], 200
        else:
            body, status = b'{"error": {"message": "not found"}}', 404
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def serve_stub(port: int, latency_s: float) -> None:
    import uvicorn

    uvicorn.run(stub_app(latency_s), host="127.0.0.1", port=port, log_level="warning", lifespan="off")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(url: str, server: multiprocessing.Process, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=5).close()
            return
        except OSError:
            if not server.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the stub server did not start at {url}") from None
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.perf.server_requests", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    parser.add_argument("--latency-s", type=float, default=0.05, help="the stub server's time to answer a request")
    parser.add_argument("--requests", type=int, default=2048, help="how many requests are timed")
    parser.add_argument("--api", choices=("chat", "completions"), default="chat")
    args = parser.parse_args(argv)
    for name in ("concurrency", "requests"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if not args.latency_s > 0:
        parser.error("--latency-s must be positive")

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = multiprocessing.get_context("spawn").Process(target=serve_stub, args=(port, args.latency_s), daemon=True)
    server.start()
    try:
        wait_until_up(url, server)
        if args.api == "chat":
            requests = [
                CompletionRequest(
                    messages=({"role": "user", "content": f"request {i}"},), temperature=1.0, top_p=1.0, max_tokens=8
                )
                for i in range(args.requests)
            ]
        else:
            requests = [
                CompletionRequest(prompt=f"request {i}", temperature=1.0, top_p=1.0, max_tokens=8)
                for i in range(args.requests)
            ]
        with CompletionClient(url, MODEL, api=args.api, concurrency=args.concurrency, timeout_s=30.0) as client:
            started, started_cpu = time.perf_counter(), time.process_time()
            completions = client.complete(requests)
            elapsed, cpu_s = time.perf_counter() - started, time.process_time() - started_cpu
    finally:
        server.terminate()
        server.join(10)
    failed = sum(completion.error is not None for completion in completions)
    rate = len(requests) / elapsed
    goal = GOAL_SHARE * args.concurrency / args.latency_s
    print(
        f"{len(requests)} requests ({args.api} API) at concurrency {args.concurrency} against a server answering "
        f"in {args.latency_s * 1000:g} ms: {elapsed:.2f} s, {rate:.0f} requests/s"
    )
    goal_formula = f"{GOAL_SHARE:g} x {args.concurrency} / {args.latency_s:g}"
    print(f"goal {goal_formula} = {goal:.0f} requests/s; ratio {rate / goal:.2f}")
    print(f"the limit, {args.concurrency} / {args.latency_s:g} = {args.concurrency / args.latency_s:.0f} requests/s")
    # the client is one Python thread: its CPU time a request bounds its rate, whatever the machine's other load
    cpu_ms = cpu_s / len(requests) * 1000
    print(f"the client's CPU time: {cpu_ms:.2f} ms a request, at most {1000 / cpu_ms:.0f} requests/s on a free core")
    if failed:
        print(f"{failed} requests failed")
    return 0 if rate >= goal and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
