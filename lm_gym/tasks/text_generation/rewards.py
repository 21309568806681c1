"""The rewards and metrics of ``lm_gym/TextGeneration-v0``: lm-gym's metrics by name, or a TRL reward function.

* :class:`MetricReward`: one metric of :data:`METRICS` per sample against its references, built on
  :class:`~lm_gym.rewards.reference.ReferenceReward` (METEOR, ROUGE, CIDEr-D) and
  :mod:`lm_gym.metrics` (nltk's BLEU and SacreBLEU of the one sample, BERTScore with ``bert-score``).
* :class:`FunctionReward`: ``fn(prompts=..., completions=..., references=..., **columns)``, the
  call TRL's trainers make of a reward function, as a batched lm-gym reward, with typed errors.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, DataUnavailableError, require_extra, safe_repr
from lm_gym.core.hub import require_local_or_hub
from lm_gym.core.text_env import Metas, ReferenceLists, Texts
from lm_gym.core.validation import check_device
from lm_gym.rewards.completion import checked_scores
from lm_gym.rewards.reference import REFERENCE_METRICS, ReferenceReward

#: The metrics a reward or a per-episode metric can be (each needs references).
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum", "meteor", "bleu", "sacrebleu", "cider", "bertscore")
#: Per-episode metrics that need no references.
TEXT_METRICS = ("num_words",)
#: The optional extra and package each metric needs beyond the core install.
EXTRAS = {
    "sacrebleu": ("nlg", "sacrebleu"),
    "cider": ("nlg", "pycocoevalcap"),
    "bertscore": ("bertscore", "bert-score"),
}


class MetricReward:
    """Metric ``metric`` (one of :data:`METRICS`) of each utterance against its references.

    Args:
        metric: the metric's name; ``bleu`` is nltk's BLEU of the one sample (1- to 4-grams, no
            smoothing, 0-1: :func:`lm_gym.metrics.corpus_bleu`), ``sacrebleu`` SacreBLEU's of the one
            sample (0-100), ``cider`` CIDEr-D with the document frequencies of ``corpus_references``,
            ``bertscore`` BERTScore F1 with ``bertscore_model``.
        corpus_references: every sample's references (the dataset split); ``cider`` only.
        bertscore_model: ``bertscore``: a hub name or a local model directory.
        bertscore_layers: ``bertscore``: the layer compared (required where bert-score has no default).
        device: ``bertscore``: the torch device (default CUDA when available).
        name: the argument named in errors.

    Needs the ``nlg`` extra for ``sacrebleu`` and ``cider``, the ``bertscore`` extra for
    ``bertscore`` (:class:`~lm_gym.core.errors.DataUnavailableError` naming it without).
    """

    def __init__(
        self,
        metric: str,
        corpus_references: Sequence[Sequence[str]] | None = None,
        *,
        bertscore_model: str = "roberta-large",
        bertscore_layers: int | None = None,
        device: str | None = None,
        name: str = "reward",
    ):
        from lm_gym import metrics

        if metric not in METRICS:
            raise ConfigurationError(f"{name}: unknown metric {safe_repr(metric)}; known metrics: {METRICS}")
        if metric in EXTRAS:
            extra, package = EXTRAS[metric]
            require_extra(extra, f"lm_gym/TextGeneration-v0's {name}={metric!r}", package)
        self.metric, self._metrics = metric, metrics
        self._reference = ReferenceReward(metric, corpus_references, name) if metric in REFERENCE_METRICS else None
        self._bertscore = _bert_scorer(bertscore_model, bertscore_layers, device) if metric == "bertscore" else None

    def __call__(
        self, prompts: Sequence[str], utterances: Sequence[str], references: Sequence[Sequence[str]], meta: Any = None
    ) -> np.ndarray:
        if self._reference is not None:
            return np.asarray(self._reference(prompts, utterances, references, meta), dtype=np.float64)
        utterances, references = list(utterances), [list(r) for r in references]
        if self.metric == "bertscore":
            _, _, f1 = self._bertscore.score(utterances, references)
            return f1.double().cpu().numpy()
        score = self._metrics.corpus_bleu if self.metric == "bleu" else self._metrics.corpus_sacrebleu
        with warnings.catch_warnings():  # nltk warns of every sample without 3- or 4-gram matches
            warnings.simplefilter("ignore", UserWarning)
            return np.array([score([u], [r]) for u, r in zip(utterances, references)], dtype=np.float64)


def _bert_scorer(model: Any, layers: Any, device: Any):
    from bert_score import BERTScorer
    from bert_score.utils import model2layers

    from lm_gym.core.validation import check_int

    if not isinstance(model, str) or not model:
        raise ConfigurationError(f"bertscore_model must be a model name or directory (str), got {safe_repr(model)}")
    if layers is None and model not in model2layers:
        raise ConfigurationError(
            f"bertscore_layers must be given for bertscore_model={model!r}: bert-score has no default layer for it"
        )
    layers = None if layers is None else check_int("bertscore_layers", layers, minimum=1)
    device = check_device("device", device)
    require_local_or_hub(model, f"the BERTScore model {model!r}", "Pass a local model directory as bertscore_model.")
    try:
        return BERTScorer(model_type=model, num_layers=layers, device=device)
    except Exception as error:  # noqa: BLE001 - transformers raises many types for a model it cannot load
        raise DataUnavailableError(
            f"could not load the BERTScore model {model!r} ({type(error).__name__}: {str(error)[:300]}); "
            "pass bertscore_model=<a local model directory> (and bertscore_layers=) offline"
        ) from error


class FunctionReward:
    """A TRL reward function ``fn(prompts, completions, **kwargs) -> list[float]`` as a batched lm-gym reward.

    ``fn`` is called with ``prompts=``, ``completions=``, ``references=`` (each sample's list of
    references) and, as TRL passes a dataset's columns, one list per column of the samples'
    ``meta["row"]``; a function without ``**kwargs`` gets only the keyword arguments it names.
    Unlike Prompts-v0's :class:`~lm_gym.rewards.completion.CompletionReward`, which passes prompts
    and completions only, a function may require ``references`` and ``columns`` as arguments. A
    function that raises or returns anything but one finite number per completion raises
    :class:`~lm_gym.core.errors.ConfigurationError` naming it.
    """

    def __init__(self, fn: Callable[..., Sequence[float]], columns: Sequence[str] = ()):
        self.fn = fn
        qualname = getattr(fn, "__qualname__", type(fn).__name__)
        module = getattr(fn, "__module__", None)
        self.name = f"{module}:{qualname}" if isinstance(module, str) else qualname
        try:
            signature = inspect.signature(fn)
            signature.bind_partial(prompts=[], completions=[])
        except (TypeError, ValueError) as error:
            raise ConfigurationError(
                f"reward function {self.name} must take the keyword arguments prompts= and completions= ({error})"
            ) from None
        parameters = signature.parameters.values()
        self._takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
        self._names = {p.name for p in parameters}
        offered = {"prompts", "completions", "references", *columns}
        required = [
            p.name
            for p in parameters
            if p.default is inspect.Parameter.empty
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            and p.name not in offered
        ]
        if required:
            raise ConfigurationError(
                f"reward function {self.name} requires {required}, which the env does not pass: it passes "
                f"prompts, completions, references and the columns {sorted(columns)}"
            )

    def __call__(self, prompts: Texts, utterances: Texts, references: ReferenceLists, meta: Metas) -> np.ndarray:
        kwargs: dict[str, Any] = {"references": [list(r) for r in references]}
        rows = [m.get("row", {}) if isinstance(m, dict) else {} for m in meta]
        for column in dict.fromkeys(key for row in rows for key in row):
            kwargs.setdefault(column, [row.get(column) for row in rows])
        if not self._takes_any:
            kwargs = {key: value for key, value in kwargs.items() if key in self._names}
        try:
            scores = self.fn(prompts=list(prompts), completions=list(utterances), **kwargs)
        except Exception as error:  # noqa: BLE001 - any failure of the user's function, reported as one
            raise ConfigurationError(f"reward function {self.name} raised {type(error).__name__}: {error}") from error
        return checked_scores(self.name, scores, len(utterances))
