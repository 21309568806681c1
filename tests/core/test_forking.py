"""torch still works in a process forked after the parent ran a parallel torch op (libgomp's pool does not survive
fork)."""

import os
import signal
import time

import pytest
import torch

import lm_gym  # noqa: F401  (installs the fork handler)

TIMEOUT_S = 30


@pytest.mark.skipif(
    not hasattr(os, "fork") or not torch.backends.openmp.is_available(), reason="no fork, or torch without OpenMP"
)
def test_a_forked_child_runs_parallel_torch_ops():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the pool has at least two threads, as on any multi-core machine
    try:
        torch.zeros(1_000_000).fill_(1.0)  # large enough to run on the OpenMP pool
        pid = os.fork()
        if pid == 0:  # the child: exit status 0 only when the op finishes with one thread
            try:
                ok = torch.get_num_threads() == 1 and torch.zeros(1_000_000).fill_(1.0).sum().item() == 1_000_000
            finally:
                os._exit(0 if ok else 1)
        deadline = time.monotonic() + TIMEOUT_S
        while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if status[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the forked child hung on a parallel torch op for {TIMEOUT_S} s")
        assert os.waitstatus_to_exitcode(status[1]) == 0
    finally:
        torch.set_num_threads(threads)
