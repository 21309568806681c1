"""lm-gym's tasks for TRL users: prompts, rewards and whole multi-turn episodes for ``GRPOTrainer`` and ``RLOOTrainer``.

TRL's trainers read a ``datasets.Dataset`` with a ``prompt`` column and call reward functions as
``f(prompts=..., completions=..., completion_ids=..., **other_columns)``, one value per
completion; ``GRPOTrainer`` also takes a ``rollout_func(prompts, trainer)`` that plays whole
episodes. This module makes the three from an lm-gym task (``pip install "lm-gym[trl]"``):

* :func:`prompt_dataset`: the task's prompts from its own data source (single-turn tasks: one
  row per sample, with its index, references and meta; multi-turn tasks: one row per game,
  the game's first observation and its seed), as text or as chat messages (``chat=True``).
* :func:`reward_function`: the task's reward, exactly what ``gymnasium.make(env_id).step`` gives
  (single-turn: each completion played as the utterance of its sample through the native
  vector env, one batched reward call per batch; multi-turn: the return of the episode that
  :func:`rollout_function` played).
* :func:`rollout_function`: for multi-turn tasks (Wordle, Visual Dialogue), ``GRPOTrainer``'s
  ``rollout_func``: each group of ``num_generations`` completions plays one game of the task
  against the lm-gym env, the trainer's model generating every turn (the active games of a
  batch in one ``generate`` call), the env's observations between the turns masked out of the
  loss (``env_mask``).

Single-turn (CommonGen)::

    from trl import GRPOConfig, GRPOTrainer
    from lm_gym.integrations.trl import prompt_dataset, reward_function

    kwargs = {"source": "synthetic"}
    trainer = GRPOTrainer(
        model="gpt2",
        reward_funcs=reward_function("lm_gym/CommonGen-v0", **kwargs),
        train_dataset=prompt_dataset("lm_gym/CommonGen-v0", "train", **kwargs),
        args=GRPOConfig(output_dir="runs/trl-commongen", num_generations=4, max_completion_length=32),
    )
    trainer.train()

Multi-turn (Wordle) adds ``rollout_func=rollout_function("lm_gym/Wordle-v0")`` to the trainer.

A served task (docs/serving.md): ``env_id="lm_gym/Remote-v0"`` with ``url=...`` among the env
kwargs (``{"train": url, "validation": url}`` for one server per split; ``token=...`` or the
``LM_GYM_SERVE_TOKEN`` environment variable for a server with a token) plays the server's task
in all three, with the same prompts, seeds and rewards as the local task (``lm_gym.serve``, the
``serve`` extra, is imported only for that id).

For tool-calling models, ``GRPOTrainer``'s ``environment_factory`` (each task's action as a named
tool, TRL's own multi-turn loop): :mod:`lm_gym.integrations.trl_environment`.
"""

from __future__ import annotations

import collections
import copy
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import split_kwargs, task_class
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.validation import check_int

INDEX_COLUMN = "lm_gym_index"  #: a single-turn row's sample index in the task's split
SEED_COLUMN = "lm_gym_seed"  #: a multi-turn row's reset seed
RETURN_FIELD = "lm_gym_return"  #: the return of each episode a rollout played (a reward-function argument)
UTTERANCES_FIELD = "lm_gym_utterances"  #: the utterances each episode's policy played, in order
DEFAULT_GAMES = 1024  #: rows of a multi-turn task's dataset (games, seeds 0 .. 1023)
MAX_TURNS = 256  #: an episode still running after this many turns is a task bug


REMOTE_ID = "lm_gym/Remote-v0"  #: a served task (``lm_gym.serve.REMOTE_ID``)


def is_single_turn(env_id: str) -> bool:
    """Whether task ``env_id`` is single-turn (one prompt, one completion, scored)."""
    return issubclass(task_class(env_id), SingleTurnTextEnv)


