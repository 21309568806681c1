"""Text spaces shared by the utterance-level environments."""

import re
import string

from anyascii import anyascii
from gymnasium import spaces

#: Characters of every lm-gym ``Text`` space: printable ASCII, whitespace included.
CHARSET = string.printable
_CHARSET_SET = frozenset(CHARSET)
_OUTSIDE_CHARSET = re.compile(f"[^{re.escape(CHARSET)}]")


def text_space(max_length: int) -> spaces.Text:
    """A ``Text`` space of printable ASCII strings of 0 to ``max_length`` characters."""
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


def to_charset(text: str) -> str:
    """Map ``text`` into :data:`CHARSET`.

    Non-ASCII characters are transliterated with ``anyascii``: accents are dropped
    (``é`` -> ``e``), punctuation gets its ASCII equivalent (``—`` -> ``-``, ``…`` -> ``...``,
    ``’`` and ``´`` -> ``'``, ``£`` -> ``GBP``), other scripts are romanised and emoji become
    ``:name:``. Characters still outside the charset (control characters) are dropped.
    Already-printable ASCII is returned as is.
    """
    if text.isascii() and _OUTSIDE_CHARSET.search(text) is None:
        return text
    return "".join(ch for ch in anyascii(text) if ch in _CHARSET_SET)
