"""The token-level MDP: any utterance env as an RL4LMs-style environment of one token per step."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.core.validation import check_choice, check_int, check_number, is_integer

#: Largest ``max_prompt_length`` / ``max_new_tokens``: observations are arrays of that many ids.
MAX_TOKENS = 2**20


class TokenLevel(gymnasium.Env):
    """An utterance-level :class:`~lm_gym.core.text_env.TextEnv` played one token per step.

    This is the one implementation of the token-level MDP. ``gymnasium.make(id,
    action_level="token")`` builds it around the task's env, and it is a ``gymnasium.Env``
    itself (not a wrapper), so ``env.unwrapped`` is the token-level env that Gymnasium's and
    stable-baselines3's ``check_env`` see. ``TokenLevel(my_text_env, tokenizer)`` turns a
    user's own ``TextEnv`` into the same MDP. The utterance-level env is ``self.env``.

    Each step appends one token to the utterance being written. The utterance is decoded
    (special tokens skipped) and handed to the utterance-level env when

    * the policy emits EOS (EOS itself is not part of the text),
    * ``max_new_tokens`` tokens were written, or
    * the decoded text reaches the utterance env's action length limit
      (``env.action_space.max_length`` characters; the text is cut to that length),

    so any sequence of valid token ids is a valid episode. Steps that only append a token
    give reward 0; the step that hands the utterance over returns the utterance env's reward,
    termination and ``info`` plus ``info["num_tokens"]``. If the episode goes on (multi-turn
    tasks), the next observation text becomes the new prompt and the context starts empty.

    The task's generation protocol holds in the MDP: EOS before ``min_new_tokens`` tokens
    (the task's ``generation_defaults``; IMDB: 48, as RL4LMs generates) is masked in
    ``info["action_mask"]`` and :meth:`action_masks` (the interface of sb3-contrib's
    ``MaskablePPO``). An agent that emits it anyway ends the utterance and gets the task's
    reward minus ``early_eos_penalty`` (``info["early_eos"] = True``).

    Action space: ``Discrete(len(tokenizer))``; a Python or NumPy integer (also a 0-d or
    one-element integer array). Anything else raises :class:`InvalidActionError` and leaves
    the episode as it was.

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

    Padding uses the tokenizer's pad token (its EOS token when it has none). Every ``info``
    (reset and step) holds ``action_mask``: an ``int8`` array of ``len(tokenizer)``, 1 where
    the token is allowed.

    Args:
        env: the utterance-level env.
        tokenizer: a ``transformers`` tokenizer (see :mod:`lm_gym.core.tokenizer`), or any
            object with ``__len__``, ``eos_token_id``, ``pad_token_id``,
            ``__call__(text, add_special_tokens=False)["input_ids"]`` and
            ``decode(ids, skip_special_tokens=True)``.
        max_prompt_length: prompt tokens kept in the observation (1 to ``MAX_TOKENS`` = 2**20).
        max_new_tokens: the utterance length limit, in tokens (1 to ``MAX_TOKENS``).
        min_new_tokens: EOS is masked (and penalised) before this many tokens.
        prompt_truncation_side: ``"left"`` keeps the end of a long prompt, ``"right"`` its start.
        early_eos_penalty: subtracted from the reward of an utterance ended by a masked EOS.
    """

    def __init__(
        self,
        env: gymnasium.Env,
        tokenizer: Any,
        max_prompt_length: int = 128,
        max_new_tokens: int = 64,
        min_new_tokens: int = 0,
        prompt_truncation_side: str = "left",
        early_eos_penalty: float = 1.0,
    ):
        self.max_prompt_length = check_int("max_prompt_length", max_prompt_length, 1, MAX_TOKENS)
        self.max_new_tokens = check_int("max_new_tokens", max_new_tokens, 1, MAX_TOKENS)
        self.min_new_tokens = check_int("min_new_tokens", min_new_tokens, 0, self.max_new_tokens)
        self.prompt_truncation_side = check_choice("prompt_truncation_side", prompt_truncation_side, ("left", "right"))
        self.early_eos_penalty = check_number("early_eos_penalty", early_eos_penalty, minimum=0)
        self.env = env
        self.tokenizer = check_tokenizer(tokenizer)
        self.eos_token_id = int(tokenizer.eos_token_id)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = int(self.eos_token_id if pad is None else pad)
        self.vocab_size = len(tokenizer)
        self.max_utterance_chars = env.action_space.max_length
        # Upper bound of each token's share of the decoded text (a joining space included),
        # so the text is decoded mid-utterance only when it may reach the character limit.
        self._token_chars = _token_char_bounds(tokenizer, self.vocab_size)

        self.metadata = env.metadata
        self.render_mode = env.render_mode
        self.action_space = spaces.Discrete(self.vocab_size)
        token_box = lambda n: spaces.Box(0, self.vocab_size - 1, shape=(n,), dtype=np.int64)  # noqa: E731
        mask_box = lambda n: spaces.Box(0, 1, shape=(n,), dtype=np.int64)  # noqa: E731
        self.observation_space = spaces.Dict(
            {
                "prompt_ids": token_box(self.max_prompt_length),
                "prompt_mask": mask_box(self.max_prompt_length),
                "context_ids": token_box(self.max_new_tokens),
                "context_mask": mask_box(self.max_new_tokens),
            }
        )
        self._all_allowed = np.ones(self.vocab_size, dtype=np.int8)
        self._eos_masked = self._all_allowed.copy()
        self._eos_masked[self.eos_token_id] = 0
        self._prompt_ids: list[int] = []
        self._context_ids: list[int] = []
        self._char_bound = 0
        self._needs_reset = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        text, info = self.env.reset(seed=seed, options=options)
        super().reset(seed=seed)
        self._start_utterance(text)
        self._needs_reset = False
        return self._observation(), {**info, "action_mask": self._action_mask()}

    def step(self, action: Any):
        token = self._token_id(action)
        if self._needs_reset:
            raise ResetNeededError("TokenLevel.step() called before reset() or after the episode ended; call reset() first")
        early_eos = token == self.eos_token_id and len(self._context_ids) < self.min_new_tokens
        if token != self.eos_token_id:
            self._context_ids.append(token)
            self._char_bound += self._token_chars[token]
            if len(self._context_ids) < self.max_new_tokens and not self._reached_char_limit():
                return self._observation(), 0.0, False, False, {"action_mask": self._action_mask()}

        num_tokens = len(self._context_ids)
        utterance = self._decode()[: self.max_utterance_chars]
        text, reward, terminated, truncated, info = self.env.step(utterance)
        info = {**info, "num_tokens": num_tokens}
        if early_eos:
            reward -= self.early_eos_penalty
            info["early_eos"] = True
        self._needs_reset = terminated or truncated
        self._start_utterance(text)
        return self._observation(), float(reward), terminated, truncated, {**info, "action_mask": self._action_mask()}

    def action_masks(self) -> np.ndarray:
        """Allowed tokens now, as booleans (sb3-contrib's ``MaskablePPO`` calls this)."""
        return self._action_mask().view(bool)

    def render(self) -> str | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def encode_prompt(self, text: str) -> list[int]:
        """The prompt tokens of an observation text, truncated to ``max_prompt_length``."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) <= self.max_prompt_length:
            return list(ids)
        if self.prompt_truncation_side == "left":
            return list(ids[-self.max_prompt_length :])
        return list(ids[: self.max_prompt_length])

    def _decode(self) -> str:
        return self.tokenizer.decode(self._context_ids, skip_special_tokens=True)

    def _reached_char_limit(self) -> bool:
        return self._char_bound >= self.max_utterance_chars and len(self._decode()) >= self.max_utterance_chars

    def _action_mask(self) -> np.ndarray:
        """A new array each time: Gymnasium asks that no two steps' infos share an object."""
        return (self._eos_masked if len(self._context_ids) < self.min_new_tokens else self._all_allowed).copy()

    def _start_utterance(self, text: str) -> None:
        self._prompt_ids = self.encode_prompt(text)
        self._context_ids = []
        self._char_bound = 0

    def _token_id(self, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
            action = action.reshape(()).item()
        if not is_integer(action):
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


def check_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` if it has what the token-level MDP uses; else a ``ConfigurationError`` saying what is missing."""
    expected = (
        "a transformers tokenizer, or an object with __len__, eos_token_id, "
        "__call__(text, add_special_tokens=False)['input_ids'] and decode(ids, skip_special_tokens=True)"
    )
    missing = [
        name
        for name, present in (
            ("__len__", hasattr(tokenizer, "__len__")),
            ("__call__", callable(tokenizer)),
            ("decode", callable(getattr(tokenizer, "decode", None))),
            ("eos_token_id", is_integer(getattr(tokenizer, "eos_token_id", None))),
        )
        if not present
    ]
    if missing:
        raise ConfigurationError(f"tokenizer must be {expected}; {type(tokenizer).__name__} lacks {missing}")
    try:
        size = len(tokenizer)
        ids = tokenizer("a", add_special_tokens=False)["input_ids"]
        text = tokenizer.decode(list(ids), skip_special_tokens=True)
    except Exception as error:  # noqa: BLE001 - a duck-typed tokenizer may fail in any way
        raise ConfigurationError(f"tokenizer must be {expected}; calling it failed with {type(error).__name__}: {error}") from error
    pad = getattr(tokenizer, "pad_token_id", None)
    if (
        not is_integer(size)
        or not 0 <= tokenizer.eos_token_id < size
        or not (pad is None or (is_integer(pad) and 0 <= pad < size))
        or not all(is_integer(i) and 0 <= i < size for i in ids)
        or not isinstance(text, str)
    ):
        raise ConfigurationError(
            f"tokenizer must be {expected}, with token ids (eos_token_id, pad_token_id, input_ids) in [0, len(tokenizer)) "
            "and decode returning a str"
        )
    return tokenizer


def _token_char_bounds(tokenizer: Any, vocab_size: int) -> np.ndarray:
    """Per token: an upper bound of the characters it adds to a decoded text."""
    to_tokens = getattr(tokenizer, "convert_ids_to_tokens", None)
    if callable(to_tokens):  # a token's string has at least as many characters as it decodes to
        strings = to_tokens(list(range(vocab_size)))
    else:
        strings = [tokenizer.decode([i], skip_special_tokens=True) for i in range(vocab_size)]
    return np.array([len(s or "") + 1 for s in strings], dtype=np.int64)