def _is_remote(env_id: str) -> bool:
    """Whether ``env_id`` is a served task; registers ``lm_gym/Remote-v0`` (``import lm_gym.serve``) if so."""
    if env_id != REMOTE_ID:
        return False
    import lm_gym.serve

    lm_gym.serve.register_remote()
    return True


def _kwargs(env_id: str, env_kwargs: dict[str, Any], split: str) -> dict[str, Any]:
    """The env's kwargs on ``split``; a served task's client is asked for ``split`` (it checks the server plays it)."""
    if _is_remote(env_id):
        return {**env_kwargs, "split": split, "action_level": "utterance"}
    return split_kwargs(env_id, env_kwargs, split)


def _task(env_id: str, split: str, env_kwargs: dict[str, Any]) -> Any:
    """The task's env (a served task: one session of its server, ``lm_gym.serve.client.RemoteEnv``)."""
    import gymnasium

    return gymnasium.make(env_id, **_kwargs(env_id, env_kwargs, split)).unwrapped


def _single_turn(env: Any) -> bool:
    return isinstance(env, SingleTurnTextEnv) or bool(getattr(env, "single_turn", False))


def _samples(env: Any, num_prompts: int | None) -> list[tuple[str, list[str], Any]]:
    """A single-turn task's first ``num_prompts`` samples ``(prompt, references, meta)``; a served task's
    from resets with ``options={"index": i}``."""
    if isinstance(env, SingleTurnTextEnv):
        return [(s.prompt, list(s.references), s.meta) for s in env.samples[:num_prompts]]
    count = env.task_info["num_samples"] if num_prompts is None else min(num_prompts, env.task_info["num_samples"])
    samples = []
    for index in range(count):
        prompt, info = env.reset(options={"index": index})
        samples.append((prompt, list(info["references"]), info["meta"]))
    return samples


