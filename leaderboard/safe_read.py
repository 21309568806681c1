"""Reading an untrusted entry file: :func:`read_entry_json`.

Entries come from strangers, so the file is treated as hostile: a regular file only (not a link, a FIFO
or a device), at most :data:`leaderboard.entry_schema.MAX_ENTRY_BYTES` (checked before reading, and never
more than that plus one byte read), UTF-8 only, nested at most :data:`MAX_NESTING` levels (counted on the
text before parsing, so that no parser recursion depends on the input), JSON only, with no duplicated key.
``NaN`` and ``Infinity`` literals (and ``1e400``, which parses to infinity) are read; the entry's checks
refuse them, naming the field that holds them.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import stat
from collections import Counter
from pathlib import Path
from typing import Any

from leaderboard.entry_schema import MAX_ENTRY_BYTES, EntryError
from leaderboard.messages import shown

MAX_NESTING = 12  #: the deepest nesting of arrays and objects read (a valid entry nests 7 deep)
_DEPTH_STEPS = {"[": 1, "{": 1, "]": -1, "}": -1}
# A JSON string, or an unterminated one running to the end of the text. It always matches once
# it starts, so removing strings takes one pass even over hostile text (no retry per quote).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def read_entry_json(path: str | Path) -> Any:
    """The JSON value of the entry file ``path``, read as described above; :class:`EntryError` says why not."""
    text = _read_text(Path(path))
    depth = _nesting_depth(text)
    if depth > MAX_NESTING:
        raise EntryError(f"entry: nested {depth} levels deep, at most {MAX_NESTING} allowed")
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicate_keys)
    except ValueError as error:  # JSONDecodeError, a duplicated key, an integer of thousands of digits
        raise EntryError(f"not JSON: {error}") from None


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
        raise ValueError(f"duplicated key {shown(duplicate)}")
    return obj
