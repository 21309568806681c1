"""The one word tokenization of every word-based metric, and a sentence splitter; neither needs data.

``evaluate``'s METEOR tokenizes with ``nltk.word_tokenize``, which first splits sentences
with the punkt model (a download). Here :func:`tokenize` is the word tokenizer alone
(``NLTKWordTokenizer``, the Treebank-style tokenizer ``word_tokenize`` applies to each
sentence) on the lowercased text. Tokens differ from ``word_tokenize`` only where punkt
would have split a sentence, e.g. "end." inside a text stays one token here.
"""

from __future__ import annotations

import re

from nltk.tokenize import NLTKWordTokenizer

_WORD_TOKENIZER = NLTKWordTokenizer()

# Sentence-final punctuation, possibly followed by closing quotes or brackets, then whitespace.
_SENTENCE_END = re.compile(r"""([.!?]+["'”’)\]]*)\s+""")


def tokenize(text: str) -> list[str]:
    """The lowercased words and punctuation of ``text`` (``NLTKWordTokenizer``)."""
    return _WORD_TOKENIZER.tokenize(text.lower())


def split_sentences(text: str) -> str:
    """``text`` with one sentence per line, for ROUGE-Lsum.

    A sentence ends at ``.``, ``!`` or ``?`` (and any closing quotes or brackets) followed by
    whitespace. This is a rule, not punkt: abbreviations such as "Mr. Smith" are split too.
    Existing line breaks are kept.
    """
    lines = _SENTENCE_END.sub(r"\1\n", text).splitlines()
    return "\n".join(line.strip() for line in lines if line.strip())
