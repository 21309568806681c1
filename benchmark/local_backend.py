"""The local backend: attempts as child processes on this machine's slots (``placement``)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, replace

from benchmark.attempt import Attempt, finish_attempt, start_process, stop_process
from benchmark.placement import Slot


@dataclass
class LocalHandle:
    attempt: Attempt
    slot: Slot
    process: subprocess.Popen
    started: float


class LocalBackend:
    name = "local"

    def __init__(self, slots: list[Slot]):
        self.slots = list(slots)
        self.free = list(slots)

    def capacity(self) -> int:
        return len(self.free)

    def submit(self, attempts: list[Attempt]) -> list[LocalHandle]:
        handles = []
        for attempt in attempts:
            slot = self.free.pop(0)
            attempt = replace(attempt, env={**attempt.env, **slot.env()})
            handles.append(LocalHandle(attempt, slot, start_process(attempt), time.monotonic()))
        return handles

    def poll(self, handle: LocalHandle) -> int | None:
        returncode = handle.process.poll()
        timeout = handle.attempt.timeout_s
        if returncode is None and timeout is not None and time.monotonic() - handle.started > timeout:
            stop_process(handle.process)
            returncode = 124
        if returncode is not None:
            finish_attempt(handle.attempt, returncode)
            self.free.append(handle.slot)
        return returncode

    def describe(self, handle: LocalHandle) -> str:
        return handle.slot.name

    def cancel(self, handle: LocalHandle) -> None:
        stop_process(handle.process)
        self.free.append(handle.slot)

    def close(self) -> None:
        pass
