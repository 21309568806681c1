"""Leaderboard entries: their JSON Schema, and reading, checking and accepting untrusted entry files.

An entry is one method's runs on one board (``leaderboard/README.md``, "Entries"). Entries
come from strangers, so everything here treats a file as hostile:

* :func:`load_entry` reads a file safely: a regular file only (not a link, a FIFO or a
  device), at most :data:`MAX_ENTRY_BYTES` (checked before reading, and never more than that
  plus one byte read), UTF-8 only, nested at most :data:`MAX_NESTING` levels (counted on the
  text before parsing, so that no parser recursion depends on the input), JSON only, with no
  duplicated key. ``NaN`` and ``Infinity`` literals (and ``1e400``, which parses to infinity)
  are refused by :func:`validate_entry`, which names the field that holds them.
* :func:`validate_entry` checks an entry against :data:`ENTRY_SCHEMA` (strict: no unknown
  field anywhere; every string bounded and free of control and invisible formatting
  characters; every number finite and within +-1e9) and then what a schema cannot say: the
  entry's tasks are exactly its board's, seeds are distinct within a task and the same across
  tasks (the stratified bootstrap needs as many runs of every task), and every run's
  ``final_eval`` holds the metrics ``boards.toml`` scores its task on, over the board's
  ``eval_episodes`` episodes. A refusal is an
  :class:`EntryError` whose message names each field, e.g.
  ``tasks["lm_gym/IMDB-v0"].runs[2].final_eval.mean_return: nan is not a finite number``.
  Untrusted text in messages is quoted and cut short, so printing one is safe on a terminal.
* :func:`accept_entry` validates a file and writes its canonical form (:func:`canonical_json`:
  sorted keys, compact, UTF-8) into the entries folder under :func:`entry_file_name`: a slug of
  the name plus a hash of the content, so no text of the entry can choose where the file goes.

Names and descriptions may hold any printable text, ``<script>`` included: the board escapes
every text it shows.

Command line (``python -m leaderboard validate``)::

    python -m leaderboard validate ENTRY.json... [--accept-into DIR] [--boards FILE]

(``--boards FILE``: an entry of a board over your own tasks is checked against the file's board.)

prints ``path: valid`` (``, accepted as FILE`` with ``--accept-into``) or ``path: reason``, one
line per file, and exits 0 when every file is valid, 1 otherwise.
"""

from __future__ import annotations

import argparse
import copy
import errno
import functools
import hashlib
import itertools
import json
import math
import os
import re
import stat
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from leaderboard.boards import (
    USER_ENV_ID_PATTERN,
    Board,
    BoardsError,
    add_boards_argument,
    boards,
    load_boards_files,
    task_metrics,
)
from leaderboard.texts import LINE_REFUSED_CHARACTERS, TEXT_REFUSED_CHARACTERS
from lm_gym.core.errors import LMGymError

SCHEMA_VERSION = 1
MAX_ENTRY_BYTES = 5_000_000  #: the largest entry file (and canonical form) accepted
MAX_NESTING = 12  #: the deepest nesting of arrays and objects read (a valid entry nests 7 deep)
NUMBER_LIMIT = 1e9  #: every number lies within +-NUMBER_LIMIT
NAME_LENGTH = 100
METHOD_LENGTH = 100
MODEL_LENGTH = 200
TEXT_LENGTH = 2000  #: description, and each sample's prompt and generation
MIN_RUNS, MAX_RUNS = 3, 20  #: runs (seeds) per task
MAX_CURVE_POINTS = 200
MAX_SAMPLES = 5
MAX_METRICS = 64  #: metrics per evaluation

# Characters no text may hold (leaderboard.texts): controls, unpaired surrogates, invisible formatting characters.

