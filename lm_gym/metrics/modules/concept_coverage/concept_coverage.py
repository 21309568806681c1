"""``evaluate`` module: CommonGen concept coverage, mean over samples (:func:`lm_gym.metrics.concept_coverage`)."""

from lm_gym.metrics import concept_coverage
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class ConceptCoverage(CardMetric):
    card = CARDS["concept_coverage"]

    def _compute(self, predictions, concepts):
        return {"concept_coverage": float(concept_coverage(predictions, concepts).mean())}
