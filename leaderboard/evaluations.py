"""Evaluation entries: a model evaluated on a board's tasks, not trained (``docs/leaderboard.md``, "Evaluation
entries").

``python -m benchmark evaluate --suite SUITE ...`` writes ``<out>/<task>/result.json`` per task with algorithm
``eval`` (:data:`lm_gym.results.run_result.EVALUATION_ALGORITHM`), no training curve, and in its ``config`` the
model, the checkpoint's digest or the server's URL, the sampling settings and its own command line
(``config["command"]``, the arguments after ``python -m benchmark evaluate``). Those runs have no harness job
record: submit knows them by their algorithm, and :func:`evaluation_of_runs` builds the entry's ``evaluation``
(in place of a training entry's ``recipe``) from their configs. An evaluation entry holds one run per task, the
one evaluation (seed ``EVAL_SEED``, the episodes every board scores), with its K-sample statistics
(``sampling``: mean@K, best@K, spread, pass@k).

:func:`evaluation_problems` is ``validate``'s check of it: the command is an evaluation of the board's suite on
the entry's tasks with the settings the entry states, and the runs' numbers agree with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmark.suite import SuiteError
from leaderboard.boards import boards, registered_id
from leaderboard.messages import field_path, shown
from leaderboard.recipe import recipe_versions, suite_of
from leaderboard.replay import EVAL_SEED
from lm_gym.core.errors import LMGymError
from lm_gym.results.run_result import EVALUATION_ALGORITHM

OUT_PLACEHOLDER = "{out}"  #: an evaluation's argv writes its --out folder so
_TOLERANCE = 1e-6  #: relative difference allowed between a statistic and the number it restates
# the evaluate command's defaults of the flags an entry states (benchmark/evaluation/command.py)
_DEFAULTS = {"--samples": "1", "--seed": "0", "--temperature": "1.0", "--top-p": "1.0"}

Run = tuple[Path, Mapping[str, Any]]


class EvaluationRunsError(LMGymError, ValueError):
    """Evaluation runs that do not make an entry's ``evaluation``; the message names the run and why."""


def is_evaluation(result: Mapping[str, Any]) -> bool:
    """Whether a result.json is an evaluation's (``python -m benchmark evaluate``), not a training run's."""
    return result["algorithm"] == EVALUATION_ALGORITHM


def command_flags(argv: Sequence[str]) -> dict[str, list[str]]:
    """``{--flag: its values}`` of a command line (``--flag=value`` too; a flag without values: ``[]``)."""
    flags: dict[str, list[str]] = {}
    current = None
    for argument in argv:
        if argument.startswith("--"):
            name, equals, value = argument.partition("=")
            current = flags.setdefault(name, [])
            if equals:
                current.append(value)
        elif current is not None:
            current.append(argument)
    return flags


def suite_name_of(value: str) -> str:
    """The suite ``--suite`` names: a built-in's name, or a file's name less ``.toml`` (as the harness names it)."""
    return Path(value).stem if value.endswith(".toml") else value


def suite_of_command(config: Mapping[str, Any]) -> str | None:
    """The suite an evaluation's recorded command ran (``--suite``), or None."""
    command = config.get("command")
    if not isinstance(command, list):
        return None
    values = command_flags([str(argument) for argument in command]).get("--suite") or [None]
    return None if values[0] is None else suite_name_of(values[0])


def evaluation_of_runs(by_task: Mapping[str, Sequence[Run]]) -> dict[str, Any]:
    """The entry's ``evaluation``: what re-runs the evaluation runs ``by_task`` (one per task), from their
    configs; :class:`EvaluationRunsError` when they are not the runs of one ``evaluate --suite`` command."""
    runs = [run for task_runs in by_task.values() for run in task_runs]
    commands: dict[tuple[str, ...], Path] = {}
    for path, result in runs:
        command = result["config"].get("command")
        if not isinstance(command, list) or not command or not all(isinstance(part, str) for part in command):
            raise EvaluationRunsError(
                f"{path}: the evaluation records no command line (config.command): an older python -m benchmark "
                "evaluate made it; run the evaluation again with this one, which records what re-runs it"
            )
        commands.setdefault(tuple(command), path)
    if len(commands) > 1:
        raise EvaluationRunsError(
            f"the runs come from {len(commands)} evaluate commands (e.g. {', '.join(map(str, commands.values()))}): "
            "an entry's evaluations are those of one python -m benchmark evaluate --suite command, which re-runs them"
        )
    argv = list(next(iter(commands)))
    flags = command_flags(argv)
    if not flags.get("--suite"):
        raise EvaluationRunsError(
            f"{runs[0][0]}: the evaluation ran --env-id, not a suite: evaluate the board's tasks with --suite SUITE "
            "(and --tasks), which names them as the board does"
        )
    path, first = runs[0]
    config = first["config"]
    base_url = config.get("base_url")
    return {
        "suite": suite_name_of(flags["--suite"][0]),
        "tasks": {env_id: task_runs[0][0].parent.name for env_id, task_runs in by_task.items()},
        "model": config["model"],
        "model_digest": config.get("model_digest"),
        "base_url": base_url,
        "api": config.get("api") if base_url is not None else None,
        "chat": bool(config["chat"]),
        "sampling": {
            "episodes": config["episodes"],
            "samples": config["samples"],
            "seed": first["seed"],
            "temperature": config["temperature"],
            "top_p": config["top_p"],
            "greedy": config["greedy"],
        },
        "argv": _with_out_placeholder(argv),
        "device": str(first["device"])[:64],
        "versions": recipe_versions(first["versions"]),
    }


