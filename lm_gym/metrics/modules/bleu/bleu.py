"""``evaluate`` module: nltk's corpus BLEU on lm-gym's tokenization (:func:`lm_gym.metrics.corpus_bleu`)."""

from lm_gym.metrics import corpus_bleu
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Bleu(CardMetric):
    card = CARDS["bleu"]

    def _compute(self, predictions, references):
        return {"bleu": corpus_bleu(predictions, references)}
