"""The completion client against a real OpenAI-compatible server: ``python -m benchmark.evaluation.test_server``
serving a tiny GPT-2, started in a process as a user starts vLLM, with faults injected by its schedule."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from openai_servers import ROOT, SERVED_NAME, run_test_server, save_tiny_model  # noqa: E402

from benchmark.evaluation.completion_cache import CompletionCache  # noqa: E402
from benchmark.evaluation.completions import (  # noqa: E402
    CompletionClient,
    CompletionRequest,
    ModelNotServedError,
    ServerError,
)

API_KEY = "test-key"
#: The test server's sampling is seeded per request, so these give the same texts on every server of the model.
REQUESTS = [
    CompletionRequest(prompt=f"review {i}: the movie was", temperature=1.0, top_p=0.95, max_tokens=8, sample_index=k)
    for i in range(6)
    for k in range(2)
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def plain_server(model_dir, tmp_path_factory):
    """A server with no fault, which wants the key ``API_KEY``."""
    with run_test_server(model_dir, tmp_path_factory.mktemp("logs"), "--api-key", API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def slow_server(model_dir, tmp_path_factory):
    """A server whose every reply takes 0.1 s: requests overlap, and a run can be killed half-way."""
    with run_test_server(model_dir, tmp_path_factory.mktemp("logs"), "--latency-s", "0.1") as server:
        yield server


@pytest.fixture(scope="module")
def reference_texts(plain_server) -> list[str]:
    """``REQUESTS``' texts from the server without faults, asked one at a time, uncached."""
    with CompletionClient(plain_server.url, SERVED_NAME, api="completions", api_key=API_KEY, concurrency=1) as client:
        completions = client.complete(REQUESTS)
    assert all(completion.error is None and not completion.cached for completion in completions)
    return [completion.text for completion in completions]


@pytest.fixture
def open_client():
    """``open_client(server, **settings)``: a client of ``server``'s model (the completions API, short backoffs;
    ``url=`` for another server), closed after the test."""
    opened = []

    def open_(server=None, *, url=None, model=SERVED_NAME, **settings) -> CompletionClient:
        client = CompletionClient(url or server.url, model, **{"api": "completions", "backoff_s": 0.01, **settings})
        opened.append(client)
        return client

    yield open_
    for client in opened:
        client.close()


def test_completions_come_back_in_the_order_asked(plain_server, reference_texts, open_client):
    texts = reference_texts
    assert len(set(texts)) == len(texts)  # each request its own text: a mix-up would show
    assert texts[0] != texts[1]  # sample 0 and sample 1 of one prompt differ (their seeds)
    client = open_client(plain_server, api_key=API_KEY, concurrency=8)
    backwards = client.complete(REQUESTS[::-1])
    assert [completion.text for completion in backwards] == texts[::-1]


def test_a_client_checks_the_server_once_and_keeps_its_connections_until_closed(
    plain_server, reference_texts, open_client
):
    stats = plain_server.stats()
    with open_client(plain_server, api_key=API_KEY, concurrency=4) as client:
        turns = [client.complete(REQUESTS[first : first + 4]) for first in range(0, len(REQUESTS), 4)]
        assert [completion.text for turn in turns for completion in turn] == reference_texts
        assert plain_server.stats()["models_requests"] == stats["models_requests"] + 1
    assert client.openai_client is None and client.loop is None  # closed
    client.complete(REQUESTS[:1])  # opens them again, and checks the server again
    assert plain_server.stats()["models_requests"] == stats["models_requests"] + 2
    client.close()


def test_the_chat_api_sends_messages(plain_server, open_client):
    client = open_client(plain_server, api="chat", api_key=API_KEY)
    messages = ({"role": "system", "content": "Review films."}, {"role": "user", "content": "the movie was"})
    requests = [
        CompletionRequest(messages=messages, temperature=0.0, top_p=1.0, max_tokens=6, sample_index=k) for k in (0, 1)
    ]
    first, second = client.complete(requests)
    assert first.error is None and first.text  # greedy: both samples are the model's most likely text
    assert first.text == second.text


