"""Suites: TOML files of tasks x algorithms x seeds, expanded into jobs (format: ``suites/README.md``).

A :class:`Job` is one process: a baseline run (``python baselines/ppo.py ...``) for a task,
an algorithm label and a seed, or a seed-independent data job (``python -m MODULE ...``).
:func:`expand_jobs` turns a suite into the jobs, their folders and their order (a job runs
after the jobs whose folders its flags name).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from lm_gym.core.errors import ConfigurationError
from lm_gym.results.harness_job import HarnessJob

ROOT = Path(__file__).resolve().parents[1]
SUITES_DIR = Path(__file__).resolve().parent / "suites"
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.-]+\??)\}")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SUITE_KEYS = {"description", "seeds", "threads_per_job", "retries", "timeout_minutes"}
_TASK_KEYS = {"env_id", "env_kwargs", "algorithms", "defaults", "args", "data"}


class SuiteError(ConfigurationError):
    """A suite file, or a selection of it, that cannot be expanded into jobs."""


class _LeaveOut(Exception):
    """An optional placeholder (``{sft?}``) names an algorithm the task does not run: drop the flag."""


@dataclass(frozen=True)
class Job:
    """One process of a suite run."""

    key: str  #: ``<task>/<algorithm>/seed<k>`` or ``<task>/data/<name>``
    suite: str  #: the suite's name
    task: str
    algorithm: str  #: the algorithm label, or ``"data"``
    seed: int | None  #: None for data jobs
    out_dir: Path
    argv: tuple[str, ...]  #: what follows ``python``: a script and its flags, or ``-m MODULE`` and its flags
    needs: tuple[str, ...] = ()  #: keys of the jobs that must finish first

    @property
    def is_baseline(self) -> bool:
        """Baseline jobs take ``--out-dir``, ``--resume`` and ``--track`` and finish with a ``result.json``."""
        return self.algorithm != "data"

    def record(self) -> HarnessJob:
        """What the harness writes in the job's folder as it starts it (``harness_job.json``)."""
        return HarnessJob(self.suite, self.key, self.task, self.algorithm, self.seed, self.argv)


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    description: str
    seeds: tuple[int, ...]
    threads_per_job: int
    retries: int
    timeout_minutes: float | None
    defaults: Mapping[str, Any]
    algorithms: Mapping[str, Mapping[str, Any]]
    tasks: Mapping[str, Mapping[str, Any]]
    settings: Mapping[str, Any] = field(default_factory=dict)


def suite_names() -> list[str]:
    """The suites of ``benchmark/suites/`` by name: their files' names less ``.toml``, sorted."""
    return sorted(path.stem for path in SUITES_DIR.glob("*.toml"))


def suite_path(name_or_path: str) -> Path:
    """``smoke`` -> ``benchmark/suites/smoke.toml``; a path to a ``.toml`` file is taken as is."""
    path = Path(name_or_path)
    if path.suffix == ".toml":
        if not path.is_file():
            raise SuiteError(f"--suite: no suite file {path}")
        return path
    path = SUITES_DIR / f"{name_or_path}.toml"
    if not _LABEL.match(name_or_path) or not path.is_file():
        raise SuiteError(
            f"--suite: no suite named {name_or_path!r}; the suites are {', '.join(suite_names())} "
            "(or give a path to a .toml file)"
        )
    return path


