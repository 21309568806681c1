"""Reddit comments with their parents' text and scores, from the ``local`` and ``synthetic`` sources.

* ``local``: ``data_dir`` is a directory or a single file, in one of two formats:

  - ILQL's comment-score CSVs, ``comments_positive.csv`` and ``comments_negative.csv`` (read
    in that order, as ILQL concatenates them; either may be absent), columns by name:
    ``id``, ``parent_id``, ``link_id``, ``text``, ``score``, ``parent_text`` (others ignored);
  - Reddit API comment objects as JSON lines, the Pushshift dump format (``*.jsonl``,
    ``*.ndjson``, ``*.json``, ``*.zst``; all such files of the directory, sorted by name, with
    parents resolved across them): see :mod:`lm_gym.tasks.reddit.pushshift`.

  Neither format has splits. A comment's split is fixed by its id: ``crc32(id) % 10`` is
  0-7 for ``train``, 8 for ``validation`` and 9 for ``test`` (80/10/10; stable when data is
  added; comments of one thread can land in different splits, so a parent text can recur
  across splits, a comment never).
* ``synthetic``: :mod:`lm_gym.tasks.reddit.synthetic`, generated per split (3,000/300/300).

There is no ``hub`` source: no dataset on the Hugging Face hub holds ILQL's data, and the
Pushshift-style copies there (e.g. ``HuggingFaceGECLM/REDDIT_comments``, one split per
subreddit, millions of rows each) can be exported with ``Dataset.to_json`` and read as
``local`` JSON lines.

Comments are dropped, and counted (:attr:`LoadedComments.dropped`, over the whole local
data, before splitting), when their text is empty, ``[deleted]`` or ``[removed]`` or their
parent cannot be found. A reply to a deleted or removed parent is kept with that text as its
parent, as in ILQL's data. Texts are mapped to printable ASCII and cut
to 4,096 characters (:func:`~lm_gym.tasks.reddit.comments.clean_text`; none of the shared
sample is longer, Reddit allows 10,000); markdown and HTML entities stay, as in ILQL.

The 623 comments of the shared ILQL-schema sample are all kept (36 of them reply to a
``[deleted]`` or ``[removed]`` parent) and split 489/63/71.
"""

from __future__ import annotations

import functools
import zlib
from collections import Counter
from pathlib import Path

from lm_gym.core.errors import DataUnavailableError
from lm_gym.core.validation import check_choice
from lm_gym.data.sources import SPLITS, check_source, read_table, require_columns
from lm_gym.tasks.loading import load_split
from lm_gym.tasks.reddit import pushshift, synthetic
from lm_gym.tasks.reddit.comments import Comment, LoadedComments, clean_text, counts, keep_comment

SOURCES = ("local", "synthetic")
CSV_FILES = ("comments_positive.csv", "comments_negative.csv")
CSV_COLUMNS = ("id", "parent_id", "link_id", "text", "score", "parent_text")
#: ``crc32(id) % 10`` -> split of a local comment.
SPLIT_BUCKETS = {**dict.fromkeys(range(8), "train"), 8: "validation", 9: "test"}
LOCAL_HINT = (
    "a directory with ILQL's comments_positive.csv / comments_negative.csv or Pushshift comment dumps "
    "(*.jsonl, *.ndjson, *.json, *.zst), or one such file; offline without data, source='synthetic'"
)


def load_comments(source: str, split: str, data_dir: str | Path | None = None) -> LoadedComments:
    """The comments of ``split`` from ``source`` (cached per process); ``dropped`` counts the whole source's drops."""
    check_choice("source", source, SOURCES)
    return load_split(_load_cached, source, split, data_dir, LOCAL_HINT, "comments", lambda loaded: loaded.comments)


def all_comments(source: str, data_dir: str | Path | None = None) -> tuple[Comment, ...]:
    """Every comment of ``source``, all splits (``train``, ``validation``, then ``test``)."""
    check_choice("source", source, SOURCES)
    data_dir = check_source(source, "train", data_dir, LOCAL_HINT)
    return tuple(comment for split in SPLITS for comment in _load_cached(source, split, data_dir).comments)


def split_of(comment_id: str) -> str:
    """The split of a local comment: ``train``, ``validation`` or ``test`` by ``crc32(id) % 10``."""
    return SPLIT_BUCKETS[zlib.crc32(comment_id.encode("utf-8")) % 10]


@functools.lru_cache(maxsize=16)
def _load_cached(source: str, split: str, data_dir: str | None) -> LoadedComments:
    if source == "synthetic":
        return LoadedComments(tuple(_synthetic_comments(split)))
    loaded = read_local(Path(data_dir))
    return LoadedComments(tuple(c for c in loaded.comments if split_of(c.id) == split), loaded.dropped)


def read_local(path: str | Path) -> LoadedComments:
    """Every comment (all splits) of the local data at ``path``, in file order (cached per process)."""
    return _read_local_cached(Path(path))


@functools.lru_cache(maxsize=4)
def _read_local_cached(path: Path) -> LoadedComments:
    csv_files, dumps = _local_files(path)
    if csv_files:
        return _read_csvs(csv_files)
    return pushshift.read_dumps(dumps)


def _local_files(path: Path) -> tuple[list[Path], list[Path]]:
    """``(ILQL CSV files, dump files)``; one of them is empty."""
    if path.is_file() and path.suffix == ".csv":
        return [path], []
    if path.is_file() and path.suffix in pushshift.SUFFIXES:
        return [], [path]
    if path.is_dir():
        csv_files = [path / name for name in CSV_FILES if (path / name).is_file()]
        dumps = sorted(p for p in path.iterdir() if p.suffix in pushshift.SUFFIXES and p.is_file())
        if csv_files or dumps:
            return csv_files, ([] if csv_files else dumps)
    raise DataUnavailableError(f"data_dir={str(path)!r} holds no Reddit comments: expected {LOCAL_HINT.split(';')[0]}")


def _read_csvs(paths: list[Path]) -> LoadedComments:
    dropped: Counter = Counter()
    comments: list[Comment] = []
    for path in paths:
        rows = read_table(path)
        require_columns(path, rows, CSV_COLUMNS)
        for number, row in enumerate(rows, start=2):  # line 1 is the header
            values = {name: row[name] or "" for name in CSV_COLUMNS}
            try:
                score = int(values["score"])
            except ValueError:
                raise DataUnavailableError(
                    f"{path}:{number}: score must be an integer, got {values['score']!r:.40}"
                ) from None
            comment = keep_comment(
                dropped,
                values["id"],
                values["parent_id"],
                values["link_id"],
                values["text"],
                values["parent_text"],
                score,
            )
            if comment is not None:
                comments.append(comment)
    return LoadedComments(tuple(comments), counts(dropped))


def _synthetic_comments(split: str) -> list[Comment]:
    return [
        Comment(
            id=f"synthetic-{split}-{i}",
            parent_id=f"t1_synthetic-{split}-{i}-parent",
            link_id=f"t3_synthetic-{split}-{i}",
            text=clean_text(thread.reply),
            parent_text=clean_text(thread.parent),
            score=thread.score,
            toxicity=thread.toxicity,
        )
        for i, thread in enumerate(synthetic.generate_threads(split))
    ]
