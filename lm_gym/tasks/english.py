"""English spelling helpers shared by the synthetic generators.

Their rules are only as good as the generators' word lists need; changing one changes the text of
every synthetic split that uses it.
"""

from __future__ import annotations


def with_article(phrase: str) -> str:
    """``phrase`` after "an" when it starts with a lower-case vowel letter, else after "a".

    By the letter, not the sound ("an umbrella", but also "a hour"): the word lists hold no
    word where the two differ.
    """
    return f"{'an' if phrase[0] in 'aeiou' else 'a'} {phrase}"


def upper_first(text: str) -> str:
    """``text`` with its first character upper-cased and the rest kept (``str.capitalize`` lowers the rest)."""
    return text[0].upper() + text[1:]
