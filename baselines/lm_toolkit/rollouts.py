"""Episodes through lm-gym's native vector envs, and the evaluation every baseline reports.

Every turn of a round is one batched sampling pass for all active sub-envs and one env step
(one batched reward call). Sub-envs that finished wait, with an ignored empty action, until
the whole round is over (``NextStep`` autoreset).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from lm_gym.core.chat import ChatBatch, chat_prompt
from lm_gym.core.vector import episode_info
from lm_gym.results.evaluation import Evaluation, evaluate_episodes
from lm_toolkit.arguments import is_number
from lm_toolkit.lora import weights_of
from lm_toolkit.sampling import LogitsHook, Samples, TokenScores, response_log_probs, sample
from lm_toolkit.tasks import Lengths
from lm_toolkit.tokens import encode_prompts

MAX_TURNS = 256  # an episode still running after this many turns is a task bug


@dataclass
class TextPolicy:
    """A language model acting in a text env: observations encoded by the task's prompt rule,
    utterances sampled with the KV cache (:func:`lm_toolkit.sampling.sample`). ``model``: a transformers
    model or a peft ``PeftModel`` (LoRA)."""

    model: Any
    tokenizer: Any
    lengths: Lengths
    temperature: float = 1.0
    value_head: Any = None
    hook: LogitsHook | None = None

    def queries(self, observations: Sequence[str]) -> list[list[int]]:
        return encode_prompts(self.tokenizer, observations, self.lengths)

    def sample(self, queries: Sequence[Sequence[int]], greedy: bool = False, uniforms=None) -> Samples:
        with weights_of(self.model) as model:
            return sample(
                model,
                queries,
                self.lengths,
                eos_id=self.tokenizer.eos_token_id,
                pad_id=self.tokenizer.pad_token_id,
                greedy=greedy,
                temperature=self.temperature,
                value_head=self.value_head,
                hook=self.hook,
                uniforms=uniforms,
            )

    def score(
        self,
        queries,
        responses: torch.Tensor,
        response_mask: torch.Tensor,
        *,
        model=None,
        value_head=None,
        keep=None,
        entropy=None,
    ) -> TokenScores:
        """Per-token log-probs of finished responses under this policy's sampling distribution, by ``model``
        (default: the policy; e.g. the frozen reference, or a LoRA policy's adapters switched off:
        :mod:`lm_toolkit.lora`), with ``value_head``'s values, restricted to ``keep``."""
        with weights_of(self.model if model is None else model) as scorer:
            return response_log_probs(
                scorer,
                queries,
                responses,
                response_mask,
                pad_id=self.tokenizer.pad_token_id,
                eos_id=self.tokenizer.eos_token_id,
                temperature=self.temperature,
                min_new_tokens=self.lengths.min_new_tokens,
                value_head=value_head,
                keep=keep,
                entropy=entropy,
            )


@dataclass
class Turn:
    """One utterance of one sub-env: its query and response tokens, what sampling kept, its reward."""

    env: int
    query: list[int]
    response: list[int]
    log_probs: list[float]
    values: list[float] | None
    hook_row: Any
    reward: float
    done: bool


@dataclass
class Round:
    """One episode per sub-env: per env its return, metrics and final info; every turn in order."""

    returns: np.ndarray
    metrics: list[dict[str, float]]
    finals: list[dict[str, Any]]
    turns: list[Turn] = field(default_factory=list)

    def mean_metrics(self) -> dict[str, float]:
        return mean_metrics(self.metrics)


def numeric_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """The numbers of an env's ``info["metrics"]``, as floats (NaN kept: it shows in the means)."""
    return {key: float(value) for key, value in metrics.items() if is_number(value, finite=False)}


def mean_metrics(episodes: Sequence[dict[str, float]]) -> dict[str, float]:
    """``mean_<key>`` of the episodes' numeric ``info["metrics"]`` (training curves)."""
    keys = {key for episode in episodes for key in episode}
    return {f"mean_{key}": float(np.mean([m[key] for m in episodes if key in m])) for key in sorted(keys)}


def episode_uniforms(
    episode_seeds: Sequence[int], rows: Sequence[int], turn: int, width: int, sample: int = 0
) -> torch.Tensor:
    """The random numbers of a turn's draws, ``width`` per row: a function of the row's episode seed,
    its index in the whole batch and the turn only, so an episode is sampled alike whatever else is
    in the batch (another batch size, another process of a data-parallel run); ``sample`` > 0 gives
    the draws of another sample of the same episode (an evaluation of K samples per episode)."""
    key = [turn] if sample == 0 else [turn, sample]
    return torch.from_numpy(
        np.stack([np.random.default_rng([seed, row, *key]).random(width) for seed, row in zip(episode_seeds, rows)])
    )


