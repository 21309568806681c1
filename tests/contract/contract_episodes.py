"""Playing lm-gym envs reproducibly, for the contract suite (also run as a script in a fresh process).

``make(env_id, level, kind)`` builds a registered env offline (the task's own
``offline_kwargs``) as a scalar env or a native vector env; ``play(...)`` plays it with a
seeded policy and returns every reset and step as plain JSON-able data, so two runs can be
compared exactly, in one process or across processes.

Run as ``python contract_episodes.py`` it prints the episodes of every registered id, level
and kind as JSON (the fresh-process determinism test).
"""

from __future__ import annotations

import json
import string
import sys
from typing import Any

import gymnasium
import numpy as np

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core.registration import ACTION_LEVELS, NATIVE_VECTOR_LEVELS, task_class

KINDS = ("scalar", "vector")
NUM_VECTOR_ENVS = 3
WORD_EDGES = string.punctuation + string.whitespace
ODD_UTTERANCES = ("", "caf\u00e9 \u2014 na\u00efve \u2026 \U0001f600", "  CRANE  ", "\t\n", "a" * 80)


def env_ids() -> list[str]:
    """Every registered lm-gym id."""
    return sorted(env_id for env_id in gymnasium.registry if env_id.startswith("lm_gym/"))


def cases() -> list[tuple[str, str, str]]:
    """``(env_id, level, kind)`` for every id and level, with the native vector env where it exists."""
    return [
        (env_id, level, kind)
        for env_id in env_ids()
        for level in ACTION_LEVELS
        for kind in KINDS
        if kind == "scalar" or level in NATIVE_VECTOR_LEVELS
    ]


def offline_kwargs(env_id: str, level: str) -> dict[str, Any]:
    kwargs = dict(task_class(env_id).offline_kwargs)
    if level != "utterance":
        kwargs["action_level"] = level
    return kwargs


def make(env_id: str, level: str, kind: str = "scalar", **kwargs: Any):
    kwargs = {**offline_kwargs(env_id, level), **kwargs}
    if kind == "vector":
        return gymnasium.make_vec(env_id, num_envs=NUM_VECTOR_ENVS, vectorization_mode="vector_entry_point", **kwargs)
    return gymnasium.make(env_id, **kwargs)


def to_data(value: Any) -> Any:
    """``value`` as JSON-able data that keeps types apart (arrays carry their dtype)."""
    if isinstance(value, np.ndarray):
        return {"array": str(value.dtype), "shape": list(value.shape), "values": [to_data(v) for v in value.ravel().tolist()]}
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in sorted(value.items(), key=lambda item: str(item[0]))}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, np.generic):
        return to_data(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)
    return value


class Player:
    """A seeded policy for any lm-gym env: echoes words of the observation, or plays odd text / random tokens.

    Echoed words make real moves (Wordle guesses, review words); random and odd text
    exercises the invalid-move and transliteration paths. At token level an utterance is
    played as its tokens and EOS, or a run of random token ids.
    """

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.pending: list[int] = []
        self.pendings: dict[int, list[int]] = {}  # per copy of a token-level vector env

    def act(self, env, level: str, kind: str, observation: Any) -> Any:
        """The next action for ``env`` (a list of utterances or an array of tokens for a vector env)."""
        if kind == "vector" and level == "token":
            return self.tokens(env, observation)
        if kind == "vector":
            return [self.utterance(o, env.single_action_space.max_length) for o in observation]
        if level == "token":
            return self.token(env, observation)
        return self.utterance(observation, env.action_space.max_length)

    def tokens(self, venv, observations: dict[str, np.ndarray]) -> np.ndarray:
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

    def token(self, env: gymnasium.Env, observation: dict[str, np.ndarray]) -> int:
        token_env = env.unwrapped
        if not self.pending:
            if self.rng.random() < 0.5:
                prompt = token_env.tokenizer.decode(observation["prompt_ids"][observation["prompt_mask"] == 1].tolist())
                text = self._text(prompt)
                self.pending = list(token_env.tokenizer(text, add_special_tokens=False)["input_ids"]) + [token_env.eos_token_id]
            else:
                count = int(self.rng.integers(1, token_env.max_new_tokens + 3))
                self.pending = self.rng.integers(token_env.vocab_size, size=count).tolist()
        return int(self.pending.pop(0))


def play(env, level: str, kind: str, seed: int, steps: int | None = None, policy_seed: int = 0) -> list[Any]:
    """Reset with ``seed``, then ``steps`` steps (default 40 utterances' worth; a token-level vector env
    plays a sixth of those token steps, at least 100, spread over its copies) of :class:`Player`
    (a scalar env resets without a seed after each episode).

    Returns the reset and step results as :func:`to_data`. Asserts the basic contract on the
    way: observations inside the observation space, finite rewards.
    """
    if steps is None:
        steps = 40 * env.unwrapped.max_new_tokens // 2 if level == "token" else 40
        steps = max(steps // (2 * NUM_VECTOR_ENVS), 100) if kind == "vector" and level == "token" else steps
    player = Player(policy_seed)
    records: list[Any] = []
    observation, info = env.reset(seed=seed)
    records.append(to_data(("reset", observation, info)))
    for _ in range(steps):
        assert env.observation_space.contains(observation), f"observation outside the observation space: {observation!r:.200}"
        action = player.act(env, level, kind, observation)
        observation, reward, terminated, truncated, info = env.step(action)
        assert np.all(np.isfinite(reward)), f"reward {reward!r} is not finite"
        records.append(to_data(("step", action, observation, reward, terminated, truncated, info)))
        if kind == "scalar" and (terminated or truncated):
            observation, info = env.reset()
            records.append(to_data(("reset", observation, info)))
    assert env.observation_space.contains(observation)
    return records


def all_episodes(seed: int) -> dict[str, Any]:
    """Episodes of every case, keyed ``"<id>|<level>|<kind>"``."""
    result = {}
    for env_id, level, kind in cases():
        env = make(env_id, level, kind)
        result[f"{env_id}|{level}|{kind}"] = play(env, level, kind, seed)
        env.close()
    return result


if __name__ == "__main__":
    json.dump(all_episodes(int(sys.argv[1])), sys.stdout)
