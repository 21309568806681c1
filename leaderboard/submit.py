"""Build a leaderboard entry from run folders: ``python -m leaderboard submit``.

Command line::

    python -m leaderboard submit RUN_DIRS... --name NAME [--algorithm A] [--board B]
                                 [--method M] [--model X] [--description D] [--boards FILE] --out entry.json

:func:`build_entry` reads every ``result.json`` under the folders (at any depth, with
:func:`lm_gym.results.load_result`; a file that does not load is an error, since leaving a seed
out silently would change the entry) and builds the entry of ``leaderboard/README.md``:

* **algorithm**: the runs of ``--algorithm``; without it the folders must hold one algorithm.
* **board**: ``--board``, else the board of the runs' suite whose tasks include every task of the
  runs (the ``offline`` suite's runs go to ``offline-text`` or ``offline-games``): the suite a
  harness run's job record names (``harness_job.json``), a folder on the path of another run
  (``runs/smoke/...``); with ``--boards FILE`` (boards over your own tasks), failing that, the one
  of the file's boards that has them. Every task of the board needs
  runs, no other task may have any, and every final evaluation played the board's
  ``eval_episodes`` episodes.
* **seeds**: at least 3 (at most 20) per task, distinct, and the same seeds for every task.
* **config**: the runs of a task must share one config once what differs per run by design is
  removed: ``seed``, the paths and bookkeeping (:data:`PER_RUN_CONFIG_KEYS`) and every value
  that names an existing path under the run folders. ``config_hash`` is the SHA-256 of the
  canonical JSON of ``{env_id: config}`` so stripped.
* **library_version** and **git_commit**: one lm-gym version and one commit for all runs.
* **model** (unless ``--model``), in words: ``model_name`` and ``pretrained``; or the
  architecture of ``model_config`` and ``random init``; or, for ``init_from``, the checkpoint's
  architecture and the algorithm of the run that wrote it when the checkpoint lies in the
  folders (``GPT-2 (1 layer, width 64), warm start from sft``), else ``warm start from a
  checkpoint``. Where the tasks differ, the most common description, the others' in brackets.
* per run: ``final_eval``, ``initial_eval`` and ``wall_time_s`` as in ``result.json``; the
  ``curve``, ``[step, mean_return]`` of the evaluation rows of ``curves`` (``eval/mean_return``;
  the training rows' ``mean_return`` for a run that evaluated once or never), evenly thinned to at
  most 200 points, first and last kept; ``samples``, the first 5 of ``result.json``'s
  ``samples`` when it has them, their texts cleaned of refused characters and cut to 2,000.

**Evaluation runs** (``python -m benchmark evaluate``, algorithm ``eval``) make an evaluation entry
(:mod:`leaderboard.evaluations`): one run per task, its K-sample statistics, and an ``evaluation`` from the
runs' configs in place of the recipe; the board is the one of the suite their command names. Evaluation and
training runs in the folders without ``--algorithm`` are refused: an entry is one or the other.

The entry is validated (:func:`leaderboard.entry_checks.validate_entry`) before it is returned, and the
command writes its canonical JSON; it warns (stderr) when the runs' commit is ``-dirty``: made by a working tree
with uncommitted changes, which no one can check out to re-run them. Exit status: 0 written, 1 the runs do not
make an entry (the message says why), 2 a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from leaderboard.boards import Board, add_boards_argument, boards, load_boards_files, registered_id, task_metrics, where
from leaderboard.entry import write_entry
from leaderboard.entry_checks import validate_entry
from leaderboard.entry_schema import (
    MAX_CURVE_POINTS,
    MAX_RUNS,
    MAX_SAMPLES,
    MIN_RUNS,
    MODEL_LENGTH,
    SCHEMA_VERSION,
    TEXT_LENGTH,
    EntryError,
    canonical_json,
)
from leaderboard.evaluations import (
    EvaluationRunsError,
    evaluation_model,
    evaluation_of_runs,
    is_evaluation,
    suite_of_command,
)
from leaderboard.recipe import build_recipe
from leaderboard.replay import EVAL_SEED
from leaderboard.texts import LINE_REFUSED_CHARACTERS, sample_text
from lm_gym.core.errors import LMGymError
from lm_gym.results import RESULT_FILE, ResultFormatError, load_result
from lm_gym.results.harness_job import HarnessJobError, read_harness_job
from lm_gym.results.run_result import EVALUATION_ALGORITHM

DIRTY_SUFFIX = "-dirty"  #: how result.json's git_commit marks a working tree with uncommitted changes
#: config keys that differ between the seeds of one experiment by design (paths, logging, device)
PER_RUN_CONFIG_KEYS = ("seed", "out_dir", "init_from", "dataset", "resume", "track", "wandb_project", "device")

Run = tuple[Path, dict[str, Any]]  # a result.json's path and its content
_ABSENT = object()  # a config key one run lacks differs from any value, null included
MODEL_TYPE_NAMES = {"gpt2": "GPT-2", "t5": "T5"}  #: ``model_config``'s ``model_type`` in words (others as written)


class SubmitError(LMGymError, ValueError):
    """Run folders that do not make a leaderboard entry; the message says which runs and why."""


def build_entry(
    run_dirs: Iterable[str | Path],
    *,
    name: str,
    algorithm: str | None = None,
    board: str | None = None,
    method: str | None = None,
    model: str | None = None,
    description: str = "",
    partial: bool = False,
) -> dict[str, Any]:
    """The entry of ``algorithm``'s runs under ``run_dirs``; raises :class:`SubmitError` if they do not make one.

    ``partial``: the board of a runs folder (``compile``), not a submission: any number of seeds
    per task and the tasks the runs have (the entry then has per-task scores only)."""
    run_dirs = [Path(run_dir) for run_dir in run_dirs]
    runs = _runs_of_algorithm(_load_runs(run_dirs), algorithm)
    evaluated = is_evaluation(runs[0][1])  # one algorithm: all of them evaluations, or none
    board = board or _board_of_runs(runs, partial)
    by_task = _runs_by_task(runs, board, partial)
    _check_seeds(by_task, partial, evaluated)
    _check_evaluations(by_task, boards()[board])
    roots = [run_dir.resolve() for run_dir in run_dirs]
    configs = {env_id: _shared_config(env_id, task_runs, roots) for env_id, task_runs in by_task.items()}
    entry = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "method": method or runs[0][1]["algorithm"],
        "model": model or _model_from_configs(by_task, roots, evaluated),
        "description": description,
        "board": board,
        "library_version": _shared_value(
            runs, "used different lm-gym versions", lambda result: result["versions"]["lm_gym"], partial
        ),
        "git_commit": _shared_value(
            runs, "come from different lm-gym commits", lambda result: result["git_commit"], partial
        ),
        "config_hash": hashlib.sha256(canonical_json(configs).encode()).hexdigest(),
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "tasks": {
            env_id: {"runs": [_entry_run(result) for _, result in task_runs]} for env_id, task_runs in by_task.items()
        },
    }
    if partial:  # built from result.json files, which were validated; the counts of a submission do not apply
        if evaluated:  # a runs folder's evaluations get their own rows on its board, as entries' do
            with contextlib.suppress(EvaluationRunsError):
                entry["evaluation"] = evaluation_of_runs(by_task)
        return entry
    try:
        recipe = evaluation_of_runs(by_task) if evaluated else build_recipe(by_task)
    except (HarnessJobError, EvaluationRunsError) as error:
        raise SubmitError(str(error)) from None
    if recipe is not None:
        entry["evaluation" if evaluated else "recipe"] = recipe
    try:
        validate_entry(entry, rescore=False)  # validate re-scores the samples; submit builds from the runs at hand
    except EntryError as error:
        raise SubmitError(f"the entry built from the runs is invalid: {error}") from None
    return entry


def add_submit_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``submit`` command's arguments (``python -m leaderboard``'s parser)."""
    parser.add_argument(
        "run_dirs", nargs="+", type=Path, metavar="RUN_DIRS", help="folders holding result.json files, at any depth"
    )
    parser.add_argument("--name", required=True, help="the entry's display name (1-100 printable characters)")
    parser.add_argument("--algorithm", help="the runs' algorithm (needed when the folders hold several)")
    parser.add_argument(
        "--board",
        help=(
            f"the board, one of {', '.join(sorted(boards()))} or one of --boards (default: the board of the runs' "
            "suite, named by their harness_job.json or a folder on their paths, that has the runs' tasks)"
        ),
    )
    parser.add_argument("--method", help="the method's name (default: the algorithm)")
    parser.add_argument("--model", help="the policy (default: from the runs' configs)")
    parser.add_argument("--description", default="", help="free text, at most 2000 characters")
    parser.add_argument("--out", type=Path, required=True, help="the entry file to write")
    add_boards_argument(parser)


