"""A task's episodes by split and index: what OpenEnv's Task API, the trainers' adapters and the board address.

Episode ``index`` of ``split`` is the episode that ``gymnasium.make(env_id, split=split, **env_kwargs)``
plays after ``reset(seed=index)``: the index *is* the reset seed, so the board's evaluation
episodes (episode ``j`` reset with seed ``j``) are addressable from any client, and a rollout
group that shares an index shares its starting state.

- **Splits**: ``train``, ``validation`` and ``test`` (:data:`SPLITS`). A task
  whose class takes no ``split`` argument (Wordle, a mixture) plays the same episodes on each.
- **How many**: :meth:`~lm_gym.core.text_env.TextEnv.num_episodes` of the split's env: a single-turn
  task's number of samples, VisDial's number of images; a task that has no such count (Wordle's
  games, a mixture, a procedural task of yours) has every seed as an episode, and its split is
  counted as :data:`SEEDED_EPISODES` (the seeds below ``2**32``). Seeds past a count play too
  (a single-turn task draws its sample with the seeded RNG, so seeds ``0 .. n-1`` draw the ``n``
  samples with repeats, as the board's episodes do; ``reset(options={"index": k})`` plays sample ``k``).
- **What an episode is**: :meth:`TaskEpisodes.describe` gives ``split``, ``index``, ``seed``, the
  first ``observation``; a multi-turn task's reset ``info``, a single-turn task's sample instead:
  ``prompt``, ``references``, ``meta`` and ``sample_index`` (its position in the split's samples).

Describing an episode resets a copy of the split's env (``TextEnv.replicate``): nothing the
caller plays is touched, and VisDial's reset runs its ranker as a reset always does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import takes_argument, task_class, task_spec
from lm_gym.core.task_setup import task_env
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.validation import is_integer

#: The splits of every task (a task without a ``split`` argument plays the same episodes on each).
SPLITS = ("train", "validation", "test")

#: The number of episodes of a split whose task has no count of its own: every seed below ``2**32``.
SEEDED_EPISODES = 2**32

#: The most episodes :meth:`TaskEpisodes.describe_range` describes in one call.
MAX_RANGE = 1000


class TaskEpisodes:
    """The episodes of task ``env_id`` with ``env_kwargs`` on each split.

    Args:
        env_id: a registered lm-gym task id (yours included).
        env_kwargs: the task's keyword arguments; each split's env gets ``split=<split>`` when its
            class takes one (a ``split`` among them is overridden).
        build: makes a split's env from its keyword arguments; default
            ``gymnasium.make(env_id, **kwargs).unwrapped``. A server passes its own (token level, say).

    Each split's env is built once, on first use, and kept (:meth:`env`); thread-safe.
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        build: Callable[[dict[str, Any]], Any] | None = None,
    ):
        self.env_id = task_spec(env_id).id  # ConfigurationError for an id that is not an lm-gym task
        if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
            raise ConfigurationError(f"env_kwargs must be a dict or None, got {safe_repr(env_kwargs)}")
        self.env_kwargs = dict(env_kwargs or {})
        self.takes_split = takes_argument(task_class(env_id), "split")
        self._registered_id = env_id
        self._build = build or (lambda kwargs: gymnasium.make(env_id, **kwargs).unwrapped)
        self._envs: dict[str, Any] = {}
        self._lock = threading.Lock()

    # ---- splits ---------------------------------------------------------------------------
    def splits(self) -> list[dict[str, str]]:
        """The splits: ``{"name", "type", "description"}`` each (OpenEnv's split descriptor)."""
        if self.takes_split:
            note = "episode i is reset(seed=i) of the task on this split"
        else:
            note = f"{self.env_id} takes no split: every split plays the same episodes (episode i is reset(seed=i))"
        return [{"name": split, "type": split, "description": note} for split in SPLITS]

    def check_split(self, split: Any) -> str:
        """``split``, checked: one of :data:`SPLITS`, else ``ConfigurationError`` naming it."""
        if not isinstance(split, str) or split not in SPLITS:
            raise ConfigurationError(f"split must be one of {list(SPLITS)}, got {safe_repr(split)}")
        return split

    def split_kwargs(self, split: str) -> dict[str, Any]:
        """The keyword arguments of ``split``'s env."""
        split = self.check_split(split)
        return {**self.env_kwargs, "split": split} if self.takes_split else dict(self.env_kwargs)

    def env(self, split: str) -> Any:
        """``split``'s env, built on first use (a task without splits has one env for all of them)."""
        split = self.check_split(split)
        key = split if self.takes_split else ""
        with self._lock:
            if key not in self._envs:
                self._envs[key] = self._build(self.split_kwargs(split))
            return self._envs[key]

    def add_env(self, split: str, env: Any) -> None:
        """Use ``env``, already built with :meth:`split_kwargs` of ``split``, as that split's env."""
        split = self.check_split(split)
        key = split if self.takes_split else ""
        with self._lock:
            self._envs.setdefault(key, env)

    # ---- episodes -------------------------------------------------------------------------
    def num_episodes(self, split: str) -> int:
        """How many episodes ``split`` has: the task's own count, or :data:`SEEDED_EPISODES`."""
        count = task_env(self.env(split)).num_episodes()
        return SEEDED_EPISODES if count is None else int(count)

    def check_index(self, split: str, index: Any) -> int:
        """``index``, checked against ``split``'s episodes: ``ConfigurationError`` naming it when out of range."""
        count = self.num_episodes(split)
        if not is_integer(index) or not 0 <= index < count:
            raise ConfigurationError(
                f"index must be an int in [0, {count}) (the episodes of split {split!r}), got {safe_repr(index)}"
            )
        return int(index)

    def describe(self, split: str, index: int) -> dict[str, Any]:
        """Episode ``index`` of ``split``: its seed, first observation and reset info (see the module)."""
        index = self.check_index(split, index)
        env = task_env(self.env(split)).replicate()  # a copy: describing changes nothing anyone plays
        observation, info = env.reset(seed=index)
        entry: dict[str, Any] = {
            "split": split,
            "index": index,
            "seed": index,
            "single_turn": isinstance(env, SingleTurnTextEnv),
            "observation": observation,
        }
        if not isinstance(env, SingleTurnTextEnv):
            entry["info"] = info
        else:  # its info is the sample's prompt, references and meta
            sample = env.current_sample
            position = next((k for k, candidate in enumerate(env.samples) if candidate is sample), None)
            entry.update(
                prompt=sample.prompt,
                references=list(sample.references),
                meta=dict(sample.meta),
                sample_index=position,
            )
        return entry

    def describe_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        """Episodes ``start .. stop - 1`` of ``split`` (Python slice bounds, negative ones from the end), at most
        :data:`MAX_RANGE` of them (``ConfigurationError`` naming ``stop`` beyond that)."""
        for name, bound in (("start", start), ("stop", stop)):
            if bound is not None and not is_integer(bound):
                raise ConfigurationError(f"{name} must be an int or None, got {safe_repr(bound)}")
        first, last, _ = slice(start, stop).indices(self.num_episodes(split))
        if last - first > MAX_RANGE:
            raise ConfigurationError(
                f"stop must be at most start + {MAX_RANGE} (episodes described per call), got start={first}, "
                f"stop={last}"
            )
        return [self.describe(split, index) for index in range(first, last)]

    def reset(self, env: Any, split: str, index: Any, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Reset ``env`` (an env of ``split``) to episode ``index``: ``env.reset(seed=index, options=options)``."""
        return env.reset(seed=self.check_index(split, index), options=options)


__all__ = ["MAX_RANGE", "SEEDED_EPISODES", "SPLITS", "TaskEpisodes"]
