"""NLG metrics for rewards and evaluation, computed by the field's libraries, all offline.

Plain functions, batched (one prediction per sample, a list of references per sample):
METEOR (nltk), ROUGE (rouge-score), BLEU (nltk and SacreBLEU), CIDEr-D (pycocoevalcap),
BERTScore (bert-score), perplexity (transformers), concept coverage and lexical diversity;
and the COCO caption evaluation of published CommonGen numbers (:func:`coco_evaluate`:
pycocoevalcap's pipeline with Java, or its pure-Python approximation).
Word-based metrics share one data-free tokenization, :func:`tokenize`; METEOR's and concept
coverage's WordNet 3.0 ships in the package (:func:`wordnet`).

The same metrics are ``evaluate`` modules: ``load("rouge").compute(...)``.

The core install brings METEOR, ROUGE, nltk's BLEU, concept coverage, diversity and perplexity
(what the envs' rewards and per-episode metrics use). The others need an optional extra, imported
on use, and raise :class:`~lm_gym.core.errors.DataUnavailableError` naming it without:
``nlg`` (SacreBLEU, CIDEr-D, the COCO evaluation), ``bertscore`` and ``evaluate`` (:func:`load`).
:func:`corpus_metrics` gives the corpus metrics of a whole evaluation of an lm-gym task
(diversity, perplexity and the task's own, such as BLEU and CIDEr).
"""

from lm_gym.metrics.bertscore import bertscore
from lm_gym.metrics.bleu import bleu_scores, corpus_bleu, corpus_sacrebleu
from lm_gym.metrics.cider import CiderD, cider
from lm_gym.metrics.coco import CocoEvaluation, coco_evaluate
from lm_gym.metrics.corpus import corpus_metrics
from lm_gym.metrics.coverage import concept_coverage
from lm_gym.metrics.diversity import diversity
from lm_gym.metrics.meteor import meteor_scores
from lm_gym.metrics.modules import MODULE_NAMES, load
from lm_gym.metrics.perplexity import perplexity
from lm_gym.metrics.rouge import ROUGE_TYPES, corpus_rouge, rouge_scores
from lm_gym.metrics.tokenization import split_sentences, tokenize
from lm_gym.metrics.wordnet import wordnet

__all__ = [
    "MODULE_NAMES",
    "ROUGE_TYPES",
    "CiderD",
    "CocoEvaluation",
    "bertscore",
    "bleu_scores",
    "cider",
    "coco_evaluate",
    "concept_coverage",
    "corpus_bleu",
    "corpus_metrics",
    "corpus_rouge",
    "corpus_sacrebleu",
    "diversity",
    "load",
    "meteor_scores",
    "perplexity",
    "rouge_scores",
    "split_sentences",
    "tokenize",
    "wordnet",
]