def run_submit(args: argparse.Namespace) -> int:
    """The ``submit`` command; returns the exit status."""
    try:
        load_boards_files(args.boards)
    except LMGymError as error:
        print(f"python -m leaderboard submit: error: {error}", file=sys.stderr)
        return 2
    if args.board is not None and args.board not in boards():
        choices = ", ".join(repr(name) for name in sorted(boards()))
        print(
            f"python -m leaderboard submit: error: argument --board: invalid choice: {args.board!r} "
            f"(choose from {choices})",
            file=sys.stderr,
        )
        return 2
    try:
        entry = build_entry(
            args.run_dirs,
            name=args.name,
            algorithm=args.algorithm,
            board=args.board,
            method=args.method,
            model=args.model,
            description=args.description,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_entry(entry, args.out)
    except (LMGymError, OSError) as error:
        print(f"python -m leaderboard submit: error: {error}", file=sys.stderr)
        return 1
    seeds = len(next(iter(entry["tasks"].values()))["runs"])
    print(f"wrote {args.out}: {entry['method']} on board {entry['board']}, {len(entry['tasks'])} tasks x {seeds} seeds")
    if str(entry["git_commit"]).endswith(DIRTY_SUFFIX):
        print(
            f"python -m leaderboard submit: warning: the runs come from lm-gym {entry['git_commit']}, a working tree "
            "with uncommitted changes: no commit holds the code that made them, so no one can re-run the entry as it "
            "ran (verify compares exactly only on the same code). For an entry others can verify, commit, re-run the "
            "jobs from a clean checkout and submit again.",
            file=sys.stderr,
        )
    return 0


def _load_runs(run_dirs: list[Path]) -> list[Run]:
    found: dict[Path, Path] = {}  # by resolved path: overlapping folders must not count a run twice
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise SubmitError(f"{run_dir}: not a folder")
        for path in sorted(run_dir.rglob(RESULT_FILE)):
            if path.is_file():
                found.setdefault(path.resolve(), path)
    if not found:
        raise SubmitError(f"no {RESULT_FILE} under {', '.join(map(str, run_dirs))}")
    runs = []
    for path in found.values():
        try:
            runs.append((path, load_result(path)))
        except ResultFormatError as error:
            raise SubmitError(str(error)) from None
    return runs


def _runs_of_algorithm(runs: list[Run], algorithm: str | None) -> list[Run]:
    found = sorted({result["algorithm"] for _, result in runs})
    if algorithm is None:
        evaluations = [path for path, result in runs if is_evaluation(result)]
        if evaluations and len(evaluations) < len(runs):
            trained = ", ".join(name for name in found if name != EVALUATION_ALGORITHM)
            raise SubmitError(
                f"the folders hold evaluation runs (python -m benchmark evaluate, e.g. {evaluations[0]}) and training "
                f"runs ({trained}): an entry is a model evaluated or a method trained, never both; submit them as "
                f"two entries (--algorithm {EVALUATION_ALGORITHM}, or --algorithm with the training algorithm)"
            )
        if len(found) > 1:
            raise SubmitError(
                f"the folders hold runs of several algorithms ({', '.join(found)}): pick one with --algorithm"
            )
        return runs
    kept = [(path, result) for path, result in runs if result["algorithm"] == algorithm]
    if not kept:
        raise SubmitError(f"no runs of algorithm {algorithm!r} in the folders (found: {', '.join(found)})")
    return kept


def _board_of_runs(runs: list[Run], partial: bool = False) -> str:
    """The board of the suite (or board) the runs name that has every task of the runs (``partial``, a runs
    folder's board: the one that has most of them, when no board has all). A run of the harness names its suite
    in its job record; another run (or one of a harness older than the records' fields) by a folder on its path."""
    parts = {name for path, result in runs for name in _suite_names(path.parent, result)}
    named = [board for board in boards().values() if board.name in parts or board.suite in parts]
    if not named:  # boards of your own (--boards) need no folder named after them
        named = [board for board in boards().values() if board.defined_in is not None]
    if not named:
        raise SubmitError(
            "cannot tell the board from the folders or the job records "
            f"(none is named after a suite or board: {', '.join(sorted(boards()))}): pass --board"
        )
    tasks = {result["env_id"] for _, result in runs}
    found = [board.name for board in named if tasks <= set(board.tasks)]
    if len(found) == 1:
        return found[0]
    if not found and len(named) == 1 and named[0].defined_in is not None:
        return named[0].name  # a board of your own: the error names the tasks it lacks, and where they are listed
    if not found and partial:  # e.g. the smoke suite runs TextGeneration and Mixture, which its board does not score
        overlap = {board.name: len(tasks & set(board.tasks)) for board in named if board.defined_in is None}
        best = [name for name, count in overlap.items() if count and count == max(overlap.values())]
        if len(best) == 1:
            return best[0]
    if not found:
        raise SubmitError(
            f"no board among {', '.join(board.name for board in named)} has every task of the runs "
            f"({', '.join(sorted(tasks))}): pass --board"
        )
    raise SubmitError(f"the runs fit several boards ({', '.join(found)}): pass --board")


def _suite_names(run_dir: Path, result: dict[str, Any]) -> set[str]:
    """The suite a run's job record names (an evaluation's: its command's --suite); without a record that names
    one, the folders on the run's path."""
    suite = suite_of_command(result["config"]) if is_evaluation(result) else None
    if suite is not None:
        return {suite}
    try:
        return {read_harness_job(run_dir).suite}
    except HarnessJobError:
        return set(run_dir.parts)


def _runs_by_task(runs: list[Run], board: str, partial: bool = False) -> dict[str, list[Run]]:
    """The runs of each task of ``board``, in board order, each task's runs sorted by seed."""
    if board not in boards():
        raise SubmitError(f"unknown board {board!r} (boards: {', '.join(sorted(boards()))})")
    by_task: dict[str, list[Run]] = defaultdict(list)
    for path, result in runs:
        by_task[registered_id(result["env_id"])].append((path, result))
    tasks = boards()[board].tasks
    defined_in = boards()[board].defined_in
    # a board of your own: where its tasks are listed
    listed = "" if defined_in is None else f" ({where(board, 'env_kwargs')} of {defined_in})"
    others = sorted(set(by_task) - set(tasks))
    if others and partial and defined_in is None:  # a runs folder's board scores the tasks it has (compile notes it)
        by_task = {env_id: task_runs for env_id, task_runs in by_task.items() if env_id in tasks}
    elif others:
        raise SubmitError(
            f"runs of tasks that are not on board {board}: {', '.join(others)} (e.g. {by_task[others[0]][0][0]})"
            + listed
        )
    missing = [env_id for env_id in tasks if env_id not in by_task]
    if missing and not partial:
        raise SubmitError(f"no runs of {', '.join(missing)}: board {board} needs every one of its tasks" + listed)
    return {env_id: sorted(by_task[env_id], key=lambda run: run[1]["seed"]) for env_id in tasks if env_id in by_task}


def _check_seeds(by_task: dict[str, list[Run]], partial: bool = False, evaluated: bool = False) -> None:
    for env_id, runs in by_task.items():
        path_of_seed: dict[int, Path] = {}
        for path, result in runs:
            if result["seed"] in path_of_seed:
                raise SubmitError(
                    f"{env_id}: two runs of seed {result['seed']}: {path_of_seed[result['seed']]} and {path}"
                )
            path_of_seed[result["seed"]] = path
        if partial:
            continue
        if evaluated and len(runs) > 1:
            raise SubmitError(
                f"{env_id}: {len(runs)} evaluations ({', '.join(map(str, path_of_seed.values()))}); an evaluation "
                "entry holds one per task, of the board's episodes"
            )
        if not evaluated and not MIN_RUNS <= len(runs) <= MAX_RUNS:
            seeds = ", ".join(map(str, path_of_seed))
            raise SubmitError(
                f"{env_id}: {len(runs)} seeds ({seeds}); an entry needs {MIN_RUNS} to {MAX_RUNS} per task"
            )
    if partial:
        return
    seeds_of_task = {env_id: [result["seed"] for _, result in runs] for env_id, runs in by_task.items()}
    first, *others = seeds_of_task
    for env_id in others:
        if seeds_of_task[env_id] != seeds_of_task[first]:
            raise SubmitError(
                f"the tasks have different seeds ({first}: {seeds_of_task[first]}, {env_id}: {seeds_of_task[env_id]}):"
                " every task needs the same seeds"
            )


def _check_evaluations(by_task: dict[str, list[Run]], board: Board) -> None:
    """Every run evaluated its final policy on the metrics the board scores, over the board's episodes (its
    number of them, from ``--eval-seed`` 0; named by file, unlike the entry's check)."""
    for env_id, runs in by_task.items():
        split = task_metrics(board.name).get(env_id)
        required = (*split.task, *split.naturalness) if split else ()
        for path, result in runs:
            if result["final_eval"] is None:
                raise SubmitError(f"{path}: the run has no final evaluation (final_eval is null)")
            missing = [name for name in required if name not in result["final_eval"]]
            if missing and board.defined_in is not None:  # a board of your own: the key that names them
                raise SubmitError(
                    f"{path}: final_eval lacks {', '.join(missing)}, which {where(board.name, 'metrics', env_id)} of "
                    f"{board.defined_in} names (the run has {', '.join(sorted(result['final_eval']))})"
                )
            if missing:
                raise SubmitError(f"{path}: final_eval lacks {', '.join(missing)}, which the board scores {env_id} on")
            # an evaluation's seed is that of its episodes; a training run's, of its training
            eval_seed = result["seed"] if is_evaluation(result) else result["config"].get("eval_seed", EVAL_SEED)
            if eval_seed != EVAL_SEED:
                raise SubmitError(
                    f"{path}: the final evaluation played the episodes of --eval-seed {eval_seed}; every board scores "
                    f"the same episodes, those of --eval-seed {EVAL_SEED} (episode j reset with seed {EVAL_SEED} + j)"
                )
            samples = (result.get("sampling") or {}).get("samples_per_episode", 1)
            if result["final_eval"]["num_episodes"] != board.eval_episodes * samples:
                raise SubmitError(
                    f"{path}: the final evaluation played {result['final_eval']['num_episodes']} episodes; "
                    f"board {board.name} scores evaluations of {board.eval_episodes} "
                    f"(--eval-episodes {board.eval_episodes}), since corpus metrics such as distinct-2 depend on it"
                )


def _shared_config(env_id: str, runs: list[Run], roots: list[Path]) -> dict[str, Any]:
    """The config the runs of a task share once per-run values are removed; an error names what differs."""
    configs = [(path, _without_per_run_values(result["config"], roots)) for path, result in runs]
    first_path, first = configs[0]
    for path, config in configs[1:]:
        differing = sorted(
            key for key in first.keys() | config.keys() if first.get(key, _ABSENT) != config.get(key, _ABSENT)
        )
        if differing:
            raise SubmitError(
                f"{env_id}: the runs' configs differ in {', '.join(differing)} ({first_path} and {path}):"
                " the seeds of an entry must share one config"
            )
    return first


def _without_per_run_values(config: dict[str, Any], roots: list[Path]) -> dict[str, Any]:
    return {
        key: value
        for key, value in config.items()
        if key not in PER_RUN_CONFIG_KEYS and not _is_path_under(value, roots)
    }


def _is_path_under(value: Any, roots: list[Path]) -> bool:
    """Whether ``value`` names an existing file or folder inside one of ``roots`` (a run's own output)."""
    if not isinstance(value, str) or not value:
        return False
    try:
        path = Path(value).resolve()
        exists = path.exists()
    except (OSError, ValueError):  # not a path at all (a NUL byte, a name too long)
        return False
    return exists and any(path.is_relative_to(root) for root in roots)


def _shared_value(
    runs: list[Run], differ: str, value_of: Callable[[dict[str, Any]], Any], partial: bool = False
) -> Any:
    """The value every run has; a runs folder's board (``partial``) shows the values joined instead of refusing."""
    values = {value_of(result) for _, result in runs}
    if len(values) > 1 and partial:
        return " / ".join(sorted(map(str, values)))[:200]
    if len(values) > 1:
        raise SubmitError(
            f"the runs {differ} ({', '.join(sorted(map(str, values)))}): an entry's runs come from one checkout"
        )
    return values.pop()


def _model_from_configs(by_task: dict[str, list[Run]], roots: list[Path], evaluated: bool = False) -> str:
    if evaluated:
        return _one_line(evaluation_model(next(iter(by_task.values()))[0][1]["config"]), MODEL_LENGTH)
    models = {env_id: _model_of(runs[0][1]["config"], roots) for env_id, runs in by_task.items()}
    if None in models.values():
        env_id = next(env_id for env_id, model in models.items() if model is None)
        raise SubmitError(f"{env_id}: the config names no model (model_name, model_config or init_from): pass --model")
    architectures = {architecture for architecture, _ in models.values()}
    if len(architectures) == 1 and None not in architectures:  # one architecture, started in different ways
        text = f"{architectures.pop()}, {_most_common({env_id: start for env_id, (_, start) in models.items()})}"
    else:
        text = _most_common({env_id: ", ".join(filter(None, model)) for env_id, model in models.items()})
    return _one_line(text, MODEL_LENGTH)


def _most_common(texts: dict[str, str]) -> str:
    """The most common of the tasks' texts (ties: the first in board order), the others' in brackets."""
    common = Counter(texts.values()).most_common(1)[0][0]
    others = [f"{env_id.removeprefix('lm_gym/')}: {text}" for env_id, text in texts.items() if text != common]
    return f"{common} ({'; '.join(others)})" if others else common


def _model_of(config: dict[str, Any], roots: list[Path]) -> tuple[str | None, str] | None:
    """``(architecture or None, start)`` of a run's policy; None: the config names no model."""
    # the baselines' own precedence: a checkpoint to start from, else a hub model, else a fresh one
    if config.get("init_from"):
        model = _warm_start(config["init_from"], roots)
    elif config.get("model_name"):
        model = config["model_name"], "pretrained"
    elif config.get("model_config"):
        model = _describe_model_config(config["model_config"]), "random init"
    else:
        return None
    if config.get("lora_r"):  # the run trained LoRA adapters (baselines' --lora-r), not every weight
        return model[0], f"{model[1]}, LoRA r {config['lora_r']}"
    return model


def _warm_start(init_from: str, roots: list[Path]) -> tuple[str | None, str]:
    """The checkpoint's architecture (its ``config.json``) and the algorithm of the run that wrote it (the
    ``result.json`` beside it), where it is one of the runs' own; else only that it is a warm start."""
    if not _is_path_under(init_from, roots):
        return None, "warm start from a checkpoint"
    checkpoint = Path(init_from)
    if (checkpoint / "adapter_config.json").is_file():  # a LoRA run's: its adapters, the base in base_model/
        checkpoint_config = checkpoint / "base_model" / "config.json"
    else:
        checkpoint_config = checkpoint / "config.json"
    try:
        architecture = _describe_model_config(json.loads(checkpoint_config.read_text()))
        algorithm = load_result(checkpoint.parent)["algorithm"]
    except (OSError, ValueError, ResultFormatError):  # not a checkpoint of a run, or not a readable one
        return None, "warm start from a checkpoint"
    return architecture, f"warm start from {algorithm}"


def _describe_model_config(model_config: Any) -> str:
    """``{"model_type": "gpt2", "n_layer": 1, "n_embd": 64}`` as ``GPT-2 (1 layer, width 64)``; a value
    that is no such JSON object as written."""
    try:
        fields = json.loads(model_config) if isinstance(model_config, str) else model_config
    except json.JSONDecodeError:
        fields = None
    if not isinstance(fields, dict):
        return str(model_config)
    kind = str(fields.get("model_type", "model"))
    layers = next((fields[key] for key in ("n_layer", "num_layers", "num_hidden_layers") if key in fields), None)
    width = next((fields[key] for key in ("n_embd", "d_model", "hidden_size") if key in fields), None)
    sizes = [f"{layers} layer{'' if layers == 1 else 's'}"] if layers is not None else []
    sizes += [f"width {width}"] if width is not None else []
    name = MODEL_TYPE_NAMES.get(kind, kind)
    return f"{name} ({', '.join(sizes)})" if sizes else name


def _entry_run(result: dict[str, Any]) -> dict[str, Any]:
    sampling = result.get("sampling")
    return {
        **({"sampling": _entry_sampling(sampling)} if sampling else {}),
        "seed": result["seed"],
        "final_eval": dict(result["final_eval"]),
        "initial_eval": None if result["initial_eval"] is None else dict(result["initial_eval"]),
        "curve": _curve(result["curves"]),
        "wall_time_s": result["wall_time_s"],
        "samples": [_sample(sample) for sample in (result.get("samples") or [])[:MAX_SAMPLES]],
    }


def _entry_sampling(sampling: dict[str, Any]) -> dict[str, Any]:
    """An evaluation's K-sample statistics as an entry states them."""
    return {
        "samples_per_episode": sampling["samples_per_episode"],
        "statistics": dict(sampling["statistics"]),
        "malformed_replies": sampling["malformed_replies"],
    }


def _curve(rows: list[dict[str, Any]]) -> list[list[float]]:
    # evaluation returns are comparable across algorithms; training rollouts' returns are the fallback
    # for a run that evaluated at its end only (one point is no curve)
    evaluations = sum("eval/mean_return" in row for row in rows)
    key = "eval/mean_return" if evaluations > 1 or not any("mean_return" in row for row in rows) else "mean_return"
    points = [[row["step"], row[key]] for row in rows if key in row]
    if len(points) <= MAX_CURVE_POINTS:
        return points
    last = len(points) - 1
    return [points[round(index * last / (MAX_CURVE_POINTS - 1))] for index in range(MAX_CURVE_POINTS)]


def _sample(sample: dict[str, Any]) -> dict[str, Any]:
    return {
        "prompt": _text(sample.get("prompt", ""), TEXT_LENGTH),
        "generation": _text(sample.get("generation", ""), TEXT_LENGTH),
        "return": sample.get("return"),
    }


def _text(value: Any, limit: int) -> str:
    """``value`` as a multi-line text an entry accepts (``leaderboard.texts.sample_text``: controls as their
    control pictures, so that the sample replays; other refused characters as U+FFFD), cut to ``limit``."""
    return sample_text(value, limit)


def _one_line(value: str, limit: int) -> str:
    text = re.sub(f"[{LINE_REFUSED_CHARACTERS}]", "\ufffd", " ".join(value.split()))
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