def load_suite(name_or_path: str) -> Suite:
    """Read and check a suite file: every key known, every algorithm a task names defined."""
    path = suite_path(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(f"{path}: not valid TOML: {error}") from None
    # [boards.<name>]: boards over the suite's tasks, read by python -m leaderboard --boards (not by the harness)
    unknown = set(data) - {"suite", "defaults", "algorithms", "tasks", "boards"}
    if unknown:
        raise SuiteError(
            f"{path}: unknown sections {sorted(unknown)}; expected suite, defaults, algorithms, tasks, boards"
        )
    settings = _table(data.get("suite", {}), f"{path}: [suite]")
    _check_keys(settings, _SUITE_KEYS, f"{path}: [suite]")
    seeds = settings.get("seeds", [1])
    if not isinstance(seeds, list) or not seeds or not all(_is_int(s) for s in seeds) or len(set(seeds)) != len(seeds):
        raise SuiteError(f"{path}: [suite] seeds must be a non-empty list of distinct integers, got {seeds!r}")
    threads = settings.get("threads_per_job", 1)
    retries = settings.get("retries", 1)
    timeout = settings.get("timeout_minutes")
    if not _is_int(threads) or threads < 1:
        raise SuiteError(f"{path}: [suite] threads_per_job must be an integer >= 1, got {threads!r}")
    if not _is_int(retries) or retries < 0:
        raise SuiteError(f"{path}: [suite] retries must be an integer >= 0, got {retries!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise SuiteError(f"{path}: [suite] timeout_minutes must be a positive number, got {timeout!r}")

    algorithms = _table(data.get("algorithms", {}), f"{path}: [algorithms]")
    for label, algorithm in algorithms.items():
        where = f"{path}: [algorithms.{label}]"
        _check_label(label, where)
        _check_keys(_table(algorithm, where), {"script", "args"}, where)
        if not isinstance(algorithm.get("script"), str):
            raise SuiteError(f'{where} needs script = "baselines/<file>.py"')
        _table(algorithm.get("args", {}), f"{where} args")
    tasks = _table(data.get("tasks", {}), f"{path}: [tasks]")
    if not tasks:
        raise SuiteError(f"{path}: no [tasks.<name>] tables")
    for name, task in tasks.items():
        where = f"{path}: [tasks.{name}]"
        _check_label(name, where)
        _check_keys(_table(task, where), _TASK_KEYS, where)
        if not isinstance(task.get("env_id"), str):
            raise SuiteError(f'{where} needs env_id = "lm_gym/<Task>-v0"')
        _table(task.get("env_kwargs", {}), f"{where} env_kwargs")
        _table(task.get("defaults", {}), f"{where} defaults")
        labels = task.get("algorithms", [])
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            raise SuiteError(f"{where} algorithms must be a list of algorithm labels")
        missing = [label for label in labels if label not in algorithms]
        if missing:
            raise SuiteError(f"{where} names algorithms {missing} with no [algorithms.<label>] table")
        for label, args in _table(task.get("args", {}), f"{where} args").items():
            if label not in labels:
                raise SuiteError(f"{where} args.{label}: {label!r} is not among the task's algorithms {labels}")
            _table(args, f"{where} args.{label}")
        for data_name, data_job in _table(task.get("data", {}), f"{where} data").items():
            data_where = f"{where} data.{data_name}"
            _check_label(data_name, data_where)
            _check_keys(_table(data_job, data_where), {"module", "script", "args"}, data_where)
            if ("module" in data_job) == ("script" in data_job):
                raise SuiteError(f'{data_where} needs exactly one of module = "..." or script = "..."')
            _table(data_job.get("args", {}), f"{data_where} args")
    return Suite(
        name=path.stem,
        path=path,
        description=str(settings.get("description", "")),
        seeds=tuple(seeds),
        threads_per_job=threads,
        retries=retries,
        timeout_minutes=timeout,
        defaults=_table(data.get("defaults", {}), f"{path}: [defaults]"),
        algorithms=algorithms,
        tasks=tasks,
        settings=settings,
    )


def expand_jobs(
    suite: Suite,
    out_root: Path,
    *,
    tasks: Sequence[str] | None = None,
    algorithms: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
) -> list[Job]:
    """The suite's jobs for the selected tasks, algorithms and seeds, in an order that runs
    every job after those it needs. A selected job pulls in the jobs it needs (an RL job its
    SFT warm start, a BC job its dataset) even when their algorithm is not selected."""
    selected_tasks = _select(tasks, list(suite.tasks), "--tasks", "tasks")
    all_labels = sorted({label for task in suite.tasks.values() for label in task.get("algorithms", [])})
    selected_algorithms = _select(algorithms, all_labels, "--algos", "algorithms")
    seeds = tuple(suite.seeds if seeds is None else seeds)
    out_root = Path(out_root).resolve()

    jobs: dict[str, Job] = {}

    def add(task_name: str, label: str, seed: int | None, trail: tuple[str, ...] = ()) -> str:
        task = suite.tasks[task_name]
        key = f"{task_name}/data/{label}" if seed is None else f"{task_name}/{label}/seed{seed}"
        if key in jobs:
            return key
        if key in trail:
            raise SuiteError(f"{suite.path}: jobs need each other in a cycle: {' -> '.join(trail + (key,))}")
        out_dir = out_root / key
        env = {"env-id": task["env_id"], "env-kwargs": dict(task.get("env_kwargs", {}))}
        if seed is None:
            data_job = task["data"][label]
            head = ("-m", data_job["module"]) if "module" in data_job else (_script(data_job["script"]),)
            flags = dict(data_job.get("args", {}))
            if "script" in data_job:  # a baseline (an SFT warm start): the task's env, unless its args name one
                flags = {**env, **flags}
        else:
            head = (_script(suite.algorithms[label]["script"]),)
            flags = {
                **suite.defaults,
                **suite.algorithms[label].get("args", {}),
                **task.get("defaults", {}),
                **task.get("args", {}).get(label, {}),
                **env,
                "seed": seed,
            }
        needs: list[str] = []

        def folder(name: str) -> str:
            optional = name.endswith("?")
            name = name.removesuffix("?")
            if optional and (name not in suite.algorithms or name not in task.get("algorithms", [])):
                raise _LeaveOut
            if name == "out":
                return str(out_dir)
            if name == "seed":
                if seed is None:
                    raise SuiteError(
                        f"{suite.path}: [tasks.{task_name}.data.{label}] is seed-independent; it cannot use {{seed}}"
                    )
                return str(seed)
            if name.startswith("data."):
                data_name = name.removeprefix("data.")
                if data_name not in task.get("data", {}):
                    raise SuiteError(
                        f"{suite.path}: {key} refers to {{{name}}}, "
                        f"but task {task_name!r} has no [tasks.{task_name}.data.{data_name}]"
                    )
                needed = add(task_name, data_name, None, trail + (key,))
            elif name in suite.algorithms:
                if seed is None:
                    raise SuiteError(f"{suite.path}: data job {key} cannot refer to an algorithm's folder {{{name}}}")
                if name not in task.get("algorithms", []):
                    raise SuiteError(f"{suite.path}: {key} refers to {{{name}}}, which task {task_name!r} does not run")
                needed = add(task_name, name, seed, trail + (key,))
            else:
                raise SuiteError(
                    f"{suite.path}: {key}: unknown placeholder {{{name}}} "
                    "(expected out, seed, data.<name> or an algorithm label)"
                )
            needs.append(needed)
            return str(jobs[needed].out_dir)

        rendered = {}
        for name, value in flags.items():
            try:
                rendered[name] = _substitute(value, folder)
            except _LeaveOut:
                pass
        argv = head + tuple(_flags(rendered, f"{suite.path}: {key}"))
        if seed is not None:
            argv += ("--out-dir", str(out_dir))
        jobs[key] = Job(
            key,
            suite.name,
            task_name,
            "data" if seed is None else label,
            seed,
            out_dir,
            argv,
            tuple(dict.fromkeys(needs)),
        )
        return key

    for task_name in selected_tasks:
        for label in suite.tasks[task_name].get("algorithms", []):
            if label in selected_algorithms:
                for seed in seeds:
                    add(task_name, label, seed)
    if not jobs:
        raise SuiteError(
            f"{suite.path}: the selection has no jobs (tasks {selected_tasks}, algorithms {selected_algorithms})"
        )
    return list(jobs.values())  # insertion order: every job after the jobs it needs


def render_flags(flags: Mapping[str, Any]) -> list[str]:
    """TOML values as command-line flags (the rules of ``suites/README.md``)."""
    return _flags(flags, "flags")


def _flags(flags: Mapping[str, Any], where: str) -> list[str]:
    argv: list[str] = []
    for name, value in flags.items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):
            argv.append(flag if value else f"--no-{name.replace('_', '-')}")
        elif isinstance(value, (dict, Mapping)):
            argv += [flag, json.dumps(value)]
        elif isinstance(value, list):
            if any(isinstance(item, (dict, list)) for item in value):
                raise SuiteError(f"{where}: {name} = {value!r}: a list flag takes plain values")
            argv += [flag, *map(str, value)]
        elif isinstance(value, (str, int, float)):
            argv += [flag, str(value)]
        else:  # TOML dates and times
            raise SuiteError(f"{where}: {name} = {value!r}: flags take strings, numbers, booleans, lists or tables")
    return argv


def _substitute(value: Any, folder) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda match: folder(match.group(1)), value)
    if isinstance(value, list):
        return [_substitute(item, folder) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, folder) for key, item in value.items()}
    return value


def _script(script: str) -> str:
    path = Path(script)
    return str(path if path.is_absolute() else ROOT / path)


def _select(chosen: Iterable[str] | None, available: list[str], flag: str, what: str) -> list[str]:
    if chosen is None:
        return available
    chosen = list(chosen)
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise SuiteError(f"{flag}: the suite has no {what} {unknown}; it has {available}")
    return chosen


def _table(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise SuiteError(f"{where} must be a table, got {value!r}")
    return value


def _check_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise SuiteError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")


def _check_label(label: str, where: str) -> None:
    if not _LABEL.match(label) or label == "data":
        raise SuiteError(f"{where}: {label!r} cannot name a folder (letters, digits, _ . -; not 'data')")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
