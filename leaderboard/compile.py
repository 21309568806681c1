"""``python -m leaderboard compile ENTRIES_OR_RUNS... --out DIR``: the board from entries and runs.

Inputs: entry files (``.json``), folders of entries (``leaderboard/entries``), and run folders
(any folder with ``result.json`` files below it, e.g. ``runs/smoke``: each algorithm's runs
there become one entry, named ``<algorithm> (<folder>)``, which may have fewer than 3 seeds
or miss tasks; such an entry gets per-task scores and no overall score). Entries are validated
as untrusted input (``leaderboard.entry``). A board holds the entries of one board: ``--board``
picks one; without it, inputs that span several boards (``runs/offline`` holds runs of
``offline-text`` and ``offline-games``) compile each board into ``DIR/<board>/``.

Outputs in ``DIR``:

* ``board.json``: every entry's metadata, overall scores (task and naturalness: mean and IQM
  with stratified bootstrap CIs, ``leaderboard.scoring``), per-task scores and raw metrics
  (mean and bootstrap CI over seeds), sample generations, and the probability of improvement
  of each complete entry over each other (rliable, on the task scores, with its stratified
  bootstrap CI from ``--poi-reps`` resamples; ``P(Y > X) = 1 - P(X > Y)``);
* ``board.md``: the overall table, the probability-of-improvement matrix and one table per task;
* ``plots/``: learning curves per task, overall score bars with CIs (PNG);
* ``index.html``: the web page, working from the file system with no server: the board's data
  inline, a sortable table, a task filter, the probability-of-improvement matrix, the plots,
  each entry's metadata and samples.
  Every text reaches the page as data and is inserted with ``textContent``, so an entry
  named ``<script>...`` shows as that text.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboard import plots, scoring
from leaderboard.boards import boards, task_metrics
from leaderboard.entry import EntryError, load_entry
from leaderboard.submit import SubmitError, build_entry
from lm_gym.core.errors import LMGymError
from lm_gym.results import RESULT_FILE, load_result

PAGE_TEMPLATE = Path(__file__).with_name("page.html")


class CompileError(LMGymError, ValueError):
    """Inputs that do not make a board."""


def collect_entries(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Entries from entry files, folders of entries and run folders (see the module docstring)."""
    entries = []
    for path in map(Path, paths):
        if path.is_file():
            entries.append(load_entry(path))
        elif path.is_dir() and any(path.rglob(RESULT_FILE)):
            entries += entries_from_runs(path)
        elif path.is_dir():
            entries += [load_entry(file) for file in sorted(path.glob("*.json"))]
        else:
            raise CompileError(f"{path}: no such file or folder")
    return entries


def entries_from_runs(runs_dir: Path) -> list[dict[str, Any]]:
    """One entry per algorithm of the runs under ``runs_dir``, as many tasks and seeds as there are."""
    algorithms = sorted({load_result(file.parent)["algorithm"] for file in runs_dir.rglob(RESULT_FILE)})
    return [
        build_entry([runs_dir], name=f"{algorithm} ({runs_dir.name})", algorithm=algorithm, partial=True)
        for algorithm in algorithms
    ]


