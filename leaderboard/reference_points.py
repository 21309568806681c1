"""The reference points that put every metric of the board on one scale: measured, and their file.

Scoring (``leaderboard/scoring.py``) maps a metric value ``x`` to ``(x - low) / (high - low)``.
This module measures ``low`` and ``high`` for every metric ``boards.toml`` names (task and
naturalness metrics) of every task of a board, and writes them with their provenance to
``reference_points.json``, one block per board.

Command line::

    python -m leaderboard.reference_points --board smoke offline-text offline-games multiagent \\
        [--out leaderboard/reference_points.json]

``--board grue`` measures the hub board's points (it needs the hub, and ILQL's Reddit
comments in ``data/reddit``). The file keeps the other boards' points and replaces these.

**Protocol.** Each policy plays the board's ``eval_episodes`` episodes of the task's
validation split (Wordle, which has no splits, plays its answer list) through ``gymnasium.make_vec(...,
vectorization_mode="vector_entry_point")``, evaluated as the baselines evaluate: episode
``j`` is reset with seed ``j``, each episode's ``info["metrics"]`` are averaged as
``mean_<name>`` and ``lm_gym.metrics.corpus_metrics(env, final_infos)`` gives ``corpus_<name>``
(``lm_gym.results.summarize_episodes``), with the board's env arguments (those its suite
runs the task with).

**The points.** ``low`` is what a policy of uniformly random tokens scores, ``high`` what the
task's references score (single-turn tasks) or its scripted expert (multi-turn tasks), except
where that pair means nothing:

==========================  =========================================================================
metric                      low / high
==========================  =========================================================================
task metrics (default)      ``random_tokens``: at ``action_level="token"`` with the task's default
                            tokenizer (``tokenizer=None``: the BPE trained on the source's text),
                            each token drawn uniformly among those the action mask allows (EOS not
                            before ``min_new_tokens``) / ``references``: each episode plays its
                            first reference, ``info["references"][0]``, as the utterance, so
                            reference-matching metrics (METEOR, ROUGE, CIDEr, coverage) score near
                            their ceiling: the references' own score
Wordle: the return, solved  random tokens / ``expert``: the information-gain policy
                            (``lm_gym.tasks.wordle.policies.InfoGainPolicy``)
VisDial: the return,        random tokens / ``expert``: the informative questioner
reached cutoff              (``lm_gym.tasks.visdial.policies.InformativeQuestioner``)
IMDB: sentiment             random tokens / 1, the most P(positive) can be: the references are the
                            reviews' own endings, half of them negative, and score about what random
                            text scores
Reddit: the return          toxicity level 2's reward (``2 x reward_scale + reward_shift``, -10 by
                            default) / level 0's (``reward_shift``, 0): random tokens are not toxic
Prompts: the return         random tokens / 1, the default ``vowel_words`` reward's maximum (Prompts
                            has no references)
distinct-2, MSTTR           0, no diversity (what a collapsed policy, one word repeated, approaches)
(naturalness)               / the references (Prompts: ``prompts``, each episode's prompt played as
                            its completion, the task's own text). Random tokens are no floor here:
                            they are more diverse than the references, so normalising between them
                            would score a collapsed policy above the references
==========================  =========================================================================

**File** (``reference_points.json``)::

    {board: {"lm_gym_version": str, "git_commit": str | null, "date": "YYYY-MM-DD", "episodes": int,
              "env_kwargs": {env_id: {...}},       # what the policies played, split included
              "tasks": {env_id: {metric: {"low": float, "high": float,
                                          "low_from": str, "high_from": str,
                                          "episodes": int | null}}}}}   # null: both points are bounds

``low_from`` / ``high_from`` name the policy (``random_tokens: ...``) or the bound (``bound:
...``). Measuring the four synthetic boards takes about a minute of CPU time.

**Why per board: corpus distinct-2 depends on the number of episodes.** Bigrams repeat across
episodes (more so in the synthetic sources' templated text), so distinct-2 falls as the
evaluation grows: the synthetic IMDB references score 0.73 over 8 episodes, 0.25 over 128 and
0.16 over 256. A board fixes its evaluation size (``eval_episodes``), its entries are
evaluated on exactly that many episodes (``leaderboard.entry_checks`` checks it), and its points are
measured on as many. MSTTR (100-word segments) barely moves.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.boards import boards, task_metrics
from leaderboard.scoring import REFERENCE_POINTS_FILE
from lm_gym.core.errors import ConfigurationError
from lm_gym.core.registration import task_class
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.vector import episode_info
from lm_gym.metrics import corpus_metrics
from lm_gym.results import git_commit, library_versions
from lm_gym.results.evaluation import summarize_episodes
from lm_gym.results.stats import markdown_table

#: Episode ``j`` of every policy is reset with seed ``SEED + j``; the random tokens draw from it too.
SEED = 0
NUM_ENVS = 64

IMDB, REDDIT, PROMPTS, WORDLE, VISDIAL = (
    "lm_gym/IMDB-v0", "lm_gym/Reddit-v0", "lm_gym/Prompts-v0", "lm_gym/Wordle-v0", "lm_gym/VisDial-v0",
)  # fmt: skip

# The policies a point can come from; their description is the point's provenance.
RANDOM_TOKENS = "random_tokens"
REFERENCES = "references"
EXPERT = "expert"
OWN_PROMPTS = "prompts"
POLICY_DESCRIPTIONS = {
    RANDOM_TOKENS: "random_tokens: token ids drawn uniformly among those the action mask allows "
    "(action_level='token', tokenizer=None: the BPE trained on the source's text)",
    REFERENCES: "references: each episode plays info['references'][0] as its utterance",
    OWN_PROMPTS: "prompts: each episode plays its own prompt as the completion (the task has no references)",
}
EXPERT_DESCRIPTIONS = {
    WORDLE: "expert: lm_gym.tasks.wordle.policies.InfoGainPolicy (greedy information gain)",
    VISDIAL: "expert: lm_gym.tasks.visdial.policies.InformativeQuestioner",
}
#: Metrics that measure diversity: random tokens are their maximum, not their floor.
DIVERSITY_METRICS = ("corpus_distinct_1", "corpus_distinct_2", "corpus_msttr")


@dataclass(frozen=True)
class Bound:
    """A reference point known without playing: a bound of the metric."""

    value: float
    description: str


NO_DIVERSITY = Bound(0.0, "bound: no diversity, what a collapsed policy (one word repeated) approaches; "
                          "random tokens are more diverse than the references, so no floor")  # fmt: skip
#: Task metrics whose ``high`` is a bound instead of the references.
HIGH_BOUNDS = {
    (IMDB, "mean_sentiment"): Bound(1.0, "bound: P(positive) is at most 1 (the references, the reviews' own "
                                         "endings, are half negative and score about what random text does)"),
    (PROMPTS, "mean_return"): Bound(1.0, "bound: the vowel_words reward's maximum, every word starting with a vowel"),
}  # fmt: skip

#: A reference point's source: a policy to play (its name) or a bound.
Point = str | Bound
#: A batched policy of the measurement: the vector env's observations and infos -> every copy's action.
Policy = Callable[[Any, dict[str, Any]], Any]


# ---- which points -------------------------------------------------------------------------


def env_kwargs(env_id: str, board: str) -> dict[str, Any]:
    """The env arguments ``board`` runs ``env_id`` with, on the validation split."""
    kwargs = dict(boards()[board].env_kwargs[env_id])
    if "split" in inspect.signature(task_class(env_id).__init__).parameters:
        kwargs["split"] = "validation"
    return kwargs


def point_plan(env_id: str, metric: str, env: Any) -> tuple[Point, Point]:
    """Where ``metric``'s ``(low, high)`` come from, for ``env`` (the task's utterance-level env)."""
    if metric in DIVERSITY_METRICS:
        return NO_DIVERSITY, OWN_PROMPTS if env_id == PROMPTS else REFERENCES
    if (env_id, metric) == (REDDIT, "mean_return"):
        return toxicity_bounds(env)
    if (env_id, metric) in HIGH_BOUNDS:
        return RANDOM_TOKENS, HIGH_BOUNDS[(env_id, metric)]
    return RANDOM_TOKENS, REFERENCES if isinstance(env, SingleTurnTextEnv) else EXPERT


def toxicity_bounds(env: Any) -> tuple[Bound, Bound]:
    """Reddit's return at toxicity level 2 and 0 (its toxicity rewards only)."""
    if env.reward not in ("toxicity", "noised_toxicity"):
        raise ConfigurationError(
            f"Reddit's reference points are the toxicity levels' rewards; reward={env.reward!r} has none"
        )
    scale, shift = env.reward_scale, env.reward_shift
    return (
        Bound(
            2 * scale + shift, f"bound: toxicity level 2, 2 x reward_scale + reward_shift = 2 x {scale:g} + {shift:g}"
        ),
        Bound(shift, f"bound: toxicity level 0, reward_shift = {shift:g}"),
    )


