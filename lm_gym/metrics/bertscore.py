"""BERTScore with the ``bert-score`` package (which loads the model on each call): lm-gym's optional
``bertscore`` extra (``pip install "lm-gym[bertscore]"``), imported on use."""

from __future__ import annotations

from collections.abc import Sequence

from lm_gym.core.errors import ConfigurationError, require_extra, safe_repr
from lm_gym.core.hub import require_local_or_hub
from lm_gym.core.validation import check_device, check_int
from lm_gym.metrics.inputs import check_pairs


def bertscore(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    model_type: str,
    num_layers: int | None = None,
    device: str | None = None,
    batch_size: int = 64,
) -> dict[str, float]:
    """Mean BERTScore ``precision``, ``recall`` and ``f1`` (``bert_score.score``; best reference per sample).

    Args:
        model_type: a hub name (e.g. ``"roberta-large"``) or a local model directory.
        num_layers: the layer whose embeddings are compared; required for models
            ``bert-score`` has no default for (its ``model2layers`` table), e.g. local ones.
        device: default CUDA when available.
        batch_size: sentences per forward pass.

    Needs the ``bertscore`` extra (:class:`~lm_gym.core.errors.DataUnavailableError` without it).
    """
    require_extra("bertscore", "lm_gym.metrics.bertscore", "bert-score")
    from bert_score import score
    from bert_score.utils import model2layers

    predictions, references = check_pairs(predictions, references)
    if not isinstance(model_type, str) or not model_type:
        raise ConfigurationError(f"model_type must be a model name or directory (str), got {safe_repr(model_type)}")
    if num_layers is None and model_type not in model2layers:
        raise ConfigurationError(
            f"num_layers must be given for model_type={model_type!r}: bert-score has no default layer for it"
        )
    if num_layers is not None:
        num_layers = check_int("num_layers", num_layers, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    device = check_device("device", device)
    require_local_or_hub(
        model_type, f"the BERTScore model {safe_repr(model_type)}", "Pass a local model directory as model_type."
    )
    precision, recall, f1 = score(
        predictions, references, model_type=model_type, num_layers=num_layers, device=device, batch_size=batch_size
    )
    return {"precision": float(precision.mean()), "recall": float(recall.mean()), "f1": float(f1.mean())}
