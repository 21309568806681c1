"""The native batched vector env: N utterance-level envs scored with one reward call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.core.text_env import RewardQuery, TextEnv, score_queries
from lm_gym.core.validation import check_int, check_options, check_seed, is_integer

#: Largest ``num_envs`` of one vector env.
MAX_ENVS = 2**16


class TextVectorEnv(VectorEnv):
    """``num_envs`` copies of one :class:`TextEnv` (1 to ``MAX_ENVS`` = 65,536), stepped together.

    The copies share the dataset and the reward model; every ``step`` scores all the
    utterances that need a model reward with **one** batched call of the task's reward
    function, which is what makes this faster than ``SyncVectorEnv``. Observations and
    actions are tuples of ``str``; rewards, terminations and truncations are arrays; infos
    follow Gymnasium's vector convention (``info[key]`` array plus ``info["_" + key]`` mask).

    Seeding: ``reset(seed=s)`` seeds copy ``i`` with ``s + i``, so copy ``i`` plays the same
    episodes as a scalar env reset with ``seed=s + i``. A list of seeds is used as given.
    Bad actions, seeds and options raise typed errors before any copy changes state.

    Autoreset (``autoreset_mode``), as in Gymnasium:

    * ``"NextStep"`` (default): the step after an episode ends resets that copy; its action
      is ignored (a bad one is still refused) and its reward is 0.
    * ``"SameStep"``: a copy whose episode ends is reset in the same step; the final
      observation and info are in ``info["final_obs"]`` and ``info["final_info"]``.
    * ``"Disabled"``: copies are reset only by ``reset(options={"reset_mask": mask})``;
      stepping a finished copy raises :class:`ResetNeededError`.
    """

    def __init__(self, env: TextEnv, num_envs: int, autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP):
        num_envs = check_int("num_envs", num_envs, 1, MAX_ENVS)
        try:
            mode = AutoresetMode(autoreset_mode)
        except (TypeError, ValueError):
            raise ConfigurationError(
                f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {autoreset_mode!r}"
            ) from None
        self.envs: list[TextEnv] = [env] + [env.replicate() for _ in range(num_envs - 1)]
        self.num_envs = num_envs
        self.autoreset_mode = mode
        self.metadata = {**env.metadata, "autoreset_mode": mode}
        self.render_mode = env.render_mode
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space
        self.observation_space = batch_space(env.observation_space, num_envs)
        self.action_space = batch_space(env.action_space, num_envs)
        self._observations: list[str] = [""] * num_envs
        self._needs_reset = np.ones(num_envs, dtype=bool)
        self._reset_called = False

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        options = dict(check_options(options, (*self.envs[0].reset_options, "reset_mask")))
        reset_mask = options.pop("reset_mask", np.ones(self.num_envs, dtype=bool))
        if not (isinstance(reset_mask, np.ndarray) and reset_mask.dtype == bool and reset_mask.shape == (self.num_envs,)):
            raise ConfigurationError(
                f"options['reset_mask'] must be a bool NumPy array of shape ({self.num_envs},), got {reset_mask!r:.80}"
            )
        seeds = self._seeds(seed)
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(reset_mask):
            self._observations[i], info = self.envs[i].reset(seed=seeds[i], options=options)
            self._needs_reset[i] = False
            infos = self._add_info(infos, info, i)
        self._reset_called = True
        return tuple(self._observations), infos

    def _seeds(self, seed: Any) -> list[int | None]:
        """One seed per copy: ``seed + i`` for an int seed, the given list, or ``None`` each."""
        if seed is None:
            return [None] * self.num_envs
        if is_integer(seed):
            return [check_seed(seed) + i for i in range(self.num_envs)]
        if isinstance(seed, np.ndarray):
            one_each = seed.shape == (self.num_envs,)
        else:
            one_each = isinstance(seed, (list, tuple)) and len(seed) == self.num_envs
        if not one_each:
            raise ConfigurationError(f"seed must be None, a non-negative int or a list of {self.num_envs} such seeds, got {seed!r:.80}")
        return [check_seed(s) for s in seed]

    def step(self, actions: Sequence[str]):
        if (
            not isinstance(actions, (list, tuple, np.ndarray))
            or (isinstance(actions, np.ndarray) and actions.ndim != 1)
            or len(actions) != self.num_envs
        ):
            raise InvalidActionError(
                f"actions must be a list, tuple or array of {self.num_envs} utterances, got {type(actions).__name__}: {actions!r:.80}"
            )
        if not self._reset_called:
            raise ResetNeededError("TextVectorEnv.step() called before reset(); call reset() first")

        # Validate every action before any env changes state, so a bad one loses nothing.
        autoreset = self._needs_reset & (self.autoreset_mode == AutoresetMode.NEXT_STEP)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._needs_reset.any():
            raise ResetNeededError(
                f"envs {np.flatnonzero(self._needs_reset).tolist()} finished their episodes; with autoreset_mode "
                "'Disabled' call reset(options={'reset_mask': mask}) first"
            )
        prepared: dict[int, tuple[str, RewardQuery | None]] = {}
        for i, env in enumerate(self.envs):
            if autoreset[i]:
                env._utterance(actions[i])  # ignored, but a bad one is still refused
            else:
                prepared[i] = env._prepare_step(actions[i])

        scored = [i for i, (_, query) in prepared.items() if query is not None]
        scores = dict(zip(scored, score_queries(self.envs[0].reward_fn, [prepared[i][1] for i in scored]), strict=True))

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            if autoreset[i]:
                self._observations[i], info = env.reset()
            else:
                utterance, _ = prepared[i]
                obs, rewards[i], terminations[i], truncations[i], info = env._finish_step(utterance, scores.get(i))
                self._observations[i] = obs
                if self.autoreset_mode == AutoresetMode.SAME_STEP and (terminations[i] or truncations[i]):
                    self._observations[i], reset_info = env.reset()
                    info = {**reset_info, "final_obs": obs, "final_info": info}
            infos = self._add_info(infos, info, i)
        self._needs_reset = terminations | truncations
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._needs_reset[:] = False
        return tuple(self._observations), rewards, terminations, truncations, infos

    def render(self) -> tuple[str | None, ...] | None:
        if self.render_mode is None:
            return None
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()


def episode_info(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env ``index``'s own ``info`` dict out of a vector env's ``infos`` (Gymnasium's
    ``infos[key]`` array and ``infos["_" + key]`` mask convention, nested dicts included)."""
    info = {}
    for key, values in infos.items():
        if key.startswith("_") or not infos.get("_" + key, np.zeros(index + 1, dtype=bool))[index]:
            continue
        info[key] = episode_info(values, index) if isinstance(values, dict) else values[index]
    return info
