"""The generic token-level wrapper: any utterance env as an RL4LMs-style token MDP."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError


class TokenLevel(gymnasium.Wrapper):
    """Turn an utterance-level :class:`~lm_gym.core.text_env.TextEnv` into a token-level MDP.

    Each step appends one token to the utterance being written. The utterance is decoded
    (special tokens skipped) and handed to the wrapped env when the policy emits EOS (EOS
    itself is not part of the text) or when ``max_new_tokens`` tokens were written. Steps
    that only append a token give reward 0 and an empty ``info``; the step that hands the
    utterance over returns the wrapped env's reward, termination and ``info`` plus
    ``info["num_tokens"]``. If the episode goes on (multi-turn tasks), the wrapped env's
    next observation becomes the new prompt and the context starts empty again.

    Action space: ``Discrete(len(tokenizer))``; a Python or NumPy integer (also a 0-d or
    one-element integer array). Anything else raises :class:`InvalidActionError`.

    Observation space: ``Dict`` of ``int64`` ``Box``es:

    ========================  =====================  ==============================================
    key                       shape                  content
    ========================  =====================  ==============================================
    ``prompt_ids``            ``(max_prompt_length,)``  the observation text's tokens, left-padded; the
                                                     first tokens are dropped when it is too long
                                                     (``prompt_truncation_side="left"``)
    ``prompt_mask``           ``(max_prompt_length,)``  1 where ``prompt_ids`` holds a token
    ``context_ids``           ``(max_new_tokens,)``     the tokens written so far, right-padded
    ``context_mask``          ``(max_new_tokens,)``     1 where ``context_ids`` holds a token
    ========================  =====================  ==============================================

    Padding uses the tokenizer's pad token (its EOS token when it has none).

    Args:
        env: the utterance-level env.
        tokenizer: a ``transformers`` tokenizer (see :mod:`lm_gym.core.tokenizer`).
        max_prompt_length: prompt tokens kept in the observation.
        max_new_tokens: the utterance length limit, in tokens.
        prompt_truncation_side: ``"left"`` keeps the end of a long prompt, ``"right"`` its start.
    """

    def __init__(
        self,
        env: gymnasium.Env,
        tokenizer: Any,
        max_prompt_length: int = 128,
        max_new_tokens: int = 64,
        prompt_truncation_side: str = "left",
    ):
        super().__init__(env)
        for name, value in (("max_prompt_length", max_prompt_length), ("max_new_tokens", max_new_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive int, got {value!r}")
        if prompt_truncation_side not in ("left", "right"):
            raise ConfigurationError(f"prompt_truncation_side must be 'left' or 'right', got {prompt_truncation_side!r}")
        if getattr(tokenizer, "eos_token_id", None) is None:
            raise ConfigurationError("tokenizer must have an EOS token (tokenizer.eos_token_id is None)")
        self.tokenizer = tokenizer
        self.max_prompt_length = max_prompt_length
        self.max_new_tokens = max_new_tokens
        self.prompt_truncation_side = prompt_truncation_side
        self.eos_token_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_token_id = int(self.eos_token_id if pad is None else pad)
        self.vocab_size = len(tokenizer)

        self.action_space = spaces.Discrete(self.vocab_size)
        token_box = lambda n: spaces.Box(0, self.vocab_size - 1, shape=(n,), dtype=np.int64)  # noqa: E731
        mask_box = lambda n: spaces.Box(0, 1, shape=(n,), dtype=np.int64)  # noqa: E731
        self.observation_space = spaces.Dict(
            {
                "prompt_ids": token_box(max_prompt_length),
                "prompt_mask": mask_box(max_prompt_length),
                "context_ids": token_box(max_new_tokens),
                "context_mask": mask_box(max_new_tokens),
            }
        )
        self._prompt_ids: list[int] = []
        self._context_ids: list[int] = []
        self._needs_reset = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        text, info = self.env.reset(seed=seed, options=options)
        self._start_utterance(text)
        self._needs_reset = False
        return self._observation(), info

    def step(self, action: Any):
        token = self._token_id(action)
        if self._needs_reset:
            raise ResetNeededError("TokenLevel.step() called before reset() or after the episode ended; call reset() first")
        if token != self.eos_token_id:
            self._context_ids.append(token)
            if len(self._context_ids) < self.max_new_tokens:
                return self._observation(), 0.0, False, False, {}

        num_tokens = len(self._context_ids)
        utterance = self.tokenizer.decode(self._context_ids, skip_special_tokens=True)
        text, reward, terminated, truncated, info = self.env.step(utterance)
        info = {**info, "num_tokens": num_tokens}
        self._needs_reset = terminated or truncated
        self._start_utterance(text)
        return self._observation(), float(reward), terminated, truncated, info

    def encode_prompt(self, text: str) -> list[int]:
        """The prompt tokens of an observation text, truncated to ``max_prompt_length``."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) <= self.max_prompt_length:
            return list(ids)
        if self.prompt_truncation_side == "left":
            return list(ids[-self.max_prompt_length :])
        return list(ids[: self.max_prompt_length])

    def _start_utterance(self, text: str) -> None:
        self._prompt_ids = self.encode_prompt(text)
        self._context_ids = []

    def _token_id(self, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.size == 1:
            action = action.reshape(()).item() if np.issubdtype(action.dtype, np.integer) else action
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise InvalidActionError(f"action must be an integer token id, got {type(action).__name__}: {action!r:.80}")
        if not 0 <= action < self.vocab_size:
            raise InvalidActionError(f"token id {int(action)} is out of range; the action space is Discrete({self.vocab_size})")
        return int(action)

    def _observation(self) -> dict[str, np.ndarray]:
        prompt_ids = np.full(self.max_prompt_length, self.pad_token_id, dtype=np.int64)
        prompt_mask = np.zeros(self.max_prompt_length, dtype=np.int64)
        if self._prompt_ids:
            prompt_ids[-len(self._prompt_ids) :] = self._prompt_ids
            prompt_mask[-len(self._prompt_ids) :] = 1
        context_ids = np.full(self.max_new_tokens, self.pad_token_id, dtype=np.int64)
        context_mask = np.zeros(self.max_new_tokens, dtype=np.int64)
        context_ids[: len(self._context_ids)] = self._context_ids
        context_mask[: len(self._context_ids)] = 1
        return {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "context_ids": context_ids, "context_mask": context_mask}
