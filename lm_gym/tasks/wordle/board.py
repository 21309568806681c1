"""The Wordle board as text: what the env shows and what scripted policies read back.

The observation is a header line, then one line per guess: the guess and its feedback,
``<word> <feedback>``, the feedback being five letters, ``g`` green (right letter, right
place), ``y`` yellow (in the word, elsewhere) or ``b`` grey (not in the word), e.g.
``crane bygbb``. A guess that is not five letters a-z shows as ``<text> invalid`` (the text
cut to 16 characters) and, with an unknown-word penalty, a word outside the guess list as
``<word> unknown``; neither gives feedback.
"""

from __future__ import annotations

import re


def header(max_guesses: int) -> str:
    return (
        f"Wordle: guess the hidden five-letter word in {max_guesses} tries. Feedback per letter: "
        "g = right place, y = in the word elsewhere, b = not in the word."
    )


INVALID, UNKNOWN = "invalid", "unknown"
_FEEDBACK_LINE = re.compile(r"^([a-z]{5}) ([bgy]{5})$")


def feedback_line(word: str, feedback: str) -> str:
    return f"{word} {feedback}"


def board_text(lines: list[str], max_guesses: int) -> str:
    return "\n".join([header(max_guesses), *lines])


def parse_board(text: str) -> list[tuple[str, str]]:
    """The ``(word, feedback)`` pairs of a board's feedback lines, in order (other lines skipped)."""
    pairs = []
    for line in text.splitlines():
        match = _FEEDBACK_LINE.match(line.strip())
        if match:
            pairs.append((match.group(1), match.group(2)))
    return pairs


def num_turns(text: str) -> int:
    """Guesses played on a board, invalid and unknown ones included."""
    return len([line for line in text.splitlines()[1:] if line.strip()])
