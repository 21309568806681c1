"""``python -m leaderboard compile ENTRIES_OR_RUNS... --out DIR``: the board from entries and runs.

Inputs: entry files (``.json``), folders of entries (``leaderboard/entries``), and run folders
(any folder with ``result.json`` files below it, e.g. ``runs/smoke``: each algorithm's runs
there become one entry, named ``<algorithm> (<folder>)``, which may have fewer than 3 seeds
or miss tasks). An entry with every task of the board, each with the same seeds, gets an
overall score, whatever its number of seeds; one without gets per-task scores, and its overall
cells say why not. With fewer than 3 seeds every number is a point estimate, marked ``n=1``
(or ``n=2``), with no interval. Entries are validated as untrusted input
(``leaderboard.entry``); entries with the same runs are shown once, the earliest dated
(:func:`collect_entries`). A board holds the entries of one board: ``--board`` picks one;
without it, inputs that span several boards (``runs/offline`` holds runs of ``offline-text``
and ``offline-games``) compile each board into ``DIR/<board>/``. ``--boards FILE`` adds the boards of
a file of yours (``[boards.<name>]`` tables, e.g. in the suite file): boards over your own tasks, scored
by the reference points the file gives; a metric without them is shown raw, and each score it would
enter is ``{"reason": "no reference points for ...: add [boards.<name>.reference_points] ..."}``.

Outputs in ``DIR``:

* ``board.json``: every entry's metadata, overall scores (task and naturalness: mean and IQM
  with stratified bootstrap CIs, ``leaderboard.scoring``), per-task scores and raw metrics
  (mean and bootstrap CI over seeds), sample generations, and the probability of improvement
  of each entry with an overall score over each other (rliable, on the task scores, with its
  stratified bootstrap CI from ``--poi-reps`` resamples; ``P(Y > X) = 1 - P(X > Y)``). Each
  number is ``{"value", "ci": [low, high] or null (fewer than 3 seeds), "n": seeds}``; a number
  that does not exist is ``{"reason": "..."}``, one line saying why;
* ``board.md``: the overall table, the probability-of-improvement matrix and one table per task,
  numbers with 3 significant digits (``leaderboard.numbers``);
* ``plots/``: learning curves per task, overall score bars with CIs (PNG), each algorithm in one colour;
* ``index.html``: the web page, working from the file system with no server: the board's data
  inline, a sortable table, a task filter, the probability-of-improvement matrix, the plots,
  each entry's metadata and samples.
  Evaluation entries (a model evaluated, not trained: ``leaderboard.evaluations``) have rows of their own
  below the trained entries, marked ``evaluated, not trained``, with their K-sample statistics (``board.json``:
  ``kind``, ``label``, ``sampling``; ``board.md``: a table of them and one of their statistics); they are
  scored as trained entries' runs are, one run per task, and left out of the probability of improvement.
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

from leaderboard import scoring, verify
from leaderboard.boards import (
    Board,
    BoardsError,
    add_boards_argument,
    boards,
    load_boards_files,
    registered_id,
    task_metrics,
)
from leaderboard.entry import entry_file_name, load_entry, runs_digest
from leaderboard.entry_checks import entry_flags
from leaderboard.entry_schema import MIN_RUNS, EntryError
from leaderboard.messages import shown
from leaderboard.numbers import significant
from leaderboard.submit import SubmitError, build_entry
from lm_gym.core.errors import LMGymError
from lm_gym.results import RESULT_FILE, load_result
from lm_gym.results.stats import escape_markdown, format_estimate, markdown_table, parse_reps

PAGE_TEMPLATE = Path(__file__).with_name("page.html")
SAME_ENTRY = "same entry"  # the improvement matrix's diagonal
EVALUATION_LABEL = "evaluated, not trained"  #: how the board marks an evaluation entry's rows
EVALUATION_NOTE = (
    "A model evaluated as it is (python -m benchmark evaluate): one evaluation per task of the board's episodes, "
    "K samples of each, scored as the trained entries' runs are; shown apart and left out of the probability of "
    "improvement, which compares distributions over training seeds."
)


DEFAULT_VERIFICATIONS = Path(__file__).with_name("verifications")  #: verify's records of the accepted entries


class CompileError(LMGymError, ValueError):
    """Inputs that do not make a board."""


def collect_entries(paths: Sequence[str | Path], verifications: str | Path | None = None) -> list[dict[str, Any]]:
    """Entries from entry files, folders of entries and run folders (see the module docstring).

    Entry files are validated but their samples not replayed again (``validate --accept-into`` re-scored them).
    Entries with the same runs (:func:`leaderboard.entry.runs_digest`) are shown once: the earliest dated, of
    equal dates the first read (the inputs in order, a folder's files by name); a note names each left out.
    An entry whose verification record in ``verifications`` says its re-run disagrees is left out (a note)."""
    found: list[tuple[str, dict[str, Any]]] = []  # (where it came from, for the notes; the entry)
    for path in map(Path, paths):
        if path.is_file():
            found.append((str(path), load_entry(path, rescore=False)))
        elif path.is_dir() and any(path.rglob(RESULT_FILE)):
            found += [(f"the runs of {path} ({shown(entry['name'])})", entry) for entry in entries_from_runs(path)]
        elif path.is_dir():
            found += [(str(file), load_entry(file, rescore=False)) for file in sorted(path.glob("*.json"))]
        else:
            raise CompileError(f"{path}: no such file or folder")
    entries = []
    for entry in _without_copies(found):
        record = verify.read_record(entry, verifications)
        if record is not None and record.get("agrees") is False:
            print(
                f"note: {entry_file_name(entry)} left out: its re-run disagrees ({verify.record_name(entry)})",
                file=sys.stderr,
            )
        else:
            entries.append(entry)
    return entries


def _without_copies(found: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The entries of ``found``, each set of runs once (see :func:`collect_entries`), in their order."""
    first_of_runs: dict[str, int] = {}  # runs digest -> index in found of the entry shown
    # a stable sort: of equal dates, the first read comes first
    for index in sorted(range(len(found)), key=lambda index: found[index][1]["date"]):
        source, entry = found[index]
        digest = runs_digest(entry)
        if digest in first_of_runs:
            first_source, first = found[first_of_runs[digest]]
            print(
                f"note: {source} left out: the same runs as {first_source} ({shown(first['name'])}, {first['date']}), "
                "which the board shows (of entries with the same runs, the earliest dated is kept)",
                file=sys.stderr,
            )
        else:
            first_of_runs[digest] = index
    return [found[index][1] for index in sorted(first_of_runs.values())]


def entries_from_runs(runs_dir: Path) -> list[dict[str, Any]]:
    """One entry per algorithm of the runs under ``runs_dir``, as many tasks and seeds as there are; one note per
    board names the tasks of the runs that the board does not score (their runs are left out)."""
    results = [load_result(file.parent) for file in runs_dir.rglob(RESULT_FILE)]
    algorithms = sorted({result["algorithm"] for result in results})
    entries = [
        build_entry([runs_dir], name=f"{algorithm} ({runs_dir.name})", algorithm=algorithm, partial=True)
        for algorithm in algorithms
    ]
    left_out: dict[str, set[str]] = {}
    for algorithm, entry in zip(algorithms, entries):
        tasks = {registered_id(result["env_id"]) for result in results if result["algorithm"] == algorithm}
        left_out.setdefault(entry["board"], set()).update(tasks - set(boards()[entry["board"]].tasks))
    for board, tasks in left_out.items():
        if tasks:
            print(
                f"note: board {board} does not score {', '.join(sorted(tasks))}: their runs are left out",
                file=sys.stderr,
            )
    return entries


def compile_board(
    entries: list[dict[str, Any]],
    out_dir: Path,
    *,
    board: str | None = None,
    reps: int = 2000,
    poi_reps: int = 200,
    seed: int = 0,
    verifications: str | Path | None = None,
) -> dict[str, Any]:
    """Write ``board.json``, ``board.md``, ``plots/`` and ``index.html`` to ``out_dir``; returns the board data.

    ``verifications``: the folder of ``verify``'s records, which mark entries "verified (n seeds re-run)"."""
    board_name = _one_board(entries, board)
    entries = [entry for entry in entries if entry["board"] == board_name]
    names = _unique_names(entries)
    points = scoring.load_reference_points(board_name)
    tasks, splits = list(boards()[board_name].tasks), task_metrics(board_name)
    # a board of your own may lack reference points: those tasks get raw metrics and, for scores, the reason
    unscored = {
        kind: {
            env_id: missing
            for env_id in scoring.scored_tasks(board_name, kind)
            if (missing := scoring.unscored_metrics(board_name, env_id, points, kind))
        }
        for kind in scoring.KINDS
    }
    data: dict[str, Any] = {
        "board": {"name": board_name, "description": boards()[board_name].description},
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "statistics": (
            f"Scores: each metric normalised by {_normalised_by(boards()[board_name])}, averaged per run; over runs "
            f"and tasks the mean and the interquartile "
            f"mean (IQM) with 95% stratified bootstrap confidence intervals (rliable, {reps} resamples). Raw metrics: "
            f"mean over seeds with a 95% bootstrap interval. With fewer than {MIN_RUNS} seeds a number is the point "
            f"estimate alone, marked n=1 (or n=2). Entries without every task, each with the same seeds, have no "
            f"overall score. Probability of improvement: P(a run of the row's entry scores above one of the column's "
            f"on a task), averaged over tasks, ties half (rliable, {poi_reps} resamples)."
        ),
        "tasks": tasks,
        # short names for the page (a board holds one version of a task): lm_gym/IMDB-v0 is IMDB
        "task_labels": {env_id: re.sub(r"-v\d+$", "", env_id.removeprefix("lm_gym/")) for env_id in tasks},
        "metrics": {env_id: [*splits[env_id].task, *splits[env_id].naturalness] for env_id in tasks},
        "entries": [],
    }
    for index, (name, entry) in enumerate(zip(names, entries)):
        data["entries"].append(_entry_data(f"e{index}", name, entry, points, reps, seed, unscored))
        data["entries"][-1]["verification"] = verify.verification_label(verify.read_record(entry, verifications))
        data["entries"][-1]["flags"] = entry_flags(entry)
    # rliable's probability of improvement is over the task scores of every task, between distributions of
    # training runs: an evaluation entry's one evaluation per task is no such distribution
    trained = [(entry, item) for entry, item in zip(entries, data["entries"]) if item["kind"] == "trained"]
    scored = [] if unscored["task"] else trained
    data["improvement"] = _improvement(
        [entry for entry, _ in scored], [item for _, item in scored], points, poi_reps, seed
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    data["plots"] = _plots(entries, data, out_dir, tasks)
    (out_dir / "board.json").write_text(json.dumps(data, indent=1, allow_nan=False))
    (out_dir / "board.md").write_text(to_markdown(data))
    (out_dir / "index.html").write_text(PAGE_TEMPLATE.read_text().replace("__BOARD_DATA__", _script_json(data)))
    return data


def _entry_data(
    entry_id: str,
    name: str,
    entry: dict[str, Any],
    points,
    reps: int,
    seed: int,
    unscored: dict[str, dict[str, tuple[str, ...]]],
) -> dict[str, Any]:
    """The entry's numbers; ``unscored``: ``{kind: {env_id: its metrics of that kind without reference points}}``."""
    tasks = entry["tasks"]
    seeds = sorted({run["seed"] for task in tasks.values() for run in task["runs"]})
    overall: dict[str, Any] = {}
    per_task: dict[str, dict[str, Any]] = {
        env_id: {"num_runs": len(task["runs"]), "naturalness_score": {"reason": "no naturalness metric"}}
        for env_id, task in tasks.items()
    }
    missing = None if scoring.is_complete(entry, min_runs=1) else _why_no_overall_score(entry)
    for kind in scoring.KINDS:
        scorable = entry
        if unscored[kind]:  # score the tasks with reference points; the others' scores are a reason
            scorable = {
                **entry,
                "tasks": {env_id: task for env_id, task in tasks.items() if env_id not in unscored[kind]},
            }
            for env_id in tasks.keys() & unscored[kind].keys():
                reason = scoring.no_points_reason(entry["board"], env_id, unscored[kind][env_id])
                per_task[env_id][f"{kind}_score"] = {"reason": reason}
        scores = scoring.aggregate({name: scorable}, kind=kind, reps=reps, seed=seed, points=points)[name]
        for statistic in ("mean", "iqm"):
            reason = (
                missing
                or _no_points_overall(unscored[kind])
                or (None if scores["tasks"] else f"no {kind} metric on this board")
            )
            overall[f"{kind}_{statistic}"] = {"reason": reason} if reason else _number(scores[statistic], len(seeds))
        for env_id, item in scores["per_task"].items():
            per_task[env_id][f"{kind}_score"] = _number({"value": item["mean"], "ci": item["ci"]}, item["num_runs"])
    for env_id, metrics in scoring.metric_summaries(entry, reps=reps, seed=seed).items():
        per_task[env_id]["metrics"] = {
            metric: _number({"value": item["mean"], "ci": item["ci"]}, item["num_runs"])
            for metric, item in metrics.items()
        }
    return {
        "id": entry_id,
        "name": name,
        "method": entry["method"],
        "model": entry["model"],
        "description": entry["description"],
        "seeds": seeds,
        "library_version": entry["library_version"],
        "git_commit": entry["git_commit"],
        "config_hash": entry["config_hash"],
        "date": entry["date"],
        "source": boards()[entry["board"]].source,
        "overall": overall,
        "tasks": per_task,
        "samples": {env_id: task["runs"][0].get("samples", []) for env_id, task in tasks.items()},
        # an evaluation entry's rows stand apart from the trained ones (docs/leaderboard.md, "Evaluation entries")
        "kind": "evaluation" if "evaluation" in entry else "trained",
        "label": EVALUATION_LABEL if "evaluation" in entry else "trained",
        "sampling": {
            env_id: task["runs"][0]["sampling"] for env_id, task in tasks.items() if "sampling" in task["runs"][0]
        },
    }


def _improvement(
    entries: list[dict[str, Any]], items: list[dict[str, Any]], points, reps: int, seed: int
) -> dict[str, Any]:
    """``{"entries": [ids], "matrix": {row id: {column id: {"value", "ci", "n"}}}}``: P(row > column) on
    task scores, for the entries with an overall score; each pair is resampled once (the other order
    is 1 - it); ``n`` is the smaller number of seeds of the two."""
    complete = [(entry, item) for entry, item in zip(entries, items) if scoring.is_complete(entry, min_runs=1)]
    matrix: dict[str, dict[str, Any]] = {item["id"]: {} for _, item in complete}
    for index, (entry_x, x) in enumerate(complete):
        for entry_y, y in complete[index + 1 :]:
            estimate = scoring.probability_of_improvement(entry_x, entry_y, reps=reps, seed=seed, points=points)
            runs = min(len(x["seeds"]), len(y["seeds"]))
            ci = None if estimate["ci"] is None else [1 - estimate["ci"][1], 1 - estimate["ci"][0]]
            matrix[x["id"]][y["id"]] = _number(estimate, runs)
            matrix[y["id"]][x["id"]] = _number({"value": 1 - estimate["value"], "ci": ci}, runs)
    return {"entries": [item["id"] for _, item in complete], "matrix": matrix}


def _plots(entries: list[dict[str, Any]], data: dict[str, Any], out_dir: Path, tasks: list[str]) -> dict[str, Any]:
    """The figures, under file names made here (never from entry text)."""
    # matplotlib takes a while to import: only the command that draws loads it
    from leaderboard import plots

    folder = out_dir / "plots"
    folder.mkdir(exist_ok=True)
    curves = {}
    for index, env_id in enumerate(tasks):
        path = plots.learning_curves(entries, env_id, folder / f"curves-{index}.png")
        if path is not None:
            curves[env_id] = f"plots/{path.name}"
    scored = [(item, item["overall"]["task_iqm"]) for item in data["entries"] if "value" in item["overall"]["task_iqm"]]
    scores = None
    if scored:
        bars = [
            plots.Bar(
                item["name"], item["method"], iqm["value"], None if iqm["ci"] is None else tuple(iqm["ci"]), iqm["n"]
            )
            for item, iqm in scored
        ]
        plots.score_bars(bars, f"task score (IQM; 95% CI from {MIN_RUNS} seeds on)", folder / "scores.png")
        scores = "plots/scores.png"
    return {"curves": curves, "scores": scores}


def to_markdown(data: dict[str, Any]) -> str:
    """The overall table, then a table per task (scores and raw metrics, value [95% CI] or value (n=1))."""
    lines = [f"# lm-gym leaderboard: {data['board']['name']}", "", escape_markdown(data["board"]["description"]), ""]
    lines += [data["statistics"], ""]
    header = [
        "entry",
        "method",
        "model",
        "seeds",
        "task score (IQM)",
        "task score (mean)",
        "naturalness (IQM)",
        "verification",
    ]
    for kind, title in (("trained", None), ("evaluation", "Evaluated, not trained (zero-shot)")):
        rows = [
            [
                item["name"],
                item["method"],
                item["model"],
                str(len(item["seeds"])),
                *(_cell(item["overall"][key]) for key in ("task_iqm", "task_mean", "naturalness_iqm")),
                item.get("verification", "not verified"),
            ]
            for item in data["entries"]
            if item["kind"] == kind
        ]
        if rows and title:
            lines += ["", f"## {title}", "", EVALUATION_NOTE, ""]
        lines += markdown_table(header, rows) if rows else []
    lines += _sampling_markdown(data)
    lines += _improvement_markdown(data)
    for env_id in data["tasks"]:
        metrics = data["metrics"][env_id]
        rows = [
            [
                item["name"] + (f" ({EVALUATION_LABEL})" if item["kind"] == "evaluation" else ""),
                str(task["num_runs"]),
                _cell(task["task_score"]),
                _cell(task["naturalness_score"]),
                *(_cell(task["metrics"][name]) for name in metrics),
            ]
            for item in data["entries"]
            if (task := item["tasks"].get(env_id)) is not None
        ]
        header = ["entry", "runs", "task score", "naturalness", *metrics]
        lines += ["", f"## {env_id}", "", *markdown_table(header, rows)]
    return "\n".join(lines) + "\n"


def _sampling_markdown(data: dict[str, Any]) -> list[str]:
    """The evaluation entries' K-sample statistics, a row per entry and task."""
    rows = [
        [
            item["name"],
            data["task_labels"][env_id],
            str(sampling["samples_per_episode"]),
            ", ".join(f"{key} {value:.4g}" for key, value in sorted(sampling["statistics"].items())),
            str(sampling["malformed_replies"]),
        ]
        for item in data["entries"]
        for env_id, sampling in item["sampling"].items()
    ]
    if not rows:
        return []
    table = markdown_table(["entry", "task", "samples per episode (K)", "statistics", "malformed replies"], rows)
    return ["", "## K-sample statistics of the evaluations", "", *table]


def _improvement_markdown(data: dict[str, Any]) -> list[str]:
    ids = data["improvement"]["entries"]
    if len(ids) < 2:
        return []
    names = {item["id"]: item["name"] for item in data["entries"]}
    matrix = data["improvement"]["matrix"]
    rows = [[names[row], *(SAME_ENTRY if row == col else _cell(matrix[row][col]) for col in ids)] for row in ids]
    table = markdown_table(["", *(names[i] for i in ids)], rows)
    return ["", "## Probability of improvement (row over column, task scores)", "", *table]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``compile`` command's arguments (``python -m leaderboard``'s parser)."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="ENTRIES_OR_RUNS",
        help="entry files, folders of entries (leaderboard/entries), run folders (runs/smoke)",
    )
    parser.add_argument("--out", required=True, help="output folder: board.json, board.md, plots/, index.html")
    parser.add_argument(
        "--board",
        help="the board to compile (default: every board of the inputs, each into OUT/<board>/ when there are several)",
    )
    parser.add_argument(
        "--reps", type=parse_reps, default=2000, help="bootstrap resamples of the scores and metrics (default: 2000)"
    )
    parser.add_argument(
        "--poi-reps",
        type=parse_reps,
        default=200,
        help="bootstrap resamples of each probability of improvement, about 1 s per 100 per pair of "
        "entries (default: 200; 2000 for a published board)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument(
        "--verifications",
        type=Path,
        default=DEFAULT_VERIFICATIONS if DEFAULT_VERIFICATIONS.is_dir() else None,
        metavar="DIR",
        help="the records of python -m leaderboard verify --record-into (default: leaderboard/verifications)",
    )
    add_boards_argument(parser)