def _with_out_placeholder(argv: list[str]) -> list[str]:
    """``argv`` with its --out folder written {out}: the folder of the machine that ran it is no one else's."""
    written = []
    for index, argument in enumerate(argv):
        if argument.startswith("--out="):
            written.append(f"--out={OUT_PLACEHOLDER}")
        elif index and argv[index - 1] == "--out":
            written.append(OUT_PLACEHOLDER)
        else:
            written.append(argument)
    return written


def evaluation_model(config: Mapping[str, Any]) -> str:
    """An evaluation's model in words: the hub name or checkpoint folder's name, the server that served it."""
    model = str(config["model"])
    name = Path(model).name if config.get("model_digest") else model
    served = f" served at {config['base_url']}" if config.get("base_url") else ""
    return f"{name}{served}, evaluated, not trained"


def evaluation_problems(entry: Mapping[str, Any]) -> list[str]:
    """Why the ``evaluation`` of ``entry`` (valid in form) is not what made its runs, one line per finding naming
    the field; ``[]`` when it is, or when the entry is a trained one (whose runs then have no ``sampling``)."""
    evaluation = entry.get("evaluation")
    if evaluation is None:
        return [
            f"{field_path(('tasks', env_id, 'runs', index, 'sampling'))}: only an evaluation entry's runs have "
            "K-sample statistics"
            for env_id, task in entry["tasks"].items()
            for index, run in enumerate(task["runs"])
            if "sampling" in run
        ]
    if "recipe" in entry:
        return ["recipe: an evaluation entry has no training recipe: its evaluation says what re-runs it"]
    problems = _command_problems(entry, evaluation)
    return problems or _run_problems(entry, evaluation)


def _command_problems(entry: Mapping[str, Any], evaluation: Mapping[str, Any]) -> list[str]:
    """The recorded command evaluates the board's suite on the entry's tasks with the stated settings."""
    board = boards()[entry["board"]]
    if evaluation["suite"] != board.suite:
        return [f"evaluation.suite: {shown(evaluation['suite'])}, but board {board.name} scores suite {board.suite}"]
    if set(evaluation["tasks"]) != set(entry["tasks"]):
        return ["evaluation.tasks: names a suite task for each task of the entry, and no other"]
    flags = command_flags(evaluation["argv"])
    problems = []
    if "--env-id" in flags or [suite_name_of(value) for value in flags.get("--suite", [])] != [board.suite]:
        problems.append(f"evaluation.argv: not an evaluation of suite {board.suite} (--suite {board.suite})")
    if "--tasks" in flags and sorted(flags["--tasks"]) != sorted(evaluation["tasks"].values()):
        problems.append(f"evaluation.argv: --tasks {' '.join(map(shown, flags['--tasks']))} are not the entry's tasks")
    problems += _label_problems(evaluation, board)
    sampling = evaluation["sampling"]
    stated = {
        "--model": (evaluation["model"], "evaluation.model"),
        "--base-url": (evaluation["base_url"], "evaluation.base_url"),
        "--episodes": (board.eval_episodes, f"board {board.name}'s eval_episodes"),
        "--samples": (sampling["samples"], "evaluation.sampling.samples"),
        "--seed": (EVAL_SEED, "the seed of every board's episodes"),
        "--out": (OUT_PLACEHOLDER, "the placeholder of the output folder"),
    }
    if not sampling["greedy"]:
        stated["--temperature"] = (sampling["temperature"], "evaluation.sampling.temperature")
    stated["--top-p"] = (sampling["top_p"], "evaluation.sampling.top_p")
    for flag, (value, what) in stated.items():
        given = flags.get(flag, [_DEFAULTS[flag]] if flag in _DEFAULTS else [])
        if not _same_value(given, value):
            recorded = " ".join(map(shown, given)) or "absent"
            problems.append(f"evaluation.argv: {flag} {recorded}, but {what} is {shown(value)}")
    if ("--greedy" in flags) != sampling["greedy"]:
        problems.append(f"evaluation.argv: --greedy {'given' if '--greedy' in flags else 'absent'}, but "
                        f"evaluation.sampling.greedy is {sampling['greedy']}")  # fmt: skip
    if sampling["episodes"] != board.eval_episodes or sampling["seed"] != EVAL_SEED:
        problems.append(
            f"evaluation.sampling: episodes {sampling['episodes']} from seed {sampling['seed']}, but board "
            f"{board.name} scores {board.eval_episodes} episodes from seed {EVAL_SEED}"
        )
    return problems


