"""The native token-level vector env as a stable-baselines3 ``VecEnv``.

stable-baselines3 takes its own ``VecEnv``, not a Gymnasium ``VectorEnv``, so
:class:`SB3VecEnv` adapts :class:`~lm_gym.core.token_vector.TokenVectorEnv` to it::

    from stable_baselines3 import PPO
    from lm_gym.integrations.sb3 import make_sb3_vec_env

    vec_env = make_sb3_vec_env("lm_gym/Prompts-v0", num_envs=64, max_new_tokens=48)
    PPO("MultiInputPolicy", vec_env).learn(10_000)

This module imports stable-baselines3 (``pip install "lm-gym[sb3]"``); ``import lm_gym``
does not import this module.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from lm_gym.core.errors import ConfigurationError
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.vector import episode_info

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices
except ImportError as error:  # pragma: no cover - the error names the fix
    raise ImportError(
        f"lm_gym.integrations.sb3 needs stable-baselines3: pip install 'lm-gym[sb3]' ({error})"
    ) from error


def make_sb3_vec_env(env_id: str, num_envs: int, **kwargs: Any) -> SB3VecEnv:
    """``gymnasium.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point",
    action_level="token", autoreset_mode="SameStep", **kwargs)`` as an :class:`SB3VecEnv`."""
    venv = gymnasium.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="vector_entry_point",
        action_level="token",
        autoreset_mode="SameStep",
        **kwargs,
    )
    return SB3VecEnv(venv)


class SB3VecEnv(VecEnv):
    """A :class:`TokenVectorEnv` (made with ``autoreset_mode="SameStep"``) as a stable-baselines3 ``VecEnv``.

    * ``reset()`` returns the observation dict of ``(num_envs, ...)`` arrays, with the seeds
      of :meth:`seed` (copy ``i``: ``seed + i``) and the options of ``set_options`` once;
      ``reset_infos`` holds each copy's reset info.
    * ``step_async`` / ``step_wait``: SB3's autoreset. A copy whose episode ends returns the
      next episode's first observation; its info holds the final step's info,
      ``"terminal_observation"`` and ``"TimeLimit.truncated"``. Rewards are ``float32``,
      ``dones`` bools, infos a list of one dict per copy.
    * ``action_masks()`` (and ``env_method("action_masks")``, one row per copy) are the
      token-level action masks, for sb3-contrib's ``MaskablePPO``.
    * ``get_attr`` reads the token-level settings shared by every copy (``tokenizer``,
      ``max_new_tokens``, ``render_mode``, ...; ``observation_space`` and ``action_space``
      are one copy's), else the attribute of copy ``i``'s utterance-level env;
      ``set_attr`` and ``env_method`` act on the utterance-level envs (``venv.envs``).

    Wrap it in SB3's ``VecMonitor`` for episode returns and lengths in the logs.
    """

    def __init__(self, venv: TokenVectorEnv):
        venv = getattr(venv, "unwrapped", venv)
        if not isinstance(venv, TokenVectorEnv):
            raise ConfigurationError(
                f"SB3VecEnv adapts a token-level native vector env (TokenVectorEnv), got {type(venv).__name__}; "
                "build one with lm_gym.integrations.sb3.make_sb3_vec_env"
            )
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ConfigurationError(
                "SB3VecEnv needs autoreset_mode='SameStep' (SB3 resets in the step that ends an episode), "
                f"got {venv.autoreset_mode.value!r}"
            )
        self.venv = venv
        self.actions: np.ndarray | None = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    def reset(self) -> dict[str, np.ndarray]:
        seeds = None if all(seed is None for seed in self._seeds) else list(self._seeds)
        groups: dict[str, list[int]] = {}  # copies with the same options are reset together
        for i, options in enumerate(self._options):
            groups.setdefault(repr(sorted(options.items())), []).append(i)
        for indices in groups.values():
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[indices] = True
            observations, infos = self.venv.reset(seed=seeds, options={**self._options[indices[0]], "reset_mask": mask})
            for i in indices:
                self.reset_infos[i] = episode_info(infos, i)
        self._reset_seeds()
        self._reset_options()
        return observations

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = actions

    def step_wait(self):
        observations, rewards, terminations, truncations, infos = self.venv.step(self.actions)
        dones = terminations | truncations
        step_infos: list[dict[str, Any]] = [
            {"TimeLimit.truncated": bool(truncations[i] and not terminations[i])} for i in range(self.num_envs)
        ]
        if infos:
            for i in np.flatnonzero(np.any([mask for key, mask in infos.items() if key.startswith("_")], axis=0)):
                info = episode_info(infos, i)
                if dones[i]:
                    self.reset_infos[i] = {
                        key: value for key, value in info.items() if key not in ("final_obs", "final_info")
                    }
                    info = {**info.get("final_info", {}), "terminal_observation": info["final_obs"]}
                step_infos[i].update(info)
        return observations, rewards.astype(np.float32), dones, step_infos

    def action_masks(self) -> np.ndarray:
        """Allowed tokens of every copy, ``(num_envs, vocab_size)`` bools (sb3-contrib's ``MaskablePPO``)."""
        return self.venv.action_masks()

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        indices = self._get_indices(indices)
        if attr_name in ("observation_space", "action_space"):
            return [getattr(self.venv, "single_" + attr_name)] * len(indices)
        if hasattr(self.venv, attr_name):
            return [getattr(self.venv, attr_name)] * len(indices)
        return [getattr(self.venv.envs[i], attr_name) for i in indices]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for i in self._get_indices(indices):
            setattr(self.venv.envs[i], attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        indices = self._get_indices(indices)
        if method_name == "action_masks":
            masks = self.venv.action_masks()
            return [masks[i] for i in indices]
        return [getattr(self.venv.envs[i], method_name)(*method_args, **method_kwargs) for i in indices]

    def env_is_wrapped(self, wrapper_class: type[gymnasium.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))