def run(args: argparse.Namespace) -> int:
    """The ``compile`` command; returns the exit status."""
    out = Path(args.out)
    try:
        load_boards_files(args.boards)
        entries = collect_entries(args.inputs, args.verifications)
        names = [args.board] if args.board else sorted({entry["board"] for entry in entries}) or [None]
        for name in names:
            folder = out / name if len(names) > 1 else out
            data = compile_board(
                entries,
                folder,
                board=name,
                reps=args.reps,
                poi_reps=args.poi_reps,
                seed=args.seed,
                verifications=args.verifications,
            )
            print(
                f"{len(data['entries'])} entries on board {data['board']['name']}: "
                f"open {folder.resolve() / 'index.html'}"
            )
            user_board = boards()[data["board"]["name"]].defined_in is not None
            for env_id in data["tasks"] if user_board else ():
                if not any(env_id in item["tasks"] for item in data["entries"]):
                    print(f"note: board {data['board']['name']} has no runs of {env_id}", file=sys.stderr)
    except (BoardsError, CompileError, EntryError, SubmitError, scoring.ScoringError) as error:
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
        entry["name"]
        if counts[entry["name"]] == 1
        else f"{entry['name']} #{hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:6]}"
        for entry in entries
    ]


def _number(statistic: dict[str, Any], runs: int) -> dict[str, Any]:
    """A number of the board: ``{"value", "ci", "n"}`` (``n``: the seeds it comes from)."""
    return {"value": statistic["value"], "ci": statistic["ci"], "n": runs}


