"""The metrics as ``evaluate`` modules, one directory each: ``modules/<name>/<name>.py``.

``evaluate.load(<directory>)`` loads a module from disk, with no hub access; :func:`load`
does that by name. Each module's ``_compute`` calls the plain function of
:mod:`lm_gym.metrics`; what ``evaluate`` shows of it (description, citation, inputs) is its card in
:mod:`lm_gym.metrics.modules.cards`. The module's options (``rouge_types``, ``model``, ...) are
``compute(...)`` keyword arguments, as in ``evaluate``'s own modules. ``evaluate`` is lm-gym's
optional ``evaluate`` extra (``pip install "lm-gym[evaluate]"``); the modules ``sacrebleu``,
``cider`` and ``coco`` also need the ``nlg`` extra, ``bertscore`` the ``bertscore`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lm_gym.core.errors import require_extra
from lm_gym.core.validation import check_choice

if TYPE_CHECKING:
    import evaluate

MODULES_DIRECTORY = Path(__file__).resolve().parent
MODULE_NAMES = (
    "meteor",
    "rouge",
    "bleu",
    "sacrebleu",
    "cider",
    "concept_coverage",
    "diversity",
    "perplexity",
    "bertscore",
    "coco",
)


def load(name: str, **kwargs: Any) -> evaluate.EvaluationModule:
    """``evaluate.load`` of the module ``name`` (one of :data:`MODULE_NAMES`) from this package.

    ``kwargs`` go to ``evaluate.load``; ``keep_in_memory`` defaults to ``True`` here, so that
    ``compute`` does not write its inputs to an Arrow file under ``~/.cache/huggingface``.
    Needs the ``evaluate`` extra (:class:`~lm_gym.core.errors.DataUnavailableError` without it).
    """
    check_choice("name", name, MODULE_NAMES)
    require_extra("evaluate", "lm_gym.metrics.load (the metrics as evaluate modules)", "evaluate")
    import evaluate

    kwargs.setdefault("keep_in_memory", True)
    return evaluate.load(str(MODULES_DIRECTORY / name), **kwargs)
