"""The boards: each board's tasks, their env arguments and evaluation size, and each task's task and
naturalness metrics (a board may score a task on other metrics than the default).

The built-in boards live in ``boards.toml`` (their reference points in ``reference_points.json``).
A board over your own tasks lives in a TOML file of yours, most simply the suite file that runs
them: :func:`load_boards_file` reads its ``[boards.<name>]`` tables (the keys of ``boards.toml``'s,
plus each task's ``metrics`` and optional ``reference_points``) and adds its boards to
:func:`boards` for this process (``python -m leaderboard ... --boards FILE``). Env ids may be
written as the suite writes them, ``"my_task:my/Task-v0"``: a board knows a task by its registered
id, ``my/Task-v0``, as ``result.json`` records it.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_gym.core.errors import LMGymError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BOARDS_FILE = Path(__file__).with_name("boards.toml")
#: a board's name: it names a folder (``compile`` writes several boards to ``OUT/<board>/``)
BOARD_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
#: a registered env id, ``[namespace/]Name[-vN]`` (Gymnasium's form, ASCII)
USER_ENV_ID_PATTERN = "^(?:[A-Za-z0-9_.-]{1,64}/)?[A-Za-z0-9_.-]{1,64}$"
#: a metric a board scores: a key of ``result.json``'s ``final_eval``
SCORED_METRIC_PATTERN = "^(mean|corpus)_[A-Za-z0-9_]{1,64}$"
_BOARD_KEYS = {"description", "suite", "source", "eval_episodes", "env_kwargs", "metrics", "reference_points"}


class BoardsError(LMGymError, ValueError):
    """A boards file that does not define boards; the message names the file and the key at fault."""


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    suite: str  #: the benchmark suite whose runs the board scores
    source: str  #: the tasks' data source (``synthetic``, ``hub``; a board of your own: as its file says)
    eval_episodes: int  #: every run's final evaluation plays this many episodes
    env_kwargs: dict[str, dict[str, Any]]  #: ``{env_id: the env's arguments}``, in the board's task order
    defined_in: Path | None = None  #: the file of a board of your own (None: a built-in board, ``boards.toml``)
    #: whether the runs' samples are episodes of the board's envs, which ``validate`` replays (``replay_samples``
    #: in ``boards.toml``; False for the multiagent board, whose games are the PettingZoo versions' with two policies)
    replay_samples: bool = True

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.env_kwargs)


@dataclass(frozen=True)
class TaskMetrics:
    task: tuple[str, ...]  #: what the task asks for (GRUE's task metrics)
    naturalness: tuple[str, ...]  #: how the text reads (GRUE's naturalness metrics)


@dataclass(frozen=True)
class _UserBoard:
    board: Board
    metrics: dict[str, TaskMetrics]
    reference_points: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)


#: the boards of the files :func:`load_boards_file` read, by name
_USER_BOARDS: dict[str, _UserBoard] = {}


@functools.cache
def _builtin_data() -> dict[str, Any]:
    return tomllib.loads(BOARDS_FILE.read_text())


@functools.cache
def _builtin_boards() -> dict[str, Board]:
    return {
        name: Board(
            name,
            board["description"],
            board["suite"],
            board["source"],
            board["eval_episodes"],
            board["env_kwargs"],
            replay_samples=board.get("replay_samples", True),
        )
        for name, board in _builtin_data()["boards"].items()
    }


def boards() -> dict[str, Board]:
    """Every board by name: the built-in ones, then those of the files :func:`load_boards_file` read."""
    if not _USER_BOARDS:
        return _builtin_boards()
    return {**_builtin_boards(), **{name: user.board for name, user in _USER_BOARDS.items()}}


def suite_boards(suite: str) -> list[Board]:
    """The boards that score ``suite``'s runs."""
    return [board for board in boards().values() if board.suite == suite]