def test_at_most_concurrency_requests_are_in_flight(slow_server, open_client):
    progress = []
    client = open_client(slow_server, concurrency=4)
    requests = [CompletionRequest(prompt=f"bound {i}", temperature=1.0, top_p=1.0, max_tokens=2) for i in range(24)]
    completions = client.complete(requests, on_done=lambda done, total: progress.append((done, total)))
    assert all(completion.error is None for completion in completions)
    assert slow_server.stats()["max_in_flight"] == 4
    assert progress == [(done, 24) for done in range(1, 25)]


def test_the_cache_makes_a_rerun_ask_nothing(plain_server, reference_texts, tmp_path, open_client):
    client = open_client(plain_server, api_key=API_KEY, cache_dir=tmp_path)
    before = plain_server.completion_requests()
    first = client.complete(REQUESTS + REQUESTS[:3])  # the repeated three are asked once
    assert plain_server.completion_requests() - before == len(REQUESTS)
    assert [completion.text for completion in first] == reference_texts + reference_texts[:3]
    assert not any(completion.cached for completion in first)
    progress = []
    again = client.complete(REQUESTS, on_done=lambda done, total: progress.append((done, total)))
    assert plain_server.completion_requests() - before == len(REQUESTS)
    assert [completion.text for completion in again] == reference_texts
    assert all(completion.cached for completion in again) and progress == [(len(REQUESTS), len(REQUESTS))]
    hotter = [dataclasses.replace(request, temperature=0.5) for request in REQUESTS[:2]]
    client.complete(hotter)  # another sampling setting is another key
    assert plain_server.completion_requests() - before == len(REQUESTS) + 2


