"""The checks of a leaderboard entry: :func:`validate_entry` refuses what cannot be true and
:func:`entry_flags` names what is doubtful.

:func:`validate_entry` checks an entry against the schema (``leaderboard.entry_schema``) and then what a
schema cannot say: the entry's tasks are exactly its board's, seeds are distinct within a task and the same
across tasks (the stratified bootstrap needs as many runs of every task), every run's ``final_eval`` holds
the metrics ``boards.toml`` scores its task on, over the board's ``eval_episodes`` episodes, the numbers lie
in the ranges their task or metric declares, the runs are consistent, the samples replay to what they state,
and the recipe's jobs are those its suite runs (``leaderboard.recipe``); an evaluation entry's command and
K-sample statistics are those of its runs (``leaderboard.evaluations``). A refusal is an
:class:`~leaderboard.entry_schema.EntryError` whose message names each field, e.g.
``tasks["lm_gym/IMDB-v0"].runs[2].final_eval.mean_return: nan is not a finite number``. Untrusted text in
messages is quoted and cut short (``leaderboard.messages``), so printing one is safe on a terminal.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Iterator
from typing import Any

from leaderboard.boards import Board, boards, task_metrics
from leaderboard.entry_schema import (
    MAX_ENTRY_BYTES,
    MAX_SAMPLES,
    EntryError,
    canonical_json,
    entry_validator,
    schema_problem,
)
from leaderboard.evaluations import evaluation_problems
from leaderboard.messages import field_path, shown
from leaderboard.recipe import recipe_problems

_MAX_SHOWN_PROBLEMS = 5


def validate_entry(entry: Any, *, rescore: bool = True) -> list[str]:
    """Raise :class:`EntryError` naming every refused field unless ``entry`` is a valid entry; return its flags.

    Refused: what the schema does not allow, numbers outside the ranges their task or metric declares
    (``lm_gym.results.evaluation_ranges``), what does not fit the board, inconsistent runs (curve steps that do
    not increase, a ``mean_return`` that the stated samples make impossible) and, with ``rescore`` (the
    default), samples that replayed on the board's episodes do not give what the entry states
    (:mod:`leaderboard.replay`), and a recipe whose jobs are not those its suite runs for the entry's runs
    (:func:`leaderboard.recipe.recipe_problems`). Flagged, not refused (the returned lines, each naming its field):
    a ``mean_return`` the samples make implausible, runs of distinct seeds with identical evaluations, samples not
    re-scored (and why). ``rescore=False`` (``compile`` reading accepted entries, ``submit``) skips the replay and
    the recipe's check, which ``validate`` did."""
    problems = [
        f"{field_path(path)}: {shown(value)} is not a finite number" for path, value in _non_finite_numbers(entry)
    ]
    schema_errors = itertools.islice(entry_validator().iter_errors(entry), _MAX_SHOWN_PROBLEMS + 1)
    problems += [schema_problem(error) for error in schema_errors if not _is_non_finite(error.instance)]
    if not problems:  # the checks below rely on the shape the schema guarantees
        problems = _board_problems(entry)
    if not problems and len(canonical_json(entry).encode()) > MAX_ENTRY_BYTES:
        problems = [f"entry: its canonical JSON is over {MAX_ENTRY_BYTES} bytes"]
    flags: list[str] = []
    if not problems:
        flags = entry_flags(entry)
    if not problems and rescore:
        problems = recipe_problems(entry)
    if not problems and rescore:
        problems, notes = _rescore_problems(entry)
        flags += notes
    if problems:
        more = "; ..." if len(problems) > _MAX_SHOWN_PROBLEMS else ""
        raise EntryError("; ".join(problems[:_MAX_SHOWN_PROBLEMS]) + more)
    return flags


def entry_flags(entry: dict[str, Any]) -> list[str]:
    """What makes a valid entry doubtful without making it impossible, one line per finding naming the field:
    a final ``mean_return`` farther from its samples' mean than :func:`leaderboard.replay.sample_mean_bound`
    (4 standard errors of ``std_return``), and runs of distinct seeds whose final evaluations are identical."""
    from leaderboard.replay import sample_mean_bound

    flags = []
    for env_id, task in entry["tasks"].items():
        seen: dict[str, int] = {}
        for index, run in enumerate(task["runs"]):
            final, samples = run["final_eval"], run["samples"]
            if samples:
                mean = math.fsum(sample["return"] for sample in samples) / len(samples)
                bound = sample_mean_bound(len(samples), final["std_return"])
                if abs(mean - final["mean_return"]) > bound:
                    flags.append(
                        f"{field_path(('tasks', env_id, 'runs', index, 'final_eval', 'mean_return'))}: "
                        f"{final['mean_return']!r} is {abs(mean - final['mean_return']):.3g} from the mean of its "
                        f"{len(samples)} samples' returns, {mean:.6g}: more than 4 standard errors ({bound:.3g})"
                    )
            key = canonical_json(final)
            if key in seen:
                flags.append(
                    f"{field_path(('tasks', env_id, 'runs', index, 'final_eval'))}: identical to runs[{seen[key]}]'s "
                    f"(seeds {task['runs'][seen[key]]['seed']} and {run['seed']}): distinct seeds rarely evaluate alike"
                )
            seen.setdefault(key, index)
    return flags