def compile_board(
    entries: list[dict[str, Any]], out_dir: Path, *, board: str | None = None, reps: int = 2000, poi_reps: int = 200, seed: int = 0
) -> dict[str, Any]:
    """Write ``board.json``, ``board.md``, ``plots/`` and ``index.html`` to ``out_dir``; returns the board data."""
    board_name = _one_board(entries, board)
    entries = [entry for entry in entries if entry["board"] == board_name]
    names = _unique_names(entries)
    points = scoring.load_reference_points(board_name)
    tasks = list(boards()[board_name].tasks)
    data: dict[str, Any] = {
        "board": {"name": board_name, "description": boards()[board_name].description},
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "statistics": (
            f"Scores: each metric normalised by the task's reference points (0: uniformly random tokens, 1: the references "
            f"or the scripted expert), averaged per run; over runs and tasks the mean and the interquartile mean (IQM) with "
            f"95% stratified bootstrap confidence intervals (rliable, {reps} resamples). Raw metrics: mean over seeds with a "
            f"95% bootstrap interval. Entries without every task or with fewer than 3 seeds have no overall score. "
            f"Probability of improvement: P(a run of the row's entry scores above one of the column's on a task), "
            f"averaged over tasks, ties half (rliable, {poi_reps} resamples)."
        ),
        "tasks": tasks,
        "task_labels": {env_id: env_id.removeprefix("lm_gym/") for env_id in tasks},
        "metrics": {env_id: [*task_metrics()[env_id].task, *task_metrics()[env_id].naturalness] for env_id in tasks},
        "entries": [],
    }
    for index, (name, entry) in enumerate(zip(names, entries)):
        data["entries"].append(_entry_data(f"e{index}", name, entry, points, reps, seed))
    data["improvement"] = _improvement(entries, data["entries"], points, poi_reps, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    data["plots"] = _plots(entries, data, out_dir, tasks)
    (out_dir / "board.json").write_text(json.dumps(data, indent=1, allow_nan=False))
    (out_dir / "board.md").write_text(to_markdown(data))
    (out_dir / "index.html").write_text(PAGE_TEMPLATE.read_text().replace("__BOARD_DATA__", _script_json(data)))
    return data


def _entry_data(entry_id: str, name: str, entry: dict[str, Any], points, reps: int, seed: int) -> dict[str, Any]:
    tasks = entry["tasks"]
    seeds = sorted({run["seed"] for task in tasks.values() for run in task["runs"]})
    overall: dict[str, Any] = {}
    per_task: dict[str, dict[str, Any]] = {env_id: {"num_runs": len(task["runs"])} for env_id, task in tasks.items()}
    complete = scoring.is_complete(entry)
    for kind in ("task", "naturalness"):
        scores = scoring.aggregate({name: entry}, kind=kind, reps=reps, seed=seed, points=points)[name]
        if complete and scores["tasks"]:
            overall[f"{kind}_mean"], overall[f"{kind}_iqm"] = scores["mean"], scores["iqm"]
        for env_id, item in scores["per_task"].items():
            per_task[env_id][f"{kind}_score"] = {"value": item["mean"], "ci": item["ci"]}
    for env_id, metrics in scoring.metric_summaries(entry, reps=reps, seed=seed).items():
        per_task[env_id]["metrics"] = {metric: {"value": item["mean"], "ci": item["ci"]} for metric, item in metrics.items()}
    return {
        "id": entry_id, "name": name, "method": entry["method"], "model": entry["model"], "description": entry["description"],
        "seeds": seeds, "library_version": entry["library_version"], "git_commit": entry["git_commit"],
        "config_hash": entry["config_hash"], "date": entry["date"], "source": boards()[entry["board"]].source,
        "overall": overall, "tasks": per_task,
        "samples": {env_id: task["runs"][0].get("samples", []) for env_id, task in tasks.items()},
    }


def _improvement(entries: list[dict[str, Any]], items: list[dict[str, Any]], points, reps: int, seed: int) -> dict[str, Any]:
    """``{"entries": [ids], "matrix": {row id: {column id: {"value", "ci"}}}}``: P(row > column) on
    task scores, for the complete entries; each pair is resampled once (the other order is 1 - it)."""
    complete = [(entry, item["id"]) for entry, item in zip(entries, items) if scoring.is_complete(entry)]
    matrix: dict[str, dict[str, Any]] = {entry_id: {} for _, entry_id in complete}
    for index, (entry_x, x) in enumerate(complete):
        for entry_y, y in complete[index + 1 :]:
            estimate = scoring.probability_of_improvement(entry_x, entry_y, reps=reps, seed=seed, points=points)
            matrix[x][y] = estimate
            matrix[y][x] = {"value": 1 - estimate["value"], "ci": [1 - estimate["ci"][1], 1 - estimate["ci"][0]]}
    return {"entries": [entry_id for _, entry_id in complete], "matrix": matrix}


def _plots(entries: list[dict[str, Any]], data: dict[str, Any], out_dir: Path, tasks: list[str]) -> dict[str, Any]:
    """The figures, under file names made here (never from entry text)."""
    folder = out_dir / "plots"
    folder.mkdir(exist_ok=True)
    curves = {}
    for index, env_id in enumerate(tasks):
        path = plots.learning_curves(entries, env_id, folder / f"curves-{index}.png")
        if path is not None:
            curves[env_id] = f"plots/{path.name}"
    scored = [item for item in data["entries"] if "task_iqm" in item["overall"]]
    scores = None
    if scored:
        plots.score_bars(
            [item["name"] for item in scored], [item["overall"]["task_iqm"]["value"] for item in scored],
            [tuple(item["overall"]["task_iqm"]["ci"]) for item in scored], "task score (IQM, 95% CI)", folder / "scores.png",
        )
        scores = "plots/scores.png"
    return {"curves": curves, "scores": scores}


def to_markdown(data: dict[str, Any]) -> str:
    """The overall table, then a table per task (scores and raw metrics, value [95% CI])."""
    lines = [f"# lm-gym leaderboard: {data['board']['name']}", "", _escape_markdown(data["board"]["description"]), "", data["statistics"], ""]
    lines += ["| entry | method | model | seeds | task score (IQM) | task score (mean) | naturalness (IQM) |", "|---|---|---|---|---|---|---|"]
    for item in data["entries"]:
        overall = item["overall"]
        cells = [_cell(overall.get(key)) for key in ("task_iqm", "task_mean", "naturalness_iqm")]
        lines.append(f"| {_escape_markdown(item['name'])} | {_escape_markdown(item['method'])} | {_escape_markdown(item['model'])} | {len(item['seeds'])} | " + " | ".join(cells) + " |")
    lines += _improvement_markdown(data)
    for env_id in data["tasks"]:
        metrics = data["metrics"][env_id]
        lines += ["", f"## {env_id}", "", "| entry | runs | task score | naturalness | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 4) + "|"]
        for item in data["entries"]:
            task = item["tasks"].get(env_id)
            if task is None:
                continue
            cells = [_cell(task.get("task_score")), _cell(task.get("naturalness_score"))] + [_cell(task["metrics"].get(name)) for name in metrics]
            lines.append(f"| {_escape_markdown(item['name'])} | {task['num_runs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _improvement_markdown(data: dict[str, Any]) -> list[str]:
    ids = data["improvement"]["entries"]
    if len(ids) < 2:
        return []
    names = {item["id"]: _escape_markdown(item["name"]) for item in data["entries"]}
    lines = ["", "## Probability of improvement (row over column, task scores)", "", "| | " + " | ".join(names[i] for i in ids) + " |", "|---" * (len(ids) + 1) + "|"]
    for row in ids:
        cells = ["-" if row == column else _cell(data["improvement"]["matrix"][row][column]) for column in ids]
        lines.append(f"| {names[row]} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m leaderboard compile", description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="entry files, folders of entries (leaderboard/entries), run folders (runs/smoke)")
    parser.add_argument("--out", required=True, help="output folder: board.json, board.md, plots/, index.html")
    parser.add_argument("--board", help="the board to compile (default: every board of the inputs, each into OUT/<board>/ when there are several)")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples of the scores and metrics (default 2000)")
    parser.add_argument("--poi-reps", type=int, default=200, help="bootstrap resamples of each probability of improvement, "
                        "about 1 s per 100 per pair of entries (default 200; 2000 for a published board)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    args = parser.parse_args(argv)
    for name, value in (("--reps", args.reps), ("--poi-reps", args.poi_reps)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    out = Path(args.out)
    try:
        entries = collect_entries(args.inputs)
        names = [args.board] if args.board else sorted({entry["board"] for entry in entries}) or [None]
        for name in names:
            folder = out / name if len(names) > 1 else out
            data = compile_board(entries, folder, board=name, reps=args.reps, poi_reps=args.poi_reps, seed=args.seed)
            print(f"{len(data['entries'])} entries on board {data['board']['name']}: open {folder.resolve() / 'index.html'}")
    except (CompileError, EntryError, SubmitError, scoring.ScoringError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def _one_board(entries: list[dict[str, Any]], board: str | None) -> str:
    found = sorted({entry["board"] for entry in entries})
    if not entries:
        raise CompileError("no entries or runs in the inputs")
    if board is not None:
        if board not in found:
            raise CompileError(f"--board {board}: no entry of that board (the inputs hold {', '.join(found)})")
        return board
    if len(found) > 1:
        raise CompileError(f"the inputs hold entries of several boards ({', '.join(found)}): pick one with --board")
    return found[0]


def _unique_names(entries: list[dict[str, Any]]) -> list[str]:
    """Entry names, made distinct by a short hash where two entries share one."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["name"]] = counts.get(entry["name"], 0) + 1
    return [
        entry["name"] if counts[entry["name"]] == 1 else f"{entry['name']} #{hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:6]}"
        for entry in entries
    ]


def _cell(statistic: dict[str, Any] | None) -> str:
    if not statistic:
        return "-"
    low, high = statistic["ci"]
    return f"{statistic['value']:.3f} [{low:.3f}, {high:.3f}]"


def _escape_markdown(text: str) -> str:
    """Entry text in a Markdown table: no cell breaks, no HTML."""
    return re.sub(r"[|<>&\n\r]", lambda match: {"|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;"}.get(match.group(), " "), text)


def _script_json(data: dict[str, Any]) -> str:
    """JSON for a ``<script type="application/json">`` element: ``<``, ``>`` and ``&`` escaped, so that
    no text (``</script>``, ``<!--``) can end the element early."""
    return json.dumps(data, allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
