"""Concept coverage (CommonGen): the fraction of the given concepts a prediction uses, inflected or not."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from lm_gym.core.ranges import UNIT
from lm_gym.metrics.inputs import check_pairs
from lm_gym.metrics.tokenization import tokenize
from lm_gym.metrics.wordnet import wordnet

_PARTS_OF_SPEECH = ("n", "v", "a", "r")
#: concept coverage, the share of the concepts used, lies in [0, 1]
RANGE = UNIT


@functools.lru_cache(maxsize=65536)
def _forms(token: str) -> frozenset[str]:
    """``token`` and its WordNet base forms as any part of speech ("running" -> {"running", "run"})."""
    reader = wordnet()
    return frozenset({token} | {reader.morphy(token, pos) for pos in _PARTS_OF_SPEECH} - {None})


def concept_coverage(predictions: Sequence[str], concepts: Sequence[Sequence[str]]) -> np.ndarray:
    """Per sample, the fraction of its ``concepts`` (lemmas such as "dog", "run") found in the prediction.

    A concept is found when a token of the prediction (:func:`tokenize`) or one of its base
    forms (``wordnet().morphy`` as noun, verb, adjective or adverb) equals it, ignoring case:
    "dogs running" covers "dog" and "run".
    """
    predictions, concepts = check_pairs(predictions, concepts, "concepts")
    coverage = []
    for prediction, wanted in zip(predictions, concepts):
        present = frozenset().union(*map(_forms, tokenize(prediction)))
        coverage.append(np.mean([concept.lower() in present for concept in wanted]))
    return np.asarray(coverage, dtype=np.float64)
