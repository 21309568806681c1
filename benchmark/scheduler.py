"""Runs a suite's jobs on a backend: order, retries, resume, progress, status file, Ctrl-C.

* A job whose folder already holds its outcome (a valid ``result.json``; a data job's done
  file) is not run again, so re-running the same command resumes the suite. A baseline job
  that stopped mid-way is re-run with ``--resume`` when its folder holds a checkpoint.
* A job runs when the jobs it needs have finished; it is skipped when one of them failed.
* A failed attempt (non-zero exit, timeout, a lost worker, or exit 0 without a valid
  ``result.json``) is retried ``retries`` times, then the job is recorded as failed; the
  other jobs go on. A failure no retry can fix (a usage error, exit 2; lm-gym's
  ``ConfigurationError`` or ``DataUnavailableError``) is recorded at once. The console, the
  summary and ``harness.json`` give each failure's cause: the last error line of its log.
* ``<out>/harness.json`` holds every job's state, attempts and log, rewritten atomically at
  every change; ``<out>/.harness.lock`` keeps a second harness out of the same folder.
* Ctrl-C (or SIGTERM) stops the running attempts, records them as interrupted and prints
  the summary; the next run starts them again.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchmark.attempt import (
    LOG_FILE,
    Attempt,
    failure_cause,
    has_checkpoint,
    is_permanent,
    job_finished,
)
from benchmark.suite import ROOT, Job
from lm_gym.core.errors import ConfigurationError
from lm_gym.results.harness_job import read_harness_argv, write_harness_job

STATUS_FILE = "harness.json"
LOCK_FILE = ".harness.lock"
POLL_S = 0.5


class Backend(Protocol):
    name: str

    def capacity(self) -> int: ...
    def submit(self, attempts: list[Attempt]) -> list[Any]: ...
    def poll(self, handle: Any) -> int | None: ...
    def describe(self, handle: Any) -> str: ...
    def cancel(self, handle: Any) -> None: ...
    def close(self) -> None: ...


@dataclass
class JobState:
    job: Job
    state: str = "pending"  #: pending, running, done, failed, skipped, interrupted
    attempts: int = 0
    exit_codes: list[int] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""
    started: float | None = None
    handle: Any = None
    where: str = ""
    reused: bool = False  #: its outcome was in its folder before this run


class Interrupted(Exception):
    """Ctrl-C or SIGTERM: stop the running attempts and write the summary."""


class Scheduler:
    def __init__(
        self,
        jobs: list[Job],
        backend: Backend,
        out_root: Path,
        *,
        retries: int,
        timeout_s: float | None,
        extra_flags: tuple[str, ...] = (),
        extra_env: dict[str, str] | None = None,
        baseline_launcher: tuple[str, ...] = (sys.executable,),
        console: Console | None = None,
    ):
        self.states = {job.key: JobState(job) for job in jobs}
        self.backend = backend
        self.out_root = Path(out_root)
        self.retries = retries
        self.timeout_s = timeout_s
        self.extra_flags = extra_flags  # --track and its project, for baseline jobs
        self.extra_env = dict(extra_env or {})
        self.baseline_launcher = baseline_launcher  # python, or torchrun for data-parallel jobs
        self.console = console or Console()
        self.started = time.monotonic()

    # ----------------------------------------------------------------- the loop
    def run(self) -> dict[str, int]:
        """Run every job that has not finished; returns the count of jobs per final state."""
        self.out_root.mkdir(parents=True, exist_ok=True)
        with _exclusive_lock(self.out_root / LOCK_FILE):
            previous_handlers = {sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                self._mark_finished_jobs()
                self._write_status()
                with self._progress() as progress:
                    task = progress.add_task(self._counts_text(), total=len(self.states), completed=self._settled())
                    try:
                        while not self._all_settled():
                            self._submit_ready()
                            self._poll_running()
                            progress.update(task, completed=self._settled(), description=self._counts_text())
                            if not self._all_settled():
                                time.sleep(POLL_S)
                    except (Interrupted, KeyboardInterrupt):
                        self._interrupt()
            finally:
                for sig, handler in previous_handlers.items():
                    signal.signal(sig, handler)
                self.backend.close()
            self._write_status()
        self._print_summary()
        return dict(Counter(state.state for state in self.states.values()))

    def _mark_finished_jobs(self) -> None:
        changed = []
        for state in self.states.values():
            job = state.job
            if job_finished(job.out_dir, job.is_baseline):
                state.state, state.note, state.reused = "done", "finished in an earlier run", True
                recorded = read_harness_argv(job.out_dir)
                if recorded is not None and recorded != list(job.argv):
                    changed.append(job.key)
        if changed:
            self.console.print(
                f"[yellow]{len(changed)} finished jobs ran with other flags than the suite's now "
                f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}); their results are kept. "
                "Remove a job's folder to run it again.[/]"
            )

    def _submit_ready(self) -> None:
        ready: list[JobState] = []
        for state in self.states.values():
            if state.state != "pending":
                continue
            needs = [self.states[key] for key in state.job.needs]
            failed = [need.job.key for need in needs if need.state in ("failed", "skipped")]
            if failed:
                state.state, state.note = "skipped", f"needs {', '.join(failed)}, which did not finish"
                self._event(f"[yellow]skipped[/] {state.job.key}: {state.note}")
                self._write_status()
            elif all(need.state == "done" for need in needs):
                ready.append(state)
        ready = ready[: self.backend.capacity()]
        if not ready:
            return
        attempts = [self._attempt(state) for state in ready]
        for state, attempt, handle in zip(ready, attempts, self.backend.submit(attempts)):
            state.state, state.handle, state.started = "running", handle, time.monotonic()
            state.attempts += 1
            state.where = self.backend.describe(handle)
            resumed = " (resuming its checkpoint)" if "--resume" in attempt.argv else ""
            retry = f", attempt {state.attempts}" if state.attempts > 1 else ""
            self._event(f"started {state.job.key} on {state.where}{retry}{resumed}")
        self._write_status()

    def _attempt(self, state: JobState) -> Attempt:
        job = state.job
        write_harness_job(job.out_dir, job.record())
        argv = (sys.executable, *job.argv)
        if job.is_baseline:
            argv = (*self.baseline_launcher, *job.argv, *self.extra_flags)
            if has_checkpoint(job.out_dir):
                argv += ("--resume",)
        return Attempt(
            key=job.key,
            argv=argv,
            cwd=str(ROOT),
            out_dir=str(job.out_dir),
            env=dict(self.extra_env),
            number=state.attempts + 1,
            timeout_s=self.timeout_s,
            is_baseline=job.is_baseline,
        )

    def _poll_running(self) -> None:
        for state in self.states.values():
            if state.state != "running":
                continue
            returncode = self.backend.poll(state.handle)
            if returncode is None:
                continue
            state.seconds += time.monotonic() - state.started
            state.exit_codes.append(returncode)
            state.handle = None
            job = state.job
            if returncode == 0 and job_finished(job.out_dir, job.is_baseline):
                state.state, state.note = "done", ""
                self._event(f"[green]done[/] {job.key} ({state.seconds:.0f} s)")
            else:
                self._record_failure(state, returncode)
            self._write_status()

    def _record_failure(self, state: JobState, returncode: int) -> None:
        """Retry the job, or record it as failed, saying why on the console (its log's last error line)."""
        job = state.job
        reason = (
            "timed out"
            if returncode == 124
            else ("exited 0 without a valid result.json" if returncode == 0 else f"exit code {returncode}")
        )
        cause = failure_cause(job.out_dir)
        because = f": {cause}" if cause else ""
        if is_permanent(returncode, cause):
            state.state, state.note = "failed", f"{reason}, not retried (a retry cannot fix it){because}"
        elif state.attempts <= self.retries:
            state.state, state.note = "pending", f"attempt {state.attempts} {reason}{because}"
            self._event(f"[yellow]retrying[/] {job.key}: {escape(state.note)}; log {job.out_dir / LOG_FILE}")
            return
        else:
            state.state, state.note = "failed", f"{reason} after {state.attempts} attempts{because}"
        self._event(f"[red]failed[/] {job.key}: {escape(state.note)}; log {job.out_dir / LOG_FILE}")

    def _interrupt(self) -> None:
        running = [state for state in self.states.values() if state.state == "running"]
        self.console.print(f"[yellow]interrupted: stopping {len(running)} running jobs[/]")
        for state in running:
            if state.handle is not None:  # None: the signal came while its ended attempt was being recorded
                self.backend.cancel(state.handle)
            state.state, state.note, state.handle = (
                "interrupted",
                "stopped by Ctrl-C/SIGTERM; the next run starts it again",
                None,
            )
        for state in self.states.values():
            if state.state == "pending":
                state.state, state.note = "interrupted", "not started"

    # ----------------------------------------------------------------- reporting
    def _settled(self) -> int:
        return sum(state.state in ("done", "failed", "skipped") for state in self.states.values())

    def _all_settled(self) -> bool:
        return all(state.state not in ("pending", "running") for state in self.states.values())

    def _counts_text(self) -> str:
        counts = Counter(state.state for state in self.states.values())
        return (
            f"done {counts['done']} · running {counts['running']} · failed {counts['failed']} · "
            f"skipped {counts['skipped']} · pending {counts['pending']} · ETA {self._eta()}"
        )

    def _eta(self) -> str:
        """Remaining jobs x mean duration of the jobs run so far / jobs running at once."""
        durations = [state.seconds for state in self.states.values() if state.state == "done" and state.attempts]
        remaining = sum(state.state in ("pending", "running") for state in self.states.values())
        running = sum(state.state == "running" for state in self.states.values())
        if not durations or not remaining:
            return "-"
        seconds = remaining * sum(durations) / len(durations) / max(1, running)
        return str(datetime.timedelta(seconds=round(seconds)))

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )

    def _event(self, message: str) -> None:
        self.console.print(
            f"[{datetime.datetime.now():%H:%M:%S}] {message}", highlight=False, soft_wrap=True
        )  # one line each, for logs and grep

    def _write_status(self) -> None:
        status = {
            "updated": datetime.datetime.now().isoformat(timespec="seconds"),
            "backend": self.backend.name,
            "counts": dict(Counter(state.state for state in self.states.values())),
            "jobs": {
                key: {
                    "state": state.state,
                    "attempts": state.attempts,
                    "exit_codes": state.exit_codes,
                    "seconds": round(state.seconds, 1),
                    "note": state.note,
                    "where": state.where,
                    "needs": list(state.job.needs),
                    "out_dir": str(state.job.out_dir),
                    "log": str(state.job.out_dir / LOG_FILE),
                }
                for key, state in self.states.items()
            },
        }
        path = self.out_root / STATUS_FILE
        tmp = path.with_name(f".{STATUS_FILE}.tmp")
        tmp.write_text(json.dumps(status, indent=1))
        os.replace(tmp, path)

    def _print_summary(self) -> None:
        counts = Counter(state.state for state in self.states.values())
        wall = time.monotonic() - self.started
        reused = sum(state.reused for state in self.states.values())
        done = f"{counts['done']} done ({reused} reused from an earlier run)" if reused else f"{counts['done']} done"
        self.console.print(
            f"\n[bold]{len(self.states)} jobs[/]: {done}, {counts['failed']} failed, {counts['skipped']} skipped, "
            f"{counts['interrupted']} interrupted; {datetime.timedelta(seconds=round(wall))} wall time. "
            f"Status: {self.out_root / STATUS_FILE}"
        )
        for state in self.states.values():
            if state.state in ("failed", "skipped", "interrupted") and state.attempts:
                self.console.print(
                    f"  {state.state} {state.job.key}: {escape(state.note)}; log {state.job.out_dir / LOG_FILE}",
                    highlight=False,
                    soft_wrap=True,
                )
            elif state.state in ("failed", "skipped"):
                self.console.print(
                    f"  {state.state} {state.job.key}: {escape(state.note)}", highlight=False, soft_wrap=True
                )


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signal.Signals(signum).name)


class _exclusive_lock:
    """An advisory lock on the runs folder; the OS releases it when the holder dies, SIGKILL included."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.file = open(self.path, "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            raise ConfigurationError(
                f"another harness is running on {self.path.parent} (it holds {self.path}); wait for it or stop it"
            ) from None
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()
