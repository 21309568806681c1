"""``evaluate`` module: COCO caption evaluation, pycocoevalcap's pipeline (:func:`lm_gym.metrics.coco_evaluate`)."""

import evaluate

from lm_gym.metrics import coco_evaluate
from lm_gym.metrics.modules import metric_info

_CITATION = """\
@article{chen2015microsoft,
    title = {Microsoft {COCO} Captions: Data Collection and Evaluation Server},
    author = {Chen, Xinlei and Fang, Hao and Lin, Tsung-Yi and Vedantam, Ramakrishna and Gupta, Saurabh
              and Doll{\\'a}r, Piotr and Zitnick, C. Lawrence},
    journal = {arXiv preprint arXiv:1504.00325},
    year = {2015},
}
"""

_DESCRIPTION = """\
The COCO caption evaluation that published CommonGen and captioning numbers come from:
Stanford's PTB tokenization (lower-cased, punctuation removed), then pycocoevalcap's BLEU-1
to 4, METEOR 1.5, ROUGE-L, CIDEr-D and SPICE. The java pipeline is pycocoevalcap's own (SPICE
only where its Stanford models are installed); the python pipeline needs no Java, tokenizes
in Python as the PTB tokenizer does and has no METEOR or SPICE.
"""

_INPUTS = """\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
    pipeline: "auto" (default: java when Java is installed), "java" or "python".
    spice: compute SPICE too (java pipeline with its models installed; default True).
Returns:
    pipeline: "java" or "python", the pipeline that computed the scores;
    bleu1 ... bleu4, meteor, rouge_l, cider, spice: those computed, on pycocoevalcap's scale.
"""


class Coco(evaluate.Metric):
    def _info(self):
        return metric_info(
            _DESCRIPTION, _CITATION, _INPUTS, "references", url="https://github.com/salaniz/pycocoevalcap"
        )

    def _compute(self, predictions, references, pipeline="auto", spice=True):
        evaluation = coco_evaluate(predictions, references, pipeline, spice)
        return {"pipeline": evaluation.pipeline, **evaluation.scores}