def _vector_env(env_id: str, split: str, env_kwargs: dict[str, Any], num_envs: int):
    import gymnasium

    kwargs = _kwargs(env_id, env_kwargs, split)
    return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def as_chat(prompt: str, system_prompt: str | None = None) -> list[dict[str, str]]:
    """A prompt as chat messages: the system prompt (if any), then the prompt as the user's message."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": prompt}]


def prompt_dataset(
    env_id: str,
    split: str = "train",
    *,
    num_prompts: int | None = None,
    chat: bool = False,
    system_prompt: str | None = None,
    **env_kwargs: Any,
):
    """A ``datasets.Dataset`` of task ``env_id``'s prompts on ``split``, from the task's own data source.

    Single-turn tasks: a row per sample (the first ``num_prompts``; default all) with ``prompt``,
    ``lm_gym_index`` (what :func:`reward_function` plays), ``references`` and ``meta`` (JSON
    text). Multi-turn tasks: a row per game, reset with seeds ``0 .. num_prompts - 1`` (default
    1,024), with ``prompt`` (the first observation) and ``lm_gym_seed``. ``chat=True`` gives
    ``prompt`` as chat messages (``system_prompt`` first, if given) for instruction models with
    a chat template; otherwise it is the observation's text.
    """
    from datasets import Dataset

    if num_prompts is not None:
        num_prompts = check_int("num_prompts", num_prompts, 1)
    if system_prompt is not None and not chat:
        raise ConfigurationError("system_prompt only applies with chat=True")
    env = _task(env_id, split, env_kwargs)
    try:
        if _single_turn(env):
            rows = [
                {
                    "prompt": prompt,
                    INDEX_COLUMN: index,
                    "references": references,
                    "meta": json.dumps(meta, sort_keys=True, default=str),
                }
                for index, (prompt, references, meta) in enumerate(_samples(env, num_prompts))
            ]
        else:
            games = range(num_prompts or DEFAULT_GAMES)
            rows = [{"prompt": env.reset(seed=seed)[0], SEED_COLUMN: seed} for seed in games]
    finally:
        env.close()
    if chat:
        for row in rows:
            row["prompt"] = as_chat(row["prompt"], system_prompt)
    return Dataset.from_list(rows)


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the content of a conversational completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    raise ConfigurationError(
        f"a completion must be a string or chat messages, got {type(completion).__name__}: {safe_repr(completion)}"
    )


class EnvReward:
    """Task ``env_id``'s reward in TRL's reward-function signature (see :func:`reward_function`)."""

    def __init__(self, env_id: str, split: str, env_kwargs: dict[str, Any]):
        self.env_id, self.split, self.env_kwargs = env_id, split, dict(env_kwargs)
        if _is_remote(env_id):  # the server says
            env = _task(env_id, split, env_kwargs)
            self.single_turn = _single_turn(env)
            env.close()
        else:
            self.single_turn = is_single_turn(env_id)
        self.__name__ = "lm_gym_" + env_id.split("/")[-1].split("-")[0].lower()  # TRL logs rewards/<name>/mean
        self.vector_envs: dict[int, Any] = {}

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        if not self.single_turn:
            if RETURN_FIELD in columns:
                return [float(value) for value in columns[RETURN_FIELD]]
            seeds = columns.get(SEED_COLUMN)
            if seeds is None or len(seeds) != len(completions):
                raise ConfigurationError(
                    f"{self.env_id} is played from seeds: build the dataset with prompt_dataset({self.env_id!r}, ...) "
                    f"(its {SEED_COLUMN!r} column), and for games of several turns pass "
                    f"rollout_func=rollout_function({self.env_id!r}, ...) to GRPOTrainer"
                )
            return self.score_first_turn(seeds, [completion_text(c) for c in completions]).tolist()
        indices = columns.get(INDEX_COLUMN)
        if indices is None or len(indices) != len(completions):
            raise ConfigurationError(
                f"the reward of {self.env_id} needs the dataset's {INDEX_COLUMN!r} column (one per completion): "
                f"build the dataset with prompt_dataset({self.env_id!r}, ...)"
            )
        return self.score(indices, [completion_text(c) for c in completions]).tolist()

    def score(self, indices: Sequence[int], utterances: Sequence[str]) -> np.ndarray:
        """The env's reward of playing ``utterances[i]`` on sample ``indices[i]``: one vector env step,
        one batched reward call. Utterances longer than the action space are cut to it."""
        venv = self._vector_env(len(utterances))
        rows = np.asarray(indices)
        for index in dict.fromkeys(rows.tolist()):
            venv.reset(options={"index": int(index), "reset_mask": rows == index})
        return self._step(venv, utterances)[0]

    def score_first_turn(self, seeds: Sequence[int], utterances: Sequence[str]) -> np.ndarray:
        """The reward of games that end after one utterance: game ``seeds[i]`` (reset with that seed)
        answered with ``utterances[i]``, one vector env step. A game that goes on is an error: its
        reward is the return of the whole episode, which ``rollout_function`` plays."""
        venv = self._vector_env(len(utterances))
        venv.reset(seed=[int(seed) for seed in seeds])
        rewards, ended = self._step(venv, utterances)
        if not ended.all():
            raise ConfigurationError(
                f"{self.env_id}'s games go on after the first utterance: pass "
                f"rollout_func=rollout_function({self.env_id!r}, ...) to GRPOTrainer, so the reward is the "
                "return of the episode it played"
            )
        return rewards

    def _vector_env(self, count: int):
        """The task's native vector env of ``count`` copies, made once per batch size."""
        if count not in self.vector_envs:
            self.vector_envs[count] = _vector_env(self.env_id, self.split, self.env_kwargs, count)
        return self.vector_envs[count]

    @staticmethod
    def _step(venv, utterances: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """One step of every copy (utterances cut to the action space): the rewards and which episodes ended."""
        max_chars = venv.single_action_space.max_length
        _, rewards, terminated, truncated, _ = venv.step(tuple(text[:max_chars] for text in utterances))
        return np.asarray(rewards, dtype=np.float64), terminated | truncated


def reward_function(env_id: str, split: str = "train", **env_kwargs: Any) -> EnvReward:
    """Task ``env_id``'s reward as a TRL reward function ``f(prompts, completions, **columns)``.

    Single-turn tasks: completion ``i`` is played as the utterance of sample ``lm_gym_index[i]``
    (the column :func:`prompt_dataset` writes) through the task's native vector env, one batched
    reward call per batch: exactly the reward ``gymnasium.make(env_id).step`` gives (a completion
    longer than the action space is cut to it, as the baselines do). Other tasks (any
    ``TextEnv``, rows with ``lm_gym_seed``): in games that end after one utterance, completion
    ``i`` is the utterance of the game reset with seed ``lm_gym_seed[i]``, likewise batched;
    in longer games, the return of each episode :func:`rollout_function` played. ``env_kwargs`` and ``split`` must be
    the dataset's.
    """
    return EnvReward(env_id, split, env_kwargs)


class EnvRollout:
    """``GRPOTrainer``'s ``rollout_func`` playing task ``env_id``'s games (see :func:`rollout_function`)."""

    def __init__(self, env_id: str, split: str, num_prompts: int, max_new_tokens: int | None, env_kwargs: dict):
        remote = _is_remote(env_id)
        task = _task(env_id, split, env_kwargs) if remote else None  # a served task: the server says
        if task.single_turn if remote else is_single_turn(env_id):
            if remote:
                task.close()
            raise ConfigurationError(
                f"{env_id} is single-turn: TRL's own generation plays it; use reward_function({env_id!r}) alone"
            )
        self.env_id, self.split, self.env_kwargs = env_id, split, dict(env_kwargs)
        defaults = task.token_level_defaults if remote else task_class(env_id).token_level_defaults
        self.max_new_tokens = check_int("max_new_tokens", max_new_tokens or defaults["max_new_tokens"], 1)
        task = task or _task(env_id, split, env_kwargs)
        self.starts: dict[str, list[int]] = collections.defaultdict(list)  # first observation -> seeds
        for seed in range(num_prompts):
            self.starts[task.reset(seed=seed)[0]].append(seed)
        if remote:
            task.close()
        self.played: collections.Counter[str] = collections.Counter()
        self.vector_envs: dict[int, Any] = {}

    def seeds(self, prompts: Sequence[Any], group_size: int) -> list[int]:
        """A seed per prompt: each group of ``group_size`` plays one game whose first observation is its
        prompt (games with the same first observation, e.g. every Wordle game, in turn)."""
        if len(prompts) % group_size:
            raise ConfigurationError(f"{len(prompts)} prompts do not form groups of num_generations={group_size}")
        seeds = []
        for first in range(0, len(prompts), group_size):
            prompt = prompts[first]
            if not isinstance(prompt, str):
                raise ConfigurationError("rollout_function plays text prompts: build the dataset with chat=False")
            if prompt not in self.starts:
                raise ConfigurationError(
                    f"prompt {safe_repr(prompt[:80])} is not the first observation of a game of {self.env_id}: "
                    f"build the dataset with prompt_dataset({self.env_id!r}, ...) and the same split and arguments"
                )
            candidates = self.starts[prompt]
            seeds += [candidates[self.played[prompt] % len(candidates)]] * group_size
            self.played[prompt] += 1
        return seeds

    def __call__(self, prompts: Sequence[Any], trainer) -> dict[str, Any]:
        import torch

        training = trainer.model.training
        group_size = None if training else getattr(trainer.args, "num_generations_eval", None)
        seeds = self.seeds(prompts, group_size or trainer.args.num_generations)
        count = len(prompts)
        if count not in self.vector_envs:
            self.vector_envs[count] = _vector_env(self.env_id, self.split, self.env_kwargs, count)
        venv = self.vector_envs[count]
        observations, _ = venv.reset(seed=seeds)
        tokenizer, model = trainer.processing_class, trainer.accelerator.unwrap_model(trainer.model)
        device = trainer.accelerator.device
        config = copy.deepcopy(trainer.generation_config)
        config.max_new_tokens, config.min_new_tokens = self.max_new_tokens, None
        eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
        max_positions = getattr(model.config, "max_position_embeddings", None) or float("inf")
        max_chars = venv.single_action_space.max_length

        prompt_ids = [tokenizer(text)["input_ids"] for text in observations]
        completions: list[list[int]] = [[] for _ in range(count)]
        env_mask: list[list[int]] = [[] for _ in range(count)]
        utterances: list[list[str]] = [[] for _ in range(count)]
        returns = np.zeros(count)
        active = np.ones(count, dtype=bool)
        for _ in range(MAX_TURNS):
            # an episode whose context cannot hold another turn stops there, with its return so far
            room = [
                len(prompt_ids[i]) + len(completions[i]) + self.max_new_tokens <= max_positions for i in range(count)
            ]
            active &= np.array(room)
            rows = np.flatnonzero(active)
            if not len(rows):
                break
            contexts = [prompt_ids[i] + completions[i] for i in rows]
            width = max(map(len, contexts))
            input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=device)
            attention_mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
            with torch.no_grad():
                generated = model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config)
            actions = [""] * count  # finished games: NextStep autoreset ignores their action
            for row, tokens in zip(rows, generated[:, width:].tolist(), strict=True):
                tokens = tokens[: tokens.index(eos) + 1] if eos in tokens else [t for t in tokens if t != pad]
                completions[row] += tokens
                env_mask[row] += [1] * len(tokens)
                utterances[row].append(tokenizer.decode(tokens, skip_special_tokens=True))
                actions[row] = utterances[row][-1][:max_chars]
            previous = list(observations)
            observations, rewards, terminations, truncations, _ = venv.step(tuple(actions))
            returns[rows] += rewards[rows]
            for row in rows:
                if terminations[row] or truncations[row]:
                    active[row] = False
                    continue
                # the env's answer: the new observation's text after the one the policy saw
                new = observations[row]
                said = new[len(previous[row]) :] if new.startswith(previous[row]) else "\n" + new
                tokens = tokenizer(said, add_special_tokens=False)["input_ids"]
                completions[row] += tokens
                env_mask[row] += [0] * len(tokens)
        else:
            raise RuntimeError(f"episodes still running after {MAX_TURNS} turns")
        for row in range(count):  # TRL reads an episode's last token: it ends with EOS
            if not completions[row] or completions[row][-1] != eos:
                completions[row].append(eos)
                env_mask[row].append(0)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completions,
            "logprobs": None,
            "env_mask": env_mask,
            RETURN_FIELD: returns.tolist(),
            UTTERANCES_FIELD: utterances,
            SEED_COLUMN: seeds,
        }


