"""The characters an entry's texts may hold, and a sample's text as an entry holds it (reversibly).

Entries refuse the characters that make a text read as another on a terminal or a page: C0 and C1
controls (terminal escapes, NUL), unpaired surrogates (not encodable as UTF-8) and the invisible
formatting characters (zero-width characters, bidirectional embeddings, overrides and isolates, the
BOM). Multi-line texts (a description, samples) may hold tab and newline.

A task's utterances and observations are printable ASCII with the whitespace controls (``\\r``,
``\\x0b``, ``\\x0c`` too), so a sample's text may hold controls an entry refuses. :func:`sample_text`
writes each C0 control but tab and newline, and DEL, as its Unicode control picture (``\\x0c`` as
U+240C, ``␌``), which no task's text holds, so that :func:`played_text` gives the text back exactly and
the sample can be replayed (``leaderboard.replay``); any other refused character becomes U+FFFD.
"""

from __future__ import annotations

import re
from typing import Any

_HIDDEN_CHARACTERS = r"\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff"
#: refused in one-line texts (names, identifiers)
LINE_REFUSED_CHARACTERS = r"\x00-\x1f" + _HIDDEN_CHARACTERS
#: refused in multi-line texts (description, samples): tab and newline are allowed
TEXT_REFUSED_CHARACTERS = r"\x00-\x08\x0b-\x1f" + _HIDDEN_CHARACTERS

_PICTURED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PICTURES = re.compile("[\u2400-\u2408\u240b-\u241f\u2421]")


def _picture(character: str) -> str:
    return "\u2421" if character == "\x7f" else chr(0x2400 + ord(character))


def _control(picture: str) -> str:
    return "\x7f" if picture == "\u2421" else chr(ord(picture) - 0x2400)


def sample_text(value: Any, limit: int) -> str:
    """``value`` as a multi-line text an entry accepts: C0 controls (but tab and newline) and DEL as their
    control pictures, other refused characters as U+FFFD, cut to ``limit`` characters (the last one ``…``)."""
    text = _PICTURED.sub(lambda match: _picture(match.group()), str(value))
    text = re.sub(f"[{TEXT_REFUSED_CHARACTERS}]", "\ufffd", text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def played_text(text: str) -> str:
    """The text a task saw, from :func:`sample_text`'s: control pictures back to the controls."""
    return _PICTURES.sub(lambda match: _control(match.group()), text)
