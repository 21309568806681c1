"""The Ray backend: each attempt is a Ray task holding its CPUs and GPU share (a data-parallel
job of P processes: P times a process's CPUs and P GPUs, on one node, where torchrun starts them).

``--address`` joins an existing cluster (the working tree and the runs folder must be on a
file system every node sees); without it a local Ray instance starts with this machine's
CPUs and the ``--gpus`` given. Ray sets each task's ``CUDA_VISIBLE_DEVICES`` itself.
"""

from __future__ import annotations

import os
from dataclasses import replace

from benchmark.attempt import Attempt, run_attempt
from benchmark.suite import ROOT


class RayBackend:
    name = "ray"

    def __init__(
        self,
        *,
        address: str | None,
        threads_per_process: int,
        procs_per_job: int,
        num_gpus_per_job: float | None,
        jobs_per_gpu: int,
        local_gpus: list[str],
    ):
        import ray

        self.ray = ray
        python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        if address is None:
            if local_gpus:
                os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(local_gpus)
            ray.init(
                num_cpus=os.cpu_count(),
                num_gpus=len(local_gpus),
                include_dashboard=False,
                runtime_env={"env_vars": {"PYTHONPATH": python_path}},
                log_to_driver=False,
            )
        else:
            ray.init(address=address, runtime_env={"env_vars": {"PYTHONPATH": python_path}}, log_to_driver=False)
        if num_gpus_per_job is None:  # a GPU share per job (a GPU per process) wherever there are GPUs
            share = procs_per_job if procs_per_job > 1 else 1 / jobs_per_gpu
            num_gpus_per_job = share if ray.cluster_resources().get("GPU", 0) else 0.0
        self.task = ray.remote(run_attempt).options(
            num_cpus=threads_per_process * procs_per_job, num_gpus=num_gpus_per_job, max_retries=0
        )
        self.threads_per_process = threads_per_process

    def capacity(self) -> int:
        return 1 << 30  # Ray queues tasks until their resources are free

    def submit(self, attempts: list[Attempt]) -> list:
        # Ray sets each task's CUDA_VISIBLE_DEVICES to its GPU (empty without one); threads as local slots
        threads = {"OMP_NUM_THREADS": str(self.threads_per_process), "MKL_NUM_THREADS": str(self.threads_per_process)}
        return [self.task.remote(replace(attempt, env={**attempt.env, **threads})) for attempt in attempts]

    def poll(self, handle) -> int | None:
        ready, _ = self.ray.wait([handle], timeout=0)
        if not ready:
            return None
        try:
            return self.ray.get(handle)
        except self.ray.exceptions.RayError:  # the worker died or the task was cancelled
            return -1

    def describe(self, handle) -> str:
        return "ray"

    def cancel(self, handle) -> None:
        self.ray.cancel(handle, force=True)

    def close(self) -> None:
        self.ray.shutdown()
