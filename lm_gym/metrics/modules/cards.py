"""What lm-gym's ``evaluate`` modules say about themselves, and the base class that says it.

Each module script (``modules/<name>/<name>.py``) is a :class:`CardMetric` whose ``card`` is its
entry of :data:`CARDS` (description, citation, inputs description, input columns, reference URL)
and whose ``_compute`` calls the plain function of :mod:`lm_gym.metrics`. The scripts import this
module from the installed package, so it also works from the copy of a script that ``evaluate``
makes in its modules cache. It imports ``evaluate``: only the module scripts import it.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

import datasets
import evaluate

#: The ``Args:`` lines of ``predictions`` and ``references`` in :func:`reference_inputs`.
_REFERENCE_ARGS = """\
    predictions: list of str.
    references: list of lists of str, one or more references per prediction.
"""


def reference_inputs(returns: str, options: str = "") -> str:
    """The inputs description of a module that scores predictions against references.

    ``Args:`` are the ``predictions`` and ``references`` every such module takes, then the
    module's ``options`` (its keyword arguments, a line each); ``Returns:`` is ``returns``.
    ``options`` and ``returns`` are written unindented: each line is indented here.
    """
    return f"Args:\n{_REFERENCE_ARGS}{_indented(options)}Returns:\n{_indented(returns)}"


def _indented(lines: str) -> str:
    return "".join(f"    {line}\n" for line in lines.splitlines())


@dataclass(frozen=True)
class MetricCard:
    """What ``evaluate`` shows of a module: ``compute``'s inputs are ``predictions`` (strings) and
    each of ``text_columns``, a sequence of strings per prediction (``references``, ...)."""

    description: str
    citation: str
    inputs: str
    text_columns: tuple[str, ...] = ()
    url: str | None = None

    def info(self) -> evaluate.MetricInfo:
        """The module's ``evaluate.MetricInfo``."""
        columns = {"predictions": datasets.Value("string")}
        columns.update({column: datasets.List(datasets.Value("string")) for column in self.text_columns})
        return evaluate.MetricInfo(
            description=self.description,
            citation=self.citation,
            inputs_description=self.inputs,
            features=datasets.Features(columns),
            reference_urls=[self.url] if self.url else [],
        )


class CardMetric(evaluate.Metric, metaclass=abc.ABCMeta):
    """An lm-gym ``evaluate`` module: its ``MetricInfo`` from its :class:`MetricCard`, its ``_compute`` its own.

    Abstract so that ``evaluate.load``, which takes the first concrete ``EvaluationModule`` class
    it finds in a script, takes the script's own class and not this imported one.
    """

    card: ClassVar[MetricCard]

    def _info(self) -> evaluate.MetricInfo:
        return self.card.info()

    @abc.abstractmethod
    def _compute(self, predictions, **inputs):
        """The module's scores of ``predictions`` given its other inputs and options."""


