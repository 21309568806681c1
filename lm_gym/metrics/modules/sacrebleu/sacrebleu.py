"""``evaluate`` module: SacreBLEU corpus BLEU (:func:`lm_gym.metrics.corpus_sacrebleu`)."""

import evaluate

from lm_gym.metrics import corpus_sacrebleu
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}
"""

_DESCRIPTION = """\
Corpus BLEU by sacrebleu with its defaults (13a tokenization, exponential smoothing).
Samples may have different numbers of references (evaluate's sacrebleu requires equal ones).
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
Returns:
    score: corpus BLEU in [0, 100].
"""


class Sacrebleu(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _CITATION, _INPUTS, "references", url="https://github.com/mjpost/sacrebleu")

    def _compute(self, predictions, references):
        return {"score": corpus_sacrebleu(predictions, references)}
