"""``evaluate`` module: nltk's corpus BLEU on lm-gym's tokenization (:func:`lm_gym.metrics.corpus_bleu`)."""

import evaluate

from lm_gym.metrics import corpus_bleu
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{papineni-etal-2002-bleu,
    title = "{B}leu: a Method for Automatic Evaluation of Machine Translation",
    author = "Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing",
    booktitle = "Proceedings of the 40th Annual Meeting of the Association for Computational Linguistics",
    year = "2002",
    pages = "311--318",
}
"""

_DESCRIPTION = """\
Corpus BLEU by nltk (uniform 1- to 4-gram weights, no smoothing) on lm-gym's tokenization
(nltk's Treebank word tokenizer on lowercased text).
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
Returns:
    bleu: corpus BLEU in [0, 1].
"""


class Bleu(evaluate.Metric):
    def _info(self):
        return metric_info(
            _DESCRIPTION,
            _CITATION,
            _INPUTS,
            "references",
            url="https://www.nltk.org/api/nltk.translate.bleu_score.html",
        )

    def _compute(self, predictions, references):
        return {"bleu": corpus_bleu(predictions, references)}