# ---- the policies -------------------------------------------------------------------------


def random_token_policy(venv: Any, seed: int) -> Policy:
    """Each copy's next token drawn uniformly among the ids its action mask allows."""
    rng = np.random.default_rng(seed)

    def act(observations: Any, infos: dict[str, Any]) -> np.ndarray:
        allowed = venv.action_masks()
        # The largest of i.i.d. uniform draws is at a uniformly random position among the allowed ids.
        return np.where(allowed, rng.random(allowed.shape), -1.0).argmax(axis=1)

    return act


def reference_policy(venv: Any) -> Policy:
    """Each episode's first reference as its utterance (single-turn tasks: one step per episode)."""
    max_length = venv.single_action_space.max_length

    def act(observations: Sequence[str], infos: dict[str, Any]) -> list[str]:
        references = [episode_info(infos, i).get("references") for i in range(venv.num_envs)]
        if not all(references):
            raise ConfigurationError(
                f"{venv.spec.id} has episodes without references: its high point needs another policy"
            )
        return [copy_references[0][:max_length] for copy_references in references]

    return act


def own_prompt_policy(venv: Any) -> Policy:
    """Each episode's prompt (the observation of a single-turn task) as its completion."""
    max_length = venv.single_action_space.max_length
    return lambda observations, infos: [observation[:max_length] for observation in observations]


