"""Corpus BLEU two ways: nltk's on :func:`tokenize` tokens (0-1) and SacreBLEU's standard one (0-100).

SacreBLEU is lm-gym's optional ``nlg`` extra (``pip install "lm-gym[nlg]"``), imported on use.
"""

from __future__ import annotations

from collections.abc import Sequence

from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu

from lm_gym.core.errors import require_extra
from lm_gym.core.ranges import UNIT, Range
from lm_gym.metrics.inputs import check_pairs
from lm_gym.metrics.tokenization import tokenize

#: the range of each value :func:`bleu_scores` returns: nltk's BLEU in [0, 1], SacreBLEU in [0, 100]
RANGES = {"bleu": UNIT, "sacrebleu": Range(0.0, 100.0)}


def corpus_bleu(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """nltk's ``corpus_bleu`` (uniform 1- to 4-gram weights, no smoothing), in [0, 1]."""
    predictions, references = check_pairs(predictions, references)
    return float(
        nltk_corpus_bleu([[tokenize(r) for r in refs] for refs in references], [tokenize(p) for p in predictions])
    )


def corpus_sacrebleu(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """``sacrebleu.corpus_bleu`` with its defaults (13a tokenization, exp smoothing), in [0, 100].

    SacreBLEU takes references as streams (the k-th reference of every sample); a sample
    with fewer references fills its missing places with ``None``, which SacreBLEU skips.
    Needs the ``nlg`` extra (:class:`~lm_gym.core.errors.DataUnavailableError` without it).
    """
    require_extra("nlg", "lm_gym.metrics.corpus_sacrebleu", "sacrebleu")
    import sacrebleu

    predictions, references = check_pairs(predictions, references)
    stream_count = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(stream_count)]
    return float(sacrebleu.corpus_bleu(predictions, streams).score)


def bleu_scores(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """``bleu`` (nltk's :func:`corpus_bleu`) and ``sacrebleu`` of a corpus: the BLEUs the reference-scored
    tasks report among their corpus metrics."""
    return {"bleu": corpus_bleu(predictions, references), "sacrebleu": corpus_sacrebleu(predictions, references)}
