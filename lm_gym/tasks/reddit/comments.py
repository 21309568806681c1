"""The comment record every Reddit reader produces, and the rules they share for keeping one."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from lm_gym.core.spaces import to_charset

#: Texts (comments and parents) are cut to this many characters: the env's action length.
MAX_TEXT_LENGTH = 4096
#: Bodies Reddit shows for a deleted or moderator-removed comment.
DELETED_BODIES = ("[deleted]", "[removed]")
#: Why comments are dropped: their own body is empty/deleted/removed; their parent is not in
#: the data (a reply to a comment outside the dump, or to a submission when no submissions are
#: given). A reply to a deleted or removed parent is kept, with the parent's text as Reddit
#: shows it (``[deleted]``), as ILQL's data does.
DROP_REASONS = ("deleted", "missing_parent")


@dataclass(frozen=True)
class Comment:
    """A comment with its parent's text and its score (``toxicity``: the synthetic level, else ``None``)."""

    id: str
    parent_id: str
    link_id: str
    text: str
    parent_text: str
    score: int
    toxicity: int | None = None


@dataclass(frozen=True)
class LoadedComments:
    """The comments kept, and how many were dropped for each of :data:`DROP_REASONS`."""

    comments: tuple[Comment, ...]
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))


def clean_text(text: str) -> str:
    """``text`` as the env sees it: printable ASCII, cut to :data:`MAX_TEXT_LENGTH` characters.

    Markdown and HTML entities (``&gt;``) are kept, as in ILQL.
    """
    return to_charset(text)[:MAX_TEXT_LENGTH]


def is_usable(body: str | None) -> bool:
    """False for a missing, empty, deleted or removed body."""
    return body is not None and bool(body.strip()) and body.strip() not in DELETED_BODIES


def keep_comment(
    dropped: Counter, comment_id: str, parent_id: str, link_id: str, text: str, parent_text: str | None, score: int
) -> Comment | None:
    """The :class:`Comment`, or ``None`` with its reason counted in ``dropped`` (``parent_text=None``: not found)."""
    if not is_usable(text):
        dropped["deleted"] += 1
    elif parent_text is None:
        dropped["missing_parent"] += 1
    else:
        return Comment(comment_id, parent_id, link_id, clean_text(text), clean_text(parent_text), score)
    return None


def counts(dropped: Counter) -> dict[str, int]:
    """``dropped`` with every reason of :data:`DROP_REASONS`, zeros included."""
    return {reason: dropped[reason] for reason in DROP_REASONS}
