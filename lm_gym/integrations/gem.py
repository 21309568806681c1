"""lm-gym's tasks as GEM environments (``pip install "lm-gym[gem]"``, gem-llm 0.1).

GEM (``gem.make``, ``gem.make_vec``, its wrappers) steps an env with the model's raw reply and
reads, as its own envs give them, the rules and the task at ``reset`` and each step's new text
after. :func:`register_all` registers every lm-gym task (built-in, plugins' and yours: call it
after registering your own) under its lm-gym id with GEM; :class:`LmGymEnv` is the environment::

    import gem
    from lm_gym.integrations.gem import register_all

    register_all()
    env = gem.make("lm_gym/Wordle-v0")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("crane")
    envs = gem.make_vec(["lm_gym/CommonGen-v0"] * 8, source="synthetic", seed=0)

* ``gem.make(env_id, **kwargs)``: ``kwargs`` are the task's constructor arguments (``split``,
  ``source="synthetic"``, ...), and ``seed``, which seeds the first ``reset()`` that is given no
  seed (``gem.make_vec(..., seed=s)`` gives copy ``i`` ``seed=s + i``, so it plays episode ``s + i``
  first). ``reset(seed=k)`` plays the episode ``gymnasium.make(env_id).reset(seed=k)`` plays;
  ``reset()`` goes on with the env's random stream (GEM's vector envs' autoreset);
  ``reset(idx=i)`` plays sample ``i`` of a single-turn task (as GEM's dataset envs take ``idx``).
  The seed goes to the lm-gym env's own generator, not to Python's or NumPy's global ones.
* the observations: at ``reset``, the task's rules (the chat's system message, :mod:`lm_gym.core.chat`)
  and, after a blank line, the first observation; after a step, the env's answer
  (:meth:`~lm_gym.core.text_env.TextEnv.chat_user_message`), ``""`` once the episode ended. So GEM's
  ``ObservationWrapper`` (``concat``, ``concat_with_action``, ``concat_chat``) builds the episode's
  chat. The step's lm-gym observation (the transcript so far) is ``info["lm_gym_observation"]``.
* the reward, ``terminated`` and ``truncated`` are the lm-gym env's, ``info`` its JSON-able ``info``;
  over-long replies are cut to the action space, anything else the env refuses raises
  (:mod:`lm_gym.integrations.chat_session`).

GEM 0.1 has no env checker of its own: ``tests/integrations/test_gem.py`` plays the tasks through
``gem.make``, both vector envs and the wrappers instead.
"""

from __future__ import annotations

import functools
from typing import Any

import gem
from gem.envs.registration import ENV_REGISTRY

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import registered_tasks
from lm_gym.core.validation import check_seed
from lm_gym.integrations.chat_session import ChatSession

OBSERVATION_KEY = "lm_gym_observation"  #: the ``info`` key of the step's lm-gym observation


class LmGymEnv(gem.Env):
    """A GEM environment playing lm-gym task ``env_id`` built with ``env_kwargs`` (see the module docstring).

    ``seed`` seeds the first ``reset()`` given no seed; ``task`` is the lm-gym env.
    """

    def __init__(self, env_id: str, seed: int | None = None, **env_kwargs: Any):
        super().__init__()
        self.env_id = env_id
        self.seed = check_seed(seed)
        self.env_kwargs = env_kwargs
        self.session = ChatSession(env_id, env_kwargs)
        self.task = self.session.task
        self._first_seed = self.seed

    def reset(self, seed: int | None = None, idx: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode (``seed``, ``idx``: see the module docstring): the rules and first observation, ``info``."""
        if seed is None:
            seed = self._first_seed
        self._first_seed = None
        messages, info = self.session.start(seed, idx)
        info[OBSERVATION_KEY] = messages[-1]["content"]
        return "\n\n".join(message["content"] for message in messages), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play the reply ``action``: the env's answer (``""`` once done), reward, terminated, truncated, ``info``."""
        result = self.session.play(action)
        info = {**result.info, OBSERVATION_KEY: result.observation}
        return result.answer or "", result.reward, result.terminated, result.truncated, info

    def sample_random_action(self) -> str:
        """A random reply: a sample of the task's action space (random characters of its charset)."""
        return self.task.action_space.sample()

    def spawn(self, same_state: bool = False, **kwargs: Any) -> LmGymEnv:
        """A new env of the same task, its arguments (and ``seed``) overridden by ``kwargs``; ``same_state=True``
        (a copy of the episode in progress) is not supported for lm-gym tasks."""
        if same_state:
            raise ConfigurationError(
                f"{self.env_id}: spawn(same_state=True) is not supported; spawn a copy and reset it with a seed"
            )
        arguments = {"seed": self.seed, **self.env_kwargs, **kwargs}
        return LmGymEnv(self.env_id, **arguments)

    def close(self) -> None:
        self.session.close()


def register_all() -> list[str]:
    """Register every lm-gym task not yet in GEM's registry under its lm-gym id; the ids registered.

    Call it again after registering more tasks. An id that GEM already has for another environment
    raises :class:`~lm_gym.core.errors.ConfigurationError`.
    """
    added = []
    for env_id in registered_tasks():
        spec = ENV_REGISTRY.get(env_id)
        if spec is not None:
            if not (isinstance(spec.entry_point, functools.partial) and spec.entry_point.func is LmGymEnv):
                raise ConfigurationError(
                    f"GEM already has an environment {env_id!r} (entry point {safe_repr(spec.entry_point)})"
                )
            continue
        gem.register(env_id, functools.partial(LmGymEnv, env_id))  # GEM's register takes env_id itself
        added.append(env_id)
    return added
