"""What travels in the messages: infos as JSON, observations of both action levels, and the spaces.

Shared by the server and the Gymnasium client; imports neither OpenEnv nor a web library.

- An ``info`` dict goes as JSON (:func:`to_json`): NumPy arrays and tuples become lists, NumPy
  scalars Python numbers. At token level ``info["action_mask"]`` (one int8 per token of the
  vocabulary) goes as ``info["masked_token_ids"]``, the ids it forbids (:func:`encode_info`);
  the client rebuilds the mask (:func:`decode_info`).
- The spaces go in the session's state (``GET /state`` or a ``{"type": "state"}`` message) as
  ``{"action_level", "max_observation_length", "max_action_length"}`` (utterance level) or
  ``{"action_level", "vocab_size", "max_prompt_length", "max_new_tokens"}`` (token level)
  (:func:`describe_spaces`, :func:`build_spaces`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.spaces import text_space

#: The keys of a token-level observation, in order.
TOKEN_FIELDS = ("prompt_ids", "prompt_mask", "context_ids", "context_mask")


def to_json(value: Any) -> Any:
    """``value`` as JSON-able Python: dicts (keys as ``str``), lists, str, int, float (non-finite as
    ``None``), bool and ``None``; NumPy arrays and scalars converted, other objects as their ``str``."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, np.ndarray):
        return to_json(value.tolist())
    if isinstance(value, np.generic):
        return to_json(value.item())
    return str(value)


def encode_info(info: dict[str, Any]) -> dict[str, Any]:
    """A step's or reset's ``info`` as JSON, its ``action_mask`` as ``masked_token_ids``."""
    info = dict(info)
    mask = info.pop("action_mask", None)
    if mask is not None:
        info["masked_token_ids"] = np.flatnonzero(np.asarray(mask) == 0).tolist()
    return to_json(info)


def decode_info(info: dict[str, Any], vocab_size: int | None) -> dict[str, Any]:
    """The client's ``info``: ``masked_token_ids`` back to an int8 ``action_mask`` of ``vocab_size``."""
    info = dict(info)
    masked = info.pop("masked_token_ids", None)
    if masked is not None and vocab_size is not None:
        mask = np.ones(vocab_size, dtype=np.int8)
        mask[np.asarray(masked, dtype=np.int64)] = 0
        info["action_mask"] = mask
    return info


def describe_spaces(env: Any, action_level: str) -> dict[str, Any]:
    """The JSON description of ``env``'s spaces (a ``TextEnv``, or a ``TokenLevel`` at token level)."""
    if action_level == "token":
        return {
            "action_level": "token",
            "vocab_size": int(env.vocab_size),
            "max_prompt_length": int(env.max_prompt_length),
            "max_new_tokens": int(env.max_new_tokens),
        }
    return {
        "action_level": "utterance",
        "max_observation_length": int(env.observation_space.max_length),
        "max_action_length": int(env.action_space.max_length),
    }


def build_spaces(description: dict[str, Any]) -> tuple[spaces.Space, spaces.Space]:
    """``(observation_space, action_space)`` of a :func:`describe_spaces` description."""
    try:
        if description["action_level"] == "token":
            vocab = int(description["vocab_size"])
            token_box = lambda n: spaces.Box(0, vocab - 1, shape=(n,), dtype=np.int64)  # noqa: E731
            mask_box = lambda n: spaces.Box(0, 1, shape=(n,), dtype=np.int64)  # noqa: E731
            prompt, new = int(description["max_prompt_length"]), int(description["max_new_tokens"])
            observation_space = spaces.Dict(
                {
                    "prompt_ids": token_box(prompt),
                    "prompt_mask": mask_box(prompt),
                    "context_ids": token_box(new),
                    "context_mask": mask_box(new),
                }
            )
            return observation_space, spaces.Discrete(vocab)
        return text_space(int(description["max_observation_length"])), text_space(int(description["max_action_length"]))
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigurationError(f"the server described its spaces as {safe_repr(description)}: {error}") from error


def token_observation(fields: dict[str, Any]) -> dict[str, np.ndarray]:
    """A token-level observation (the four ``int64`` arrays) from its JSON fields."""
    return {key: np.asarray(fields[key], dtype=np.int64) for key in TOKEN_FIELDS}