LINE_PATTERN = f"^[^{LINE_REFUSED_CHARACTERS}]*$"
TEXT_PATTERN = f"^[^{TEXT_REFUSED_CHARACTERS}]*$"
ENV_ID_PATTERN = "^lm_gym/[A-Za-z0-9]+-v[0-9]+$"
METRIC_NAME_PATTERN = "^(mean_|corpus_)[A-Za-z0-9_]{1,64}$|^(num_episodes|std_return)$"
VERSION_PATTERN = "^[A-Za-z0-9.+_-]{1,64}$"
COMMIT_PATTERN = "^[0-9a-f]{7,40}(-dirty)?$"
SHA256_PATTERN = "^[0-9a-f]{64}$"
DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
JOB_NAME_PATTERN = "^[A-Za-z0-9_.-]{1,64}(/[A-Za-z0-9_.%-]{1,64}){1,3}$"
LABEL_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.%-]{0,63}$"  #: never an option (verify passes labels to the harness)
SUITE_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"  #: a file name in benchmark/suites/, never a path

_PATTERN_MEANINGS = {
    ENV_ID_PATTERN: "an env id (lm_gym/<Name>-v<N>)",
    USER_ENV_ID_PATTERN: "an env id ([<namespace>/]<Name>[-v<N>])",
    METRIC_NAME_PATTERN: "a metric name (mean_<name>, corpus_<name>, num_episodes or std_return)",
    VERSION_PATTERN: "a version (letters, digits, '.+_-')",
    COMMIT_PATTERN: "a git commit (7-40 lowercase hex digits, optionally -dirty)",
    SHA256_PATTERN: "a SHA-256 (64 lowercase hex digits)",
    DATE_PATTERN: "a date (YYYY-MM-DD)",
    JOB_NAME_PATTERN: "a job name (<task>/<algorithm>/seed<k>)",
    LABEL_PATTERN: "a label of the suite (letters, digits, '_.%-', starting with a letter or digit)",
    SUITE_NAME_PATTERN: "a suite's name (letters, digits, '_-', starting with a letter or digit)",
}


def _number(minimum: float = -NUMBER_LIMIT) -> dict[str, Any]:
    return {"type": "number", "minimum": minimum, "maximum": NUMBER_LIMIT}


def _integer(minimum: float = -NUMBER_LIMIT) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": NUMBER_LIMIT}


def _text(max_length: int, *, min_length: int = 0, multiline: bool = False) -> dict[str, Any]:
    pattern = TEXT_PATTERN if multiline else LINE_PATTERN
    return {"type": "string", "minLength": min_length, "maxLength": max_length, "pattern": pattern}


def _evaluation(*, nullable: bool) -> dict[str, Any]:
    return {  # the object keywords apply to objects only, so null passes them
        "type": ["object", "null"] if nullable else "object",
        "required": ["num_episodes", "mean_return", "std_return"],
        "maxProperties": MAX_METRICS,
        "properties": {"num_episodes": _integer(1), "std_return": _number(0)},
        "propertyNames": {"pattern": METRIC_NAME_PATTERN},
        "additionalProperties": _number(),
    }


_SAMPLE = {
    "type": "object",
    "required": ["prompt", "generation", "return"],
    "additionalProperties": False,
    "properties": {
        "prompt": _text(TEXT_LENGTH, multiline=True),
        "generation": _text(TEXT_LENGTH, multiline=True),
        "return": _number(),
    },
}

_RUN = {
    "type": "object",
    "required": ["seed", "final_eval", "initial_eval", "curve", "wall_time_s", "samples"],
    "additionalProperties": False,
    "properties": {
        "seed": _integer(),
        "final_eval": _evaluation(nullable=False),
        "initial_eval": _evaluation(nullable=True),
        "curve": {  # [[step, mean_return], ...]
            "type": "array",
            "maxItems": MAX_CURVE_POINTS,
            "items": {"type": "array", "minItems": 2, "maxItems": 2, "prefixItems": [_integer(0), _number()]},
        },
        "wall_time_s": _number(0),
        "samples": {"type": "array", "maxItems": MAX_SAMPLES, "items": _SAMPLE},
    },
}

