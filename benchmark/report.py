"""Summarise a folder of runs: per task and algorithm, the mean over seeds with a bootstrap CI.

Command line::

    python -m benchmark report RUNS_DIR [--out DIR] [--metrics NAME ...] [--reps N]
                                        [--confidence 0.95] [--seed S]

**Reads** every ``result.json`` under ``RUNS_DIR`` (at any depth) with
:func:`lm_gym.results.load_result`, which validates it. Nothing else is read: a report
depends on the result format only, never on the baselines' code. A file that cannot be read
or does not follow the format is skipped with a warning naming it and the reason, and the
report lists it.

**Groups** the results by ``(env_id, algorithm)``, one result per seed. Two results of one
group with the same seed are refused (:class:`DuplicateSeedError`, exit status 2): averaging
a seed twice would shrink the interval silently.

**Computes**, for each group and each metric, the mean over seeds, the interquartile mean
(IQM) and a bootstrap confidence interval of the mean over seeds: rliable's
``get_interval_estimates`` with ``aggregate_mean`` on the scores shaped ``(num_seeds, 1)``
(percentile method, ``--reps`` resamples, ``--confidence`` coverage; numpy's global RNG,
which rliable draws from, seeded with ``--seed`` for each metric so that the report is
reproducible; :func:`lm_gym.results.stats.interval_estimates`, which the leaderboard's intervals use
too). The metrics are those of ``final_eval`` (``mean_return`` first; ``num_episodes`` is not a
score), the same ones of ``initial_eval`` prefixed ``initial/``, each one's change from the
initial evaluation to the final one prefixed ``gain/`` (per seed, so its interval says whether
training moved the metric: a learning demonstration's "the CI over seeds excludes 0"), and ``wall_time_s``,
``tokens_per_s``, ``episodes_per_s``, ``peak_memory_mb``. A run on several tasks
(``lm_gym/Mixture-v0``; its result's ``tasks`` field) adds each task's metrics under the same names,
in its group's ``tasks``. A metric
some seeds lack (e.g. a run without evaluation) is computed over the seeds that have it, and says
how many. With one seed there is nothing to resample: the interval is the point itself.

**Writes** Markdown to stdout and ``<out>/report.md`` (one table per task: a row per
algorithm with the number of seeds, ``mean_return`` as ``mean [low, high]``, the task's other
episode metrics (``mean_<name>``; ``--metrics`` picks others, e.g. ``corpus_bleu``), the initial
``mean_return``, its gain and the wall time; for a run on several tasks, a second table with a row
per algorithm and task: its ``mean_return``, initial ``mean_return``, gain and its episode metrics),
and ``<out>/report.json`` (``--out`` defaults to ``RUNS_DIR``)::

    {"runs_dir": str, "confidence": float, "reps": int, "seed": int,
     "skipped": [{"path": str, "reason": str}, ...],     # paths relative to runs_dir
     "tasks": {env_id: {algorithm: {
         "seeds": [int, ...],                             # sorted
         "runs": [str, ...],                              # the result.json files, in seed order
         "metrics": {name: {"mean": float, "iqm": float, "ci": [low, high], "num_seeds": int}},
         "tasks": {task id: {name: {...}}}}}}}             # a run on several tasks only

Exit status: 0 written, 1 no valid result under ``RUNS_DIR``, 2 a usage error (a missing
folder, an unknown ``--metrics`` name, a duplicated seed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from lm_gym.core.errors import LMGymError
from lm_gym.results import RESULT_FILE, ResultFormatError, load_result, stats

PERFORMANCE_FIELDS = ("wall_time_s", "tokens_per_s", "episodes_per_s", "peak_memory_mb")
INITIAL_PREFIX = "initial/"
GAIN_PREFIX = "gain/"


class DuplicateSeedError(LMGymError, ValueError):
    """Two results of one task and algorithm with the same seed."""


class Run(NamedTuple):
    """A loaded ``result.json`` and its path relative to the runs folder."""

    path: str
    result: dict[str, Any]


def collect_results(runs_dir: str | Path) -> tuple[list[Run], list[dict[str, str]]]:
    """Every valid ``result.json`` under ``runs_dir``, and the files skipped with the reason.

    Skipping instead of failing lets one broken run (killed while writing, an old format) leave
    the rest of a sweep reportable; the caller decides how loudly to say so.
    """
    runs_dir = Path(runs_dir)
    runs, skipped = [], []
    for path in sorted(runs_dir.rglob(RESULT_FILE)):
        if not path.is_file():
            continue
        relative = path.relative_to(runs_dir).as_posix()
        try:
            runs.append(Run(relative, load_result(path)))
        except ResultFormatError as error:
            skipped.append({"path": relative, "reason": str(error)})
    return runs, skipped


def scores(final: Mapping[str, Any] | None, initial: Mapping[str, Any] | None) -> dict[str, float]:
    """The report names and values of one evaluation's summaries: ``final``'s metrics, ``initial``'s
    prefixed ``initial/``, and where both have one its change prefixed ``gain/`` (none without evaluation)."""
    values: dict[str, float] = {}
    for prefix, summary in (("", final), (INITIAL_PREFIX, initial)):
        for name, value in (summary or {}).items():
            if name != "num_episodes":  # a setting of the evaluation, not a score
                values[prefix + name] = float(value)
    for name in [name for name in values if INITIAL_PREFIX + name in values]:
        values[GAIN_PREFIX + name] = values[name] - values[INITIAL_PREFIX + name]
    return values


def metric_values(result: dict[str, Any]) -> dict[str, float]:
    """The scores of one run (:func:`scores` of its evaluations) and its performance fields."""
    values = scores(result["final_eval"], result["initial_eval"])
    values.update({field: float(result[field]) for field in PERFORMANCE_FIELDS})
    return values


def task_metric_values(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each task's scores in a run on several tasks (its result's ``tasks``; ``{}`` for a run on one task)."""
    return {
        task: scores(pair.get("final_eval"), pair.get("initial_eval"))
        for task, pair in (result.get("tasks") or {}).items()
    }


