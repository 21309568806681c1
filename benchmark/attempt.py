"""One attempt of one job: a child process with its environment and log file.

Every backend runs jobs through :func:`run_attempt` (Ray and Slurm on their workers, the
local backend through :func:`start_process` so it can poll many at once). The child runs in
its own session and is killed with its parent (``PR_SET_PDEATHSIG``), so a harness killed
with SIGKILL leaves no orphan that could write into a job folder a re-run is using.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.results import RESULT_FILE, ResultFormatError, load_result

USAGE_EXIT_CODE = 2  #: argparse, tyro and python itself (a missing script) exit 2 on a bad command line
# The last line of a Python traceback: "[module.]SomeError: message" (or the bare name).
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<name>[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt))(?::|$)")
_LOG_TAIL_BYTES = 65536

DATA_DONE_FILE = ".done"  #: written in a data job's folder after it exits 0
LOG_FILE = "harness.log"


@dataclass(frozen=True)
class Attempt:
    """Everything a worker needs to run one attempt; picklable for Ray and submitit."""

    key: str
    argv: tuple[str, ...]  #: the full command, interpreter first
    cwd: str
    out_dir: str
    env: dict[str, str] = field(default_factory=dict)  #: variables set over the worker's environment
    number: int = 1
    timeout_s: float | None = None
    is_baseline: bool = True

    def resumed(self) -> Attempt:
        """The same attempt continuing from the job's checkpoint (Slurm requeues, retries)."""
        if "--resume" in self.argv or not self.is_baseline:
            return self
        return replace(self, argv=self.argv + ("--resume",))


def job_finished(out_dir: Path, is_baseline: bool) -> bool:
    """A baseline job has finished when its ``result.json`` is valid; a data job when it exited 0."""
    if not is_baseline:
        return (out_dir / DATA_DONE_FILE).is_file()
    if not (out_dir / RESULT_FILE).is_file():
        return False
    try:
        load_result(out_dir)
    except (ResultFormatError, OSError, ValueError):
        return False
    return True


def failure_cause(out_dir: Path) -> str:
    """The cause of the job's latest attempt failing: the last error line of its output in the log.

    That is the last line of a Python traceback (``lm_gym.core.errors.DataUnavailableError: ...``)
    when there is one, else the last line the attempt printed (``sys.exit("message")``, a usage
    error); ``""`` when it printed nothing.
    """
    try:
        with open(Path(out_dir) / LOG_FILE, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES))
            lines = log.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    starts = [
        index for index, line in enumerate(lines) if line.startswith("=== ") and not line.startswith("=== exit code")
    ]
    output = [
        line.strip()
        for line in lines[starts[-1] + 1 if starts else 0 :]
        if line.strip() and not line.startswith(("=== exit code", "$ "))
    ]
    errors = [line for line in output if _EXCEPTION_LINE.match(line)]
    cause = (errors or output or [""])[-1]
    return cause if len(cause) <= 300 else cause[:297] + "..."


def is_permanent(returncode: int, cause: str) -> bool:
    """A failure a retry cannot fix: a usage error, or a configuration or data error of lm-gym's."""
    match = _EXCEPTION_LINE.match(cause)
    return returncode == USAGE_EXIT_CODE or (
        match is not None and match["name"] in _subclass_names(ConfigurationError, DataUnavailableError)
    )


def _subclass_names(*classes: type) -> set[str]:
    """The names of ``classes`` and of their subclasses (those defined in a module imported so far)."""
    return {name for cls in classes for name in (cls.__name__, *_subclass_names(*cls.__subclasses__()))}


def has_checkpoint(out_dir: Path) -> bool:
    return (out_dir / "checkpoint").is_dir()


def start_process(attempt: Attempt) -> subprocess.Popen:
    """Start the attempt's process, appending its output to the job's log."""
    out_dir = Path(attempt.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **attempt.env, "PYTHONUNBUFFERED": "1"}
    # a script's own folder heads sys.path, not the checkout: without this a baseline could import
    # another lm_gym (an installed release) than the harness and the data jobs (``-m``) do
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [attempt.cwd, env.get("PYTHONPATH")]))
    with open(out_dir / LOG_FILE, "a") as log:
        log.write(
            f"\n=== {attempt.key}, attempt {attempt.number}, {datetime.datetime.now().isoformat(timespec='seconds')} "
            f"on {socket.gethostname()}, CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', '<unset>')}, "
            f"OMP_NUM_THREADS={env.get('OMP_NUM_THREADS', '<unset>')}\n$ {shlex.join(attempt.argv)}\n"
        )
        log.flush()
        return subprocess.Popen(
            attempt.argv,
            cwd=attempt.cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def finish_attempt(attempt: Attempt, returncode: int) -> None:
    """Record the outcome in the log; a data job that exited 0 gets its done file, written atomically."""
    out_dir = Path(attempt.out_dir)
    if returncode == 0 and not attempt.is_baseline:
        _write_json_atomically(out_dir / DATA_DONE_FILE, {"command": list(attempt.argv), "finished": time.time()})
    with open(out_dir / LOG_FILE, "a") as log:
        log.write(f"=== exit code {returncode}\n")


def stop_process(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM to the attempt's process group, SIGKILL after ``grace_s``."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_attempt(attempt: Attempt) -> int:
    """Run an attempt to its end (or its timeout: exit code 124) and return the exit code."""
    process = start_process(attempt)
    try:
        returncode = process.wait(attempt.timeout_s)
    except subprocess.TimeoutExpired:
        stop_process(process)
        returncode = 124
    except BaseException:  # the worker is being stopped (Ctrl-C, a cancelled Ray task, Slurm's signal)
        stop_process(process)
        raise
    finish_attempt(attempt, returncode)
    return returncode


def _write_json_atomically(path: Path, content: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(content, indent=1))
    os.replace(tmp, path)


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
