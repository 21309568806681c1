"""``evaluate`` module: CommonGen concept coverage, mean over samples (:func:`lm_gym.metrics.concept_coverage`)."""

import evaluate

from lm_gym.metrics import concept_coverage
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{lin-etal-2020-commongen,
    title = "{C}ommon{G}en: A Constrained Text Generation Challenge for Generative Commonsense Reasoning",
    author = "Lin, Bill Yuchen and Zhou, Wangchunshu and Shen, Ming and Zhou, Pei and Bhagavatula, Chandra
              and Choi, Yejin and Ren, Xiang",
    booktitle = "Findings of the Association for Computational Linguistics: EMNLP 2020",
    year = "2020",
    pages = "1823--1840",
}
"""

_DESCRIPTION = """\
The fraction of a sample's concepts (lemmas such as "dog", "run") that its prediction uses,
a word matching a concept when it or its WordNet base form equals it ("dogs running" covers
"dog" and "run").
"""

_INPUTS = """\
Args:
    predictions: list of str.
    concepts: list of lists of str, the concepts of each prediction.
Returns:
    concept_coverage: mean coverage over the samples, in [0, 1].
"""


class ConceptCoverage(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _CITATION, _INPUTS, "concepts")

    def _compute(self, predictions, concepts):
        return {"concept_coverage": float(concept_coverage(predictions, concepts).mean())}
