"""METEOR (nltk), per sample, with WordNet synonyms and the data-free :func:`tokenize`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from nltk.translate.meteor_score import meteor_score

from lm_gym.core.ranges import UNIT
from lm_gym.metrics.inputs import check_pairs
from lm_gym.metrics.tokenization import tokenize
from lm_gym.metrics.wordnet import wordnet

#: METEOR lies in [0, 1]
RANGE = UNIT


def meteor_scores(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """nltk's ``meteor_score`` of each prediction against its references (nltk keeps the best one).

    Texts are split by :func:`tokenize`, not ``word_tokenize`` as in ``evaluate``'s METEOR
    (which needs the punkt download); nltk's default parameters (alpha 0.9, beta 3, gamma 0.5).
    """
    predictions, references = check_pairs(predictions, references)
    reader = wordnet()
    scores = [
        meteor_score([tokenize(r) for r in refs], tokenize(p), wordnet=reader)
        for p, refs in zip(predictions, references)
    ]
    return np.asarray(scores, dtype=np.float64)
