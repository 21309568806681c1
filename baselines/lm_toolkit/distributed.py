"""Data parallelism: one baseline run across processes, GPUs and nodes under ``torchrun``.

``torchrun --nproc_per_node N baselines/ppo.py ...`` starts N processes with ``RANK``,
``WORLD_SIZE`` and ``LOCAL_RANK`` in their environment; :func:`join` puts them in one process
group (NCCL on GPUs, each process its ``cuda:LOCAL_RANK``; gloo on CPU). Each process plays its
shard of the batch (:func:`shard`) with its own envs; whatever the algorithm computes over the
whole batch is reduced here:

* Gradients are averaged after every backward pass (:func:`average_gradients`, called by
  ``optimization.optimizer_step``) with one all-reduce of one flat buffer. Not
  ``DistributedDataParallel``: the baselines' losses reach their models through the toolkit's
  sampler and teacher forcing, several models at once (ILQL's heads and value trunk), not
  through one ``forward`` that DDP could wrap.
* A loss that is a mean over this process's tokens is multiplied by :func:`weight` of its token
  count, so that the averaged gradient is the gradient of the mean over every process's tokens:
  exactly what one process computes on the whole batch.
* Statistics are summed (:func:`all_sum`), averaged (:func:`mean`) or gathered (:func:`gather`).

:func:`communication_seconds` counts the time this process spent in these collectives (waiting
for the others included): the communication share of a run's iterations.

Rank 0 alone evaluates, logs and checkpoints (``runs.Run``). Without ``torchrun`` (``WORLD_SIZE``
unset or 1) every function here is what one process does alone, at no cost.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

_spent = {"seconds": 0.0}


def communication_seconds() -> float:
    """Seconds this process has spent in collectives so far (0 without ``torchrun``)."""
    return _spent["seconds"]


@contextlib.contextmanager
def _collective() -> Iterator[None]:
    start = time.perf_counter()
    yield
    _spent["seconds"] += time.perf_counter() - start


def world_size() -> int:
    """The number of processes of the run (1 without ``torchrun``)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank (0 without ``torchrun``)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_main() -> bool:
    """Whether this process evaluates, logs and writes the run's files (rank 0)."""
    return rank() == 0


def join(device: str | None) -> torch.device:
    """Join the process group ``torchrun`` describes (a no-op without it) and return this process's
    device: ``device`` (``--device``), else CUDA when available; under ``torchrun`` a CUDA device
    is this process's own GPU, ``cuda:LOCAL_RANK``."""
    chosen = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return chosen
    if sys.platform.startswith("linux"):  # torchrun starts workers in sessions of their own: die with it, no orphans
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if chosen.type == "cuda":
        if chosen.index is not None:
            raise ValueError(f"--device {device}: under torchrun each process takes its own GPU; pass --device cuda")
        chosen = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(chosen)
    dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    return chosen


def leave() -> None:
    """Leave the process group at the end of the run (a no-op without one)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def process_seed(seed: int) -> int:
    """The seed of this process's global random streams (dropout, data order): ``seed`` on rank 0,
    a different one derived from ``(seed, rank)`` on the others."""
    return seed if rank() == 0 else int(np.random.SeedSequence([seed, rank()]).generate_state(1)[0])


def shard(total: int, flag: str) -> tuple[int, int]:
    """This process's contiguous part of ``total`` items (envs, groups): ``(first, count)``.
    ``flag`` names the argument in the error when the processes cannot share ``total`` equally."""
    size = world_size()
    if total % size:
        raise ValueError(f"{flag} ({total}) must be divisible by the number of processes ({size})")
    count = total // size
    return rank() * count, count


def shard_indices(indices: np.ndarray) -> np.ndarray:
    """This process's part of a batch's example indices (every ``world_size``-th one). A batch smaller
    than the number of processes (the last of an epoch) is repeated so that every process has one."""
    size = world_size()
    if size == 1:
        return indices
    if len(indices) < size:
        indices = np.resize(indices, size)
    return indices[rank() :: size]


def _tensor(values) -> torch.Tensor:
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    return torch.as_tensor(values, dtype=torch.float64, device=device)


def all_sum(values):
    """Sum of a number (or a float tensor, or an array) over the processes; the same type back."""
    if world_size() == 1:
        return values
    summed = values.detach().clone() if isinstance(values, torch.Tensor) else _tensor(values)
    with _collective():
        dist.all_reduce(summed)
    if isinstance(values, torch.Tensor):
        return summed
    return float(summed) if np.ndim(values) == 0 else summed.cpu().numpy()


def mean(value: float) -> float:
    """Mean of a number over the processes."""
    return value if world_size() == 1 else all_sum(value) / world_size()


def weight(count: torch.Tensor | float) -> float:
    """The factor that turns a loss averaged over this process's ``count`` tokens (or examples) into
    this process's part of the mean over every process's: ``world_size * count / total count``. With
    gradients averaged over the processes, the update is the one of the whole batch's mean."""
    if world_size() == 1:
        return 1.0
    local = float(count)
    total = all_sum(local)
    return world_size() * local / total if total > 0 else 0.0


def masked_moments(values: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and (unbiased) standard deviation of ``values[mask]`` over every process's batch."""
    selected = values[mask]
    if world_size() == 1:
        return selected.mean(), selected.std()
    count, total, squares = all_sum([selected.numel(), float(selected.sum()), float((selected**2).sum())])
    average = total / count
    variance = max(squares - count * average**2, 0.0) / max(count - 1, 1)
    return values.new_tensor(average), values.new_tensor(variance**0.5)


def gather(value: Any) -> list[Any]:
    """Every process's ``value`` (picklable), in rank order."""
    if world_size() == 1:
        return [value]
    values: list[Any] = [None] * world_size()
    with _collective():
        dist.all_gather_object(values, value)
    return values


def agree(value: Any) -> Any:
    """Rank 0's ``value`` (picklable) on every process: decisions all of them must take together."""
    if world_size() == 1:
        return value
    box = [value]
    with _collective():
        dist.broadcast_object_list(box, src=0)
    return box[0]


def broadcast_modules(modules) -> None:
    """Copy rank 0's parameters and buffers of ``modules`` (``None`` entries skipped) to every process."""
    if world_size() == 1:
        return
    for module in modules:
        if module is not None:
            for tensor in [*module.parameters(), *module.buffers()]:
                dist.broadcast(tensor.data, src=0)


def average_gradients(parameters) -> None:
    """Average the gradients of ``parameters`` over the processes (a missing gradient counts as zeros)."""
    if world_size() == 1:
        return
    parameters = [p for p in parameters if p.requires_grad]
    for p in parameters:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.reshape(-1) for p in parameters])
    with _collective():
        dist.all_reduce(flat)
    flat /= world_size()
    offset = 0
    for p in parameters:
        p.grad.copy_(flat[offset : offset + p.numel()].view_as(p.grad))
        offset += p.numel()
