"""Reference-based rewards: how close each utterance is to its references, per sample, batched.

Built on the metric functions of :mod:`lm_gym.metrics` (nltk's METEOR, rouge-score,
pycocoevalcap's CIDEr-D: the ``nlg`` extra), so a reward and the evaluation metric of the same name agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lm_gym.core.validation import check_choice

#: Metrics a :class:`ReferenceReward` can score with.
REFERENCE_METRICS = ("meteor", "rouge1", "rouge2", "rougeL", "rougeLsum", "cider")


class ReferenceReward:
    """``metric(utterance, references)`` per sample.

    Args:
        metric: one of :data:`REFERENCE_METRICS`. ``rougeLsum`` splits the utterance into
            sentences (one per line, :func:`lm_gym.metrics.split_sentences`) as the
            references' lines are. ``cider`` is CIDEr-D with document frequencies fixed
            from ``corpus_references`` (so a sample's reward does not depend on its batch).
        corpus_references: every sample's references (the dataset split); ``cider`` only.
        name: the argument name shown in errors (``"reward"``).
    """

    def __init__(self, metric: str, corpus_references: Sequence[Sequence[str]] | None = None, name: str = "reward"):
        from lm_gym import metrics

        self.metric = check_choice(name, metric, REFERENCE_METRICS)
        self._metrics = metrics
        self._cider = metrics.CiderD(corpus_references) if metric == "cider" else None

    def __call__(
        self, prompts: Sequence[str], utterances: Sequence[str], references: Sequence[Sequence[str]], meta: Any = None
    ) -> np.ndarray:
        utterances, references = list(utterances), [list(r) for r in references]
        if self.metric == "meteor":
            return self._metrics.meteor_scores(utterances, references)
        if self.metric == "cider":
            return self._cider.scores(utterances, references)
        if self.metric == "rougeLsum":
            utterances = [self._metrics.split_sentences(u) for u in utterances]
        return self._metrics.rouge_scores(utterances, references, rouge_type=self.metric)