def play_round(
    venv,
    policy: TextPolicy,
    seed: int | Sequence[int],
    greedy: bool = False,
    first_env: int = 0,
    sample: int = 0,
    chat: bool = False,
) -> Round:
    """Every sub-env plays one episode from ``venv.reset(seed=seed)`` (a list: one seed per sub-env).

    Sub-env ``i`` is row ``first_env + i`` of the whole batch (a data-parallel run's processes each
    play a part); its draws come from :func:`episode_uniforms` (of ``sample``). With ``chat`` the
    policy is prompted with each episode's chat (``lm_gym.core.chat``: the task's rules, the env's
    observations as the user's messages, its replies as the assistant's) in its tokenizer's chat
    template, instead of the observation text."""
    observations, _ = venv.reset(seed=seed if isinstance(seed, int) else list(seed))
    chats = ChatBatch(venv, observations) if chat else None
    episode_seeds = [seed + i for i in range(venv.num_envs)] if isinstance(seed, int) else list(seed)
    active = np.ones(venv.num_envs, dtype=bool)
    totals = np.zeros(venv.num_envs)
    metrics: list[dict[str, float]] = [{} for _ in range(venv.num_envs)]
    finals: list[dict[str, Any]] = [{} for _ in range(venv.num_envs)]
    turns: list[Turn] = []
    max_chars = venv.single_action_space.max_length
    for turn in range(MAX_TURNS):
        indices = np.flatnonzero(active)
        if chats is None:
            queries = policy.queries([observations[i] for i in indices])
        else:
            queries = policy.queries([chat_prompt(messages, policy.tokenizer) for messages in chats.messages(indices)])
        uniforms = None
        if not greedy:
            seeds = [episode_seeds[i] for i in indices]
            rows = (first_env + indices).tolist()
            uniforms = episode_uniforms(seeds, rows, turn, policy.lengths.max_new_tokens, sample)
        samples = policy.sample(queries, greedy, uniforms)
        texts = policy.tokenizer.batch_decode(samples.responses, skip_special_tokens=True)
        actions = [""] * venv.num_envs  # finished sub-envs: NextStep autoreset ignores their action
        for i, text in zip(indices, texts, strict=True):
            actions[i] = text[:max_chars]
        observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
        if chats is not None:
            chats.record(actions, observations, terminations, truncations)
        dones = terminations | truncations
        for k, i in enumerate(indices):
            turns.append(
                Turn(
                    env=int(i),
                    query=queries[k],
                    response=samples.responses[k],
                    log_probs=samples.log_probs[k],
                    values=samples.values[k] if samples.values else None,
                    hook_row=samples.hook_rows[k] if samples.hook_rows else None,
                    reward=float(rewards[i]),
                    done=bool(dones[i]),
                )
            )
        totals[indices] += rewards[indices]
        for i in indices[dones[indices]]:
            active[i] = False
            finals[i] = {**episode_info(infos, i), "observation": observations[i]}
            if isinstance(infos.get("metrics"), dict):
                metrics[i] = numeric_metrics(episode_info(infos["metrics"], i))
        if not active.any():
            return Round(totals, metrics, finals, turns)
    raise RuntimeError(f"episodes still running after {MAX_TURNS} turns")


def play_episodes(
    venv, policy: TextPolicy, num_episodes: int, seed: int, greedy: bool, sample: int = 0, chat: bool = False
) -> tuple[list[float], list[dict[str, float]], list[dict[str, Any]]]:
    """The returns, ``info["metrics"]`` and final infos of ``num_episodes`` episodes: episode j reset with seed
    ``seed + j`` and sampled with :func:`episode_uniforms` of row j (of ``sample``), in rounds of
    ``venv.num_envs``; ``chat`` as :func:`play_round`'s. The policy's model is in eval mode meanwhile."""
    policy = dataclasses.replace(policy, value_head=None)  # values are for training's advantages only
    was_training = policy.model.training
    policy.model.eval()
    returns, metrics, finals = [], [], []
    for first in range(0, num_episodes, venv.num_envs):
        played = play_round(venv, policy, seed + first, greedy, first_env=first, sample=sample, chat=chat)
        counted = min(venv.num_envs, num_episodes - first)  # sub-envs beyond this play seeds that are not needed
        returns.extend(played.returns[:counted].tolist())
        metrics.extend(played.metrics[:counted])
        finals.extend(played.finals[:counted])
    policy.model.train(was_training)
    return returns, metrics, finals


def evaluate(
    venv, policy: TextPolicy, num_episodes: int, seed: int, greedy: bool, perplexity_model: str | None = None
) -> Evaluation | None:
    """``num_episodes`` validation episodes (:func:`play_episodes`: episode j reset with seed ``seed + j``
    and sampled with :func:`episode_uniforms` of row j), so every evaluation of every run plays the same
    episodes with the same random numbers, whatever the batch size, and training's random
    streams are untouched.

    Returns their :class:`~lm_gym.results.evaluation.Evaluation` (returns, per-episode metrics,
    the task's corpus metrics, each task's own on several tasks, a few sample episodes:
    ``lm_gym.results.evaluation.evaluate_episodes``); ``None`` without episodes.
    """
    if num_episodes == 0:
        return None
    returns, metrics, finals = play_episodes(venv, policy, num_episodes, seed, greedy)
    return evaluate_episodes(venv, returns, metrics, finals, perplexity_model)


def evaluator(
    venv, policy: TextPolicy, args, autocast: contextlib.AbstractContextManager, *modules
) -> Callable[[], Evaluation | None]:
    """The evaluation a run repeats, by ``args``' flags (``--eval-episodes``, ``--eval-seed``, ``--eval-greedy``,
    ``--perplexity-model``), under ``autocast``; ``modules`` beside the policy (e.g. a value trunk) are put in
    eval mode for it too."""

    def run():
        training = [module.training for module in modules]
        for module in modules:
            module.eval()
        with autocast:
            result = evaluate(venv, policy, args.eval_episodes, args.eval_seed, args.eval_greedy, args.perplexity_model)
        for module, mode in zip(modules, training, strict=True):
            module.train(mode)
        return result

    return run
