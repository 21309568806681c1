"""Reddit API objects as JSON lines (the Pushshift dumps), plain or ``.zst`` compressed.

One JSON object per line. A comment has ``id`` (base36, no prefix), ``body``, ``score``
(an int, or its decimal string as in some re-hosted copies), ``parent_id`` (``t1_<comment
id>`` for a reply to a comment, ``t3_<submission id>`` for a top-level comment) and
``link_id`` (``t3_<submission id>``); other fields are ignored. An object with ``title`` and
no ``body`` is a submission (the ``RS_`` dumps): given in the same files, it is the parent of
its top-level comments, with the text ``title``, plus a blank line and ``selftext`` when
that is usable.

A comment's parent text is resolved within the files read: a ``t1_`` parent is the body of
the comment with that id, a ``t3_`` parent the submission's text. Comments are dropped, and
counted per reason (:data:`~lm_gym.tasks.reddit.comments.DROP_REASONS`), when their body is
empty, ``[deleted]`` or ``[removed]``, or when their parent is not in the files (so a
comments-only dump drops every top-level comment as ``missing_parent``). A reply to a deleted
parent is kept, the parent's text being ``[deleted]`` (or ``[removed]``), as in ILQL's data.
All the files are held in memory at once: filter a monthly dump down to a subreddit first.

``.zst`` files (the dumps since 2017) need the optional ``zstandard`` package; they are
decompressed with a 2 GiB window (``max_window_size=2**31``), which the dumps require.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lm_gym.core.errors import DataUnavailableError, require_extra
from lm_gym.tasks.reddit.comments import Comment, LoadedComments, counts, is_usable, keep_comment

SUFFIXES = (".jsonl", ".ndjson", ".json", ".zst")
ZSTD_WINDOW = 2**31
COMMENT_FIELDS = ("id", "body", "score", "parent_id", "link_id")


def read_dumps(paths: list[Path]) -> LoadedComments:
    """The comments of the dump files ``paths``, parents resolved across all of them, in file order."""
    pending: list[tuple[str, str, str, str, int]] = []  # id, parent_id, link_id, body, score of each comment
    bodies: dict[str, str] = {}
    submissions: dict[str, str] = {}
    for path in paths:
        for number, record in _records(path):
            if "body" in record:
                _require(record, COMMENT_FIELDS, path, number)
                comment_id, body = str(record["id"]), str(record["body"])
                pending.append(
                    (
                        comment_id,
                        str(record["parent_id"]),
                        str(record["link_id"]),
                        body,
                        _score(record["score"], path, number),
                    )
                )
                bodies[comment_id] = body
            elif "title" in record and "id" in record:
                submissions[str(record["id"])] = _submission_text(record)
            else:
                raise DataUnavailableError(
                    f"{path}:{number}: neither a comment (with 'body') nor a submission (with 'id' and 'title')"
                )
    parents = {"t1": bodies, "t3": submissions}
    dropped: Counter = Counter()
    comments: list[Comment] = []
    for comment_id, parent_id, link_id, body, score in pending:
        kind, _, parent_key = parent_id.partition("_")
        comment = keep_comment(
            dropped, comment_id, parent_id, link_id, body, parents.get(kind, {}).get(parent_key), score
        )
        if comment is not None:
            comments.append(comment)
    return LoadedComments(tuple(comments), counts(dropped))


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of ``path``."""
    read_errors: tuple[type[Exception], ...] = (
        (OSError, _zstandard(path).ZstdError) if path.suffix == ".zst" else (OSError,)
    )
    try:
        with _open_text(path) as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as error:
                    raise DataUnavailableError(f"{path}:{number}: not a JSON object ({error})") from None
                if not isinstance(record, dict):
                    raise DataUnavailableError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
                yield number, record
    except read_errors as error:
        raise DataUnavailableError(f"could not read {path}: {type(error).__name__}: {error}") from error


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix != ".zst":
        return path.open(encoding="utf-8", errors="replace")
    reader = _zstandard(path).ZstdDecompressor(max_window_size=ZSTD_WINDOW).stream_reader(path.open("rb"), closefd=True)
    return io.TextIOWrapper(reader, encoding="utf-8", errors="replace")


def _zstandard(path: Path):
    require_extra("reddit", f"reading {path}", "zstandard")
    import zstandard

    return zstandard


def _require(record: dict[str, Any], fields: tuple[str, ...], path: Path, number: int) -> None:
    missing = [name for name in fields if record.get(name) is None]
    if missing:
        raise DataUnavailableError(f"{path}:{number}: a comment needs {', '.join(fields)}; missing {missing}")


def _score(value: Any, path: Path, number: int) -> int:
    try:
        if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise DataUnavailableError(f"{path}:{number}: score must be an integer, got {value!r:.40}") from None


def _submission_text(record: dict[str, Any]) -> str:
    title, selftext = str(record.get("title") or ""), record.get("selftext")
    return f"{title}\n\n{selftext}" if isinstance(selftext, str) and is_usable(selftext) else title
