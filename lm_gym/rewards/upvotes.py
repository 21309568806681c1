"""Upvote rewards of ILQL's Reddit task: was a comment (or would it be) scored above 0?

* :class:`UpvotesRealReward` -- ILQL's ``upvotes_real``: ``+1`` if the comment's real score is
  above 0, else ``-1``, looked up by exact text in the dataset's comments. It is defined only
  for dataset comments (offline data, evaluation of them); ILQL raised an error for any other
  text. An env must not crash on a valid action, so here other text gets ``unknown_reward``
  (default 0: no evidence either way) and :meth:`UpvotesRealReward.known` tells which texts
  were scored. A text that occurs several times with different scores takes the score of one
  occurrence drawn from ``meta[i]["reward_seed"]`` (ILQL drew it with Python's ``random``).
* :class:`UpvotesModelReward` -- ILQL's ``upvotes_model``: ``1`` if a classifier of the text
  alone predicts a score above 0 (probability >= 0.5), else ``0``. ILQL fine-tuned RoBERTa;
  lm-gym trains the bag-of-n-grams classifier of :mod:`lm_gym.rewards.classifiers` on the
  source's training comments labelled ``score > 0`` and caches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import Metas, Texts
from lm_gym.core.validation import is_integer
from lm_gym.rewards.classifiers import NgramClassifier, trained_ngram_classifier


class UpvotesRealReward:
    """``+1``/``-1`` from the real score of a dataset comment; ``unknown_reward`` for other text.

    Args:
        texts: the dataset's comment texts, exactly as utterances will be compared to them.
        scores: their scores, one int per text.
        unknown_reward: the reward of a text that is not a dataset comment.
    """

    def __init__(self, texts: Sequence[str], scores: Sequence[int], unknown_reward: float = 0.0):
        if len(texts) != len(scores):
            raise ConfigurationError(f"need one score per text; got {len(texts)} texts and {len(scores)} scores")
        self.scores: dict[str, list[int]] = {}
        for text, score in zip(texts, scores):
            self.scores.setdefault(text, []).append(int(score))
        self.unknown_reward = float(unknown_reward)

    def known(self, texts: Sequence[str]) -> np.ndarray:
        """Whether each text is a dataset comment (has a real score)."""
        return np.array([text in self.scores for text in texts], dtype=bool)

    def __call__(
        self, prompts: Texts, utterances: Texts, references: Any = None, meta: Metas | None = None
    ) -> np.ndarray:
        rewards = np.full(len(utterances), self.unknown_reward)
        for i, text in enumerate(utterances):
            scores = self.scores.get(text)
            if scores is None:
                continue
            if len(scores) > 1:
                seed = (meta[i] if meta is not None else {}).get("reward_seed")
                if not is_integer(seed) or seed < 0:
                    raise ConfigurationError(
                        f"a text with several real scores needs meta[{i}]['reward_seed'], a non-negative int; "
                        f"got {safe_repr(seed)}"
                    )
                score = scores[int(np.random.default_rng(int(seed)).integers(len(scores)))]
            else:
                score = scores[0]
            rewards[i] = 1.0 if score > 0 else -1.0
        return rewards


class UpvotesModelReward:
    """``1`` if the classifier gives P(score > 0) >= 0.5 for the utterance alone, else ``0``."""

    def __init__(self, classifier: NgramClassifier):
        self.classifier = classifier

    @classmethod
    def trained_on(cls, texts: Sequence[str], scores: Sequence[int], name: str) -> UpvotesModelReward:
        """Train on ``texts`` labelled ``score > 0`` once; cached under ``$LM_GYM_CACHE/reward_models``.

        2**16 hashed n-gram buckets (a quarter of the default) suit comment vocabularies.
        """
        return cls(trained_ngram_classifier(list(texts), [int(score > 0) for score in scores], name, num_buckets=2**16))

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """P(score > 0) of each text."""
        return self.classifier.probabilities(list(texts))[:, 1]

    def __call__(
        self, prompts: Sequence[str], utterances: Sequence[str], references: Any = None, meta: Any = None
    ) -> np.ndarray:
        return (self.probabilities(utterances) >= 0.5).astype(np.float64)
