"""``evaluate`` module: perplexity under a causal language model (:func:`lm_gym.metrics.perplexity`)."""

import evaluate

from lm_gym.metrics import perplexity
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@article{jelinek1977perplexity,
    title = {Perplexity---a measure of the difficulty of speech recognition tasks},
    author = {Jelinek, Fred and Mercer, Robert L. and Bahl, Lalit R. and Baker, James K.},
    journal = {The Journal of the Acoustical Society of America},
    volume = {62},
    number = {S1},
    pages = {S63},
    year = {1977},
}
"""

_DESCRIPTION = """\
Perplexity of each text under a transformers causal language model, scored after the
tokenizer's BOS (else EOS) token and, optionally, after a prefix whose tokens are not counted.
"""

_INPUTS = """\
Args:
    predictions: list of str, the texts to score.
    model: a causal LM object, or a name/path for AutoModelForCausalLM.from_pretrained.
    tokenizer: its tokenizer, or a name/path (default: the model's name/path).
    prefixes: optional list of str, one context per text.
    batch_size: texts per forward pass (default 16).
    device: where to run (default where the model is).
Returns:
    perplexity: exp(total NLL / total scored tokens); mean_perplexity: mean per-text
    perplexity; perplexities: per-text perplexities.
"""


class Perplexity(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _CITATION, _INPUTS)

    def _compute(self, predictions, model, tokenizer=None, prefixes=None, batch_size=16, device=None):
        return perplexity(predictions, model, tokenizer, prefixes=prefixes, batch_size=batch_size, device=device)