def test_a_run_killed_half_way_resumes_asking_only_the_rest(slow_server, tmp_path, open_client):
    requests = [CompletionRequest(prompt=f"resume {i}", temperature=1.0, top_p=1.0, max_tokens=4) for i in range(60)]
    script = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from benchmark.evaluation.completions import CompletionClient, CompletionRequest
        requests = [CompletionRequest(**request) for request in json.loads(sys.argv[1])]
        client = CompletionClient({slow_server.url!r}, {SERVED_NAME!r}, api="completions", concurrency=4,
                                  cache_dir=Path({str(tmp_path)!r}))
        client.complete(requests)
        """
    )
    asked = json.dumps([dataclasses.asdict(request) for request in requests])
    cache = CompletionCache(tmp_path)
    run = subprocess.Popen([sys.executable, "-c", script, asked], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while len(cache) < 12:
        assert run.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
        time.sleep(0.05)
    run.kill()
    run.wait()
    kept = len(cache)
    cache.close()
    assert 12 <= kept < len(requests)

    before = slow_server.completion_requests()
    resumed = open_client(slow_server, concurrency=4, cache_dir=tmp_path).complete(requests)
    assert slow_server.completion_requests() - before == len(requests) - kept
    assert sum(completion.cached for completion in resumed) == kept
    uncached = open_client(slow_server, concurrency=4).complete(requests)
    assert [completion.text for completion in resumed] == [completion.text for completion in uncached]


def test_each_fault_is_retried_or_counted_and_the_texts_are_those_without_faults(
    model_dir, reference_texts, tmp_path, caplog, open_client
):
    """A dropped connection, 429 (its Retry-After waited), 500 and a reply slower than the timeout are
    retried and give the fault-free texts; a malformed and an empty reply are counted, not cached, and
    asked again by the rerun."""
    faults = "drop,429,500,slow,malformed,empty"
    options = ["--faults", faults, "--slow-s", "3", "--retry-after-s", "1"]
    with run_test_server(model_dir, tmp_path, *options) as server:
        client = open_client(server, concurrency=1, timeout_s=1.5, cache_dir=tmp_path)
        with caplog.at_level(logging.INFO, logger="benchmark.evaluation.completions"):
            completions = client.complete(REQUESTS)
        # one at a time, the first request meets drop, 429, 500, slow and malformed in turn, the second empty
        assert server.stats()["faults_served"] == {kind: 1 for kind in faults.split(",")} | {"ok": len(REQUESTS) - 2}
        waits = [re.search(r"HTTP 429: .* in ([\d.]+) s$", record.getMessage()) for record in caplog.records]
        assert [float(wait[1]) >= 1.0 for wait in waits if wait] == [True]  # the 429's Retry-After
        failed = [completion.error for completion in completions if completion.error]
        assert len(failed) == 2 and any("malformed reply" in error for error in failed)
        assert any("empty reply: no choices" in error for error in failed)
        for completion, text in zip(completions, reference_texts):
            assert completion.text == ("" if completion.error else text)
        rerun = client.complete(REQUESTS)
        assert [completion.text for completion in rerun] == reference_texts
        assert sum(not completion.cached for completion in rerun) == 2


def test_retries_exhausted_name_the_url_the_model_and_the_last_failure_and_the_rerun_resumes(
    model_dir, tmp_path, open_client
):
    with run_test_server(model_dir, tmp_path, "--faults", "ok*4,500*3") as server:
        client = open_client(server, concurrency=1, max_retries=2, cache_dir=tmp_path)
        with pytest.raises(ServerError) as failure:
            client.complete(REQUESTS)
        message = str(failure.value)
        assert server.url in message and repr(SERVED_NAME) in message and "3 attempts" in message
        assert "HTTP 500: injected fault: 500" in message
        assert len(CompletionCache(tmp_path)) == 4
        before = server.completion_requests()
        resumed = client.complete(REQUESTS)
        assert server.completion_requests() - before == len(REQUESTS) - 4
        assert sum(completion.cached for completion in resumed) == 4


def test_a_model_the_server_does_not_serve_is_named_with_the_models_it_serves(plain_server, open_client):
    client = open_client(plain_server, model="gpt-7", api_key=API_KEY)
    started = time.monotonic()
    with pytest.raises(ModelNotServedError, match=r"does not serve model 'gpt-7' .*; it serves: tiny-gpt2$"):
        client.complete(REQUESTS)
    assert time.monotonic() - started < 5  # not retried


def test_a_server_that_is_down_is_named_at_once(open_client):
    with socket.socket() as nothing_listens:  # a port held, not listening: connections are refused
        nothing_listens.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{nothing_listens.getsockname()[1]}/v1"
        client = open_client(url=url)
        with pytest.raises(ServerError, match=rf"^no server answers at {url} \(\w*Connect\w*: "):
            client.complete(REQUESTS[:1])


def test_a_refused_key_is_a_clear_error(plain_server, open_client):
    client = open_client(plain_server, api_key="wrong")
    with pytest.raises(ServerError, match=r"refused the API key .*HTTP 401: Incorrect API key"):
        client.complete(REQUESTS[:1])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"base_url": "localhost:8000"}, "base_url must be an http"),
        ({"api": "responses"}, "api must be one of chat, completions"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1"),
        ({"max_retries": -1}, "max_retries must be an integer >= 0"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
    ],
)
def test_bad_settings_name_the_argument(settings, message):
    with pytest.raises(ValueError, match=message):
        CompletionClient(**{"base_url": "http://127.0.0.1:1/v1", "model": "m", **settings})


def test_a_request_for_the_other_api_names_it():
    client = CompletionClient("http://127.0.0.1:1/v1", "m", api="chat")
    with pytest.raises(ValueError, match=r"requests\[1\]: the chat API takes messages"):
        client.complete([CompletionRequest(messages=(), temperature=1, top_p=1, max_tokens=1), REQUESTS[0]])