def task_metrics(board: str | None = None) -> dict[str, TaskMetrics]:
    """``{env_id: its metrics}``: the tasks' default metrics, with ``board``'s own where it names some
    (a board of your own: its tasks' metrics)."""
    if board in _USER_BOARDS:
        return dict(_USER_BOARDS[board].metrics)
    return _builtin_task_metrics(board)


@functools.cache
def _builtin_task_metrics(board: str | None) -> dict[str, TaskMetrics]:
    data = _builtin_data()
    splits = dict(data["metrics"])
    if board is not None:
        splits |= data["boards"][board].get("metrics", {})
    return {env_id: TaskMetrics(tuple(split["task"]), tuple(split["naturalness"])) for env_id, split in splits.items()}


def is_user_board(board: str) -> bool:
    """Whether ``board`` is a board of your own (read by :func:`load_boards_file`), not one of ``boards.toml``."""
    return board in _USER_BOARDS


def user_reference_points(board: str) -> dict[str, dict[str, dict[str, float]]]:
    """A board of your own's reference points, ``{env_id: {metric: {"low", "high"}}}`` (only those its file gives)."""
    return _USER_BOARDS[board].reference_points


def registered_id(env_id: str) -> str:
    """``"my_task:my/Task-v0"`` -> ``"my/Task-v0"``: the id the task is registered under (Gymnasium's
    ``module:env_id`` form imports ``module`` first), as ``result.json`` records it."""
    return env_id.rpartition(":")[2]


def where(board: str, *keys: str) -> str:
    """``[boards.mine.metrics."my/Task-v0"]``: a key of a boards file, as TOML writes it."""
    parts = ["boards", board, *keys]
    return "[" + ".".join(part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else f'"{part}"' for part in parts) + "]"


def load_boards_files(paths: list[str | Path] | None) -> list[Board]:
    """:func:`load_boards_file` of each of ``paths`` (None: none); the boards they define."""
    return [board for path in paths or () for board in load_boards_file(path)]


