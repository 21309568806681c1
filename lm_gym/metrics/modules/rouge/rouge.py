"""``evaluate`` module: ROUGE F-measures, mean over samples (:func:`lm_gym.metrics.corpus_rouge`)."""

from lm_gym.metrics import ROUGE_TYPES, corpus_rouge
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Rouge(CardMetric):
    card = CARDS["rouge"]

    def _compute(self, predictions, references, rouge_types=ROUGE_TYPES):
        return corpus_rouge(predictions, references, rouge_types)
