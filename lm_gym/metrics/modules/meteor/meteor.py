"""``evaluate`` module: METEOR, mean over samples (:func:`lm_gym.metrics.meteor_scores`)."""

from lm_gym.metrics import meteor_scores
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Meteor(CardMetric):
    card = CARDS["meteor"]

    def _compute(self, predictions, references):
        return {"meteor": float(meteor_scores(predictions, references).mean())}
