"""What a Visual Dialogue game is made of: the hidden image, the dialogue, and their text form.

The observation text is the ILQL code base's (``VDObservation.__str__``): the caption on the
first line, then one line per question and one per answer::

    a dog and some cats in a park
    what color is the dog?
    brown
    how many cats are there?
    three
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lm_gym.core.spaces import to_charset

#: Longest caption, question and answer kept (characters); longer ones are cut.
MAX_CAPTION_LENGTH = 512
MAX_QUESTION_LENGTH = 256
MAX_ANSWER_LENGTH = 256

#: The built-in answerers' reply to a question they cannot make out.
CANT_TELL = "i can't tell"

#: ``(question, answer)`` rounds, oldest first.
Dialogue = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class HiddenImage:
    """The image the questioner must help to find; the answerer sees ``content``.

    ``index`` is its position in the source's image list (``reset(options={"index": index})``),
    ``image_id`` the dataset's id (VisDial's COCO id; the scene number for synthetic scenes)
    and ``content`` what the source knows about it: a :class:`~lm_gym.tasks.visdial.synthetic.Scene`,
    a :class:`~lm_gym.tasks.visdial.data.HumanDialog`, or anything a user's world needs.
    """

    index: int
    image_id: int
    caption: str
    content: Any = None


def clean_line(text: str, max_length: int) -> str:
    """``text`` as one line of the observation: printable ASCII, whitespace runs (newlines too)
    collapsed to one space, no surrounding space, at most ``max_length`` characters."""
    return " ".join(to_charset(text).split())[:max_length].strip()


def clean_caption(text: str) -> str:
    """``text`` as the caption line (:func:`clean_line`, at most :data:`MAX_CAPTION_LENGTH` characters)."""
    return clean_line(text, MAX_CAPTION_LENGTH)


def clean_question(text: str) -> str:
    """``text`` as a question line (:func:`clean_line`, at most :data:`MAX_QUESTION_LENGTH` characters)."""
    return clean_line(text, MAX_QUESTION_LENGTH)


def clean_answer(text: str) -> str:
    """``text`` as an answer line (:func:`clean_line`, at most :data:`MAX_ANSWER_LENGTH` characters)."""
    return clean_line(text, MAX_ANSWER_LENGTH)


def max_dialogue_text_length(max_turns: int) -> int:
    """The longest observation text of a game of ``max_turns`` rounds (:func:`dialogue_text`)."""
    return MAX_CAPTION_LENGTH + (MAX_QUESTION_LENGTH + MAX_ANSWER_LENGTH + 2) * max_turns


def dialogue_text(caption: str, dialogue: Dialogue) -> str:
    """The observation text: the caption line, then a question line and an answer line per round."""
    lines = [caption]
    for question, answer in dialogue:
        lines += [question, answer]
    return "\n".join(lines)


def parse_dialogue_text(text: str) -> tuple[str, Dialogue]:
    """The caption and rounds of an observation text (:func:`dialogue_text`'s inverse).

    A trailing question without an answer line is dropped.
    """
    lines = text.split("\n")
    caption, rest = lines[0], lines[1:]
    return caption, tuple((rest[i], rest[i + 1]) for i in range(0, len(rest) - 1, 2))
