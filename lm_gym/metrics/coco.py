"""COCO caption evaluation (pycocoevalcap): BLEU-1 to 4, METEOR 1.5, ROUGE-L, CIDEr-D and SPICE.

Published CommonGen and captioning numbers come from this evaluation, whose tokenizer and
METEOR differ from lm-gym's own metrics (:func:`lm_gym.metrics.tokenize`, nltk's METEOR).
It runs as one of two pipelines, named in every result:

* ``"java"``: pycocoevalcap's pipeline itself. Stanford CoreNLP 3.4.1's PTBTokenizer
  (``-preserveLines -lowerCase``) and pycocoevalcap's punctuation removal, then its
  ``Bleu(4)``, METEOR 1.5 jar, ``Rouge`` and ``Cider`` scorers, and ``Spice`` when its
  Stanford models are installed (pycocoevalcap downloads them on first use; lm-gym never
  downloads at run time, so offline SPICE is skipped with a warning saying so). Needs Java.
* ``"python"``: no Java. The PTB tokens of :func:`lm_gym.metrics.ptb.coco_tokenize`, then the
  same pycocoevalcap ``Bleu(4)``, ``Rouge`` and ``Cider`` (pure Python). METEOR 1.5 and SPICE
  are Java programs, so this pipeline has neither. On CommonGen's dev references its BLEU-4
  and CIDEr are within 0.5% of the Java pipeline's (``tests/metrics/test_coco.py``).

``"auto"`` picks ``"java"`` when a ``java`` is on the ``PATH``. Scores are on pycocoevalcap's
scale: BLEU, METEOR, ROUGE-L and SPICE in [0, 1], CIDEr-D about 0 to 10; papers print them
times 100.

Both pipelines need pycocoevalcap, lm-gym's optional ``nlg`` extra (``pip install "lm-gym[nlg]"``),
imported on use.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

from lm_gym.core.errors import require_extra
from lm_gym.core.validation import check_choice
from lm_gym.metrics.inputs import check_pairs
from lm_gym.metrics.ptb import PUNCTUATIONS, coco_tokenize

PIPELINES = ("java", "python")
#: The scores of a full evaluation, in pycocoevalcap's order.
SCORE_NAMES = ("bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rouge_l", "cider", "spice")
#: The scores an env's ``corpus_metrics`` reports (prefixed by :meth:`CocoEvaluation.metrics`).
CORPUS_SCORE_NAMES = ("bleu4", "meteor", "rouge_l", "cider", "spice")
_PREFIXES = {"java": "coco_", "python": "coco_py_"}


@dataclass(frozen=True)
class CocoEvaluation:
    """The scores of one COCO evaluation and the pipeline that computed them.

    ``scores`` holds the computed ones of :data:`SCORE_NAMES`; ``skipped`` says why each
    missing one is missing (``meteor`` and ``spice`` in the python pipeline, ``spice``
    without its models).
    """

    pipeline: str
    scores: dict[str, float]
    skipped: dict[str, str] = field(default_factory=dict)

    def metrics(self, names: Sequence[str] = CORPUS_SCORE_NAMES) -> dict[str, float]:
        """The computed scores among ``names`` under names that say the pipeline:
        ``coco_<name>`` (java: the official pipeline) or ``coco_py_<name>`` (python)."""
        prefix = _PREFIXES[self.pipeline]
        return {prefix + name: self.scores[name] for name in names if name in self.scores}


def resolve_pipeline(pipeline: str) -> str:
    """``pipeline`` (``"auto"``, ``"java"`` or ``"python"``) as ``"java"`` or ``"python"``."""
    check_choice("pipeline", pipeline, ("auto", *PIPELINES))
    if pipeline == "auto":
        return "java" if shutil.which("java") is not None else "python"  # coco_java.java_available()
    return pipeline


def coco_tokenized(texts: Sequence[str], pipeline: str = "auto") -> list[str]:
    """Each text as pycocoevalcap scores it: PTB tokens, lower-cased, punctuation removed, joined by spaces."""
    pipeline = resolve_pipeline(pipeline)
    if pipeline == "python":
        return [coco_tokenize(text) for text in texts]
    require_extra("nlg", "the java pipeline of lm_gym.metrics.coco (pycocoevalcap's PTB tokenizer)", "pycocoevalcap")
    from lm_gym.metrics import coco_java

    lines = [" ".join(text.splitlines()) for text in texts]  # one caption per line
    return [
        " ".join(token for token in tokens if token not in PUNCTUATIONS) for tokens in coco_java.ptb_tokenize(lines)
    ]


def coco_evaluate(
    predictions: Sequence[str], references: Sequence[Sequence[str]], pipeline: str = "auto", spice: bool = True
) -> CocoEvaluation:
    """The COCO caption scores of ``predictions`` (one per sample) against their ``references``.

    Args:
        pipeline: ``"java"`` (pycocoevalcap's official pipeline; raises :class:`JavaError`
            without Java), ``"python"`` (no Java; no METEOR or SPICE) or ``"auto"``.
        spice: compute SPICE too (java pipeline, when its models are installed; slow).

    Needs the ``nlg`` extra (:class:`~lm_gym.core.errors.DataUnavailableError` without it).
    """
    predictions, references = check_pairs(predictions, references)
    pipeline = resolve_pipeline(pipeline)
    require_extra("nlg", "lm_gym.metrics.coco_evaluate (the COCO caption evaluation)", "pycocoevalcap")
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    from lm_gym.metrics import coco_java

    tokenized = coco_tokenized([*predictions, *(r for refs in references for r in refs)], pipeline)
    res, gts, start = {}, {}, len(predictions)
    for i, refs in enumerate(references):
        res[i] = [tokenized[i]]
        gts[i] = tokenized[start : start + len(refs)]
        start += len(refs)
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    scores = {f"bleu{n}": float(score) for n, score in enumerate(bleu, start=1)}
    scores["rouge_l"] = float(Rouge().compute_score(gts, res)[0])
    scores["cider"] = float(Cider().compute_score(gts, res)[0])
    skipped = {}
    if pipeline == "python":
        skipped["meteor"] = skipped["spice"] = "a Java program: only the java pipeline computes it"
    else:
        scores["meteor"] = coco_java.meteor([res[i][0] for i in res], [gts[i] for i in res])[0]
        missing = coco_java.spice_missing_models()
        if not spice:
            skipped["spice"] = "not asked for (spice=False)"
        elif missing:
            skipped["spice"] = (
                f"SPICE needs Stanford CoreNLP 3.6.0 ({', '.join(missing)} in {coco_java.SPICE_DIRECTORY / 'lib'}), "
                "which pycocoevalcap downloads on first use and lm-gym does not; online, run "
                "`python -c 'from pycocoevalcap.spice.get_stanford_models import get_stanford_models; "
                "get_stanford_models()'` once"
            )
            warnings.warn(f"SPICE skipped: {skipped['spice']}", stacklevel=2)
        else:
            scores["spice"] = coco_java.spice(gts, res)
    return CocoEvaluation(pipeline, {name: scores[name] for name in SCORE_NAMES if name in scores}, skipped)
