"""DailyDialog's reward: does the reply carry the intended dialogue act, and how close is it?

``reward = intent_coef * [act(reply) == target act] + meteor_coef * METEOR(reply, reference)``,
per sample (RL4LMs used ``0.75``/``0.25`` with a running corpus METEOR; lm-gym scores each
reply on its own, so a reward never depends on the other replies of a batch).

The act of a reply comes from a dialogue-act classifier, one of:

* :class:`TransformersActClassifier` — a ``transformers`` sequence classifier by hub name
  or path (RL4LMs: ``rajkumarrrk/roberta-daily-dialog-intent-classifier``), class ``i``
  meaning act ``i + 1``; its input is, as in RL4LMs, the context's last utterance followed
  by the reply.
* :class:`NgramActClassifier` — the offline n-gram classifier of
  :mod:`lm_gym.rewards.classifiers`, trained on the source's labelled training utterances and
  cached; its input is the reply alone (the act is a property of the utterance itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from lm_gym.rewards.classifiers import NgramClassifier, TransformersClassifier, trained_ngram_classifier

#: The separator of the context's utterances in DailyDialog prompts.
EOU = "<EOU>"


class ActClassifier(Protocol):
    def predict(self, prompts: Sequence[str], utterances: Sequence[str]) -> np.ndarray:
        """The act id (1 inform, 2 question, 3 directive, 4 commissive) of each reply."""


class NgramActClassifier:
    """Acts from a 4-class :class:`~lm_gym.rewards.classifiers.NgramClassifier` of the reply alone."""

    def __init__(self, classifier: NgramClassifier):
        self.classifier = classifier

    @classmethod
    def trained_on(cls, utterances: Sequence[str], acts: Sequence[int], name: str) -> NgramActClassifier:
        """Train on ``utterances`` labelled with ``acts`` (1..4) once; cached under ``$LM_GYM_CACHE``."""
        return cls(trained_ngram_classifier(utterances, [act - 1 for act in acts], name, num_classes=4))

    def predict(self, prompts: Sequence[str], utterances: Sequence[str]) -> np.ndarray:
        return self.classifier.probabilities(list(utterances)).argmax(-1) + 1


class TransformersActClassifier:
    """Acts from a ``transformers`` classifier of ``last context utterance + reply`` (RL4LMs' input)."""

    def __init__(self, model_name_or_path: str, device: str | None = None, batch_size: int = 64):
        hint = (
            "Offline, pass a local directory, or intent_model='trained' "
            "for a classifier lm-gym trains on the task's data."
        )
        self.classifier = TransformersClassifier(
            model_name_or_path, "dialogue-act classifier", hint, device=device, batch_size=batch_size
        )

    def predict(self, prompts: Sequence[str], utterances: Sequence[str]) -> np.ndarray:
        last = [prompt.rstrip().removesuffix(EOU).rsplit(EOU, 1)[-1].strip() for prompt in prompts]
        texts = [f"{context} {utterance}".strip() for context, utterance in zip(last, utterances, strict=True)]
        return self.classifier.probabilities(texts).argmax(-1) + 1


class IntentMeteorReward:
    """``intent_coef * intent match + meteor_coef * METEOR``, per sample; see the module docstring."""

    def __init__(self, classifier: ActClassifier, intent_coef: float = 0.75, meteor_coef: float = 0.25):
        self.classifier, self.intent_coef, self.meteor_coef = classifier, intent_coef, meteor_coef

    def __call__(
        self, prompts: Sequence[str], utterances: Sequence[str], references: Sequence[Sequence[str]], meta: Any
    ) -> np.ndarray:
        """``meta[i]["act_id"]`` is the act of sample ``i``'s real reply."""
        from lm_gym.metrics import meteor_scores

        targets = np.array([m["act_id"] for m in meta])
        match = (self.classifier.predict(prompts, utterances) == targets).astype(np.float64)
        return self.intent_coef * match + self.meteor_coef * meteor_scores(
            list(utterances), [list(r) for r in references]
        )
