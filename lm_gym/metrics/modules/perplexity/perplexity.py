"""``evaluate`` module: perplexity under a causal language model (:func:`lm_gym.metrics.perplexity`)."""

from lm_gym.metrics import perplexity
from lm_gym.metrics.modules.cards import CARDS, CardMetric


class Perplexity(CardMetric):
    card = CARDS["perplexity"]

    def _compute(self, predictions, model, tokenizer=None, prefixes=None, batch_size=16, device=None):
        return perplexity(predictions, model, tokenizer, prefixes=prefixes, batch_size=batch_size, device=device)
