"""An evaluation of a policy on a task's validation episodes, as one typed value.

Every baseline's evaluation, the harness's report and the leaderboard speak of the same thing: the
summary of a set of episodes (``num_episodes``, ``mean_return``, ``std_return``, ``mean_<metric>``
per numeric key of the episodes' ``info["metrics"]``, ``corpus_<metric>`` per corpus metric), on a
run of several tasks (``lm_gym/Mixture-v0``) each task's own summary beside it, and a few sample
episodes. :class:`Evaluation` holds the three; :func:`evaluate_episodes` makes one from the played
episodes, grouping them by task once, here; ``result.json`` is written from two of them (the
starting and the final policy's: :meth:`Evaluation.result_fields`) and read back into them
(:meth:`Evaluation.of_result`)::

    evaluation = evaluate_episodes(env, returns, metrics, finals)
    evaluation.summary["mean_return"], evaluation.tasks["lm_gym/IMDB-v0"]["mean_sentiment"]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lm_gym.metrics.corpus import corpus_metrics
from lm_gym.results.run_result import SAMPLE_TEXT_CHARS

SAMPLES_KEPT = 5  #: episodes an evaluation keeps as samples


@dataclass
class Evaluation:
    """One evaluation: the summary of all its episodes, each task's summary (a run of several tasks; empty
    otherwise) and its first episodes as samples (``{"prompt", "generation", "return"}``)."""

    summary: dict[str, float]
    tasks: dict[str, dict[str, float]] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)

    def curve_entries(self) -> dict[str, float]:
        """The entries of a curves row (``result.json``'s ``curves``, W&B): ``eval/<metric>``, then each task's
        ``eval/<task id>/<metric>``. A log's names for plotting; nothing reads an evaluation back from them."""
        entries = {f"eval/{key}": value for key, value in self.summary.items()}
        for task, summary in self.tasks.items():
            entries.update({f"eval/{task}/{key}": value for key, value in summary.items()})
        return entries

    def state(self) -> dict[str, Any]:
        """Plain containers (a checkpoint's trainer state loads with ``torch.load(weights_only=True)``)."""
        return {"summary": self.summary, "tasks": self.tasks, "samples": self.samples}

    @classmethod
    def of_state(cls, state: Mapping[str, Any] | None) -> Evaluation | None:
        """The evaluation :meth:`state` gave (``None`` stays ``None``)."""
        return None if state is None else cls(dict(state["summary"]), dict(state["tasks"]), list(state["samples"]))

    @staticmethod
    def result_fields(initial: Evaluation | None, final: Evaluation | None) -> dict[str, Any]:
        """``result.json``'s evaluation fields (``lm_gym.results.make_result``'s arguments): ``initial_eval``,
        ``final_eval``, ``tasks`` (each task's pair, when either evaluation has tasks) and ``samples``
        (the final evaluation's)."""
        names = sorted({*(initial.tasks if initial else {}), *(final.tasks if final else {})})
        return {
            "initial_eval": initial.summary if initial else None,
            "final_eval": final.summary if final else None,
            "tasks": {
                task: {
                    "initial_eval": initial.tasks.get(task) if initial else None,
                    "final_eval": final.tasks.get(task) if final else None,
                }
                for task in names
            },
            "samples": final.samples if final else [],
        }

    @classmethod
    def of_result(cls, result: Mapping[str, Any], which: str = "final") -> Evaluation | None:
        """The ``which`` (``"initial"`` or ``"final"``) evaluation of a ``result.json`` (``None`` where the run did
        not evaluate); the samples are the final evaluation's only."""
        if which not in ("initial", "final"):
            raise ValueError(f"which must be 'initial' or 'final', got {which!r}")
        summary = result.get(f"{which}_eval")
        if summary is None:
            return None
        tasks = {
            task: dict(pair[f"{which}_eval"])
            for task, pair in (result.get("tasks") or {}).items()
            if pair.get(f"{which}_eval") is not None
        }
        samples = list(result.get("samples") or []) if which == "final" else []
        return cls(dict(summary), tasks, samples)


def summarize_episodes(
    returns: Sequence[float], metrics: Sequence[Mapping[str, Any]], corpus: Mapping[str, float] | None = None
) -> dict[str, float]:
    """The summary of a set of episodes from their returns and ``info["metrics"]``.

    ``metrics[i]`` is episode ``i``'s metrics dict (may be empty); each numeric key becomes
    ``mean_<key>``, averaged over the episodes that report it. ``corpus``
    (``lm_gym.metrics.corpus_metrics`` of the same episodes) becomes ``corpus_<key>``.
    """
    if not len(returns):
        raise ValueError("an evaluation needs at least one episode")
    mean = math.fsum(returns) / len(returns)
    summary: dict[str, float] = {
        "num_episodes": len(returns),
        "mean_return": mean,
        "std_return": math.sqrt(math.fsum((r - mean) ** 2 for r in returns) / len(returns)),
    }
    values: dict[str, list[float]] = {}
    for episode in metrics:
        for key, value in episode.items():
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                values.setdefault(f"mean_{key}", []).append(float(value))
    for key, column in values.items():
        summary.setdefault(key, math.fsum(column) / len(column))
    summary.update({f"corpus_{key}": float(value) for key, value in (corpus or {}).items()})
    return summary


def episode_samples(
    finals: Sequence[Mapping[str, Any]], returns: Sequence[float], count: int = SAMPLES_KEPT
) -> list[dict[str, Any]]:
    """The first ``count`` episodes of an evaluation as ``{"prompt", "generation", "return"}``.

    ``finals[i]`` is episode ``i``'s last ``info`` with the episode's last observation under
    ``"observation"``: the generation is that observation after the prompt (a single-turn
    task's utterance; a multi-turn game's whole transcript), else ``info["utterance"]``.
    """
    samples = []
    for info, episode_return in zip(finals[:count], returns[:count]):
        prompt, observation = str(info.get("prompt", "")), info.get("observation")
        if isinstance(observation, str) and observation.startswith(prompt):
            generation = observation[len(prompt) :].lstrip()
        else:
            generation = str(info.get("utterance", observation if isinstance(observation, str) else ""))
        samples.append(
            {
                "prompt": prompt[-SAMPLE_TEXT_CHARS:],
                "generation": generation[:SAMPLE_TEXT_CHARS],
                "return": float(episode_return),
            }
        )
    return samples


def evaluate_episodes(
    env: Any,
    returns: Sequence[float],
    metrics: Sequence[Mapping[str, Any]],
    finals: Sequence[Mapping[str, Any]],
    language_model: Any = None,
) -> Evaluation:
    """The evaluation of episodes played on ``env`` (a task's env or vector env, or a served task's client):
    ``returns[i]``, ``metrics[i]`` (``info["metrics"]``) and ``finals[i]`` (the last ``info``, with the last
    observation under ``"observation"``) of episode ``i``.

    Episodes that name their task (``info["task"]``, ``lm_gym/Mixture-v0``) are grouped by it: each task gets its
    own summary with its own corpus metrics (``corpus_metrics(env, its episodes, task=name)``), and the whole
    evaluation's summary has the per-episode means only. Otherwise the summary has the task's corpus metrics
    (with ``language_model``, the perplexities of a single-turn task's utterances and references)."""
    episode_tasks = [final.get("task") for final in finals]
    tasks = {}
    for name in sorted({task for task in episode_tasks if isinstance(task, str)}):
        rows = [i for i, task in enumerate(episode_tasks) if task == name]
        corpus = corpus_metrics(env, [finals[i] for i in rows], language_model=language_model, task=name)
        tasks[name] = summarize_episodes([returns[i] for i in rows], [metrics[i] for i in rows], corpus)
    corpus = {} if tasks else corpus_metrics(env, finals, language_model=language_model)
    return Evaluation(summarize_episodes(returns, metrics, corpus), tasks, episode_samples(finals, returns))
