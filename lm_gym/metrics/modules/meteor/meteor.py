"""``evaluate`` module: METEOR, mean over samples (:func:`lm_gym.metrics.meteor_scores`)."""

import evaluate

from lm_gym.metrics import meteor_scores
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{banerjee-lavie-2005-meteor,
    title = "{METEOR}: An Automatic Metric for {MT} Evaluation with Improved Correlation with Human Judgments",
    author = "Banerjee, Satanjeev and Lavie, Alon",
    booktitle = "Proceedings of the {ACL} Workshop on Intrinsic and Extrinsic Evaluation Measures
                 for Machine Translation and/or Summarization",
    year = "2005",
    pages = "65--72",
}
"""

_DESCRIPTION = """\
METEOR with nltk's implementation (exact, Porter-stem and WordNet-synonym matches), on
lm-gym's data-free tokenization (nltk's Treebank word tokenizer on lowercased text, with no
punkt sentence split). WordNet comes from nltk's data or the system's WordNet 3.0 database.
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction (the best counts).
Returns:
    meteor: mean METEOR over the samples, in [0, 1].
"""


class Meteor(evaluate.Metric):
    def _info(self):
        return metric_info(
            _DESCRIPTION,
            _CITATION,
            _INPUTS,
            "references",
            url="https://www.nltk.org/api/nltk.translate.meteor_score.html",
        )

    def _compute(self, predictions, references):
        return {"meteor": float(meteor_scores(predictions, references).mean())}
