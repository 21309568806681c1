"""An entry's recipe (``leaderboard/README.md``, "Verification"): how its runs were made, which
``python -m leaderboard verify`` re-runs.

:func:`build_recipe` reads it from the job records the harness writes beside each run's ``result.json``
(``harness_job.json``, :mod:`lm_gym.results.harness_job`): the suite, its task and algorithm labels and every
job's command line, with the jobs the runs needed. Paths in the suite's runs folder are written
``{runs}/...`` and the checkout's scripts relative to it (:func:`recipe_argument`), so that a recipe names
no folder of the machine that made it.

:func:`recipe_problems` checks a recipe against its suite (``benchmark.suite``, the harness's own expansion of a
suite into jobs): the jobs the suite runs for the entry's tasks, algorithm and seeds, each with the command the
suite gives it, and no other. A suite of your own is found by name among the files given to
:func:`use_suite_files` (``validate --suite FILE``) or the file that defines the entry's board (``--boards``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmark.suite import SUITES_DIR, Suite, SuiteError, expand_jobs, load_suite, suite_names
from leaderboard.boards import Board, boards, registered_id
from leaderboard.entry_schema import RECIPE_VERSIONS
from leaderboard.messages import field_path, shown
from lm_gym.results.harness_job import HARNESS_JOB_FILE, read_harness_job

RUNS_PLACEHOLDER = "{runs}"  #: a recipe writes paths in the suite's runs folder as {runs}/...
CHECKOUT = Path(__file__).resolve().parents[1]  #: the lm-gym checkout: recipes name scripts relative to it
#: the runs folder the suite's jobs are rendered in to compare them with a recipe: recipe_argument writes it {runs}
_PLACEHOLDER_RUNS_FOLDER = Path("/", RUNS_PLACEHOLDER)
_MAX_MISSING_SHOWN = 3

#: suite files of your own by suite name (the file's name less ``.toml``, as the harness names a suite)
_SUITE_FILES: dict[str, Path] = {}


def build_recipe(by_task: Mapping[str, Sequence[tuple[Path, Mapping[str, Any]]]]) -> dict[str, Any] | None:
    """The entry's recipe: the suite, its algorithm and task labels, the runs' device and versions, and every
    job's command line as the harness ran it, with the jobs they need (an SFT warm start, a dataset), all read
    from the job records (``harness_job.json`` beside each ``result.json``,
    :mod:`lm_gym.results.harness_job`); None when a run was not made by the harness, or the runs are of
    several suites or algorithms (the entry then cannot be verified). A record of an older harness, which
    names no suite, task, algorithm or seed, is a :class:`~lm_gym.results.harness_job.HarnessJobError` saying
    to re-run the job."""
    records = {}
    for runs in by_task.values():
        for path, _ in runs:
            if not (path.parent / HARNESS_JOB_FILE).is_file():
                return None
            records[path.parent.resolve()] = read_harness_job(path.parent)
    suites = {record.suite for record in records.values()}
    algorithms = {record.algorithm for record in records.values()}
    # the suite's runs folder: the one the harness made each job's folder in, under the job's name
    suite_dirs = {_runs_folder(job_dir, record.job) for job_dir, record in records.items()}
    if len(suites) != 1 or len(algorithms) != 1 or len(suite_dirs) != 1 or None in suite_dirs:
        return None
    suite_dir = suite_dirs.pop()
    labels = {env_id: records[runs[0][0].parent.resolve()].task for env_id, runs in by_task.items()}
    jobs: dict[str, list[str]] = {}
    pending = list(records)
    while pending:
        job_dir = pending.pop(0)
        record = records.get(job_dir) or read_harness_job(job_dir)
        if record.job in jobs:
            continue
        name, argv = record.job, list(record.argv)
        # the runs folder where the harness ran the job (the runs may have moved since): its --out-dir less its name
        ran_in = next((value[: -len(name)].rstrip("/") for value in argv if value.endswith("/" + name)), None)
        if ran_in and Path(ran_in).resolve() != suite_dir:
            argv = [argument.replace(ran_in, str(suite_dir)) for argument in argv]
        jobs[name] = [recipe_argument(argument, suite_dir) for argument in argv]
        pending += [needed for argument in argv if (needed := _job_dir_of(argument, suite_dir)) not in (None, job_dir)]
    first = next(iter(by_task.values()))[0][1]
    return {
        "suite": suites.pop(),
        "algorithm": algorithms.pop(),
        "tasks": labels,
        "device": str(first["device"])[:64],
        "versions": recipe_versions(first["versions"]),
        "jobs": [{"name": name, "argv": argv} for name, argv in sorted(jobs.items())],
    }


def recipe_versions(versions: Mapping[str, str]) -> dict[str, str]:
    """The versions of a result.json that a recipe records (:data:`RECIPE_VERSIONS`, those a version's pattern fits)."""
    return {
        key: value
        for key, value in versions.items()
        if key in RECIPE_VERSIONS and re.fullmatch(r"[A-Za-z0-9.+_-]{1,64}", value)
    }


def _runs_folder(job_dir: Path, job: str) -> Path | None:
    """The folder that holds the job's folder as ``<folder>/<job>`` (the harness's layout); None if it is not so
    held (the runs were moved out of the layout)."""
    if not job_dir.as_posix().endswith("/" + job):
        return None
    return Path(job_dir.as_posix()[: -len(job) - 1])


def recipe_argument(argument: str, suite_dir: Path) -> str:
    """A command-line argument with the runs folder written {runs} and a script of the checkout relative to it."""
    text = argument.replace(str(suite_dir), RUNS_PLACEHOLDER)
    try:
        path = Path(argument).resolve()
        if path.is_file() and path.is_relative_to(CHECKOUT):
            return path.relative_to(CHECKOUT).as_posix()
    except (OSError, ValueError):
        pass
    return text


def _job_dir_of(argument: str, suite_dir: Path) -> Path | None:
    """The job folder (one with ``harness_job.json``) of a path in the runs folder that an argument names."""
    try:
        path = Path(argument).resolve()
    except (OSError, ValueError):
        return None
    if not path.is_relative_to(suite_dir):
        return None
    for folder in (path, *path.parents):
        if folder == suite_dir or not folder.is_relative_to(suite_dir):
            return None
        if (folder / HARNESS_JOB_FILE).is_file():
            return folder
    return None


def use_suite_files(paths: Sequence[str | Path] | None) -> None:
    """Check the recipes that name the suite of one of ``paths`` (its file's name less ``.toml``) against that file,
    in place of ``benchmark/suites/<name>.toml``, for the rest of the process (``validate``/``verify --suite``).
    A file that is not a suite is a :class:`~benchmark.suite.SuiteError` naming it."""
    for path in paths or ():
        suite = load_suite(str(path))
        _SUITE_FILES[suite.name] = suite.path


def forget_suite_files() -> None:
    """Forget the files :func:`use_suite_files` was given."""
    _SUITE_FILES.clear()


def recipe_problems(entry: dict[str, Any]) -> list[str]:
    """Why the recipe of ``entry`` (valid in form) is not what its suite runs for the entry's runs, one line per
    finding naming the field; ``[]`` when it is, or when the entry has no recipe.

    The suite is the board's (a recipe of another suite cannot have made the board's runs); its file is the one
    :func:`use_suite_files` was given for that name, else the file that defines the entry's board when it is named
    so, else ``benchmark/suites/<name>.toml``. The recipe's task labels must be the suite's tasks of the entry's
    env ids, running its algorithm; its jobs, those the suite runs for those tasks, the algorithm and the entry's
    seeds (with the jobs they need: SFT warm starts, datasets), each job's command line the suite's, paths of the
    runs folder written ``{runs}/...`` as :func:`build_recipe` writes them."""
    recipe = entry.get("recipe")
    if recipe is None:
        return []
    board = boards()[entry["board"]]
    name = recipe["suite"]
    if name != board.suite:
        return [f"recipe.suite: {shown(name)}, but board {board.name} scores the runs of suite {board.suite}"]
    try:
        suite = suite_of(name, board)
    except SuiteError as error:
        return [f"recipe.suite: {error}"]
    if suite is None:
        return [
            f"recipe.suite: {shown(name)} is not a suite of benchmark/suites/ ({', '.join(suite_names())}): to check "
            "the recipe's jobs, pass the file of a suite of your own as --suite FILE (or as --boards FILE when it "
            "holds the board)"
        ]
    algorithm = recipe["algorithm"]
    if algorithm not in suite.algorithms:
        return [
            f"recipe.algorithm: {shown(algorithm)} is not an algorithm of suite {name} "
            f"({', '.join(sorted(suite.algorithms))})"
        ]
    problems = []
    for env_id, label in recipe["tasks"].items():
        where = field_path(("recipe", "tasks", env_id))
        task = suite.tasks.get(label)
        if task is None:
            problems.append(f"{where}: {shown(label)} is not a task of suite {name} ({', '.join(suite.tasks)})")
        elif registered_id(task["env_id"]) != env_id:
            problems.append(f"{where}: suite {name}'s task {label} is {task['env_id']}, not {env_id}")
        elif algorithm not in task.get("algorithms", []):
            problems.append(f"{where}: suite {name} runs no {algorithm} on its task {label}")
    if problems:
        return problems
    seeds = sorted({run["seed"] for task in entry["tasks"].values() for run in task["runs"]})
    labels = sorted(set(recipe["tasks"].values()))
    try:
        jobs = expand_jobs(suite, _PLACEHOLDER_RUNS_FOLDER, tasks=labels, algorithms=[algorithm], seeds=seeds)
    except SuiteError as error:
        return [f"recipe: suite {name} does not expand into jobs: {error}"]
    suite_jobs = {job.key: [recipe_argument(part, _PLACEHOLDER_RUNS_FOLDER) for part in job.argv] for job in jobs}
    return _job_problems(recipe["jobs"], suite_jobs, f"suite {name}", f"{algorithm} on seeds {seeds}")


def suite_of(name: str, board: Board) -> Suite | None:
    """The suite ``name`` as :func:`recipe_problems` finds it; None where no file defines it."""
    if name in _SUITE_FILES:
        return load_suite(str(_SUITE_FILES[name]))
    if board.defined_in is not None and board.defined_in.stem == name:
        try:
            return load_suite(str(board.defined_in))
        except SuiteError:  # a file of boards alone, which runs nothing
            pass
    builtin = SUITES_DIR / f"{name}.toml"  # the schema's pattern makes the name a file name, never a path
    return load_suite(str(builtin)) if builtin.is_file() else None


def _job_problems(
    stated: list[dict[str, Any]], suite_jobs: dict[str, list[str]], suite: str, selection: str
) -> list[str]:
    """The differences between a recipe's jobs and ``suite_jobs`` (``{job name: its command line}``)."""
    problems = []
    names = [job["name"] for job in stated]
    for index, job in enumerate(stated):
        name, argv = job["name"], job["argv"]
        where = ("recipe", "jobs", index)
        if name in names[:index]:
            problems.append(f"{field_path((*where, 'name'))}: {shown(name)} repeats recipe.jobs[{names.index(name)}]")
        elif name not in suite_jobs:
            problems.append(f"{field_path((*where, 'name'))}: {shown(name)} is not a job {suite} runs for {selection}")
        elif argv != suite_jobs[name]:
            problems.append(_argv_difference(where, name, argv, suite_jobs[name], suite))
    missing = [name for name in suite_jobs if name not in names]
    if missing:
        more = f" and {len(missing) - _MAX_MISSING_SHOWN} more" if len(missing) > _MAX_MISSING_SHOWN else ""
        problems.append(
            f"recipe.jobs: lacks {', '.join(missing[:_MAX_MISSING_SHOWN])}{more}, which {suite} runs for {selection}"
        )
    return problems


def _argv_difference(where: tuple[str | int, ...], name: str, argv: list[str], expected: list[str], suite: str) -> str:
    """The first argument where a recipe's command line differs from the suite's, as a reader would say it."""
    for position, (stated, runs) in enumerate(zip(argv, expected)):
        if stated != runs:
            after = f" after {shown(argv[position - 1])}" if position and argv[position - 1].startswith("--") else ""
            return (
                f"{field_path((*where, 'argv', position))} (job {name}): {shown(stated)}{after}, "
                f"where {suite} runs {shown(runs)}"
            )
    common = min(len(argv), len(expected))
    if len(argv) > common:
        return (
            f"{field_path((*where, 'argv'))} (job {name}): {len(argv)} arguments, where {suite} runs {len(expected)}: "
            f"it adds {', '.join(map(shown, argv[common : common + 4]))}"
        )
    return (
        f"{field_path((*where, 'argv'))} (job {name}): {len(argv)} arguments, where {suite} runs {len(expected)}: "
        f"it lacks {', '.join(map(shown, expected[common : common + 4]))}"
    )
