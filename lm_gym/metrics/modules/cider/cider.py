"""``evaluate`` module: corpus CIDEr-D with pycocoevalcap (:func:`lm_gym.metrics.cider`)."""

from lm_gym.metrics import cider
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Cider(CardMetric):
    card = CARDS["cider"]

    def _compute(self, predictions, references):
        return {"cider": cider(predictions, references)}