def summarize_metric(values: Sequence[float], confidence: float, reps: int, seed: int) -> dict[str, Any]:
    """Mean, IQM, CI and number of seeds of one metric's per-seed values (one seed: the CI is the point)."""
    scores = stats.column(values)
    (estimate,) = stats.interval_estimates(scores, stats.mean_estimate, reps=reps, confidence=confidence, seed=seed)
    return {
        "mean": float(np.mean(values)),
        "iqm": stats.iqm(scores),
        "ci": estimate["ci"] or [estimate["value"]] * 2,
        "num_seeds": len(values),
    }


def summarize_runs(
    per_run: Sequence[dict[str, float]], confidence: float, reps: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Each metric's :func:`summarize_metric` over the runs' values (one some runs lack: over those with it)."""
    per_metric: dict[str, list[float]] = {}
    for values in per_run:
        for name, value in values.items():
            per_metric.setdefault(name, []).append(value)
    return {name: summarize_metric(per_metric[name], confidence, reps, seed) for name in _metric_order(per_metric)}


def summarize(runs: Sequence[Run], confidence: float = 0.95, reps: int = 2000, seed: int = 0) -> dict[str, Any]:
    """``{env_id: {algorithm: {"seeds", "runs", "metrics"}}}`` (tasks and algorithms sorted).

    Raises :class:`DuplicateSeedError` naming both files when a group holds a seed twice.
    """
    groups: dict[str, dict[str, dict[int, Run]]] = {}
    for run in runs:
        by_seed = groups.setdefault(run.result["env_id"], {}).setdefault(run.result["algorithm"], {})
        seed_of_run = run.result["seed"]
        if seed_of_run in by_seed:
            raise DuplicateSeedError(
                f"{run.result['env_id']} {run.result['algorithm']}: seed {seed_of_run} appears twice, in "
                f"{by_seed[seed_of_run].path} and {run.path}; remove one (a report must not count a seed twice)"
            )
        by_seed[seed_of_run] = run
    tasks: dict[str, Any] = {}
    for env_id in sorted(groups):
        tasks[env_id] = {}
        for algorithm in sorted(groups[env_id]):
            by_seed = dict(sorted(groups[env_id][algorithm].items()))
            runs_of_group = list(by_seed.values())
            bootstrap = {"confidence": confidence, "reps": reps, "seed": seed}
            group = {
                "seeds": list(by_seed),
                "runs": [run.path for run in runs_of_group],
                "metrics": summarize_runs([metric_values(run.result) for run in runs_of_group], **bootstrap),
            }
            per_task = [task_metric_values(run.result) for run in runs_of_group]
            task_names = sorted({task for values in per_task for task in values})
            if task_names:
                group["tasks"] = {
                    task: summarize_runs([values[task] for values in per_task if task in values], **bootstrap)
                    for task in task_names
                }
            tasks[env_id][algorithm] = group
    return tasks


def _metric_order(names: Iterable[str]) -> list[str]:
    """Final metrics (``mean_return`` first), then the initial ones likewise, the gains, then performance."""

    def key(name: str) -> tuple[int, int, str]:
        if name in PERFORMANCE_FIELDS:
            return 3, PERFORMANCE_FIELDS.index(name), ""
        group = 1 if name.startswith(INITIAL_PREFIX) else 2 if name.startswith(GAIN_PREFIX) else 0
        base = name.removeprefix(INITIAL_PREFIX).removeprefix(GAIN_PREFIX)
        return group, int(base != "mean_return"), base

    return sorted(names, key=key)


def _is_final(name: str) -> bool:
    """Whether a report metric name is one of ``final_eval`` (not initial, not a gain, not performance)."""
    return not name.startswith((INITIAL_PREFIX, GAIN_PREFIX)) and name not in PERFORMANCE_FIELDS


def to_markdown(report: dict[str, Any], metrics: Sequence[str] | None = None) -> str:
    """One table per task, a row per algorithm; ``metrics`` picks the final metrics after ``mean_return``
    (default: the episode metrics, ``mean_<name>``; the corpus metrics are in the JSON, or by name)."""
    confidence = f"{100 * report['confidence']:g}%"
    lines = [
        f"# Benchmark report: {report['runs_dir']}",
        "",
        (
            f"Mean over seeds [{confidence} bootstrap confidence interval of the mean over seeds "
            f"(rliable, percentile, {report['reps']} resamples, seed {report['seed']})]."
        ),
    ]
    if report["skipped"]:
        lines += ["", f"Skipped {len(report['skipped'])} invalid result file(s):"]
        lines += [f"- `{item['path']}`: {item['reason'].splitlines()[0]}" for item in report["skipped"]]
    for env_id, algorithms in report["tasks"].items():
        task_metrics = {name for group in algorithms.values() for name in group["metrics"] if _is_final(name)}
        others = [
            name
            for name in _metric_order(task_metrics)
            if name != "mean_return" and (name in metrics if metrics is not None else name.startswith("mean_"))
        ]
        columns = ["mean_return", *others, INITIAL_PREFIX + "mean_return", GAIN_PREFIX + "mean_return", "wall_time_s"]
        rows = []
        for algorithm, group in algorithms.items():
            seeds = len(group["seeds"])
            rows.append([algorithm, str(seeds), *(_cell(group["metrics"].get(name), seeds) for name in columns)])
        lines += ["", f"## {env_id}", "", *stats.markdown_table(["algorithm", "seeds", *columns], rows)]
        lines += _task_table(env_id, algorithms)
    return "\n".join(lines) + "\n"


def _task_table(env_id: str, algorithms: dict[str, Any]) -> list[str]:
    """The lines of the per-task table of a run on several tasks (none for a run on one task): a row per
    algorithm and task, its ``mean_return``, initial ``mean_return``, gain and its other episode metrics."""
    tasks = sorted({task for group in algorithms.values() for task in group.get("tasks", {})})
    if not tasks:
        return []
    columns = ["mean_return", INITIAL_PREFIX + "mean_return", GAIN_PREFIX + "mean_return"]
    rows = []
    for algorithm, group in algorithms.items():
        seeds = len(group["seeds"])
        for task in tasks:
            metrics = group.get("tasks", {}).get(task, {})
            cells = [_cell(metrics.get(name), seeds) for name in columns]
            others = [
                f"{name} {_cell(metrics[name], seeds)}"
                for name in _metric_order(metrics)
                if name.startswith("mean_") and name != "mean_return"
            ]
            rows.append([algorithm, task, str(seeds), *cells, "; ".join(others) or "-"])
    headers = ["algorithm", "task", "seeds", *columns, "episode metrics"]
    return ["", f"### {env_id}: each task", "", *stats.markdown_table(headers, rows)]


def _cell(summary: dict[str, Any] | None, group_seeds: int) -> str:
    """``mean [low, high]``, marked when the metric rests on one seed or fewer seeds than the row."""
    if summary is None:
        return "-"
    if summary["num_seeds"] == 1:  # no interval to show; the seeds column says why
        text = _number(summary["mean"]) + (" (1 seed)" if group_seeds > 1 else "")
    else:
        text = stats.format_estimate(summary["mean"], summary["ci"], _number)
        if summary["num_seeds"] < group_seeds:
            text += f" ({summary['num_seeds']} of {group_seeds} seeds)"
    return text


def _number(value: float) -> str:
    """Three decimals, or three significant digits where decimals would hide the value."""
    return f"{value:.3f}" if value == 0 or 1e-3 <= abs(value) < 1e6 else f"{value:.3g}"


def write_report(out_dir: str | Path, report: dict[str, Any], markdown: str) -> None:
    """Write ``report.json`` and ``report.md`` atomically (a reader never sees half a file)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in (("report.json", json.dumps(report, indent=2, allow_nan=False) + "\n"), ("report.md", markdown)):
        tmp = out_dir / (name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, out_dir / name)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``report`` command's arguments (``python -m benchmark``'s parser)."""
    parser.add_argument("runs_dir", metavar="RUNS_DIR", help="folder searched recursively for result.json files")
    parser.add_argument("--out", help="folder for report.md and report.json (default: RUNS_DIR)")
    parser.add_argument(
        "--metrics",
        nargs="+",
        metavar="NAME",
        help=(
            "final metrics shown after mean_return (default: the episode metrics, mean_<name>; "
            "corpus_<name> metrics by name; the JSON holds all)"
        ),
    )
    parser.add_argument("--reps", type=stats.parse_reps, default=2000, help="bootstrap resamples (default: 2000)")
    parser.add_argument(
        "--confidence", type=stats.parse_confidence, default=0.95, help="coverage of the intervals (default: 0.95)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: 0)")


def run(args: argparse.Namespace) -> int:
    """The ``report`` command; returns the exit status."""
    return report_runs(
        Path(args.runs_dir), args.out, metrics=args.metrics, reps=args.reps, confidence=args.confidence, seed=args.seed
    )


def report_runs(
    runs_dir: Path,
    out: str | Path | None = None,
    *,
    metrics: Sequence[str] | None = None,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> int:
    """Print and write (to ``out``, default ``runs_dir``) the report of every ``result.json`` under
    ``runs_dir``; returns the exit status (1: nothing to report, 2: a bad folder or metric)."""
    if not runs_dir.is_dir():
        print(f"error: the runs folder {runs_dir} does not exist", file=sys.stderr)
        return 2
    runs, skipped = collect_results(runs_dir)
    for item in skipped:
        print(f"warning: skipping {runs_dir / item['path']}: {item['reason']}", file=sys.stderr)
    if not runs:
        print(f"no valid {RESULT_FILE} under {runs_dir} ({len(skipped)} skipped): nothing to report", file=sys.stderr)
        return 1
    known = {name for run in runs for name in metric_values(run.result) if _is_final(name)}
    unknown = sorted(set(metrics or ()) - known)
    if unknown:
        print(
            f"error: --metrics {unknown} are not final metrics of any run (those are {sorted(known)})", file=sys.stderr
        )
        return 2
    try:
        tasks = summarize(runs, confidence=confidence, reps=reps, seed=seed)
    except DuplicateSeedError as error:
        print(f"error in {runs_dir}: {error}", file=sys.stderr)
        return 2
    report = {
        "runs_dir": str(runs_dir),
        "confidence": confidence,
        "reps": reps,
        "seed": seed,
        "skipped": skipped,
        "tasks": tasks,
    }
    markdown = to_markdown(report, metrics)
    print(markdown, end="")
    write_report(out or runs_dir, report, markdown)
    return 0
