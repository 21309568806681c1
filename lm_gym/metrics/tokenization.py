"""The one word tokenization of every word-based metric, and a sentence splitter; neither needs data.

``evaluate``'s METEOR (and nltk's ``word_tokenize``) splits a text into sentences with the
punkt model (a download), then each sentence into words with the Treebank-style
``NLTKWordTokenizer``, which splits off a period only at the end of what it is given. Here
:func:`tokenize` does the same with the rule-based :func:`split_sentences` in place of punkt,
so a sentence-final period inside a text ("table. Take") is a token of its own, as punkt
would have it, and not glued to its word.
"""

from __future__ import annotations

import re

from nltk.tokenize import NLTKWordTokenizer

_WORD_TOKENIZER = NLTKWordTokenizer()

# Words whose period does not end a sentence: titles, "e.g.", "etc.", months, and single
# letters (initials, "U.S."), as punkt's English model has them.
_ABBREVIATIONS = (
    "mr|mrs|ms|dr|prof|sr|jr|st|mt|gen|gov|sen|rep|rev|capt|col|lt|sgt|vs|etc|approx|dept|est|inc|ltd|co|corp|no|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|e\\.g|i\\.e|a\\.m|p\\.m|u\\.s|u\\.k|[a-z]"
)
# Sentence-final punctuation, possibly followed by closing quotes or brackets, then whitespace;
# a period after one of the abbreviations is not an end.
_SENTENCE_END = re.compile(rf"""(?<![\w.])(?:(?:{_ABBREVIATIONS})\.(?=\s))|([.!?]+["'”’)\]]*)\s+""", re.IGNORECASE)


def tokenize(text: str) -> list[str]:
    """The lowercased words and punctuation of ``text``: its sentences, each by ``NLTKWordTokenizer``."""
    return [
        token for sentence in split_sentences(text.lower()).split("\n") for token in _WORD_TOKENIZER.tokenize(sentence)
    ]


def split_sentences(text: str) -> str:
    """``text`` with one sentence per line, for ROUGE-Lsum and :func:`tokenize`.

    A sentence ends at ``.``, ``!`` or ``?`` (and any closing quotes or brackets) followed by
    whitespace, except for the period of a common abbreviation or an initial ("Mr. Smith",
    "e.g. this", "J. Smith"). This is a rule, not punkt: it splits where a sentence happens to
    end in such an abbreviation, and not where punkt's statistics would. Existing line breaks
    are kept.
    """
    lines = _SENTENCE_END.sub(_end_of_sentence, text).splitlines()
    return "\n".join(line.strip() for line in lines if line.strip())


def _end_of_sentence(match: re.Match) -> str:
    return match[0] if match[1] is None else match[1] + "\n"