def _no_points_overall(unscored: dict[str, tuple[str, ...]]) -> str | None:
    """The overall score's reason when tasks of the board lack reference points (None: none does)."""
    if not unscored:
        return None
    listed = [f"{env_id} {', '.join(metrics)}" for env_id, metrics in list(unscored.items())[:2]]
    more = f"; {len(unscored) - 2} more tasks" if len(unscored) > 2 else ""
    return f"no reference points for {'; '.join(listed)}{more}"


def _normalised_by(board: Board) -> str:
    if board.defined_in is None:
        return "the task's reference points (0: uniformly random tokens, 1: the references or the scripted expert)"
    return (
        f"the reference points of the board's file, {board.defined_in.name} (0 at low, 1 at high; a metric without "
        f"them has its raw values only, and the scores it would enter say why)"
    )


def _why_no_overall_score(entry: dict[str, Any]) -> str:
    tasks = boards()[entry["board"]].tasks
    done = sum(env_id in entry["tasks"] for env_id in tasks)
    return f"only {done} of {len(tasks)} tasks" if done < len(tasks) else "seeds differ by task"


def _cell(number: dict[str, Any]) -> str:
    """A number as 3 significant digits with its interval, or marked n=1 without one; else its reason."""
    if "reason" in number:
        return number["reason"]
    text = format_estimate(number["value"], number["ci"], significant)
    return text if number["ci"] is not None else f"{text} (n={number['n']})"


def _script_json(data: dict[str, Any]) -> str:
    """JSON for a ``<script type="application/json">`` element: ``<``, ``>`` and ``&`` escaped, so that
    no text (``</script>``, ``<!--``) can end the element early."""
    return json.dumps(data, allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
