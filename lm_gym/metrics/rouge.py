"""ROUGE F-measures with Google's ``rouge-score`` (Porter stemming, best of several references).

``rouge-score`` tokenizes itself (lowercase, alphanumeric words), as the field reports ROUGE,
so :func:`tokenize` is not used here. ROUGE-Lsum splits summaries into sentences at
newlines only: give summaries one sentence per line (:func:`split_sentences` does that
without punkt); with no newline, ROUGE-Lsum equals ROUGE-L.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from rouge_score.rouge_scorer import RougeScorer

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.ranges import UNIT
from lm_gym.core.validation import check_choice
from lm_gym.metrics.inputs import check_pairs

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
#: every ROUGE score (precision, recall, F-measure) lies in [0, 1]
RANGE = UNIT


def rouge_scores(
    predictions: Sequence[str], references: Sequence[Sequence[str]], rouge_type: str = "rouge1"
) -> np.ndarray:
    """Per sample ``rouge_type`` F-measure against the best-scoring reference (``score_multi``)."""
    check_choice("rouge_type", rouge_type, ROUGE_TYPES)
    return _fmeasures(predictions, references, (rouge_type,))[rouge_type]


def corpus_rouge(
    predictions: Sequence[str], references: Sequence[Sequence[str]], rouge_types: Sequence[str] = ROUGE_TYPES
) -> dict[str, float]:
    """Mean per-sample F-measure of each of ``rouge_types`` (keys ``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum``).

    An exact mean: ``evaluate``'s ROUGE reports the bootstrap median of it instead.
    """
    if isinstance(rouge_types, str) or not isinstance(rouge_types, Sequence) or not rouge_types:
        raise ConfigurationError(
            f"rouge_types must be a non-empty sequence of names from {ROUGE_TYPES}, got {safe_repr(rouge_types)}"
        )
    for rouge_type in rouge_types:
        check_choice("rouge_types", rouge_type, ROUGE_TYPES)
    fmeasures = _fmeasures(predictions, references, tuple(dict.fromkeys(rouge_types)))
    return {rouge_type: float(values.mean()) for rouge_type, values in fmeasures.items()}


@functools.lru_cache(maxsize=16)
def _scorer(rouge_types: tuple[str, ...]) -> RougeScorer:
    return RougeScorer(list(rouge_types), use_stemmer=True)


def _fmeasures(predictions, references, rouge_types: tuple[str, ...]) -> dict[str, np.ndarray]:
    predictions, references = check_pairs(predictions, references)
    scorer = _scorer(rouge_types)
    scores = [scorer.score_multi(refs, prediction) for prediction, refs in zip(predictions, references)]
    return {
        rouge_type: np.array([score[rouge_type].fmeasure for score in scores], dtype=np.float64)
        for rouge_type in rouge_types
    }