MAX_RECIPE_JOBS = 1000
#: the versions a recipe records (``lm_gym.results.library_versions``' keys)
RECIPE_VERSIONS = ("python", "lm_gym", "torch", "transformers", "gymnasium", "tokenizers", "datasets", "numpy")
MAX_ARGUMENTS = 200

_RECIPE = {  # how the runs were made, for ``python -m leaderboard verify`` (see leaderboard/README.md, "Verification")
    "type": "object",
    "required": ["suite", "algorithm", "tasks", "device", "versions", "jobs"],
    "additionalProperties": False,
    "properties": {
        "suite": {"type": "string", "pattern": SUITE_NAME_PATTERN},  # benchmark/suites/<suite>.toml, or a file's stem
        "algorithm": {"type": "string", "pattern": LABEL_PATTERN},  # the suite's algorithm label
        "tasks": {  # {env_id: the suite's task label}
            "type": "object",
            "maxProperties": 64,
            "propertyNames": {"maxLength": 130, "pattern": USER_ENV_ID_PATTERN},
            "additionalProperties": {"type": "string", "pattern": LABEL_PATTERN},
        },
        "device": _text(64, min_length=1),  # the torch device of the runs (cpu, cuda)
        "versions": {  # result.json's versions of the runs (python, torch, ...)
            "type": "object",
            "maxProperties": 32,
            "required": ["python", "lm_gym", "torch"],
            "propertyNames": {"enum": list(RECIPE_VERSIONS)},
            "additionalProperties": {"type": "string", "pattern": VERSION_PATTERN},
        },
        "jobs": {  # every job of the runs and the jobs they need (SFT warm starts, datasets), as the harness ran them
            "type": "array",
            "maxItems": MAX_RECIPE_JOBS,
            "items": {
                "type": "object",
                "required": ["name", "argv"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": JOB_NAME_PATTERN},  # <task>/<algorithm>/seed<k>
                    # the command line: the script (relative to the checkout) or -m module, then every flag;
                    # paths of the runs folder written {runs}/...
                    "argv": {"type": "array", "minItems": 1, "maxItems": MAX_ARGUMENTS, "items": _text(TEXT_LENGTH)},
                },
            },
        },
    },
}

#: The JSON Schema (2020-12) of a leaderboard entry. Patterns are matched against the whole
#: string (as ECMA-262's ``^...$`` does; Python's ``$`` would also accept a final newline).
ENTRY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "lm-gym leaderboard entry",
    "type": "object",
    "required": [
        "schema_version",
        "name",
        "method",
        "model",
        "description",
        "board",
        "library_version",
        "git_commit",
        "config_hash",
        "date",
        "tasks",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "name": _text(NAME_LENGTH, min_length=1),
        "method": _text(METHOD_LENGTH, min_length=1),
        "model": _text(MODEL_LENGTH, min_length=1),
        "description": _text(TEXT_LENGTH, multiline=True),
        "board": {"type": "string", "enum": sorted(boards())},
        "library_version": {"type": "string", "pattern": VERSION_PATTERN},
        "git_commit": {"type": ["string", "null"], "pattern": COMMIT_PATTERN},
        "config_hash": {"type": "string", "pattern": SHA256_PATTERN},
        "date": {"type": "string", "pattern": DATE_PATTERN, "format": "date"},
        "recipe": _RECIPE,  # optional: an entry without one cannot be verified
        "tasks": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"maxLength": 64, "pattern": ENV_ID_PATTERN},
            "additionalProperties": {
                "type": "object",
                "required": ["runs"],
                "additionalProperties": False,
                "properties": {
                    "runs": {"type": "array", "minItems": MIN_RUNS, "maxItems": MAX_RUNS, "items": _RUN},
                },
            },
        },
    },
}


def entry_schema() -> dict[str, Any]:
    """:data:`ENTRY_SCHEMA`, or with boards of your own (``--boards``) their names and env ids allowed too."""
    if sorted(boards()) == ENTRY_SCHEMA["properties"]["board"]["enum"]:
        return ENTRY_SCHEMA
    schema = copy.deepcopy(ENTRY_SCHEMA)
    schema["properties"]["board"]["enum"] = sorted(boards())
    # the tasks must be the board's own (checked after the schema), so any registered id passes here
    schema["properties"]["tasks"]["propertyNames"]["pattern"] = USER_ENV_ID_PATTERN
    return schema


