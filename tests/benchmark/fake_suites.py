"""Suites of ``harness_fake_baseline.py`` for the harness tests, and the harness run as a user runs it
(``python -m benchmark run``, a process)."""

import subprocess
import sys
from pathlib import Path

from benchmark.suite import ROOT
from lm_gym.results import load_result

FAKE = Path(__file__).with_name("harness_fake_baseline.py")


def write_suite(tmp_path, body: str, name="tiny") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(body.replace("FAKE", str(FAKE)))
    return path


FAKE_SUITE = """
[suite]
description = "fake jobs"
seeds = [1, 2, 3]
retries = 1

[algorithms.warm]
script = "FAKE"
[algorithms.rl]
script = "FAKE"
args = { init-from = "{warm?}/checkpoint", steps = 4, step-seconds = 0.2 }

[tasks.a]
env_id = "lm_gym/IMDB-v0"
env_kwargs = { source = "synthetic" }
algorithms = ["warm", "rl"]
[tasks.b]
env_id = "lm_gym/Wordle-v0"
algorithms = ["rl"]
"""


def harness(*args, check=True, **popen) -> subprocess.CompletedProcess:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmark", "run", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        **popen,
    )
    if check and completed.returncode != 0:
        raise AssertionError(f"harness exit {completed.returncode}\n{completed.stdout}\n{completed.stderr}")
    return completed


def results(root: Path) -> dict[str, dict]:
    return {str(path.parent.relative_to(root)): load_result(path.parent) for path in root.rglob("result.json")}
