"""Helpers of the evaluation's server tests (imported by them; a conftest.py here would shadow
tests/conftest.py): a tiny model directory, and ``python -m benchmark.evaluation.test_server``
started as a user starts a server, a process on a free loopback port, ready once ``GET /v1/models``
answers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from conftest import tiny_causal_lm

ROOT = Path(__file__).resolve().parents[2]
SERVED_NAME = "tiny-gpt2"
START_TIMEOUT_S = 120


def save_tiny_model(directory: Path) -> Path:
    """A one-layer GPT-2 (weights of seed 0), its tokenizer trained on IMDB's synthetic text, saved in ``directory``."""
    torch.manual_seed(0)
    model, tokenizer = tiny_causal_lm("lm_gym/IMDB-v0", {"source": "synthetic"})
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


class RunningServer:
    """A test server process: its API root ``url`` and what it saw (``stats()``, from ``GET /stats``)."""

    def __init__(self, url: str, process: subprocess.Popen, log: Path):
        self.url = url
        self.process = process
        self.log = log

    def stats(self) -> dict:
        return get_json(self.url.removesuffix("/v1") + "/stats")

    def completion_requests(self) -> int:
        return self.stats()["completion_requests"]


@contextmanager
def run_test_server(model_dir: Path, log_dir: Path, *options: str) -> Iterator[RunningServer]:
    """``python -m benchmark.evaluation.test_server --model MODEL_DIR *options`` on a free port, for the block."""
    port = free_port()
    log = log_dir / f"test-server-{port}.log"
    command = [sys.executable, "-m", "benchmark.evaluation.test_server", "--model", str(model_dir), "--port", str(port)]
    with open(log, "w") as log_file:
        process = subprocess.Popen(
            [*command, "--served-model-name", SERVED_NAME, *options],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert process.poll() is None, f"the test server exited: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the test server did not answer in {START_TIMEOUT_S} s"
            try:
                get_json(f"{url}/models")
                break
            except urllib.error.HTTPError:  # it answers (401 without the key): it is up
                break
            except OSError:
                time.sleep(0.2)
        yield RunningServer(url, process, log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
