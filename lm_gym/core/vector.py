"""The native batched vector env: N utterance-level envs scored with one reward call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError, safe_repr
from lm_gym.core.text_env import RewardQuery, StepResult, TextEnv, score_by_reward_fn
from lm_gym.core.validation import check_int, check_options, check_seed, is_integer

#: Largest ``num_envs`` of one vector env.
MAX_ENVS = 2**16


class NativeVectorEnv(VectorEnv):
    """What the native vector envs share: ``num_envs`` copies of one :class:`TextEnv`, the
    autoreset modes, seeding, reset checks and the batched reward call of a step.

    Subclasses say how an observation text becomes a copy's observation (:meth:`_start`,
    :meth:`_observation`, :meth:`_observations`) and implement ``step``.
    """

    def __init__(self, env: TextEnv, num_envs: int, autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP):
        num_envs = check_int("num_envs", num_envs, 1, MAX_ENVS)
        try:
            mode = AutoresetMode(autoreset_mode)
        except (TypeError, ValueError):
            raise ConfigurationError(
                f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {safe_repr(autoreset_mode)}"
            ) from None
        self.envs: list[TextEnv] = [env] + [env.replicate() for _ in range(num_envs - 1)]
        self.num_envs = num_envs
        self.autoreset_mode = mode
        self.metadata = {**env.metadata, "autoreset_mode": mode}
        self.render_mode = env.render_mode
        self._needs_reset = np.ones(num_envs, dtype=bool)
        self._reset_called = False

    # ---- what a subclass defines ---------------------------------------------------------
    def _start(self, texts: dict[int, str]) -> None:
        """Copy ``i`` observes ``texts[i]`` (after a reset or a step), for each key ``i``."""
        raise NotImplementedError

    def _observation(self, i: int) -> Any:
        """Copy ``i``'s observation now (``info["final_obs"]`` of ``"SameStep"`` autoreset)."""
        raise NotImplementedError

    def _observations(self) -> Any:
        """Every copy's observation now, batched."""
        raise NotImplementedError

    # ---- shared ----------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        options = dict(check_options(options, (*self.envs[0].reset_options, "reset_mask")))
        reset_mask = options.pop("reset_mask", np.ones(self.num_envs, dtype=bool))
        if not (
            isinstance(reset_mask, np.ndarray) and reset_mask.dtype == bool and reset_mask.shape == (self.num_envs,)
        ):
            raise ConfigurationError(
                f"options['reset_mask'] must be a bool NumPy array of shape ({self.num_envs},), "
                f"got {safe_repr(reset_mask)}"
            )
        seeds = self._seeds(seed)
        texts: dict[int, str] = {}
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(reset_mask):
            texts[i], info = self.envs[i].reset(seed=seeds[i], options=options)
            self._needs_reset[i] = False
            infos = self._add_info(infos, info, i)
        self._start(texts)
        self._reset_called = True
        return self._observations(), infos

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
            raise ConfigurationError(
                f"seed must be None, a non-negative int or a list of {self.num_envs} such seeds, got {safe_repr(seed)}"
            )
        return [check_seed(s) for s in seed]

    def _autoreset_now(self) -> np.ndarray:
        """The copies this step resets (``"NextStep"``); raises ``ResetNeededError`` where the step cannot be taken."""
        if not self._reset_called:
            raise ResetNeededError(f"{type(self).__name__}.step() called before reset(); call reset() first")
        if self.autoreset_mode == AutoresetMode.DISABLED and self._needs_reset.any():
            raise ResetNeededError(
                f"envs {np.flatnonzero(self._needs_reset).tolist()} finished their episodes; with autoreset_mode "
                "'Disabled' call reset(options={'reset_mask': mask}) first"
            )
        return self._needs_reset & (self.autoreset_mode == AutoresetMode.NEXT_STEP)

    def _play_utterances(self, prepared: dict[int, tuple[str, RewardQuery | None]]) -> dict[int, StepResult]:
        """Finish the prepared steps (:meth:`TextEnv.prepare_step`'s results, by copy), scored with one call of
        the reward function the copies share (:func:`score_by_reward_fn`)."""
        steps = list(prepared.items())
        scores = score_by_reward_fn([(self.envs[i].reward_fn, query) for i, (_, query) in steps])
        return {
            i: self.envs[i].finish_step(utterance, score)
            for (i, (utterance, _)), score in zip(steps, scores, strict=True)
        }

    def _finish(
        self, texts: dict[int, str], infos: dict[int, dict[str, Any]], terminations: np.ndarray, truncations: np.ndarray
    ):
        """The end of a step: the copies in ``texts`` observe their text, ``"SameStep"`` resets
        the copies whose episode ended, and ``infos`` (each copy's info) become the vector infos."""
        self._start(texts)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            reset_texts = {}
            for i in np.flatnonzero(terminations | truncations):
                final_obs = self._observation(i)
                reset_texts[i], reset_info = self.envs[i].reset()
                infos[i] = {**reset_info, "final_obs": final_obs, "final_info": infos[i]}
            self._start(reset_texts)
        vector_infos: dict[str, Any] = {}
        for i in sorted(infos):
            vector_infos = self._add_info(vector_infos, infos[i], i)
        self._needs_reset = terminations | truncations
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._needs_reset[:] = False
        return self._observations(), vector_infos

    def render(self) -> tuple[str | None, ...] | None:
        if self.render_mode is None:
            return None
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()


