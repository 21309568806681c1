"""Where a speed contender's time goes: a ``torch.profiler`` summary of one training iteration.

    # a script run as `python SCRIPT ARGS`, profiled from its 4th to its 8th optimizer step
    PYTHONPATH=<the script's folder> python benchmark/perf/profiling.py OUT.json 4 4 SCRIPT ARGS...

The window is counted in optimizer steps (a hook on every ``torch.optim.Optimizer``), which is how an
iteration ends in lm-gym's baselines and in TRL's trainers alike (the standard workload makes 4 per
iteration), so neither needs a hook of its own. :func:`summary` is what the GPU check's results file
keeps per contender: kernels launched on the device, the host's waits on it (synchronize calls and
``aten::item`` / ``aten::_local_scalar_dense``, a tensor's value read back), time on the device
against the window's wall time, and the ops that took the most of it. On the CPU the device is the
CPU: device time is the ops' own CPU time, and an ``aten::_local_scalar_dense`` is what would be a
sync on a GPU.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.optim.optimizer import register_optimizer_step_post_hook

#: The CUDA runtime's calls that make the host wait for the device.
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
#: Tensor values read back by the host (each a sync on a GPU).
READ_BACKS = ("aten::item", "aten::_local_scalar_dense")
#: The CUDA runtime's and driver's kernel launches (a CUDA graph's replay is one ``cudaGraphLaunch``).
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")
TOP_OPS = 12  #: the ops listed by their time


def summary(profile: torch.profiler.profile, wall_seconds: float, iterations: int = 1) -> dict:
    """The profiled window's figures, per iteration where they are counts (``iterations`` in the window)."""
    events = profile.events()
    names = Counter(event.name for event in events)
    kernels = [event for event in events if event.device_type == DeviceType.CUDA]
    on_gpu = bool(kernels)
    if on_gpu:
        device_us = sum(event.time_range.elapsed_us() for event in kernels)
        by_name = Counter()
        for event in kernels:
            by_name[event.name] += event.time_range.elapsed_us()
    else:  # the CPU is the device: the ops' own time, nested ops counted once
        ops = [event for event in events if event.name.startswith("aten::")]
        device_us = sum(event.self_cpu_time_total for event in ops)
        by_name = Counter()
        for event in ops:
            by_name[event.name] += event.self_cpu_time_total
    syncs = {name: names[name] for name in (*SYNC_CALLS, *READ_BACKS)}
    host_waits = sum(names[name] for name in SYNC_CALLS) if on_gpu else names["aten::_local_scalar_dense"]
    return {
        "device": "cuda" if on_gpu else "cpu",
        "iterations": iterations,
        "wall_s": round(wall_seconds, 4),
        "device_s": round(device_us / 1e6, 4),
        "device_busy": round(device_us / 1e6 / wall_seconds, 3) if wall_seconds > 0 else None,
        "kernels_per_iteration": len(kernels) / iterations if on_gpu else None,
        "launches_per_iteration": sum(names[name] for name in LAUNCH_CALLS) / iterations if on_gpu else None,
        "cuda_graph_launches_per_iteration": names["cudaGraphLaunch"] / iterations if on_gpu else None,
        "aten_ops_per_iteration": sum(n for name, n in names.items() if name.startswith("aten::")) / iterations,
        "host_syncs_per_iteration": host_waits / iterations,
        "sync_counts": syncs,
        "top_device_time_ms": {name: round(us / 1e3, 3) for name, us in by_name.most_common(TOP_OPS)},
    }


def _synchronize() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


class Window:
    """Profiles a process from the end of its ``start_after``-th optimizer step to the end of its
    ``start_after + steps``-th (one iteration when ``steps`` is an iteration's), then writes
    :func:`summary` to ``out`` as JSON; or (:meth:`__enter__`) a block of code, one iteration."""

    def __init__(self, out: str | Path, start_after: int = 0, steps: int = 0):
        self.out, self.start_after, self.steps = Path(out), start_after, steps
        self.step, self.profile, self.started, self.handle = 0, None, 0.0, None

    def start(self) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        _synchronize()
        self.profile = torch.profiler.profile(activities=activities)
        self.profile.start()
        self.started = time.perf_counter()

    def stop(self) -> dict:
        _synchronize()
        wall = time.perf_counter() - self.started
        self.profile.stop()
        result = summary(self.profile, wall)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(result, indent=1) + "\n")
        self.profile = None
        return result

    def __enter__(self) -> Window:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def on_optimizer_steps(self) -> Window:
        """Count every optimizer's steps from now on; profile the window."""

        def after_step(optimizer, args, kwargs) -> None:
            self.step += 1
            if self.step == self.start_after:
                self.start()
            elif self.step == self.start_after + self.steps and self.profile is not None:
                self.stop()
                self.handle.remove()

        self.handle = register_optimizer_step_post_hook(after_step)
        if self.start_after == 0:
            self.start()
        return self


def main(argv: list[str]) -> None:
    if len(argv) < 4:
        raise SystemExit(__doc__.split("\n\n")[1])
    out, start_after, steps, script, *args = argv
    Window(out, int(start_after), int(steps)).on_optimizer_steps()
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