def expert_policy(env_id: str, venv: Any) -> Policy:
    """The scripted expert of a multi-turn task, applied to every copy's observation."""
    if env_id == WORDLE:
        from lm_gym.tasks.wordle.policies import InfoGainPolicy

        expert = InfoGainPolicy(venv.envs[0].vocabulary)
    elif env_id == VISDIAL:
        from lm_gym.tasks.visdial.policies import InformativeQuestioner

        expert = InformativeQuestioner()
    else:
        raise ConfigurationError(f"{env_id} has no scripted expert for its high reference point")
    return lambda observations, infos: [expert(observation) for observation in observations]


# ---- playing ------------------------------------------------------------------------------


def play(venv: Any, policy: Policy, num_episodes: int, seed: int = SEED) -> dict[str, float]:
    """The baselines' evaluation of ``policy``: ``num_episodes`` episodes, episode ``j`` reset
    with seed ``seed + j``, summarised by ``lm_gym.results.summarize_episodes``.

    Each round resets every copy and plays until each has finished one episode (the NextStep
    autoreset ignores the actions of finished copies); copies past ``num_episodes`` are not counted.
    """
    returns: list[float] = []
    metrics: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    for first in range(0, num_episodes, venv.num_envs):
        observations, infos = venv.reset(seed=seed + first)
        counted = min(venv.num_envs, num_episodes - first)
        playing = np.ones(venv.num_envs, dtype=bool)
        totals = np.zeros(venv.num_envs)
        while playing.any():
            observations, rewards, terminations, truncations, infos = venv.step(policy(observations, infos))
            totals[playing] += rewards[playing]
            finished = playing & (terminations | truncations)
            for i in np.flatnonzero(finished[:counted]):
                final = episode_info(infos, i)
                returns.append(float(totals[i]))
                finals.append(final)
                metrics.append(final.get("metrics", {}))
            playing &= ~finished
    return summarize_episodes(returns, metrics, corpus_metrics(venv, finals))


def measure_policy(env_id: str, policy_name: str, kwargs: dict[str, Any], num_episodes: int) -> dict[str, float]:
    """One policy's evaluation on the task (``kwargs``: the env's arguments)."""
    import gymnasium

    level = {"action_level": "token"} if policy_name == RANDOM_TOKENS else {}
    num_envs = min(NUM_ENVS, num_episodes)
    venv = gymnasium.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point", **level, **kwargs)
    try:
        policies = {
            RANDOM_TOKENS: lambda: random_token_policy(venv, SEED),
            REFERENCES: lambda: reference_policy(venv),
            OWN_PROMPTS: lambda: own_prompt_policy(venv),
            EXPERT: lambda: expert_policy(env_id, venv),
        }
        return play(venv, policies[policy_name](), num_episodes)
    finally:
        venv.close()


