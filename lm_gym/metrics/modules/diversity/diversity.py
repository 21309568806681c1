"""``evaluate`` module: lexical diversity of generated texts (:func:`lm_gym.metrics.diversity`)."""

from lm_gym.metrics import diversity
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Diversity(CardMetric):
    card = CARDS["diversity"]

    def _compute(self, predictions):
        return diversity(predictions)