def rollout_function(
    env_id: str,
    split: str = "train",
    *,
    num_prompts: int = DEFAULT_GAMES,
    max_new_tokens: int | None = None,
    **env_kwargs: Any,
) -> EnvRollout:
    """``GRPOTrainer``'s ``rollout_func`` for multi-turn task ``env_id`` (its dataset from
    :func:`prompt_dataset` with the same ``split``, ``num_prompts`` and ``env_kwargs``).

    Each group of ``num_generations`` prompts plays one game whose first observation is the
    prompt (the games with that observation in turn: every Wordle game starts alike) in the task's
    native vector env, reset with the game's seed. Every turn the trainer's model generates the
    utterances of the active games in one ``generate`` call (its generation config, at most
    ``max_new_tokens`` tokens, default the task's ``token_level_defaults``), each cut after its
    EOS; the env answers, and the new text of its observation is appended, masked out of the
    loss (``env_mask`` 0). Returned per episode: the prompt's and the episode's token ids, the
    mask, ``lm_gym_return`` (what :func:`reward_function` gives TRL), the utterances played and
    the seed. An episode whose context would outgrow the model's positions stops there.
    """
    num_prompts = check_int("num_prompts", num_prompts, 1)
    return EnvRollout(env_id, split, num_prompts, max_new_tokens, env_kwargs)
