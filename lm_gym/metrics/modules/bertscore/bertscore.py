"""``evaluate`` module: BERTScore with bert-score (:func:`lm_gym.metrics.bertscore`)."""

from lm_gym.metrics import bertscore
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Bertscore(CardMetric):
    card = CARDS["bertscore"]

    def _compute(self, predictions, references, model_type=None, num_layers=None, device=None, batch_size=64):
        return bertscore(
            predictions, references, model_type=model_type, num_layers=num_layers, device=device, batch_size=batch_size
        )