_MAX_SHOWN_PROBLEMS = 5
_DEPTH_STEPS = {"[": 1, "{": 1, "]": -1, "}": -1}
# A JSON string, or an unterminated one running to the end of the text. It always matches once
# it starts, so removing strings takes one pass even over hostile text (no retry per quote).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


class EntryError(LMGymError, ValueError):
    """A leaderboard entry (or entry file) that is refused; the message names every field at fault."""


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, no spaces, non-ASCII kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def load_entry(path: str | Path, *, rescore: bool = True) -> dict[str, Any]:
    """Read, parse and validate an untrusted entry file; raise :class:`EntryError` if refused.

    ``rescore``: replay its samples too (:func:`validate_entry`); ``compile`` reads accepted entries without."""
    return check_entry_file(path, rescore=rescore)[0]


def check_entry_file(path: str | Path, *, rescore: bool = True) -> tuple[dict[str, Any], list[str]]:
    """:func:`load_entry`'s entry and :func:`validate_entry`'s flags."""
    text = _read_text(Path(path))
    depth = _nesting_depth(text)
    if depth > MAX_NESTING:
        raise EntryError(f"entry: nested {depth} levels deep, at most {MAX_NESTING} allowed")
    try:
        entry = json.loads(text, object_pairs_hook=_object_without_duplicate_keys)
    except ValueError as error:  # JSONDecodeError, a duplicated key, an integer of thousands of digits
        raise EntryError(f"not JSON: {error}") from None
    return entry, validate_entry(entry, rescore=rescore)


