"""``evaluate`` module: ROUGE F-measures, mean over samples (:func:`lm_gym.metrics.corpus_rouge`)."""

import evaluate

from lm_gym.metrics import ROUGE_TYPES, corpus_rouge
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{lin-2004-rouge,
    title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
    author = "Lin, Chin-Yew",
    booktitle = "Text Summarization Branches Out",
    year = "2004",
    pages = "74--81",
}
"""

_DESCRIPTION = """\
ROUGE F-measures with Google's rouge-score (Porter stemming; with several references, the
best one per sample), averaged exactly over the samples (evaluate's ROUGE reports a
bootstrap median instead). ROUGE-Lsum reads one sentence per line.
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
    rouge_types: which of rouge1, rouge2, rougeL, rougeLsum (default all four).
Returns:
    one mean F-measure per rouge type, keyed by its name.
"""


class Rouge(evaluate.Metric):
    def _info(self):
        return metric_info(
            _DESCRIPTION,
            _CITATION,
            _INPUTS,
            "references",
            url="https://github.com/google-research/google-research/tree/master/rouge",
        )

    def _compute(self, predictions, references, rouge_types=ROUGE_TYPES):
        return corpus_rouge(predictions, references, rouge_types)
