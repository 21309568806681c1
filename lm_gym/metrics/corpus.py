"""Corpus metrics of a whole evaluation of an lm-gym task: what is computed over all episodes at once.

The means of the episodes' ``info["metrics"]`` are per-episode numbers; :func:`corpus_metrics`
gives the rest: the task's own corpus metrics (:meth:`~lm_gym.core.text_env.TextEnv.task_corpus_metrics`:
BLEU, CIDEr, ...) and, for single-turn tasks, the lexical diversity of the utterances and,
with a language model, the perplexity of the utterances and of the references::

    finals = [...]  # the final step's info of each evaluation episode
    results = lm_gym.metrics.corpus_metrics(env, finals, language_model="gpt2")

This lives above :mod:`lm_gym.core`: the env base class keeps only the task hook and knows
nothing of the metrics.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from lm_gym.core.errors import ConfigurationError
from lm_gym.core.ranges import Range
from lm_gym.core.task_setup import task_env
from lm_gym.core.text_env import SingleTurnTextEnv, TextEnv, episode_texts
from lm_gym.metrics.diversity import diversity
from lm_gym.metrics.perplexity import perplexity


def corpus_metrics(
    env: Any, episodes: Sequence[dict[str, Any]], language_model: Any = None, task: str | None = None
) -> dict[str, float]:
    """Metrics of a whole evaluation of ``env``'s task, beyond the means of the episodes' ``info["metrics"]``.

    Args:
        env: the task's env: a :class:`~lm_gym.core.text_env.TextEnv`, an env made by
            ``gymnasium.make`` (utterance or token level) or a native vector env (its first copy);
            or any env object with its own ``corpus_metrics(episodes, language_model=None)``
            method (itself or under Gymnasium's wrappers), which is called instead: a served task's
            client (``lm_gym/Remote-v0``) asks its server.
        episodes: the final step's ``info`` of each episode (at least one).
        language_model: ``None`` (no perplexity), a causal LM's name/path, or a ``(model,
            tokenizer)`` pair, for ``perplexity_generations`` and ``perplexity_references``.
        task: on an env of several tasks (``lm_gym/Mixture-v0``, its served client), the corpus
            metrics of ``episodes`` of that one task, as its own env computes them; an env of one task
            has no task of that name: ``{}``.

    Returns, for a single-turn task (:class:`~lm_gym.core.text_env.SingleTurnTextEnv`): the
    :func:`~lm_gym.metrics.diversity` of the utterances, the task's own corpus metrics
    (``env.task_corpus_metrics(episodes)``) and, with ``language_model``,
    ``perplexity_generations`` and ``perplexity_references`` (:func:`perplexity_metrics`). For
    another task: its own corpus metrics only.
    """
    served = task_env(env)
    if not isinstance(served, TextEnv):  # a served task's client: its server computes them
        named = {} if task is None else {"task": task}
        return dict(served.corpus_metrics(episodes, language_model=language_model, **named))
    if task is not None:
        task_envs = getattr(served, "task_envs", {})
        return corpus_metrics(task_envs[task], episodes, language_model) if task in task_envs else {}
    if not episodes:
        raise ConfigurationError("corpus_metrics needs at least one episode's final info")
    if not isinstance(served, SingleTurnTextEnv):
        return dict(served.task_corpus_metrics(episodes))
    _, utterances, _ = episode_texts(episodes)
    results = dict(diversity(utterances))
    results.update(served.task_corpus_metrics(episodes))
    if language_model is not None:
        results.update(perplexity_metrics(episodes, language_model))
    return results


def corpus_ranges() -> dict[str, Range]:
    """The range of each corpus metric the metrics package computes, as its module declares it: the diversity
    of :func:`~lm_gym.metrics.diversity`, BLEU and SacreBLEU, CIDEr-D and the two perplexities."""
    modules = {
        name: importlib.import_module(f"lm_gym.metrics.{name}") for name in ("diversity", "bleu", "cider", "perplexity")
    }
    return {
        **modules["diversity"].RANGES,
        **modules["bleu"].RANGES,
        "cider": modules["cider"].RANGE,
        "perplexity_generations": modules["perplexity"].RANGE,
        "perplexity_references": modules["perplexity"].RANGE,
    }


def perplexity_metrics(episodes: Sequence[dict[str, Any]], language_model: Any) -> dict[str, float]:
    """``perplexity_generations`` and ``perplexity_references`` of single-turn episodes (final infos):
    the corpus perplexity (:func:`~lm_gym.metrics.perplexity`) under ``language_model`` (a causal
    LM's name/path or a ``(model, tokenizer)`` pair) of the utterances and of the first references,
    each conditioned on its prompt (empty texts are left out; none left: no entry)."""
    prompts, utterances, references = episode_texts(episodes)
    model, tokenizer = language_model if isinstance(language_model, tuple) else (language_model, None)
    results = {}
    for label, texts in (("generations", utterances), ("references", [r[0] for r in references])):
        scored = [(prompt, text) for prompt, text in zip(prompts, texts, strict=True) if text.strip()]
        if scored:  # an empty text has no token to score
            prefixes, texts = zip(*scored)
            scores = perplexity(list(texts), model, tokenizer, prefixes=list(prefixes))
            results[f"perplexity_{label}"] = scores["perplexity"]
    return results
