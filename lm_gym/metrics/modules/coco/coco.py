"""``evaluate`` module: COCO caption evaluation, pycocoevalcap's pipeline (:func:`lm_gym.metrics.coco_evaluate`)."""

from lm_gym.metrics import coco_evaluate
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Coco(CardMetric):
    card = CARDS["coco"]

    def _compute(self, predictions, references, pipeline="auto", spice=True):
        evaluation = coco_evaluate(predictions, references, pipeline, spice)
        return {"pipeline": evaluation.pipeline, **evaluation.scores}
