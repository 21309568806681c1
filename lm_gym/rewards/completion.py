"""A reward function of the completion text, written the way TRL's trainers take one."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import Metas, ReferenceLists, Texts


def import_callable(name: str, spec: str) -> Callable[..., Any]:
    """The callable named ``"module:attribute"`` (e.g. ``"my_rewards:length_reward"``)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"{name} must be a callable or a 'module:function' string, got {safe_repr(spec)}")
    try:
        module = importlib.import_module(module_name)
    except (ImportError, TypeError, ValueError) as error:  # not found, a relative name, a NUL byte
        raise ConfigurationError(
            f"{name}: could not import module {module_name!r} of {safe_repr(spec)}: {error}"
        ) from error
    value = module
    for part in attribute.split("."):
        value = getattr(value, part, None)
    if not callable(value):
        raise ConfigurationError(f"{name}: {safe_repr(spec)} is not a callable")
    return value


class CompletionReward:
    """``fn(prompts=[...], completions=[...]) -> list[float]`` as an lm-gym batched reward.

    This is the call TRL's ``GRPOTrainer``/``RLOOTrainer`` make of a reward function (they
    pass more keyword arguments, which such functions take as ``**kwargs``), so a TRL reward
    function that reads only prompts and completions works unchanged. Scores that are not one
    finite number per completion raise :class:`ConfigurationError` (a ``ValueError``) naming the
    function (:func:`checked_scores`).
    """

    def __init__(self, fn: Callable[..., Sequence[float]]):
        self.fn = fn
        self.name = getattr(fn, "__qualname__", type(fn).__name__)
        try:
            inspect.signature(fn).bind(prompts=[], completions=[])
        except (TypeError, ValueError) as error:
            raise ConfigurationError(
                f"reward function {self.name} must take the keyword arguments prompts= and completions= ({error})"
            ) from None

    def __call__(self, prompts: Texts, utterances: Texts, references: ReferenceLists, meta: Metas) -> np.ndarray:
        return checked_scores(self.name, self.fn(prompts=list(prompts), completions=list(utterances)), len(utterances))


def checked_scores(name: str, scores: Any, count: int) -> np.ndarray:
    """A reward function's ``scores`` as ``count`` finite float64s; anything else (not a sequence,
    strings, another length, NaN or inf) raises :class:`ConfigurationError` naming function ``name``."""
    try:
        numbers = not isinstance(scores, (str, bytes)) and not any(isinstance(s, (str, bytes)) for s in scores)
        values = np.asarray(scores, dtype=np.float64) if numbers else None
    except (TypeError, ValueError, OverflowError):  # not a sequence, or not of numbers
        values = None
    if values is None or values.shape != (count,) or not np.isfinite(values).all():
        raise ConfigurationError(
            f"reward function {name} must return {count} finite numbers (one per completion), got {safe_repr(scores)}"
        )
    return values
