"""How the leaderboard's messages name an entry's fields and quote its untrusted values.

A refusal names the field at fault as a reader would write it (:func:`field_path`:
``tasks["lm_gym/IMDB-v0"].runs[2].seed``) and quotes a value only shortened and printable
(:func:`shown`), so that printing a message about a hostile file is safe on a terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any


def field_path(path: Sequence[str | int]) -> str:
    """``tasks["lm_gym/IMDB-v0"].runs[2].seed``: a field's path as a reader would write it."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", part):
            text += f".{part}" if text else part
        else:
            text += f"[{shown(part)}]"
    return text or "entry"


def shown(value: Any) -> str:
    """A short, printable rendering of an untrusted value for a message."""
    if isinstance(value, str):
        return json.dumps(shorten(value, 40), ensure_ascii=True)
    if isinstance(value, (dict, list)):
        return f"an {json_type(value)}"
    return shorten(repr(value) if isinstance(value, float) else json.dumps(value), 40)


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: Any) -> str:
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
