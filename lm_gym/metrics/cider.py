"""CIDEr-D with pycocoevalcap's scorer, for a corpus and per sample with the idf of a fixed corpus.

pycocoevalcap's ``Cider`` is CIDEr-D (clipped n-gram counts, Gaussian length penalty with
sigma 6, times 10). It computes the n-grams' document frequencies from the references of
the samples it scores, so a sample's score depends on the rest of its batch. A per-sample
reward must not, so :class:`CiderD` fixes them once from a whole dataset split.

Texts are :func:`tokenize`-d and joined with spaces, where COCO uses its Java PTB tokenizer.
pycocoevalcap is lm-gym's optional ``nlg`` extra (``pip install "lm-gym[nlg]"``), imported on use.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from lm_gym.core.errors import require_extra
from lm_gym.core.ranges import NON_NEGATIVE
from lm_gym.metrics.inputs import check_pairs, check_text_lists
from lm_gym.metrics.tokenization import tokenize

#: CIDEr-D is non-negative (at most 10 per sentence with its clipping; left unbounded above)
RANGE = NON_NEGATIVE


def _joined_tokens(text: str) -> str:
    return " ".join(tokenize(text))


def cider(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus CIDEr-D of ``predictions`` (pycocoevalcap; idf from these samples' references)."""
    require_extra("nlg", "lm_gym.metrics.cider", "pycocoevalcap")
    from pycocoevalcap.cider.cider import Cider

    predictions, references = check_pairs(predictions, references)
    gts = {i: [_joined_tokens(r) for r in refs] for i, refs in enumerate(references)}
    res = {i: [_joined_tokens(p)] for i, p in enumerate(predictions)}
    score, _ = Cider().compute_score(gts, res)
    return float(score)


class _DocumentFrequencies(dict):
    """N-gram document frequencies; an unseen n-gram counts 0 without being stored.

    (pycocoevalcap keeps them in a ``defaultdict``, which would grow with every new n-gram
    of every scored prediction.)
    """

    def __missing__(self, ngram):
        return 0.0


@functools.cache
def _scorer_classes() -> tuple[type, type]:
    """pycocoevalcap's ``CiderScorer`` and ``_FixedCorpusScorer``, built on it on first use."""
    require_extra("nlg", "lm_gym.metrics.CiderD", "pycocoevalcap")
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    class _FixedCorpusScorer(CiderScorer):
        """pycocoevalcap's ``CiderScorer`` with the document frequencies of a fixed corpus.

        ``compute_cider`` sets ``ref_len`` (the log of the number of documents) from the samples
        it scores; here ``ref_len`` keeps the corpus's value, so the idf is the corpus's.
        """

        ref_len = property(lambda self: self._corpus_ref_len, lambda self, value: None)

        def __init__(self, document_frequency: _DocumentFrequencies, corpus_ref_len: float):
            self._corpus_ref_len = corpus_ref_len
            super().__init__()
            self.document_frequency = document_frequency

    return CiderScorer, _FixedCorpusScorer


class CiderD:
    """Per-sample CIDEr-D whose idf comes from ``corpus_references``, not from the batch.

    Args:
        corpus_references: the reference lists of every sample of a dataset split.

    ``CiderD(refs).scores(preds, refs).mean()`` equals :func:`cider` on the same samples.
    Needs the ``nlg`` extra (:class:`~lm_gym.core.errors.DataUnavailableError` without it).
    """

    def __init__(self, corpus_references: Sequence[Sequence[str]]):
        corpus_references = check_text_lists("corpus_references", corpus_references)
        cider_scorer, _ = _scorer_classes()
        corpus = cider_scorer()
        for refs in corpus_references:
            corpus += (None, [_joined_tokens(r) for r in refs])
        corpus.compute_doc_freq()
        self.document_frequency = _DocumentFrequencies(corpus.document_frequency)
        self.corpus_size = len(corpus_references)

    def scores(self, predictions: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
        """CIDEr-D of each prediction against its references."""
        predictions, references = check_pairs(predictions, references)
        scorer = _scorer_classes()[1](self.document_frequency, float(np.log(self.corpus_size)))
        for prediction, refs in zip(predictions, references):
            scorer += (_joined_tokens(prediction), [_joined_tokens(r) for r in refs])
        return np.asarray(scorer.compute_cider(), dtype=np.float64)