#: The card of each module, by module name (:data:`lm_gym.metrics.modules.MODULE_NAMES`).
CARDS = {
    "meteor": MetricCard(
        description="""\
METEOR with nltk's implementation (exact, Porter-stem and WordNet-synonym matches), on
lm-gym's data-free tokenization (nltk's Treebank word tokenizer on lowercased text, with no
punkt sentence split). WordNet comes from nltk's data or the system's WordNet 3.0 database.
""",
        citation="""\
@inproceedings{banerjee-lavie-2005-meteor,
    title = "{METEOR}: An Automatic Metric for {MT} Evaluation with Improved Correlation with Human Judgments",
    author = "Banerjee, Satanjeev and Lavie, Alon",
    booktitle = "Proceedings of the {ACL} Workshop on Intrinsic and Extrinsic Evaluation Measures
                 for Machine Translation and/or Summarization",
    year = "2005",
    pages = "65--72",
}
""",
        inputs="""\
Args:
    predictions: list of str.
    references: list of lists of str, one or more references per prediction (the best counts).
Returns:
    meteor: mean METEOR over the samples, in [0, 1].
""",
        text_columns=("references",),
        url="https://www.nltk.org/api/nltk.translate.meteor_score.html",
    ),
    "rouge": MetricCard(
        description="""\
ROUGE F-measures with Google's rouge-score (Porter stemming; with several references, the
best one per sample), averaged exactly over the samples (evaluate's ROUGE reports a
bootstrap median instead). ROUGE-Lsum reads one sentence per line.
""",
        citation="""\
@inproceedings{lin-2004-rouge,
    title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
    author = "Lin, Chin-Yew",
    booktitle = "Text Summarization Branches Out",
    year = "2004",
    pages = "74--81",
}
""",
        inputs=reference_inputs(
            options="rouge_types: which of rouge1, rouge2, rougeL, rougeLsum (default all four).",
            returns="one mean F-measure per rouge type, keyed by its name.",
        ),
        text_columns=("references",),
        url="https://github.com/google-research/google-research/tree/master/rouge",
    ),
    "bleu": MetricCard(
        description="""\
Corpus BLEU by nltk (uniform 1- to 4-gram weights, no smoothing) on lm-gym's tokenization
(nltk's Treebank word tokenizer on lowercased text).
""",
        citation="""\
@inproceedings{papineni-etal-2002-bleu,
    title = "{B}leu: a Method for Automatic Evaluation of Machine Translation",
    author = "Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing",
    booktitle = "Proceedings of the 40th Annual Meeting of the Association for Computational Linguistics",
    year = "2002",
    pages = "311--318",
}
""",
        inputs=reference_inputs("bleu: corpus BLEU in [0, 1]."),
        text_columns=("references",),
        url="https://www.nltk.org/api/nltk.translate.bleu_score.html",
    ),
    "sacrebleu": MetricCard(
        description="""\
Corpus BLEU by sacrebleu with its defaults (13a tokenization, exponential smoothing).
Samples may have different numbers of references (evaluate's sacrebleu requires equal ones).
""",
        citation="""\
@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}
""",
        inputs=reference_inputs("score: corpus BLEU in [0, 100]."),
        text_columns=("references",),
        url="https://github.com/mjpost/sacrebleu",
    ),
    "cider": MetricCard(
        description="""\
Corpus CIDEr-D by pycocoevalcap (n-grams 1 to 4, clipped counts, Gaussian length penalty,
times 10), with document frequencies from the given samples' references, on lm-gym's
tokenization (nltk's Treebank word tokenizer on lowercased text) instead of COCO's Java one.
""",
        citation="""\
@inproceedings{vedantam2015cider,
    title = {{CIDEr}: Consensus-based Image Description Evaluation},
    author = {Vedantam, Ramakrishna and Zitnick, C. Lawrence and Parikh, Devi},
    booktitle = {Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition},
    year = {2015},
    pages = {4566--4575},
}
""",
        inputs=reference_inputs("cider: corpus CIDEr-D (mean of the per-sample scores)."),
        text_columns=("references",),
        url="https://github.com/salaniz/pycocoevalcap",
    ),
    "concept_coverage": MetricCard(
        description="""\
The fraction of a sample's concepts (lemmas such as "dog", "run") that its prediction uses,
a word matching a concept when it or its WordNet base form equals it ("dogs running" covers
"dog" and "run").
""",
        citation="""\
@inproceedings{lin-etal-2020-commongen,
    title = "{C}ommon{G}en: A Constrained Text Generation Challenge for Generative Commonsense Reasoning",
    author = "Lin, Bill Yuchen and Zhou, Wangchunshu and Shen, Ming and Zhou, Pei and Bhagavatula, Chandra
              and Choi, Yejin and Ren, Xiang",
    booktitle = "Findings of the Association for Computational Linguistics: EMNLP 2020",
    year = "2020",
    pages = "1823--1840",
}
""",
        inputs="""\
Args:
    predictions: list of str.
    concepts: list of lists of str, the concepts of each prediction.
Returns:
    concept_coverage: mean coverage over the samples, in [0, 1].
""",
        text_columns=("concepts",),
    ),
    "diversity": MetricCard(
        description="""\
Lexical diversity on lm-gym's tokenization: distinct-1 and distinct-2 (distinct / all
n-grams), MSTTR (mean type-token ratio of consecutive 100-token segments; the whole text's
ratio under 100 tokens), unigram entropy in bits, vocabulary size and mean length in tokens.
""",
        citation="""\
@inproceedings{li-etal-2016-diversity,
    title = "A Diversity-Promoting Objective Function for Neural Conversation Models",
    author = "Li, Jiwei and Galley, Michel and Brockett, Chris and Gao, Jianfeng and Dolan, Bill",
    booktitle = "Proceedings of the 2016 Conference of the North {A}merican Chapter of the Association
                 for Computational Linguistics: Human Language Technologies",
    year = "2016",
    pages = "110--119",
}
""",
        inputs="""\
Args:
    predictions: list of str.
Returns:
    distinct_1, distinct_2, msttr, unigram_entropy, vocab_size, mean_length.
""",
    ),
    "perplexity": MetricCard(
        description="""\
Perplexity of each text under a transformers causal language model, scored after the
tokenizer's BOS (else EOS) token and, optionally, after a prefix whose tokens are not counted.
""",
        citation="""\
@article{jelinek1977perplexity,
    title = {Perplexity---a measure of the difficulty of speech recognition tasks},
    author = {Jelinek, Fred and Mercer, Robert L. and Bahl, Lalit R. and Baker, James K.},
    journal = {The Journal of the Acoustical Society of America},
    volume = {62},
    number = {S1},
    pages = {S63},
    year = {1977},
}
""",
        inputs="""\
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
""",
    ),
    "bertscore": MetricCard(
        description="""\
BERTScore by bert-score: greedy matching of contextual token embeddings between prediction
and reference (the best reference per sample), averaged over the samples.
""",
        citation="""\
@inproceedings{zhang2020bertscore,
    title = {{BERTScore}: Evaluating Text Generation with {BERT}},
    author = {Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q. and Artzi, Yoav},
    booktitle = {International Conference on Learning Representations},
    year = {2020},
}
""",
        inputs=reference_inputs(
            options="""\
model_type: a hub model name or a local model directory (required).
num_layers: the layer to use (required for models bert-score has no default for).
device: default CUDA when available.
batch_size: sentences per forward pass (default 64).
""",
            returns="precision, recall, f1: means over the samples.",
        ),
        text_columns=("references",),
        url="https://github.com/Tiiiger/bert_score",
    ),
    "coco": MetricCard(
        description="""\
The COCO caption evaluation that published CommonGen and captioning numbers come from:
Stanford's PTB tokenization (lower-cased, punctuation removed), then pycocoevalcap's BLEU-1
to 4, METEOR 1.5, ROUGE-L, CIDEr-D and SPICE. The java pipeline is pycocoevalcap's own (SPICE
only where its Stanford models are installed); the python pipeline needs no Java, tokenizes
in Python as the PTB tokenizer does and has no METEOR or SPICE.
""",
        citation="""\
@article{chen2015microsoft,
    title = {Microsoft {COCO} Captions: Data Collection and Evaluation Server},
    author = {Chen, Xinlei and Fang, Hao and Lin, Tsung-Yi and Vedantam, Ramakrishna and Gupta, Saurabh
              and Doll{\\'a}r, Piotr and Zitnick, C. Lawrence},
    journal = {arXiv preprint arXiv:1504.00325},
    year = {2015},
}
""",
        inputs=reference_inputs(
            options="""\
pipeline: "auto" (default: java when Java is installed), "java" or "python".
spice: compute SPICE too (java pipeline with its models installed; default True).
""",
            returns="""\
pipeline: "java" or "python", the pipeline that computed the scores;
bleu1 ... bleu4, meteor, rouge_l, cider, spice: those computed, on pycocoevalcap's scale.
""",
        ),
        text_columns=("references",),
        url="https://github.com/salaniz/pycocoevalcap",
    ),
}
