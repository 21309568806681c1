"""Argument checks shared by the metric functions; each raises :class:`ConfigurationError` naming the argument."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {safe_repr(value)}"


def _is_list_like(value: Any) -> bool:
    # A str is a Sequence too, but a str where a list of texts is expected is a caller's mistake.
    return isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))


def check_texts(name: str, texts: Any) -> list[str]:
    """``texts`` as a list if it is a non-empty sequence of ``str``."""
    if not _is_list_like(texts) or len(texts) == 0:
        raise ConfigurationError(f"{name} must be a non-empty sequence of str, got {_shown(texts)}")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigurationError(f"{name}[{i}] must be a str, got {_shown(text)}")
    return list(texts)


def check_text_lists(name: str, text_lists: Any, count: int | None = None) -> list[list[str]]:
    """``text_lists`` as lists if it holds non-empty sequences of ``str``: ``count`` of them (one per
    prediction), or at least one when ``count`` is ``None``."""
    if not _is_list_like(text_lists) or (count is None and len(text_lists) == 0):
        raise ConfigurationError(f"{name} must be a non-empty sequence of lists of str, got {_shown(text_lists)}")
    if count is not None and len(text_lists) != count:
        raise ConfigurationError(
            f"{name} has {len(text_lists)} items but predictions has {count}; they must be equally long"
        )
    checked = []
    for i, texts in enumerate(text_lists):
        if not _is_list_like(texts) or len(texts) == 0:
            raise ConfigurationError(f"{name}[{i}] must be a non-empty list of str, got {_shown(texts)}")
        for j, text in enumerate(texts):
            if not isinstance(text, str):
                raise ConfigurationError(f"{name}[{i}][{j}] must be a str, got {_shown(text)}")
        checked.append(list(texts))
    return checked


def check_pairs(
    predictions: Any, references: Any, references_name: str = "references"
) -> tuple[list[str], list[list[str]]]:
    """Predictions (``str`` each) and their reference lists (non-empty, ``str`` each), equally many."""
    predictions = check_texts("predictions", predictions)
    return predictions, check_text_lists(references_name, references, len(predictions))
