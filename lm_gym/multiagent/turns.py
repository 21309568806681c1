"""Turn-taking text games as PettingZoo environments: the part every lm-gym multi-agent env shares.

A conversation is strictly sequential: each utterance answers the one before it. PettingZoo's
parallel API has every live agent act at every step, so a **cycle is one utterance**: every
live agent hands in an action, and only the agent whose turn it is (``info["active_agent"]``,
the key PettingZoo's ``turn_based_aec_to_parallel`` uses) speaks; the others' actions are
checked and then ignored, so ``""`` is the usual way to pass. ``max_cycles`` therefore counts
utterances, and PettingZoo's ``max_cycles_test`` holds: a parallel step and an AEC cycle are
the same utterance.

The envs are written as :class:`TurnTakingEnv` (a native ``ParallelEnv``: one state update per
cycle, so the AEC conversion is exact) and converted to AEC with PettingZoo's
``parallel_to_aec_wrapper`` (the modules' ``raw_env()``, from :func:`pettingzoo_constructors`);
:class:`CheckedAECEnv` (the modules' ``env()``) adds PettingZoo's order enforcement and
lm-gym's action contract to it. Bad actions raise lm-gym's typed errors
(``InvalidActionError``, ``ResetNeededError``) *before* any state changes, at the AEC step
that hands them in, so the episode goes on as if they had not been given.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError, safe_repr
from lm_gym.core.spaces import text_space, to_charset
from lm_gym.core.text_env import checked_utterance
from lm_gym.core.validation import check_choice, check_int, check_seed


class TurnTakingEnv(ParallelEnv[str, str, str]):
    """Base of the multi-agent text games: agents speak in turn, one utterance per cycle.

    Subclasses set ``possible_agents`` and the spaces (:meth:`_set_spaces`) and implement
    :meth:`_start` (a new episode, the task env reset with ``seed``), :meth:`_speak` (apply the
    active agent's utterance), :meth:`observe` and :attr:`active_agent`. ``reset(options=...)``
    checks the keys in :attr:`reset_options` (``index``: the dataset example to play, as in the
    single-agent envs); PettingZoo's ``api_test`` resets with
    ``options={"options": 1}``, so other keys are ignored with a warning that names them.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "is_parallelizable": True, "render_fps": 1}
    reset_options: ClassVar[tuple[str, ...]] = ("index",)

    def __init__(self, max_cycles: int | None, render_mode: str | None):
        if render_mode is not None:
            check_choice("render_mode", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.max_cycles = None if max_cycles is None else check_int("max_cycles", max_cycles, 1)
        self.agents: list[str] = []
        self.num_cycles = 0
        self._needs_reset = True

    def _set_spaces(self, observation_lengths: Mapping[str, int], action_lengths: Mapping[str, int]) -> None:
        """``Text`` action spaces of printable ASCII per agent (the single-agent envs' spaces) and
        observation spaces ``Dict(text=Text, active=Discrete(2))``."""
        self._observation_spaces = {
            agent: spaces.Dict({"text": text_space(observation_lengths[agent]), "active": spaces.Discrete(2)})
            for agent in self.possible_agents
        }
        self._action_spaces = {agent: text_space(action_lengths[agent]) for agent in self.possible_agents}

    # ---- task hooks ---------------------------------------------------------------------
    @property
    def active_agent(self) -> str:
        """The agent whose utterance the next cycle applies."""
        raise NotImplementedError

    def _start(self, seed: int | None, options: dict[str, Any]) -> dict[str, Any]:
        """Start an episode (raise ``ConfigurationError`` for bad ``options`` before changing state);
        what every agent's reset ``info`` gets besides ``active_agent``."""
        raise NotImplementedError

    def _speak(self, utterance: str) -> tuple[dict[str, float], bool, dict[str, Any]]:
        """Apply :attr:`active_agent`'s ``utterance``: each agent's reward, whether the game
        is over, and what every agent's ``info`` gets."""
        raise NotImplementedError

    def observe(self, agent: str) -> str:
        """The agent's view of the conversation, as text (the ``text`` of its observation)."""
        raise NotImplementedError

    def _text(self) -> str:
        """The conversation so far, for ``render``."""
        raise NotImplementedError

    # ---- PettingZoo API -----------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Text:
        return self._observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> spaces.Text:
        return self._action_spaces[self._known(agent)]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = check_seed(seed)
        info = self._start(seed, self._checked_options(options))
        self.agents = list(self.possible_agents)
        self.num_cycles = 0
        self._needs_reset = False
        self._render_human()
        info = {**info, "active_agent": self.active_agent}
        return {agent: self._observation(agent) for agent in self.agents}, {agent: dict(info) for agent in self.agents}

    def step(self, actions: Mapping[str, Any]):
        utterance = self._checked_actions(actions)
        rewards, terminated, info = self._speak(utterance)
        self.num_cycles += 1
        truncated = not terminated and self.max_cycles is not None and self.num_cycles >= self.max_cycles
        info = {**info, "active_agent": self.active_agent}
        agents = self.agents
        if terminated or truncated:
            self.agents, self._needs_reset = [], True
        observations = {agent: self._observation(agent) for agent in agents}
        self._render_human()
        return (
            observations,
            {agent: float(rewards.get(agent, 0.0)) for agent in agents},
            dict.fromkeys(agents, terminated),
            dict.fromkeys(agents, truncated),
            {agent: dict(info) for agent in agents},
        )

    def render(self) -> str | None:
        if self._needs_reset and not self.num_cycles:
            raise ResetNeededError(f"{type(self).__name__}.render() called before reset(); call reset() first")
        if self.render_mode == "ansi":
            return self._text()
        if self.render_mode == "human":
            print(self._text())
        return None

    def close(self) -> None:
        pass

    def check_action(self, agent: str, action: Any) -> str:
        """``agent``'s utterance if ``action`` is in its action space, else ``InvalidActionError``."""
        if self._needs_reset:
            raise ResetNeededError(
                f"{type(self).__name__}.step() called before reset() or after the episode ended; call reset() first"
            )
        if agent not in self.agents:
            raise InvalidActionError(f"{safe_repr(agent)} is not a live agent; the agents are {self.agents}")
        return checked_utterance(action, self.action_space(agent).max_length, f"the action of {agent!r}")

    # ---- helpers ------------------------------------------------------------------------
    def _checked_actions(self, actions: Any) -> str:
        """The active agent's utterance, after checking every action given; changes no state."""
        if self._needs_reset:
            raise ResetNeededError(
                f"{type(self).__name__}.step() called before reset() or after the episode ended; call reset() first"
            )
        if not isinstance(actions, Mapping):
            raise InvalidActionError(
                f"actions must be a dict {{agent: utterance}}, got {type(actions).__name__}: {safe_repr(actions)}"
            )
        for agent, action in actions.items():
            self.check_action(agent, action)
        if self.active_agent not in actions:
            raise InvalidActionError(f"actions lacks the utterance of {self.active_agent!r}, whose turn it is")
        return self.check_action(self.active_agent, actions[self.active_agent])

    def _checked_options(self, options: Any) -> dict[str, Any]:
        if options is None:
            return {}
        if not isinstance(options, dict):
            raise ConfigurationError(
                f"options must be a dict or None, got {type(options).__name__}: {safe_repr(options)}"
            )
        unknown = sorted(str(key) for key in options if key not in self.reset_options)
        if unknown:
            warnings.warn(
                f"reset options {unknown} are ignored; this env uses {list(self.reset_options)}", stacklevel=3
            )
        return {key: value for key, value in options.items() if key in self.reset_options}

    def _observation(self, agent: str) -> dict[str, Any]:
        """``text``: :meth:`observe` fitted into the agent's space, keeping the end (the most recent
        text); ``active``: 1 if the agent speaks in the next cycle."""
        text = to_charset(self.observe(agent))[-self.observation_space(agent)["text"].max_length :]
        return {"text": text, "active": np.int64(not self._needs_reset and agent == self.active_agent)}

    def _known(self, agent: str) -> str:
        if agent not in self.possible_agents:
            raise ConfigurationError(f"unknown agent {safe_repr(agent)}; the agents are {self.possible_agents}")
        return agent

    def _render_human(self) -> None:
        if self.render_mode == "human":
            self.render()


class CheckedAECEnv(OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with lm-gym's action contract: each AEC action is
    checked when it is handed in (``InvalidActionError``; ``ResetNeededError`` before reset), so
    a refused action is never stored for the end of the cycle."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)  # a refused reset leaves the wrapper as it was
        self._has_reset = True
        self._has_updated = True

    def step(self, action: Any) -> None:
        if not self._has_reset:
            raise ResetNeededError("step() called before reset(); call reset() first")
        if self.agents:
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent]:
                if action is not None:
                    raise InvalidActionError(
                        f"{safe_repr(agent)} is done: its last step takes the action None, got {safe_repr(action)}"
                    )
            else:
                self.unwrapped.check_action(agent, action)
        super().step(action)


def pettingzoo_constructors(
    parallel_class: type[TurnTakingEnv],
) -> tuple[Callable[..., TurnTakingEnv], Callable[..., parallel_to_aec_wrapper], Callable[..., CheckedAECEnv]]:
    """A module's ``parallel_env``, ``raw_env`` and ``env``, as PettingZoo's envs provide them."""

    def parallel_env(**kwargs: Any) -> TurnTakingEnv:
        """The parallel env (arguments: see the module docstring)."""
        return parallel_class(**kwargs)

    def raw_env(**kwargs: Any) -> parallel_to_aec_wrapper:
        """The AEC env as PettingZoo's ``parallel_to_aec`` makes it, without order or action checks
        (a bad action still raises lm-gym's error, but only at the end of its cycle, and the cycle
        is left stuck): use ``env()``."""
        return parallel_to_aec_wrapper(parallel_env(**kwargs))

    def env(**kwargs: Any) -> CheckedAECEnv:
        """The AEC env with PettingZoo's order enforcement and lm-gym's action checks."""
        return CheckedAECEnv(raw_env(**kwargs))

    return parallel_env, raw_env, env
