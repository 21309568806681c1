"""The Slurm backend, through ``submitit``: the attempts ready at one time go in as one job
array; each array task requests ``cpus_per_task`` CPUs and ``gpus_per_node`` GPUs on one node
(a data-parallel job: torchrun there starts its processes, a share of the CPUs each).

A task that Slurm preempts or that reaches its time limit is requeued by submitit
(:class:`SubmititAttempt` is ``Checkpointable``) and continues from the job's checkpoint
(``--resume``). ``cluster="local"`` runs the same code with submitit's local executor.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import submitit

from benchmark.attempt import Attempt, run_attempt
from benchmark.suite import ROOT


class SubmititAttempt(submitit.helpers.Checkpointable):
    """What a Slurm task runs: one attempt, requeued with ``--resume`` on preemption or timeout."""

    def __call__(self, attempt: Attempt) -> int:
        return run_attempt(attempt)

    def checkpoint(self, attempt: Attempt) -> submitit.helpers.DelayedSubmission:
        return submitit.helpers.DelayedSubmission(self, attempt.resumed())


def slurm_parameters(
    *,
    suite: str,
    cpus_per_task: int,
    gpus_per_task: int,
    timeout_minutes: float | None,
    partition: str | None,
    array_parallelism: int,
    extra: dict[str, str],
) -> dict[str, Any]:
    """submitit's ``update_parameters`` arguments for the suite's tasks."""
    parameters: dict[str, Any] = {
        "name": f"lm-gym-{suite}",
        "nodes": 1,
        "tasks_per_node": 1,
        "cpus_per_task": cpus_per_task,
        "timeout_min": int(timeout_minutes or 24 * 60),
        "slurm_array_parallelism": array_parallelism,
        "slurm_signal_delay_s": 120,  # time to reach the requeue before the kill
    }
    if gpus_per_task:
        parameters["gpus_per_node"] = gpus_per_task
    if partition:
        parameters["slurm_partition"] = partition
    if extra:
        parameters["slurm_additional_parameters"] = dict(extra)
    return parameters


class SlurmBackend:
    name = "slurm"

    def __init__(self, *, folder: Path, cluster: str | None, parameters: dict[str, Any], threads_per_process: int = 0):
        # the node unpickles SubmititAttempt from this package: the checkout must be importable there
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        self.executor = submitit.AutoExecutor(folder=folder / "%j", cluster=cluster)
        self.executor.update_parameters(**parameters)
        # torchrun gives each process 1 thread unless told: a process's share of the task's CPUs
        self.env = {"OMP_NUM_THREADS": str(threads_per_process)} if threads_per_process else {}

    def capacity(self) -> int:
        return 1 << 30  # Slurm queues the array tasks

    def submit(self, attempts: list[Attempt]) -> list:
        with self.executor.batch():
            jobs = [
                self.executor.submit(SubmititAttempt(), replace(attempt, env={**attempt.env, **self.env}))
                for attempt in attempts
            ]
        return jobs

    def poll(self, job) -> int | None:
        if not job.done():
            return None
        try:
            return int(job.result())
        except (submitit.core.utils.UncompletedJobError, submitit.core.utils.FailedJobError):
            return -1

    def describe(self, job) -> str:
        return f"slurm {job.job_id}"

    def cancel(self, job) -> None:
        job.cancel(check=False)

    def close(self) -> None:
        pass
