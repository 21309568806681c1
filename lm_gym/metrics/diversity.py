"""Lexical diversity of a set of generated texts, on :func:`tokenize` tokens.

No field library computes these, so they are defined here:

* ``distinct_1``, ``distinct_2``: distinct n-grams / all n-grams over the corpus (n-grams
  never cross two predictions).
* ``msttr``: mean type-token ratio of the consecutive 100-token segments of all predictions'
  tokens concatenated; the last, shorter segment is left out. Under 100 tokens in all, it is
  the type-token ratio of the whole text.
* ``unigram_entropy``: Shannon entropy, in bits, of the corpus's unigram frequencies.
* ``vocab_size``: number of distinct tokens; ``mean_length``: mean tokens per prediction.

Where there is nothing to count (no token, no bigram), a ratio is 0.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np

from lm_gym.core.ranges import COUNT, NON_NEGATIVE, UNIT
from lm_gym.metrics.inputs import check_texts
from lm_gym.metrics.tokenization import tokenize

MSTTR_SEGMENT = 100
#: the range of each value :func:`diversity` returns
RANGES = {
    "distinct_1": UNIT,
    "distinct_2": UNIT,
    "msttr": UNIT,
    "unigram_entropy": NON_NEGATIVE,
    "vocab_size": COUNT,
    "mean_length": NON_NEGATIVE,
}


def _type_token_ratio(items: Sequence) -> float:
    return len(set(items)) / len(items) if items else 0.0


def diversity(predictions: Sequence[str]) -> dict[str, float]:
    """``distinct_1``, ``distinct_2``, ``msttr``, ``unigram_entropy`` (bits), ``vocab_size``, ``mean_length``."""
    token_lists = [tokenize(text) for text in check_texts("predictions", predictions)]
    tokens = [token for token_list in token_lists for token in token_list]
    bigrams = [bigram for token_list in token_lists for bigram in itertools.pairwise(token_list)]
    segments = [
        tokens[start : start + MSTTR_SEGMENT] for start in range(0, len(tokens) - MSTTR_SEGMENT + 1, MSTTR_SEGMENT)
    ]
    probabilities = np.array(list(Counter(tokens).values()), dtype=np.float64) / max(len(tokens), 1)
    return {
        "distinct_1": _type_token_ratio(tokens),
        "distinct_2": _type_token_ratio(bigrams),
        "msttr": float(np.mean([_type_token_ratio(s) for s in segments])) if segments else _type_token_ratio(tokens),
        "unigram_entropy": float(np.sum(-probabilities * np.log2(probabilities))),
        "vocab_size": len(set(tokens)),
        "mean_length": len(tokens) / len(token_lists),
    }
