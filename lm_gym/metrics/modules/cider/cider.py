"""``evaluate`` module: corpus CIDEr-D with pycocoevalcap (:func:`lm_gym.metrics.cider`)."""

import evaluate

from lm_gym.metrics import cider
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{vedantam2015cider,
    title = {{CIDEr}: Consensus-based Image Description Evaluation},
    author = {Vedantam, Ramakrishna and Zitnick, C. Lawrence and Parikh, Devi},
    booktitle = {Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition},
    year = {2015},
    pages = {4566--4575},
}
"""

_DESCRIPTION = """\
Corpus CIDEr-D by pycocoevalcap (n-grams 1 to 4, clipped counts, Gaussian length penalty,
times 10), with document frequencies from the given samples' references, on lm-gym's
tokenization (nltk's Treebank word tokenizer on lowercased text) instead of COCO's Java one.
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
Returns:
    cider: corpus CIDEr-D (mean of the per-sample scores).
"""


class Cider(evaluate.Metric):
    def _info(self):
        return metric_info(
            _DESCRIPTION, _CITATION, _INPUTS, "references", url="https://github.com/salaniz/pycocoevalcap"
        )

    def _compute(self, predictions, references):
        return {"cider": cider(predictions, references)}