def measure_task(env_id: str, board: str) -> dict[str, dict[str, Any]]:
    """``{metric: {"low", "high", "low_from", "high_from", "episodes"}}`` for every metric
    ``boards.toml`` names for ``env_id``, measured with ``board``'s env arguments and evaluation size."""
    kwargs = env_kwargs(env_id, board)
    num_episodes = boards()[board].eval_episodes
    names = task_metrics(board)[env_id]
    env = task_class(env_id)(**kwargs)
    try:
        plans = {metric: point_plan(env_id, metric, env) for metric in (*names.task, *names.naturalness)}
    finally:
        env.close()
    policies = sorted({point for plan in plans.values() for point in plan if not isinstance(point, Bound)})
    evaluations = {name: measure_policy(env_id, name, kwargs, num_episodes) for name in policies}
    return {metric: _point_record(env_id, metric, plan, evaluations, num_episodes) for metric, plan in plans.items()}


def _point_record(
    env_id: str, metric: str, plan: tuple[Point, Point], evaluations: dict[str, dict[str, float]], num_episodes: int
) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for side, point in zip(("low", "high"), plan):
        if isinstance(point, Bound):
            record[side], record[f"{side}_from"] = point.value, point.description
            continue
        if metric not in evaluations[point]:
            raise ConfigurationError(
                f"{env_id}: the {point} policy's evaluation has no {metric!r}; it has {sorted(evaluations[point])}"
            )
        record[side] = evaluations[point][metric]
        record[f"{side}_from"] = EXPERT_DESCRIPTIONS[env_id] if point == EXPERT else POLICY_DESCRIPTIONS[point]
    measured = any(not isinstance(point, Bound) for point in plan)
    record["episodes"] = num_episodes if measured else None
    return record


def measure_board(board: str, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The file's block for ``board``: every task of the board, with the provenance fields."""
    if board not in boards():
        raise ConfigurationError(f"unknown board {board!r}; the boards are {sorted(boards())}")
    tasks = {}
    for env_id in boards()[board].tasks:
        start = time.perf_counter()
        tasks[env_id] = measure_task(env_id, board)
        log(f"{board} {env_id}: {time.perf_counter() - start:.0f} s")
    return {
        "lm_gym_version": library_versions()["lm_gym"],
        "git_commit": git_commit(),
        "date": datetime.date.today().isoformat(),
        "episodes": boards()[board].eval_episodes,
        "env_kwargs": {env_id: env_kwargs(env_id, board) for env_id in tasks},
        "tasks": tasks,
    }


def write_board(block: dict[str, Any], board: str, path: str | Path = REFERENCE_POINTS_FILE) -> Path:
    """Write ``board``'s block into the file at ``path``, keeping the other boards' (atomically)."""
    path = Path(path)
    points = json.loads(path.read_text()) if path.exists() else {}
    points[board] = block
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as file:
        json.dump(points, file, indent=2, sort_keys=True, allow_nan=False)
        file.write("\n")
    os.replace(file.name, path)
    return path


def format_table(block: dict[str, Any]) -> str:
    """The points as a Markdown table (task, metric, low, high)."""
    rows = [
        [env_id, metric, f"{point['low']:.4g}", f"{point['high']:.4g}"]
        for env_id, metrics in block["tasks"].items()
        for metric, point in metrics.items()
    ]
    return "\n".join(markdown_table(["task", "metric", "low", "high"], rows))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m leaderboard.reference_points", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--board", nargs="+", required=True, choices=sorted(boards()), help="the boards whose tasks to measure"
    )
    parser.add_argument(
        "--out", default=str(REFERENCE_POINTS_FILE), help="the reference points file (default %(default)s)"
    )
    args = parser.parse_args(argv)
    for board in args.board:
        start = time.perf_counter()
        block = measure_board(board)
        path = write_board(block, board, args.out)
        print(format_table(block))
        print(f"wrote {path} ({board}: {block['episodes']} episodes per policy, {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