class TextVectorEnv(NativeVectorEnv):
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

    At ``action_level="token"`` the native vector env is
    :class:`~lm_gym.core.token_vector.TokenVectorEnv`, with the same seeding and autoreset.
    """

    def __init__(self, env: TextEnv, num_envs: int, autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP):
        super().__init__(env, num_envs, autoreset_mode)
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space
        self.observation_space = batch_space(env.observation_space, self.num_envs)
        self.action_space = batch_space(env.action_space, self.num_envs)
        self._texts: list[str] = [""] * self.num_envs

    def _start(self, texts: dict[int, str]) -> None:
        for i, text in texts.items():
            self._texts[i] = text

    def _observation(self, i: int) -> str:
        return self._texts[i]

    def _observations(self) -> tuple[str, ...]:
        return tuple(self._texts)

    def step(self, actions: Sequence[str]):
        if (
            not isinstance(actions, (list, tuple, np.ndarray))
            or (isinstance(actions, np.ndarray) and actions.ndim != 1)
            or len(actions) != self.num_envs
        ):
            raise InvalidActionError(
                f"actions must be a list, tuple or array of {self.num_envs} utterances, "
                f"got {type(actions).__name__}: {safe_repr(actions)}"
            )
        autoreset = self._autoreset_now()

        # Validate every action before any env changes state, so a bad one loses nothing.
        prepared: dict[int, tuple[str, RewardQuery | None]] = {}
        for i, env in enumerate(self.envs):
            if autoreset[i]:
                env.parse_action(actions[i])  # ignored, but a bad one is still refused
            else:
                prepared[i] = env.prepare_step(actions[i])
        results = self._play_utterances(prepared)

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        texts: dict[int, str] = {}
        infos: dict[int, dict[str, Any]] = {}
        for i in range(self.num_envs):
            if autoreset[i]:
                texts[i], infos[i] = self.envs[i].reset()
            else:
                texts[i], rewards[i], terminations[i], truncations[i], infos[i] = results[i]
        observations, infos = self._finish(texts, infos, terminations, truncations)
        return observations, rewards, terminations, truncations, infos


def episode_info(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env ``index``'s own ``info`` dict out of a vector env's ``infos`` (Gymnasium's
    ``infos[key]`` array and ``infos["_" + key]`` mask convention, nested dicts included)."""
    info = {}
    for key, values in infos.items():
        if key.startswith("_") or not infos.get("_" + key, np.zeros(index + 1, dtype=bool))[index]:
            continue
        info[key] = episode_info(values, index) if isinstance(values, dict) else values[index]
    return info
