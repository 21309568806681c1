"""``evaluate`` module: lexical diversity of generated texts (:func:`lm_gym.metrics.diversity`)."""

import evaluate

from lm_gym.metrics import diversity
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{li-etal-2016-diversity,
    title = "A Diversity-Promoting Objective Function for Neural Conversation Models",
    author = "Li, Jiwei and Galley, Michel and Brockett, Chris and Gao, Jianfeng and Dolan, Bill",
    booktitle = "Proceedings of the 2016 Conference of the North {A}merican Chapter of the Association
                 for Computational Linguistics: Human Language Technologies",
    year = "2016",
    pages = "110--119",
}
"""

_DESCRIPTION = """\
Lexical diversity on lm-gym's tokenization: distinct-1 and distinct-2 (distinct / all
n-grams), MSTTR (mean type-token ratio of consecutive 100-token segments; the whole text's
ratio under 100 tokens), unigram entropy in bits, vocabulary size and mean length in tokens.
"""

_INPUTS = """\
Args:
    predictions: list of str.
Returns:
    distinct_1, distinct_2, msttr, unigram_entropy, vocab_size, mean_length.
"""


class Diversity(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _CITATION, _INPUTS)

    def _compute(self, predictions):
        return diversity(predictions)