def load_boards_file(path: str | Path) -> list[Board]:
    """Read the ``[boards.<name>]`` tables of the TOML file ``path`` and add its boards to :func:`boards`
    (for this process; :func:`forget_user_boards` removes them); returns them.

    The file may be the suite file that runs the board's tasks: its other tables are not read, except
    that a board whose ``suite`` is the file's suite must give its tasks the env arguments the suite's
    ``[tasks.<label>]`` do. Raises :class:`BoardsError`, naming the file and the key, on a file that
    does not define boards.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise BoardsError(f"--boards {path}: cannot read it: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise BoardsError(f"{path}: not valid TOML: {error}") from None
    tables = data.get("boards")
    if not isinstance(tables, dict) or not tables:
        raise BoardsError(
            f"{path}: no [boards.<name>] table; a board over your own tasks needs one "
            '(docs/leaderboard.md, "A board over your own tasks")'
        )
    parsed = [_parse_board(path, name, table, data) for name, table in tables.items()]
    for user in parsed:
        name = user.board.name
        if name in _builtin_boards():
            raise BoardsError(
                f"{path}: [boards.{name}]: {name!r} is a built-in board (boards.toml); name yours otherwise"
            )
        known = _USER_BOARDS.get(name)
        if known is not None and known != user:
            raise BoardsError(
                f"{path}: [boards.{name}]: board {name!r} is defined differently in {known.board.defined_in}"
            )
    for user in parsed:
        _USER_BOARDS[user.board.name] = user
    return [user.board for user in parsed]


def add_boards_argument(parser: argparse.ArgumentParser) -> None:
    """``--boards FILE``: boards over your own tasks (every command that needs a board's definition takes it)."""
    parser.add_argument(
        "--boards",
        action="append",
        metavar="FILE",
        help="a TOML file with [boards.<name>] tables, e.g. your suite file: boards over your own tasks "
        '(docs/leaderboard.md, "A board over your own tasks"); repeatable',
    )


def forget_user_boards() -> None:
    """Remove the boards :func:`load_boards_file` added: :func:`boards` is ``boards.toml``'s again."""
    _USER_BOARDS.clear()


def _parse_board(path: Path, name: str, table: Any, data: dict[str, Any]) -> _UserBoard:
    written: dict[tuple[str, str], str] = {}  # (table, env id) -> the key as the file writes it

    def fail(message: str, *keys: str) -> BoardsError:
        if len(keys) > 1:  # name an env id's key as written ("my_task:my/Task-v0")
            keys = (keys[0], written.get(keys[:2], keys[1]), *keys[2:])
        return BoardsError(f"{path}: {where(name, *keys)} {message}")

    if not re.fullmatch(BOARD_NAME_PATTERN, name):
        raise fail("the board's name must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
    if not isinstance(table, dict):
        raise fail(f"must be a table, got {table!r}")
    unknown = sorted(set(table) - _BOARD_KEYS)
    if unknown:
        raise fail(f"unknown keys {unknown}; allowed: {sorted(_BOARD_KEYS)}")
    texts = {}
    for key, default in (("description", ""), ("suite", path.stem), ("source", "own tasks")):
        texts[key] = table.get(key, default)
        if not isinstance(texts[key], str):
            raise fail(f"must be a string, got {texts[key]!r}", key)
    episodes = table.get("eval_episodes")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise fail(
            f"must be the number of episodes of every run's final evaluation (--eval-episodes), got {episodes!r}",
            "eval_episodes",
        )
    env_kwargs = _tasks_table(table.get("env_kwargs"), "env_kwargs", fail, written, required=True)
    for env_id, kwargs in env_kwargs.items():
        if not isinstance(kwargs, dict):
            raise fail(f"must be a table of the env's arguments ({{}} for none), got {kwargs!r}", "env_kwargs", env_id)
    metrics = _metrics(env_kwargs, _tasks_table(table.get("metrics", {}), "metrics", fail, written), fail)
    points = _reference_points(
        metrics, _tasks_table(table.get("reference_points", {}), "reference_points", fail, written), fail
    )
    board = Board(name, texts["description"], texts["suite"], texts["source"], episodes, env_kwargs, path.resolve())
    if board.suite == path.stem:
        _check_suite_tasks(board, data.get("tasks"), fail)
    return _UserBoard(board, metrics, points)


def _tasks_table(
    value: Any, key: str, fail, written: dict[tuple[str, str], str], *, required: bool = False
) -> dict[str, Any]:
    """A table keyed by env id, its keys as registered ids (``module:`` dropped), in the file's order."""
    if value is None and required:
        raise fail('is missing: the board\'s tasks, { "<env id>" = { <env arguments> }, ... }', key)
    if not isinstance(value, dict) or (required and not value):
        raise fail(f'must be a non-empty table {{ "<env id>" = ... }}, got {value!r}', key)
    tasks: dict[str, Any] = {}
    for written_id, inner in value.items():
        env_id = registered_id(written_id)
        if not re.fullmatch(USER_ENV_ID_PATTERN, env_id):
            raise fail("is not an env id ([module:][namespace/]Name-vN)", key, written_id)
        if env_id in tasks:
            raise fail(f"names {env_id} twice (with and without its module)", key, written_id)
        tasks[env_id] = inner
        written[key, env_id] = written_id
    return tasks


def _metrics(env_kwargs: dict[str, Any], tables: dict[str, Any], fail) -> dict[str, TaskMetrics]:
    others = [env_id for env_id in tables if env_id not in env_kwargs]
    if others:
        raise fail(f"is not a task of the board (its tasks: {', '.join(env_kwargs)})", "metrics", others[0])
    defaults = _builtin_task_metrics(None)
    metrics = {}
    for env_id in env_kwargs:
        if env_id not in tables and env_id in defaults:  # a built-in task: its default metrics
            metrics[env_id] = defaults[env_id]
            continue
        table = tables.get(env_id)
        if not isinstance(table, dict):
            raise fail(
                'is missing: the metrics the board scores the task on, { task = ["mean_<name>", ...], '
                "naturalness = [...] } (keys of result.json's final_eval)",
                "metrics",
                env_id,
            )
        unknown = sorted(set(table) - {"task", "naturalness"})
        if unknown:
            raise fail(f"unknown keys {unknown}; allowed: ['naturalness', 'task']", "metrics", env_id)
        split = {}
        for kind in ("task", "naturalness"):
            names = table.get(kind, [] if kind == "naturalness" else None)
            if not isinstance(names, list) or (kind == "task" and not names):
                raise fail(
                    f"{kind} must be a {'non-empty ' if kind == 'task' else ''}list of metric names", "metrics", env_id
                )
            for name in names:
                if not isinstance(name, str) or not re.fullmatch(SCORED_METRIC_PATTERN, name):
                    hint = f': did you mean "mean_{name}"?' if isinstance(name, str) and name.isidentifier() else ""
                    raise fail(
                        f"{kind}: {name!r} is not a metric of result.json's final_eval (mean_<name>: the episodes' "
                        f'mean of info["metrics"][name]; corpus_<name>: a corpus metric){hint}',
                        "metrics",
                        env_id,
                    )
            split[kind] = tuple(names)
        repeated = sorted({name for name in split["task"] if name in split["naturalness"]})
        if repeated or len(set(split["task"] + split["naturalness"])) != len(split["task"] + split["naturalness"]):
            raise fail(f"names a metric twice ({', '.join(repeated) or 'within one list'})", "metrics", env_id)
        metrics[env_id] = TaskMetrics(split["task"], split["naturalness"])
    return metrics


def _reference_points(metrics: dict[str, TaskMetrics], tables: dict[str, Any], fail) -> dict[str, dict[str, Any]]:
    points: dict[str, dict[str, Any]] = {}
    for env_id, table in tables.items():
        if env_id not in metrics:
            raise fail(f"is not a task of the board (its tasks: {', '.join(metrics)})", "reference_points", env_id)
        if not isinstance(table, dict):
            raise fail(
                f"must be a table {{ <metric> = {{ low = ..., high = ... }} }}, got {table!r}",
                "reference_points",
                env_id,
            )
        scored = (*metrics[env_id].task, *metrics[env_id].naturalness)
        for metric, point in table.items():
            keys = ("reference_points", env_id, metric)
            if metric not in scored:
                raise fail(f"is not a metric the board scores {env_id} on ({', '.join(scored)})", *keys)
            if not isinstance(point, dict) or set(point) != {"low", "high"}:
                raise fail(f"must be {{ low = <number>, high = <number> }}, got {point!r}", *keys)
            for bound in ("low", "high"):
                value = point[bound]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise fail(f"{bound} must be a finite number, got {value!r}", *keys)
            if point["low"] == point["high"]:
                raise fail(
                    f"low = high = {point['low']!r}: equal reference points define no scale "
                    "(low: what 0 means, e.g. random text; high: what 1 means, e.g. the references)",
                    *keys,
                )
            points.setdefault(env_id, {})[metric] = {"low": float(point["low"]), "high": float(point["high"])}
    return points


def _check_suite_tasks(board: Board, tasks: Any, fail) -> None:
    """A board of the suite in the same file scores the suite's tasks as the suite runs them."""
    if not isinstance(tasks, dict):
        return
    runs: dict[str, list[tuple[str, Any]]] = {}  # env id -> the suite's (task label, env_kwargs)
    for label, task in tasks.items():
        if isinstance(task, dict) and isinstance(task.get("env_id"), str):  # else the suite's checks say what is wrong
            runs.setdefault(registered_id(task["env_id"]), []).append((label, task.get("env_kwargs", {})))
    for env_id, kwargs in board.env_kwargs.items():
        if env_id in runs and all(suite_kwargs != kwargs for _, suite_kwargs in runs[env_id]):
            label, suite_kwargs = runs[env_id][0]
            raise fail(
                f"= {kwargs!r}, but the suite's [tasks.{label}] runs {env_id} with env_kwargs = {suite_kwargs!r}: "
                "a board scores its tasks as its suite runs them",
                "env_kwargs",
                env_id,
            )
