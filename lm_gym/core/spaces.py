"""Text spaces shared by the utterance-level environments."""

import string
import unicodedata

from gymnasium import spaces

#: Characters of every lm-gym ``Text`` space: printable ASCII, whitespace included.
CHARSET = string.printable
_CHARSET_SET = frozenset(CHARSET)


def text_space(max_length: int) -> spaces.Text:
    """A ``Text`` space of printable ASCII strings of 0 to ``max_length`` characters."""
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)


def to_charset(text: str) -> str:
    """Map ``text`` into :data:`CHARSET`.

    Accented letters lose their accents (NFKD decomposition, ``é`` -> ``e``); other
    characters outside the charset are dropped. Already-printable ASCII is returned as is.
    """
    if text.isascii() and all(ch in _CHARSET_SET for ch in text):
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if ch in _CHARSET_SET)
