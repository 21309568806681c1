"""Episodes played by a seeded random policy and recorded as plain data, so that two runs compare exactly."""

from __future__ import annotations

import string
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from lm_gym.testing.kinds import level_and_kind

WORD_EDGES = string.punctuation + string.whitespace
ODD_UTTERANCES = ("", "caf\u00e9 \u2014 na\u00efve \u2026 \U0001f600", "  CRANE  ", "\t\n", "a" * 80)


class RandomPlayer:
    """A seeded policy for any lm-gym env: echoes words of the observation, or plays odd text or random tokens.

    Echoed words make real moves (Wordle guesses, review words); random and odd text exercises
    the invalid-move and transliteration paths. At token level an utterance is played as its
    tokens and EOS, or as a run of random token ids.
    """

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.pending: list[int] = []
        self.pendings: dict[int, list[int]] = {}  # per copy of a token-level vector env

    def act(self, env: Any, level: str, kind: str, observation: Any) -> Any:
        """The next action for ``env`` (a list of utterances or an array of tokens for a vector env)."""
        if kind == "vector" and level == "token":
            return self.tokens(env, observation)
        if kind == "vector":
            return [self.utterance(o, env.single_action_space.max_length) for o in observation]
        if level == "token":
            return self.token(env, observation)
        return self.utterance(observation, env.action_space.max_length)

    def tokens(self, venv: Any, observations: dict[str, np.ndarray]) -> np.ndarray:
        """One :meth:`token` per copy of a token-level vector env, each copy with its own pending tokens."""
        actions = np.zeros(venv.num_envs, dtype=np.int64)
        for i in range(venv.num_envs):
            self.pending = self.pendings.get(i, [])
            actions[i] = self.token(venv, {key: value[i] for key, value in observations.items()})
            self.pendings[i] = self.pending
        return actions

    def utterance(self, observation: str, max_length: int) -> str:
        return self._text(observation)[:max_length]

    def _text(self, observation: str) -> str:
        words = [w.strip(WORD_EDGES) for w in observation.split()]
        words = [w for w in words if w]
        roll = self.rng.random()
        if words and roll < 0.6:
            start = int(self.rng.integers(len(words)))
            return " ".join(words[start : start + int(self.rng.choice([1, 1, 1, 2, 3]))])
        if roll < 0.85:
            length = int(self.rng.integers(0, 40))
            return "".join(self.rng.choice(list(string.printable), size=length))
        return ODD_UTTERANCES[int(self.rng.integers(len(ODD_UTTERANCES)))]

    def token(self, env: Any, observation: dict[str, np.ndarray]) -> int:
        token_env = env.unwrapped
        if not self.pending:
            if self.rng.random() < 0.5:
                prompt = token_env.tokenizer.decode(observation["prompt_ids"][observation["prompt_mask"] == 1].tolist())
                text = self._text(prompt)
                self.pending = list(token_env.tokenizer(text, add_special_tokens=False)["input_ids"]) + [
                    token_env.eos_token_id
                ]
            else:
                count = int(self.rng.integers(1, token_env.max_new_tokens + 3))
                self.pending = self.rng.integers(token_env.vocab_size, size=count).tolist()
        return int(self.pending.pop(0))


def play(env: gymnasium.Env | VectorEnv, seed: int, steps: int | None = None, policy_seed: int = 0) -> list[Any]:
    """Reset ``env`` with ``seed`` and play ``steps`` steps of :class:`RandomPlayer` (``policy_seed``);
    every reset and step as :func:`to_data`, so two runs compare exactly.

    ``steps`` defaults to 40 utterances' worth (at token level ``40 * max_new_tokens // 2`` steps; a
    token-level vector env plays a sixth of those, at least 100, spread over its copies). A scalar
    env resets without a seed after each episode; a vector env with autoreset ``"Disabled"`` resets
    its finished copies. Asserts on the way that observations are in the observation space and
    rewards finite.
    """
    level, kind = level_and_kind(env)
    if steps is None:
        steps = 40 * env.unwrapped.max_new_tokens // 2 if level == "token" else 40
        steps = max(steps // (2 * env.num_envs), 100) if kind == "vector" and level == "token" else steps
    player = RandomPlayer(policy_seed)
    records: list[Any] = []
    observation, info = env.reset(seed=seed)
    records.append(to_data(("reset", observation, info)))
    for _ in range(steps):
        assert env.observation_space.contains(observation), (
            f"observation outside the observation space: {observation!r:.200}"
        )
        action = player.act(env, level, kind, observation)
        observation, reward, terminated, truncated, info = env.step(action)
        assert np.all(np.isfinite(reward)), f"reward {reward!r} is not finite"
        records.append(to_data(("step", action, observation, reward, terminated, truncated, info)))
        if (reset := reset_finished(env, kind, terminated, truncated)) is not None:
            observation, info = reset
            records.append(to_data(("reset", observation, info)))
    assert env.observation_space.contains(observation), (
        f"observation outside the observation space: {observation!r:.200}"
    )
    return records


def to_data(value: Any) -> Any:
    """``value`` as JSON-able data that keeps types apart (arrays carry their dtype and shape)."""
    if isinstance(value, np.ndarray):
        return {
            "array": str(value.dtype),
            "shape": list(value.shape),
            "values": [to_data(v) for v in value.ravel().tolist()],
        }
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in sorted(value.items(), key=lambda item: str(item[0]))}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, np.generic):
        return to_data(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)
    return value


def reset_finished(env: Any, kind: str, terminated: Any, truncated: Any) -> tuple[Any, dict[str, Any]] | None:
    """Reset (without a seed) what a step finished and nothing resets by itself: a scalar env's
    episode, a vector env's finished copies with autoreset ``"Disabled"``; ``reset``'s result, or ``None``."""
    if kind == "scalar":
        return env.reset() if terminated or truncated else None
    finished = np.asarray(terminated) | np.asarray(truncated)
    if env.autoreset_mode == AutoresetMode.DISABLED and finished.any():
        return env.reset(options={"reset_mask": finished})
    return None
