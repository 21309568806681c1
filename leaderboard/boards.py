"""The boards (``boards.toml``): each board's tasks, their env arguments and evaluation size, and
each task's task and naturalness metrics (a board may score a task on other metrics than the default)."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BOARDS_FILE = Path(__file__).with_name("boards.toml")


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    suite: str  #: the benchmark suite whose runs the board scores
    source: str  #: the tasks' data source (``synthetic``, ``hub``)
    eval_episodes: int  #: every run's final evaluation plays this many episodes
    env_kwargs: dict[str, dict[str, Any]]  #: ``{env_id: the env's arguments}``, in the board's task order

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.env_kwargs)


@dataclass(frozen=True)
class TaskMetrics:
    task: tuple[str, ...]  #: what the task asks for (GRUE's task metrics)
    naturalness: tuple[str, ...]  #: how the text reads (GRUE's naturalness metrics)


@functools.cache
def boards() -> dict[str, Board]:
    data = tomllib.loads(BOARDS_FILE.read_text())
    return {
        name: Board(
            name, board["description"], board["suite"], board["source"], board["eval_episodes"], board["env_kwargs"]
        )
        for name, board in data["boards"].items()
    }


def suite_boards(suite: str) -> list[Board]:
    """The boards that score ``suite``'s runs."""
    return [board for board in boards().values() if board.suite == suite]


@functools.cache
def task_metrics(board: str | None = None) -> dict[str, TaskMetrics]:
    """``{env_id: its metrics}``: the tasks' default metrics, with ``board``'s own where it names some."""
    data = tomllib.loads(BOARDS_FILE.read_text())
    splits = dict(data["metrics"])
    if board is not None:
        splits |= data["boards"][board].get("metrics", {})
    return {env_id: TaskMetrics(tuple(split["task"]), tuple(split["naturalness"])) for env_id, split in splits.items()}
