"""A task's rules for a chat, read from its class docstring's "Description" section.

:meth:`~lm_gym.core.text_env.TextEnv.default_chat_instructions` reads a task's docstring (written in
Gymnasium's style: a Markdown or reStructuredText "Description" heading, then prose) with
:func:`docstring_instructions`.
"""

from __future__ import annotations

import inspect
import re

# a Markdown heading ("## Description") or the underline of a reStructuredText one
_MARKDOWN_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([-=~^\"'`#*+])\1{2,}\s*$")
# a paragraph that is a list, a table, a quote, a code block or a directive, not prose
_NOT_PROSE = re.compile(r"^(\s|[*+-]\s|\d+[.)]\s|\||>|```|\.\. )")
_RST_ROLE = re.compile(r":[A-Za-z][\w:.+-]*:`(?P<text>[^`]+)`")
_INLINE_LITERAL = re.compile(r"``(?P<text>.+?)``")
_BACKTICKS = re.compile(r"`(?P<text>[^`]+)`_{0,2}")
_MARKDOWN_LINK = re.compile(r"\[(?P<text>[^\]]+)\]\([^)]*\)")
_STRONG = re.compile(r"\*\*(?P<text>\S(?:.*?\S)?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?P<text>\S(?:.*?\S)?)\*(?![\w*])")
_LINK_TARGET = re.compile(r"\s*<[^<>]*>$")  # "title <target>" of a reStructuredText reference


def docstring_instructions(docstring: str | None) -> str | None:
    """A task's rules as plain text, read from a class docstring written as lm-gym's tasks write theirs
    (Gymnasium's sections, Markdown ``## Description`` or a reStructuredText underlined heading): the
    prose paragraphs that open its "Description" section, up to the first list, table, code block or
    quote, or paragraph that introduces one (ending with ``:``); without such a section, the
    docstring's first paragraph. Each paragraph on one line, paragraphs separated by a blank line,
    inline markup removed: literals and roles keep their text (a role's ``~pkg.name`` its last
    name), links their title, bold and emphasis their words. ``None`` when there is no such text."""
    if not docstring or not docstring.strip():
        return None
    lines = inspect.cleandoc(docstring).splitlines()
    section = _section(lines, "description")
    paragraphs: list[str] = []
    for paragraph in _paragraphs(lines if section is None else section):
        if _NOT_PROSE.match(paragraph[0]) or paragraph[-1].rstrip().endswith(":"):
            break
        paragraphs.append(_plain_text(" ".join(paragraph)))
        if section is None:  # a docstring without sections: its summary alone
            break
    return "\n\n".join(paragraphs) or None


def _heading(lines: list[str], index: int) -> str | None:
    """The title of the heading at ``lines[index]`` (Markdown, or a line over a reStructuredText
    underline), or ``None``."""
    if match := _MARKDOWN_HEADING.match(lines[index]):
        return match["title"]
    if lines[index].strip() and index + 1 < len(lines) and _RST_UNDERLINE.match(lines[index + 1]):
        return lines[index].strip()
    return None


def _section(lines: list[str], title: str) -> list[str] | None:
    """The lines of the docstring section headed ``title`` (in any case), up to the next heading;
    ``None`` if there is none."""
    start = next((i for i in range(len(lines)) if (_heading(lines, i) or "").lower() == title), None)
    if start is None:
        return None
    start += 1 if _MARKDOWN_HEADING.match(lines[start]) else 2
    end = next((i for i in range(start, len(lines)) if _heading(lines, i) is not None), len(lines))
    return lines[start:end]


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """``lines`` in runs of non-blank lines."""
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return [paragraph for paragraph in paragraphs if paragraph]


def _plain_text(text: str) -> str:
    """``text`` without reStructuredText and Markdown inline markup, its whitespace runs made single spaces."""
    # inline literals are kept verbatim: a "*" inside one is code, not emphasis
    pieces = _INLINE_LITERAL.split(text)
    for index in range(0, len(pieces), 2):
        piece = _RST_ROLE.sub(lambda match: _reference_text(match["text"]), pieces[index])
        piece = _BACKTICKS.sub(lambda match: _reference_text(match["text"]), piece)
        piece = _MARKDOWN_LINK.sub(r"\g<text>", piece)
        pieces[index] = _EMPHASIS.sub(r"\g<text>", _STRONG.sub(r"\g<text>", piece))
    return " ".join("".join(pieces).split())


def _reference_text(text: str) -> str:
    """What a reader sees of a reStructuredText reference: ``title <target>`` -> ``title``,
    ``~pkg.name`` -> ``name``."""
    if _LINK_TARGET.search(text):
        return _LINK_TARGET.sub("", text)
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text
