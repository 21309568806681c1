"""Where local jobs run: slots on GPUs (``CUDA_VISIBLE_DEVICES``, K jobs per GPU) or CPU workers.

Each slot runs one job at a time. A job sees only its slot's GPU (a data-parallel job of P
processes: its P GPUs) and uses its slot's share of the CPU cores (``OMP_NUM_THREADS`` per
process, which torch reads at start, and ``MKL_NUM_THREADS``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from lm_gym.core.errors import ConfigurationError


@dataclass(frozen=True)
class Slot:
    name: str  #: "gpu<id>.<k>", "gpu<id>+<id>.<k>" (a data-parallel job's GPUs) or "cpu.<k>"
    gpu: str | None  #: the GPU ids the job sees (``CUDA_VISIBLE_DEVICES``, comma-separated), or None for a CPU job
    threads: int  #: threads per process

    def env(self) -> dict[str, str]:
        threads = str(self.threads)
        return {"CUDA_VISIBLE_DEVICES": self.gpu or "", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}


def parse_gpus(text: str | None) -> list[str]:
    """``--gpus``: ``"0,1,3"`` -> those ids; ``"none"`` -> CPU only; None or ``"auto"`` -> :func:`detect_gpus`."""
    if text is None or text == "auto":
        return detect_gpus()
    if text == "none":
        return []
    ids = [part.strip() for part in text.split(",")]
    if not all(ids) or len(set(ids)) != len(ids):
        raise ConfigurationError(
            f"--gpus must be distinct GPU ids separated by commas (e.g. 0,1), 'none' or 'auto', got {text!r}"
        )
    return ids


def detect_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when set, else those ``nvidia-smi -L`` lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [part.strip() for part in visible.split(",") if part.strip() and part.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(index) for index, line in enumerate(listing.splitlines()) if line.startswith("GPU ")]


def plan_slots(
    gpus: list[str],
    *,
    jobs_per_gpu: int = 1,
    workers: int | None = None,
    threads_per_job: int = 1,
    cpu_count: int | None = None,
    procs_per_job: int = 1,
) -> list[Slot]:
    """The local slots: ``jobs_per_gpu`` per GPU when there are GPUs (the cores shared among
    them), else ``workers`` CPU workers (default: as many as ``threads_per_job`` allows).

    A data-parallel job of ``procs_per_job`` processes takes that many GPUs (a slot per group of
    them, one job at a time) or that many times a CPU worker's threads."""
    cpu_count = cpu_count or os.cpu_count() or 1
    if jobs_per_gpu < 1:
        raise ConfigurationError(f"--jobs-per-gpu must be >= 1, got {jobs_per_gpu}")
    if workers is not None and workers < 1:
        raise ConfigurationError(f"--workers must be >= 1, got {workers}")
    if procs_per_job < 1:
        raise ConfigurationError(f"--procs-per-job must be >= 1, got {procs_per_job}")
    if gpus and procs_per_job > 1:
        if jobs_per_gpu > 1 or len(gpus) < procs_per_job:
            raise ConfigurationError(
                f"--procs-per-job {procs_per_job} takes {procs_per_job} whole GPUs per job (--jobs-per-gpu 1): "
                f"got {len(gpus)} GPUs and --jobs-per-gpu {jobs_per_gpu}"
            )
        groups = [gpus[i : i + procs_per_job] for i in range(0, len(gpus) - procs_per_job + 1, procs_per_job)]
        threads = max(1, cpu_count // (len(groups) * procs_per_job))
        return [Slot(f"gpu{'+'.join(group)}.0", ",".join(group), threads) for group in groups]
    if gpus:
        count = len(gpus) * jobs_per_gpu
        threads = max(1, cpu_count // count)
        return [Slot(f"gpu{gpu}.{k}", gpu, threads) for k in range(jobs_per_gpu) for gpu in gpus]
    if workers is None:
        workers = max(1, cpu_count // (threads_per_job * procs_per_job))
        threads = threads_per_job
    else:
        threads = max(1, cpu_count // (workers * procs_per_job))
    return [Slot(f"cpu.{k}", None, threads) for k in range(workers)]


def launcher(procs_per_job: int) -> tuple[str, ...]:
    """How a baseline job starts: this interpreter, or for a data-parallel job ``torchrun --standalone
    --nproc_per_node P`` (``python -m torch.distributed.run``, the same interpreter), one node."""
    if procs_per_job == 1:
        return (sys.executable,)
    return (sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs_per_job}")
