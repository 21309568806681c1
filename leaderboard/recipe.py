"""An entry's recipe (``leaderboard/README.md``, "Verification"): how its runs were made, which
``python -m leaderboard verify`` re-runs.

:func:`build_recipe` reads it from the job records the harness writes beside each run's ``result.json``
(``harness_job.json``, :mod:`lm_gym.results.harness_job`): the suite, its task and algorithm labels and every
job's command line, with the jobs the runs needed. Paths in the suite's runs folder are written
``{runs}/...`` and the checkout's scripts relative to it (:func:`recipe_argument`), so that a recipe names
no folder of the machine that made it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from leaderboard.entry_schema import RECIPE_VERSIONS
from lm_gym.results.harness_job import HARNESS_JOB_FILE, read_harness_job

RUNS_PLACEHOLDER = "{runs}"  #: a recipe writes paths in the suite's runs folder as {runs}/...
CHECKOUT = Path(__file__).resolve().parents[1]  #: the lm-gym checkout: recipes name scripts relative to it


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
        "versions": {
            key: value
            for key, value in first["versions"].items()
            if key in RECIPE_VERSIONS and re.fullmatch(r"[A-Za-z0-9.+_-]{1,64}", value)
        },
        "jobs": [{"name": name, "argv": argv} for name, argv in sorted(jobs.items())],
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
