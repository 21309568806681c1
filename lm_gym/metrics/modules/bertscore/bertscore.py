"""``evaluate`` module: BERTScore with bert-score (:func:`lm_gym.metrics.bertscore`)."""

import evaluate

from lm_gym.metrics import bertscore
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@inproceedings{zhang2020bertscore,
    title = {{BERTScore}: Evaluating Text Generation with {BERT}},
    author = {Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q. and Artzi, Yoav},
    booktitle = {International Conference on Learning Representations},
    year = {2020},
}
"""

_DESCRIPTION = """\
BERTScore by bert-score: greedy matching of contextual token embeddings between prediction
and reference (the best reference per sample), averaged over the samples.
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
    model_type: a hub model name or a local model directory (required).
    num_layers: the layer to use (required for models bert-score has no default for).
    device: default CUDA when available.
    batch_size: sentences per forward pass (default 64).
Returns:
    precision, recall, f1: means over the samples.
"""


class Bertscore(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _CITATION, _INPUTS, "references", url="https://github.com/Tiiiger/bert_score")

    def _compute(self, predictions, references, model_type=None, num_layers=None, device=None, batch_size=64):
        return bertscore(
            predictions, references, model_type=model_type, num_layers=num_layers, device=device, batch_size=batch_size
        )
