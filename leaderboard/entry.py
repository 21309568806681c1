"""Leaderboard entries: reading, accepting and writing untrusted entry files, and ``python -m leaderboard validate``.

An entry is one method's runs on one board (``leaderboard/README.md``, "Entries"). Entries come from
strangers, so everything here treats a file as hostile. The jobs lie in their own modules, each importing
only those above it in this list:

* ``leaderboard.messages``: a field's path and an untrusted value, as messages write them;
* ``leaderboard.entry_schema``: the format (its limits, :data:`~leaderboard.entry_schema.ENTRY_SCHEMA`,
  canonical JSON) and :class:`~leaderboard.entry_schema.EntryError`, the refusal;
* ``leaderboard.safe_read``: reading an untrusted file (a regular file, bounded, UTF-8, shallow, JSON with
  no duplicated key);
* ``leaderboard.recipe``: an entry's recipe, built from the harness's job records and checked against its
  suite (:func:`~leaderboard.recipe.recipe_problems`);
* ``leaderboard.entry_checks``: :func:`~leaderboard.entry_checks.validate_entry` (what is refused) and
  :func:`~leaderboard.entry_checks.entry_flags` (what is doubtful);
* this module: :func:`load_entry` reads and validates a file; :func:`accept_entry` validates a file and
  writes its canonical form (sorted keys, compact, UTF-8) into the entries folder under
  :func:`entry_file_name`: a slug of the name plus a hash of the content, so no text of the entry can
  choose where the file goes. An entry whose runs are those of an entry already in the folder
  (:func:`runs_digest`: the same runs, whatever the name, description or method) is refused, naming it.

Names and descriptions may hold any printable text, ``<script>`` included: the board escapes
every text it shows.

Command line (``python -m leaderboard validate``)::

    python -m leaderboard validate ENTRY.json... [--accept-into DIR] [--suite FILE] [--boards FILE]

(``--boards FILE``: an entry of a board over your own tasks is checked against the file's board; ``--suite FILE``:
a recipe naming a suite of your own is checked against its file, :func:`leaderboard.recipe.use_suite_files`.)

prints ``path: valid`` (``, accepted as FILE`` with ``--accept-into``) or ``path: reason``, one
line per file, and exits 0 when every file is valid (and, with ``--accept-into``, accepted), 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

from benchmark.suite import SuiteError
from leaderboard.boards import BoardsError, add_boards_argument, load_boards_files
from leaderboard.entry_checks import validate_entry
from leaderboard.entry_schema import EntryError, canonical_json
from leaderboard.messages import shown
from leaderboard.recipe import use_suite_files
from leaderboard.safe_read import read_entry_json


def load_entry(path: str | Path, *, rescore: bool = True) -> dict[str, Any]:
    """Read, parse and validate an untrusted entry file; raise :class:`EntryError` if refused.

    ``rescore``: replay its samples too (:func:`validate_entry`); ``compile`` reads accepted entries without."""
    return check_entry_file(path, rescore=rescore)[0]


def check_entry_file(path: str | Path, *, rescore: bool = True) -> tuple[dict[str, Any], list[str]]:
    """:func:`load_entry`'s entry and :func:`validate_entry`'s flags."""
    entry = read_entry_json(path)
    return entry, validate_entry(entry, rescore=rescore)


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
    """Validate the entry file ``path`` (samples re-scored) and store its canonical copy in ``entries_dir``
    (:func:`store_entry`); returns the new file."""
    return store_entry(load_entry(path), entries_dir)


def store_entry(entry: dict[str, Any], entries_dir: str | Path) -> Path:
    """Write the valid ``entry`` into ``entries_dir`` under :func:`entry_file_name`; returns the file.

    :class:`EntryError` if an entry of the folder has the same runs (:func:`runs_digest`): the board shows a set
    of runs once, so the same runs under a second name would count twice in every comparison. Accepting the very
    same entry again rewrites its own file."""
    entries_dir = Path(entries_dir)
    entries_dir.mkdir(parents=True, exist_ok=True)
    target = entries_dir / entry_file_name(entry)
    copied = _entry_with_the_same_runs(entry, entries_dir, but=target)
    if copied is not None:
        other_path, other = copied
        raise EntryError(
            f"tasks: the same runs as the accepted entry {other_path} ({shown(other['name'])}, {other['date']}): "
            "every task's runs (seeds, evaluations, curves, wall times, samples) are equal; the board shows a set "
            "of runs once, whatever its entry's name, description or method"
        )
    return write_entry(entry, target)


def runs_digest(entry: dict[str, Any]) -> str:
    """The SHA-256 of what an entry holds of its runs: its board and, per task, the set of its runs' canonical
    JSON (seed, final and initial evaluations, curve, wall time, samples: all ``submit`` copies of a
    ``result.json``). Two entries with the same digest show the same runs; name, method, model, description,
    date, commit, config hash and recipe do not enter it, nor the order of the runs."""
    runs = {
        env_id: sorted(hashlib.sha256(canonical_json(run).encode()).hexdigest() for run in task["runs"])
        for env_id, task in entry["tasks"].items()
    }
    return hashlib.sha256(canonical_json({"board": entry["board"], "runs": runs}).encode()).hexdigest()


def _entry_with_the_same_runs(
    entry: dict[str, Any], entries_dir: Path, but: Path
) -> tuple[Path, dict[str, Any]] | None:
    """The first entry file of ``entries_dir`` (by name; ``but`` aside) whose runs are ``entry``'s, with its entry."""
    digest = runs_digest(entry)
    for path in sorted(entries_dir.glob("*.json")):
        if path.name == but.name:
            continue
        try:
            other = load_entry(path, rescore=False)
        except EntryError:  # not an entry this process can read (a board of another --boards file): not a copy
            continue
        if runs_digest(other) == digest:
            return path, other
    return None


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``validate`` command's arguments (``python -m leaderboard``'s parser)."""
    parser.add_argument("entries", nargs="+", metavar="ENTRY.json", help="entry files to check")
    parser.add_argument(
        "--accept-into",
        type=Path,
        metavar="DIR",
        help="store a canonical copy of each valid entry in DIR (refused: the same runs as an entry of DIR)",
    )
    parser.add_argument(
        "--suite",
        action="append",
        type=Path,
        metavar="FILE",
        help="a suite file of your own (repeatable): recipes naming its suite (the file's name less .toml) are "
        "checked against it (default: benchmark/suites/<the recipe's suite>.toml, or the --boards file of the board)",
    )
    add_boards_argument(parser)


def run_validate(args: argparse.Namespace) -> int:
    """The ``validate`` command; returns the exit status."""
    try:
        load_boards_files(args.boards)
    except BoardsError as error:
        print(f"python -m leaderboard validate: error: {error}")
        return 2
    try:
        use_suite_files(args.suite)
    except SuiteError as error:
        print(f"python -m leaderboard validate: error: argument --suite: {str(error).removeprefix('--suite: ')}")
        return 2
    all_valid = True
    for path in args.entries:
        try:
            entry, flags = check_entry_file(path)
            if args.accept_into is None:
                print(f"{path}: valid")
            else:
                accepted = store_entry(entry, args.accept_into)
                print(f"{path}: valid, accepted as {accepted}")
            for flag in flags:
                print(f"{path}: flagged: {flag}")
        except EntryError as error:
            all_valid = False
            print(f"{path}: {error}")
    return 0 if all_valid else 1


def _slug(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name).strip("-")[:40].strip("-") or "entry"
