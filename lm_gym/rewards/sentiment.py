"""Sentiment rewards: P(positive) of each utterance under a classifier.

* :class:`ClassifierSentimentReward` — any ``transformers`` sequence classifier, by hub
  name (RL4LMs used ``lvwerra/distilbert-imdb``) or local directory.
* :class:`NgramSentimentReward` — the offline bag-of-n-grams classifier of
  :mod:`lm_gym.rewards.classifiers`, trained on a task's labelled training text and cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.rewards.classifiers import NgramClassifier, TransformersClassifier, trained_ngram_classifier


class ClassifierSentimentReward:
    """P(positive) from a ``transformers`` sequence classifier (hub name or local path).

    Args:
        model_name_or_path: e.g. ``"lvwerra/distilbert-imdb"``.
        positive_label: the positive class, as a label name or index; by default the label
            whose name contains ``"pos"``, else index 1 of a two-class model.
        device: ``"cpu"``, ``"cuda"``, ...; default CUDA when available.
        batch_size: utterances per forward pass.
        max_length: classifier input truncation, in tokens.
    """

    def __init__(
        self,
        model_name_or_path: str,
        positive_label: str | int | None = None,
        device: str | None = None,
        batch_size: int = 64,
        max_length: int = 512,
    ):
        offline_hint = (
            "Offline, pass a local directory, or reward_model='trained' "
            "for a classifier lm-gym trains on the task's data."
        )
        self.classifier = TransformersClassifier(
            model_name_or_path,
            "sentiment classifier",
            offline_hint,
            device=device,
            batch_size=batch_size,
            max_length=max_length,
        )
        self.positive_index = _positive_index(self.classifier.labels, positive_label)

    def __call__(
        self, prompts: Sequence[str], utterances: Sequence[str], references: Any = None, meta: Any = None
    ) -> np.ndarray:
        return self.classifier.probabilities(list(utterances))[:, self.positive_index]


def _positive_index(labels: dict[int, str], positive_label: str | int | None) -> int:
    if isinstance(positive_label, int) and positive_label in labels:
        return positive_label
    if isinstance(positive_label, str):
        for index, name in labels.items():
            if name.lower() == positive_label.lower():
                return index
    if positive_label is None:
        matches = [i for i, name in labels.items() if "pos" in name.lower()]
        if len(matches) == 1:
            return matches[0]
        if len(labels) == 2:
            return 1
    raise ConfigurationError(
        f"positive_label={safe_repr(positive_label)} matches none of the classifier's labels {labels}"
    )


class NgramSentimentReward:
    """P(positive) (class 1) under a two-class :class:`~lm_gym.rewards.classifiers.NgramClassifier`."""

    def __init__(self, classifier: NgramClassifier):
        self.classifier = classifier

    def __call__(
        self, prompts: Sequence[str], utterances: Sequence[str], references: Any = None, meta: Any = None
    ) -> np.ndarray:
        return self.classifier.probabilities(list(utterances))[:, 1]

    @classmethod
    def trained_on(cls, texts: Sequence[str], labels: Sequence[int], name: str) -> NgramSentimentReward:
        """Train on ``texts``/``labels`` (1 positive, 0 negative) once; cached under ``$LM_GYM_CACHE``."""
        return cls(trained_ngram_classifier(texts, labels, name))