def validate_entry(entry: Any, *, rescore: bool = True) -> list[str]:
    """Raise :class:`EntryError` naming every refused field unless ``entry`` is a valid entry; return its flags.

    Refused: what the schema does not allow, numbers outside the ranges their task or metric declares
    (``lm_gym.results.evaluation_ranges``), what does not fit the board, inconsistent runs (curve steps that do
    not increase, a ``mean_return`` that the stated samples make impossible) and, with ``rescore`` (the
    default), samples that replayed on the board's episodes do not give what the entry states
    (:mod:`leaderboard.replay`). Flagged, not refused (the returned lines, each naming its field): a
    ``mean_return`` the samples make implausible, runs of distinct seeds with identical evaluations, samples not
    re-scored (and why). ``rescore=False`` (``compile`` reading accepted entries) skips the replay."""
    problems = [
        f"{_field_path(path)}: {_shown(value)} is not a finite number" for path, value in _non_finite_numbers(entry)
    ]
    schema_errors = itertools.islice(_validator().iter_errors(entry), _MAX_SHOWN_PROBLEMS + 1)
    problems += [_schema_problem(error) for error in schema_errors if not _is_non_finite(error.instance)]
    if not problems:  # the checks below rely on the shape the schema guarantees
        problems = _board_problems(entry)
    if not problems and len(canonical_json(entry).encode()) > MAX_ENTRY_BYTES:
        problems = [f"entry: its canonical JSON is over {MAX_ENTRY_BYTES} bytes"]
    flags: list[str] = []
    if not problems:
        flags = entry_flags(entry)
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
                        f"{_field_path(('tasks', env_id, 'runs', index, 'final_eval', 'mean_return'))}: "
                        f"{final['mean_return']!r} is {abs(mean - final['mean_return']):.3g} from the mean of its "
                        f"{len(samples)} samples' returns, {mean:.6g}: more than 4 standard errors ({bound:.3g})"
                    )
            key = canonical_json(final)
            if key in seen:
                flags.append(
                    f"{_field_path(('tasks', env_id, 'runs', index, 'final_eval'))}: identical to runs[{seen[key]}]'s "
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
    problems = []
    wanted = min(MAX_SAMPLES, board.eval_episodes)
    for env_id, task in entry["tasks"].items():
        try:
            replayable(env_id, board.env_kwargs[env_id], wanted)
        except NotReplayable:
            continue  # rescore_samples notes why
        problems += [
            f"{_field_path(('tasks', env_id, 'runs', index, 'samples'))}: has {len(run['samples'])} samples; "
            f"an entry holds the first {wanted} episodes of each final evaluation, to re-score them"
            for index, run in enumerate(task["runs"])
            if len(run["samples"]) != wanted
        ]
    if problems:
        return problems, []
    problems, notes = rescore_samples(entry, board)
    return [f"{_field_path(path)}: {text}" for path, text in problems], [
        f"{_field_path(path)}: {text}" for path, text in notes
    ]


def entry_file_name(entry: dict[str, Any]) -> str:
    """``<slug>-<hash>.json``: a file name for a valid entry that no text of the entry can steer.

    The slug keeps only ``[a-z0-9-]`` of the name (accents folded, at most 40 characters,
    ``entry`` when nothing is left), so it holds no separator and no dot; the hash is the first
    12 hex digits (48 bits) of the SHA-256 of :func:`canonical_json`, so that different entries
    get different files and accepting the same entry twice rewrites the same file.
    """
    digest = hashlib.sha256(canonical_json(entry).encode()).hexdigest()[:12]
    return f"{_slug(entry['name'])}-{digest}.json"


def write_entry(entry: dict[str, Any], path: str | Path) -> Path:
    """Validate ``entry`` and write its canonical JSON to ``path`` atomically; returns the path.

    The text goes to a new temporary file beside ``path`` that then replaces ``path``: a link
    already at ``path`` is replaced, never written through.
    """
    validate_entry(entry, rescore=False)  # the form; whoever hands an entry here has re-scored it, or will
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(canonical_json(entry) + "\n")
        os.chmod(temporary, 0o644)  # entries are public; mkstemp creates files readable by their owner only
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def accept_entry(path: str | Path, entries_dir: str | Path) -> Path:
    """Validate the entry file ``path`` (samples re-scored) and store its canonical copy in ``entries_dir``;
    returns the new file."""
    entry = load_entry(path)
    entries_dir = Path(entries_dir)
    entries_dir.mkdir(parents=True, exist_ok=True)
    return write_entry(entry, entries_dir / entry_file_name(entry))


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``validate`` command's arguments (``python -m leaderboard``'s parser)."""
    parser.add_argument("entries", nargs="+", metavar="ENTRY.json", help="entry files to check")
    parser.add_argument(
        "--accept-into", type=Path, metavar="DIR", help="store a canonical copy of each valid entry in DIR"
    )
    add_boards_argument(parser)


def run_validate(args: argparse.Namespace) -> int:
    """The ``validate`` command; returns the exit status."""
    try:
        load_boards_files(args.boards)
    except BoardsError as error:
        print(f"python -m leaderboard validate: error: {error}")
        return 2
    all_valid = True
    for path in args.entries:
        try:
            entry, flags = check_entry_file(path)
            if args.accept_into is None:
                print(f"{path}: valid")
            else:
                args.accept_into.mkdir(parents=True, exist_ok=True)
                accepted = write_entry(entry, args.accept_into / entry_file_name(entry))
                print(f"{path}: valid, accepted as {accepted}")
            for flag in flags:
                print(f"{path}: flagged: {flag}")
        except EntryError as error:
            all_valid = False
            print(f"{path}: {error}")
    return 0 if all_valid else 1


def _read_text(path: Path) -> str:
    # O_NOFOLLOW: a link in a submitted folder could point at any file of the machine;
    # O_NONBLOCK: opening a FIFO would otherwise wait for a writer (regular files ignore it).
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        reason = "it is a symbolic link" if error.errno == errno.ELOOP else error.strerror
        raise EntryError(f"cannot read the file: {reason}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise EntryError("cannot read the file: it is not a regular file")
        if status.st_size > MAX_ENTRY_BYTES:
            raise EntryError(f"the file is {status.st_size} bytes, over the limit of {MAX_ENTRY_BYTES}")
        with open(descriptor, "rb", closefd=False) as file:
            data = file.read(MAX_ENTRY_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_ENTRY_BYTES:  # it grew after the size check
        raise EntryError(f"the file is over the limit of {MAX_ENTRY_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EntryError(f"not UTF-8: byte 0x{data[error.start]:02x} at offset {error.start}") from None


def _nesting_depth(text: str) -> int:
    """How deeply the arrays and objects of the JSON ``text`` nest (brackets inside strings do not count)."""
    brackets = _NOT_BRACKETS.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_DEPTH_STEPS.__getitem__, brackets)), default=0)


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json keeps the last of duplicated keys; a reviewer reading the first would be misled
    obj = dict(pairs)
    if len(obj) != len(pairs):
        duplicate = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise ValueError(f"duplicated key {_shown(duplicate)}")
    return obj


def _validator() -> jsonschema.protocols.Validator:
    return _validator_of(tuple(sorted(boards())))


@functools.cache
def _validator_of(board_names: tuple[str, ...]) -> jsonschema.protocols.Validator:
    validator_class = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _whole_string_pattern})
    return validator_class(entry_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _whole_string_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """``pattern`` matched against the whole string, so that ``$`` cannot match before a final newline."""
    if validator.is_type(instance, "string") and not re.fullmatch(pattern, instance):
        yield jsonschema.ValidationError(f"{_shown(instance)} does not match {pattern!r}")


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
        f"{_field_path(('tasks', env_id))}: not a task of board {board.name}"
        for env_id in tasks
        if env_id not in board.tasks
    ]
    present = [env_id for env_id in board.tasks if env_id in tasks]
    recipe = entry.get("recipe")
    if recipe is not None and set(recipe["tasks"]) != set(tasks):
        problems.append(
            f"recipe.tasks: names {', '.join(sorted(map(_shown, set(recipe['tasks']) ^ set(tasks))))}: "
            "the recipe names a suite task for each task of the entry, and no other"
        )
    return (
        problems
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
                f"{_field_path(path)}: {_shown(value)} is not {declared}, the range of "
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
                f"{_field_path((*where, 'curve', point, 0))}: step {steps[point]} does not follow step "
                f"{steps[point - 1]} (the curve's steps increase)"
                for point in range(1, len(steps))
                if steps[point] <= steps[point - 1]
            ][:1]
            initial = run["initial_eval"]
            if initial is not None and initial["num_episodes"] != board.eval_episodes:
                problems.append(
                    f"{_field_path((*where, 'initial_eval', 'num_episodes'))}: {initial['num_episodes']}, but board "
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
                    f"{_field_path((*where, 'final_eval', 'mean_return'))}: {final['mean_return']!r} cannot be "
                    f"the mean of {episodes} returns in [{returns.low:g}, {returns.high:g}] of which the first {count} "
                    f"(the samples) sum to {total:.6g}: it lies in [{low:.6g}, {high:.6g}]"
                )
    return problems


def _size_problems(tasks: dict[str, Any], env_ids: list[str], board: Board) -> list[str]:
    """Final evaluations of the board's size: corpus metrics such as distinct-2 depend on it."""
    return [
        f"{_field_path(('tasks', env_id, 'runs', index, 'final_eval', 'num_episodes'))}: "
        f"{run['final_eval']['num_episodes']}, "
        f"but board {board.name} scores final evaluations of {board.eval_episodes} episodes"
        for env_id in env_ids
        for index, run in enumerate(tasks[env_id]["runs"])
        if run["final_eval"].get("num_episodes") != board.eval_episodes
    ]