def _rescore_problems(entry: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Every run holds its evaluation's first samples, which replay to what they state (:mod:`leaderboard.replay`)."""
    from leaderboard.replay import NotReplayable, replayable, rescore_samples

    board = boards()[entry["board"]]
    if not board.replay_samples:
        return [], [f"samples not re-scored: board {board.name}'s games are not episodes of its single-agent envs"]
    evaluation = entry.get("evaluation")
    if evaluation is not None and evaluation["sampling"]["samples"] > 1:
        return [], [
            f"samples not re-scored: the evaluation played {evaluation['sampling']['samples']} samples of each "
            "episode, and an entry's samples are not the board's first episodes"
        ]
    problems = []
    wanted = min(MAX_SAMPLES, board.eval_episodes)
    for env_id, task in entry["tasks"].items():
        try:
            replayable(env_id, board.env_kwargs[env_id], wanted)
        except NotReplayable:
            continue  # rescore_samples notes why
        problems += [
            f"{field_path(('tasks', env_id, 'runs', index, 'samples'))}: has {len(run['samples'])} samples; "
            f"an entry holds the first {wanted} episodes of each final evaluation, to re-score them"
            for index, run in enumerate(task["runs"])
            if len(run["samples"]) != wanted
        ]
    if problems:
        return problems, []
    problems, notes = rescore_samples(entry, board)
    return [f"{field_path(path)}: {text}" for path, text in problems], [
        f"{field_path(path)}: {text}" for path, text in notes
    ]


def _non_finite_numbers(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], float]]:
    if _is_non_finite(value):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _non_finite_numbers(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _non_finite_numbers(inner, (*path, index))


def _is_non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _board_problems(entry: dict[str, Any]) -> list[str]:
    """What the schema cannot check: the board's tasks, the seeds, the metrics the board scores, the evaluation size."""
    board = boards()[entry["board"]]
    tasks = entry["tasks"]
    problems = [f"tasks: lacks {env_id}, a task of board {board.name}" for env_id in board.tasks if env_id not in tasks]
    problems += [
        f"{field_path(('tasks', env_id))}: not a task of board {board.name}"
        for env_id in tasks
        if env_id not in board.tasks
    ]
    present = [env_id for env_id in board.tasks if env_id in tasks]
    recipe = entry.get("recipe")
    if recipe is not None and set(recipe["tasks"]) != set(tasks):
        problems.append(
            f"recipe.tasks: names {', '.join(sorted(map(shown, set(recipe['tasks']) ^ set(tasks))))}: "
            "the recipe names a suite task for each task of the entry, and no other"
        )
    return (
        problems
        + evaluation_problems(entry)
        + _seed_problems(tasks, present)
        + _metric_problems(tasks, present, board)
        + _size_problems(tasks, present, board)
        + _range_problems(tasks, present, board)
        + _consistency_problems(tasks, present, board)
    )


@functools.cache
def _ranges(env_id: str, env_kwargs_json: str) -> dict[str, Any]:
    from lm_gym.results import evaluation_ranges

    return evaluation_ranges(env_id, json.loads(env_kwargs_json))


def task_ranges(board: Board, env_id: str) -> dict[str, Any]:
    """The ranges of the evaluation keys of ``env_id`` on ``board`` (``lm_gym.results.evaluation_ranges``)."""
    return _ranges(env_id, json.dumps(board.env_kwargs.get(env_id, {}), sort_keys=True))


def _range_problems(tasks: dict[str, Any], env_ids: list[str], board: Board) -> list[str]:
    """Numbers no run of the task can have: outside the range the task or the metric declares."""
    from lm_gym.results import out_of_range

    problems = []
    for env_id in env_ids:
        ranges = task_ranges(board, env_id)
        returns = {"mean_return": ranges["mean_return"]} if "mean_return" in ranges else {}
        for index, run in enumerate(tasks[env_id]["runs"]):
            where = ("tasks", env_id, "runs", index)
            found = [
                ((*where, name, key), value, declared)
                for name in ("final_eval", "initial_eval")
                for key, value, declared in out_of_range(run[name] or {}, ranges)
            ]
            found += [
                ((*where, "samples", sample_index, "return"), sample["return"], declared)
                for sample_index, sample in enumerate(run["samples"])
                for _, _, declared in out_of_range({"mean_return": sample["return"]}, returns)
            ]
            found += [
                ((*where, "curve", point_index, 1), point[1], declared)
                for point_index, point in enumerate(run["curve"])
                for _, _, declared in out_of_range({"mean_return": point[1]}, returns)
            ]
            problems += [
                f"{field_path(path)}: {shown(value)} is not {declared}, the range of "
                f"{_range_subject(env_id, path[-1] if path[-1] != 1 else 'mean_return')}"
                for path, value, declared in found
            ]
    return problems


def _range_subject(env_id: str, key: Any) -> str:
    name = env_id.rpartition("/")[2]
    if key in ("return", "mean_return"):
        return f"{name}'s return"
    if key == "std_return":
        return f"a standard deviation of {name}'s returns (at most half the return's range)"
    if key == "num_episodes":
        return "a number of episodes"
    kind, _, metric = str(key).partition("_")
    return f"{name}'s {metric}" if kind == "mean" else f"the corpus metric {metric}"


def _consistency_problems(tasks: dict[str, Any], env_ids: list[str], board: Board) -> list[str]:
    """What cannot hold of one run: learning-curve steps that do not increase, an initial evaluation of another
    size than the board's, a ``mean_return`` that its samples (the first episodes) and the return's range rule out."""
    problems = []
    for env_id in env_ids:
        returns = task_ranges(board, env_id).get("mean_return")
        for index, run in enumerate(tasks[env_id]["runs"]):
            where = ("tasks", env_id, "runs", index)
            steps = [point[0] for point in run["curve"]]
            problems += [
                f"{field_path((*where, 'curve', point, 0))}: step {steps[point]} does not follow step "
                f"{steps[point - 1]} (the curve's steps increase)"
                for point in range(1, len(steps))
                if steps[point] <= steps[point - 1]
            ][:1]
            initial = run["initial_eval"]
            if initial is not None and initial["num_episodes"] != board.eval_episodes:
                problems.append(
                    f"{field_path((*where, 'initial_eval', 'num_episodes'))}: {initial['num_episodes']}, but board "
                    f"{board.name} evaluates on {board.eval_episodes} episodes"
                )
            final, samples = run["final_eval"], run["samples"]
            episodes, count = final["num_episodes"], len(samples)
            if returns is None or not samples or count > episodes:
                continue
            total = math.fsum(sample["return"] for sample in samples)
            low = (total + (episodes - count) * returns.low) / episodes
            high = (total + (episodes - count) * returns.high) / episodes
            if not low - 1e-9 <= final["mean_return"] <= high + 1e-9:
                problems.append(
                    f"{field_path((*where, 'final_eval', 'mean_return'))}: {final['mean_return']!r} cannot be "
                    f"the mean of {episodes} returns in [{returns.low:g}, {returns.high:g}] of which the first {count} "
                    f"(the samples) sum to {total:.6g}: it lies in [{low:.6g}, {high:.6g}]"
                )
    return problems


def _size_problems(tasks: dict[str, Any], env_ids: list[str], board: Board) -> list[str]:
    """Final evaluations of the board's size (K times it for an evaluation of K samples per episode): corpus
    metrics such as distinct-2 depend on it."""
    return [
        f"{field_path(('tasks', env_id, 'runs', index, 'final_eval', 'num_episodes'))}: "
        f"{run['final_eval']['num_episodes']}, "
        f"but board {board.name} scores final evaluations of {board.eval_episodes} episodes"
        + (f" ({samples} samples of each)" if samples > 1 else "")
        for env_id in env_ids
        for index, run in enumerate(tasks[env_id]["runs"])
        if run["final_eval"].get("num_episodes")
        != board.eval_episodes * (samples := run.get("sampling", {}).get("samples_per_episode", 1))
    ]


def _seed_problems(tasks: dict[str, Any], env_ids: list[str]) -> list[str]:
    problems, seeds_of_task = [], {}
    for env_id in env_ids:
        seeds = [run["seed"] for run in tasks[env_id]["runs"]]
        repeats = [(index, seed) for index, seed in enumerate(seeds) if seed in seeds[:index]]
        for index, seed in repeats:
            where = field_path(("tasks", env_id, "runs", index, "seed"))
            problems.append(f"{where}: seed {seed} repeats runs[{seeds.index(seed)}]'s seed")
        if not repeats:  # a task with a repeated seed would only add a confusing mismatch below
            seeds_of_task[env_id] = sorted(seeds)
    if seeds_of_task:
        first, *others = seeds_of_task
        problems += [
            f"{field_path(('tasks', env_id))}: seeds {seeds_of_task[env_id]} "
            f"differ from {first}'s {seeds_of_task[first]} (every task needs the same seeds)"
            for env_id in others
            if seeds_of_task[env_id] != seeds_of_task[first]
        ]
    return problems


def _metric_problems(tasks: dict[str, Any], env_ids: list[str], board: Board) -> list[str]:
    problems = []
    for env_id in env_ids:
        split = task_metrics(board.name).get(env_id)
        required = (*split.task, *split.naturalness) if split else ()
        for index, run in enumerate(tasks[env_id]["runs"]):
            missing = [name for name in required if name not in run["final_eval"]]
            if missing:
                where = field_path(("tasks", env_id, "runs", index, "final_eval"))
                problems.append(f"{where}: lacks {', '.join(missing)}, which the board scores {env_id} on")
    return problems
