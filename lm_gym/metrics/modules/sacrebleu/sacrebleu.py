"""``evaluate`` module: SacreBLEU corpus BLEU (:func:`lm_gym.metrics.corpus_sacrebleu`)."""

from lm_gym.metrics import corpus_sacrebleu
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Sacrebleu(CardMetric):
    card = CARDS["sacrebleu"]

    def _compute(self, predictions, references):
        return {"score": corpus_sacrebleu(predictions, references)}