def _seed_problems(tasks: dict[str, Any], env_ids: list[str]) -> list[str]:
    problems, seeds_of_task = [], {}
    for env_id in env_ids:
        seeds = [run["seed"] for run in tasks[env_id]["runs"]]
        repeats = [(index, seed) for index, seed in enumerate(seeds) if seed in seeds[:index]]
        for index, seed in repeats:
            where = _field_path(("tasks", env_id, "runs", index, "seed"))
            problems.append(f"{where}: seed {seed} repeats runs[{seeds.index(seed)}]'s seed")
        if not repeats:  # a task with a repeated seed would only add a confusing mismatch below
            seeds_of_task[env_id] = sorted(seeds)
    if seeds_of_task:
        first, *others = seeds_of_task
        problems += [
            f"{_field_path(('tasks', env_id))}: seeds {seeds_of_task[env_id]} "
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
                where = _field_path(("tasks", env_id, "runs", index, "final_eval"))
                problems.append(f"{where}: lacks {', '.join(missing)}, which the board scores {env_id} on")
    return problems


def _schema_problem(error: jsonschema.ValidationError) -> str:
    """``field: reason`` for a schema error, in words, quoting untrusted values only shortened."""
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    subject = f"key {_shown(instance)}" if "propertyNames" in error.relative_schema_path else _shown(instance)
    if keyword == "type":
        expected_types = " or ".join(expected) if isinstance(expected, list) else expected
        reason = f"expected {expected_types}, got {_json_type(instance)}"
    elif keyword == "required":
        reason = "lacks " + ", ".join(name for name in expected if name not in instance)
    elif keyword == "additionalProperties":
        unknown = [key for key in instance if key not in error.schema.get("properties", {})]
        reason = "unknown field " + ", ".join(_shown(key) for key in unknown[:3])
    elif keyword == "const":
        reason = f"must be {expected}"
    elif keyword == "enum":
        reason = f"{subject} is not one of {', '.join(expected)}"
    elif keyword in ("minLength", "maxLength"):
        bound = "at least" if keyword == "minLength" else "at most"
        reason = f"{subject} is {len(instance)} characters long, {bound} {expected} allowed"
    elif keyword in ("minItems", "maxItems", "minProperties", "maxProperties"):
        bound = "at least" if keyword.startswith("min") else "at most"
        reason = (
            f"has {len(instance)} {'items' if keyword.endswith('Items') else 'entries'}, {bound} {expected} allowed"
        )
    elif keyword in ("minimum", "maximum"):
        reason = f"{subject} is {'below' if keyword == 'minimum' else 'above'} {expected:g}"
    elif keyword == "pattern":
        reason = _pattern_problem(subject, expected, instance)
    elif keyword == "format":
        reason = f"{subject} is not a valid {expected}"
    else:
        reason = _shorten(error.message, 200)
    return f"{_field_path(error.absolute_path)}: {reason}"


def _pattern_problem(subject: str, pattern: str, instance: str) -> str:
    if pattern in (LINE_PATTERN, TEXT_PATTERN):
        refused = LINE_REFUSED_CHARACTERS if pattern == LINE_PATTERN else TEXT_REFUSED_CHARACTERS
        found = re.search(f"[{refused}]", instance)
        return f"holds the control or invisible character U+{ord(found.group()):04X} at index {found.start()}"
    return f"{subject} is not {_PATTERN_MEANINGS.get(pattern, f'matching {pattern!r}')}"


def _field_path(path: Sequence[str | int]) -> str:
    """``tasks["lm_gym/IMDB-v0"].runs[2].seed``: a field's path as a reader would write it."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", part):
            text += f".{part}" if text else part
        else:
            text += f"[{_shown(part)}]"
    return text or "entry"


def _shown(value: Any) -> str:
    """A short, printable rendering of an untrusted value for a message."""
    if isinstance(value, str):
        return json.dumps(_shorten(value, 40), ensure_ascii=True)
    if isinstance(value, (dict, list)):
        return f"an {_json_type(value)}"
    return _shorten(repr(value) if isinstance(value, float) else json.dumps(value), 40)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_type(value: Any) -> str:
    names = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "integer",
        float: "number",
    }
    return names.get(type(value), type(value).__name__)


def _slug(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name).strip("-")[:40].strip("-") or "entry"
