"""The boards (``boards.toml``): each board's tasks, and each task's task and naturalness metrics."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BOARDS_FILE = Path(__file__).with_name("boards.toml")


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    tasks: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class TaskMetrics:
    task: tuple[str, ...]  #: what the task asks for (GRUE's task metrics)
    naturalness: tuple[str, ...]  #: how the text reads (GRUE's naturalness metrics)


@functools.cache
def boards() -> dict[str, Board]:
    data = tomllib.loads(BOARDS_FILE.read_text())
    return {name: Board(name, board["description"], tuple(board["tasks"]), board["source"]) for name, board in data["boards"].items()}


@functools.cache
def task_metrics() -> dict[str, TaskMetrics]:
    data = tomllib.loads(BOARDS_FILE.read_text())
    return {env_id: TaskMetrics(tuple(split["task"]), tuple(split["naturalness"])) for env_id, split in data["metrics"].items()}