def _same_value(given: list[str], value: Any) -> bool:
    if value is None:
        return not given
    if len(given) != 1:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return math.isclose(float(given[0]), value, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)
        except ValueError:
            return False
    return given[0] == str(value)


def _label_problems(evaluation: Mapping[str, Any], board) -> list[str]:
    """Each task label is the suite's task of its env id."""
    try:
        suite = suite_of(board.suite, board)
    except SuiteError as error:
        return [f"evaluation.suite: {error}"]
    if suite is None:
        return [f"evaluation.suite: {shown(board.suite)} is not a suite of benchmark/suites/: pass its file as --suite"]
    problems = []
    for env_id, label in evaluation["tasks"].items():
        task = suite.tasks.get(label)
        if task is None or registered_id(task["env_id"]) != env_id:
            problems.append(
                f"{field_path(('evaluation', 'tasks', env_id))}: {shown(label)} is not suite {suite.name}'s task "
                f"of {env_id}"
            )
    return problems


def _run_problems(entry: Mapping[str, Any], evaluation: Mapping[str, Any]) -> list[str]:
    """Each task's one run is the evaluation: its seed, no training, K samples, statistics that agree."""
    problems = []
    samples = evaluation["sampling"]["samples"]
    for env_id, task in entry["tasks"].items():
        for index, run in enumerate(task["runs"]):
            where = ("tasks", env_id, "runs", index)
            if run["seed"] != evaluation["sampling"]["seed"]:
                problems.append(f"{field_path((*where, 'seed'))}: {run['seed']}, not the evaluation's seed")
            if run["curve"] or run["initial_eval"] is not None:
                problems.append(f"{field_path(where)}: an evaluation has no training curve and no initial evaluation")
            sampling = run.get("sampling")
            if sampling is None or sampling["samples_per_episode"] != samples:
                problems.append(f"{field_path((*where, 'sampling'))}: must state the evaluation's {samples} samples")
                continue
            problems += _statistic_problems(where, run["final_eval"]["mean_return"], sampling["statistics"], samples)
    return problems


def _statistic_problems(
    where: tuple[str | int, ...], mean_return: float, statistics: Mapping[str, float], samples: int
) -> list[str]:
    """mean@K is the final mean return; best@K is no lower; pass@k lies in [0, 1] and grows with k."""
    path = field_path((*where, "sampling", "statistics"))
    mean = statistics.get(f"mean@{samples}")
    if mean is None:
        return [f"{path}: lacks mean@{samples}"]
    problems = []
    if not math.isclose(mean, mean_return, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE):
        problems.append(f"{path}: mean@{samples} {mean!r} is not the final evaluation's mean_return {mean_return!r}")
    best = statistics.get(f"best@{samples}")
    if best is not None and best < mean - _TOLERANCE:
        problems.append(f"{path}: best@{samples} {best!r} is below mean@{samples} {mean!r}")
    passes = sorted((int(key[5:]), value) for key, value in statistics.items() if key.startswith("pass@"))
    if any(not 0 <= value <= 1 for _, value in passes) or any(
        later < earlier - _TOLERANCE for (_, earlier), (_, later) in zip(passes, passes[1:])
    ):
        problems.append(f"{path}: pass@k must lie in [0, 1] and grow with k")
    if any(k > samples for k, _ in passes):
        problems.append(f"{path}: pass@k for k above the {samples} samples")
    return problems
