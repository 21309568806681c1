"""The token-level MDP: any utterance env as an RL4LMs-style environment of one token per step."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError, safe_repr
from lm_gym.core.text_env import BatchedReward, RewardQuery, StepResult, TextEnv
from lm_gym.core.validation import check_choice, check_int, check_number, is_integer

#: Largest ``max_prompt_length`` / ``max_new_tokens``: observations are arrays of that many ids.
MAX_TOKENS = 2**20
#: The keys of :meth:`TextEnv.token_protocol <lm_gym.core.text_env.TextEnv.token_protocol>`.
PROTOCOL_KEYS = (
    "max_prompt_length",
    "max_new_tokens",
    "min_new_tokens",
    "prompt_truncation_side",
    "max_utterance_chars",
)


def protocol_hook(env: Any) -> Any:
    """``env``'s bound :meth:`TextEnv.token_protocol` when its class overrides it (the protocol may
    change between utterances), else ``None``: the MDP's settings hold for every utterance."""
    text_env = getattr(env, "unwrapped", env)
    if getattr(type(text_env), "token_protocol", TextEnv.token_protocol) is TextEnv.token_protocol:
        return None
    return text_env.token_protocol


@dataclass(frozen=True)
class PendingUtterance:
    """A token-level step whose token ended an utterance, between :meth:`TokenLevel.prepare_step`
    and :meth:`TokenLevel.finish_step`."""

    utterance: str  #: the utterance as the task sees it
    query: RewardQuery | None  #: what the utterance env's ``reward_fn`` must score (``None``: nothing)
    early_eos: bool  #: a masked EOS ended it (the early-EOS penalty applies)


class TokenSettings:
    """The token-level MDP's settings as read-only attributes of the env that plays it.

    :class:`TokenLevel` and :class:`~lm_gym.core.token_vector.TokenVectorEnv` keep their
    state and rules in :class:`TokenStates` (``self.tokens``); these properties read its
    settings, so ``env.vocab_size``, ``env.eos_token_id`` and the rest are the MDP's own.
    """

    tokens: TokenStates

    @property
    def max_prompt_length(self) -> int:
        """Prompt tokens kept in the observation."""
        return self.tokens.max_prompt_length

    @property
    def max_new_tokens(self) -> int:
        """The utterance length limit, in tokens."""
        return self.tokens.max_new_tokens

    @property
    def min_new_tokens(self) -> int:
        """EOS is masked (and penalised) before this many tokens."""
        return self.tokens.min_new_tokens

    @property
    def prompt_truncation_side(self) -> str:
        """``"left"`` keeps the end of a long prompt, ``"right"`` its start."""
        return self.tokens.prompt_truncation_side

    @property
    def early_eos_penalty(self) -> float:
        """Subtracted from the reward of an utterance ended by a masked EOS."""
        return self.tokens.early_eos_penalty

    @property
    def tokenizer(self) -> Any:
        """The tokenizer that encodes prompts and decodes utterances."""
        return self.tokens.tokenizer

    @property
    def eos_token_id(self) -> int:
        """The token that ends an utterance."""
        return self.tokens.eos_token_id

    @property
    def pad_token_id(self) -> int:
        """The padding of the observation arrays (the EOS token when the tokenizer has no pad token)."""
        return self.tokens.pad_token_id

    @property
    def vocab_size(self) -> int:
        """``len(tokenizer)``: the action space is ``Discrete(vocab_size)``."""
        return self.tokens.vocab_size

    @property
    def max_utterance_chars(self) -> int:
        """The utterance env's action length limit, in characters."""
        return self.tokens.max_utterance_chars


class TokenLevel(TokenSettings, gymnasium.Env):
    """An utterance-level :class:`~lm_gym.core.text_env.TextEnv` played one token per step.

    This is the one implementation of the token-level MDP. ``gymnasium.make(id,
    action_level="token")`` builds it around the task's env, and it is a ``gymnasium.Env``
    itself (not a wrapper), so ``env.unwrapped`` is the token-level env that Gymnasium's and
    stable-baselines3's ``check_env`` see. ``TokenLevel(my_text_env, tokenizer)`` turns a
    user's own ``TextEnv`` into the same MDP. The utterance-level env is ``self.env``. Its
    state and rules live in :class:`TokenStates` (``self.tokens``), which the native vector
    env :class:`~lm_gym.core.token_vector.TokenVectorEnv` uses for N copies at once.

    Each step appends one token to the utterance being written. The utterance is decoded
    (special tokens skipped) and handed to the utterance-level env when

    * the policy emits EOS (EOS itself is not part of the text),
    * ``max_new_tokens`` tokens were written, or
    * the decoded text reaches the utterance env's action length limit
      (``env.action_space.max_length`` characters; the text is cut to that length),

    so any sequence of valid token ids is a valid episode. An env whose utterances follow
    different protocols (``lm_gym/Mixture-v0``) says so with
    :meth:`~lm_gym.core.text_env.TextEnv.token_protocol`; each utterance is then played by its
    own lengths within these settings (see :class:`TokenStates`). Steps that only append a token
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

    These settings, and ``tokenizer``, ``eos_token_id``, ``pad_token_id``, ``vocab_size`` and
    ``max_utterance_chars``, are read-only attributes of the env (:class:`TokenSettings`).
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
        self.env = env
        #: The MDP's state and rules (one copy); :class:`TokenVectorEnv` plays N copies with the same class.
        self.tokens = TokenStates(
            env,
            tokenizer,
            1,
            max_prompt_length,
            max_new_tokens,
            min_new_tokens,
            prompt_truncation_side,
            early_eos_penalty,
        )
        self.metadata = env.metadata
        self.render_mode = env.render_mode
        self.action_space = spaces.Discrete(self.vocab_size)
        self.observation_space = self.tokens.observation_space()
        self._needs_reset = True
        self._protocol = protocol_hook(env)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        text, info = self.env.reset(seed=seed, options=options)
        super().reset(seed=seed)
        self._start(text)
        self._needs_reset = False
        return self._observation(), {**info, "action_mask": self._action_mask()}

    def step(self, action: Any):
        result, early_eos = self._append(action)
        if result is not None:
            return result
        return self._hand_over(self.env.step(self.tokens.utterance(0)), early_eos)

    # ---- the step protocol (TextEnv's, for callers that batch the utterance env's reward) ------
    @property
    def reward_fn(self) -> BatchedReward | None:
        """The utterance env's batched reward, which scores :meth:`prepare_step`'s queries."""
        return self.env.reward_fn

    def prepare_step(self, action: Any) -> StepResult | PendingUtterance:
        """The first part of a step: append the token. A token that ends no utterance gives the
        step's five values; one that ends it gives the :class:`PendingUtterance` whose query
        ``reward_fn`` must score (with other envs' queries, in one call) for :meth:`finish_step`."""
        result, early_eos = self._append(action)
        if result is not None:
            return result
        utterance, query = self.env.prepare_step(self.tokens.utterance(0))
        return PendingUtterance(utterance, query, early_eos)

    def finish_step(self, pending: PendingUtterance, score: float | None) -> StepResult:
        """The last part of a step whose token ended an utterance: the utterance env's transition with
        ``score`` (``None`` when the query was ``None``)."""
        return self._hand_over(self.env.finish_step(pending.utterance, score), pending.early_eos)

    def _append(self, action: Any) -> tuple[StepResult | None, bool]:
        """Append ``action``'s token: the step's result when it ends no utterance (else ``None``), and
        whether a masked EOS ended the utterance."""
        token = checked_token_id(action, self.vocab_size)
        if self._needs_reset:
            raise ResetNeededError(
                "TokenLevel.step() called before reset() or after the episode ended; call reset() first"
            )
        ends, early_eos = self.tokens.append(np.array([token], dtype=np.int64))
        if not ends[0]:
            return (self._observation(), 0.0, False, False, {"action_mask": self._action_mask()}), False
        return None, bool(early_eos[0])

    def _hand_over(self, result: StepResult, early_eos: bool) -> StepResult:
        """The step's five values from the utterance env's step result; the next utterance starts."""
        text, reward, terminated, truncated, info = self.tokens.hand_over(0, result, early_eos)
        self._needs_reset = terminated or truncated
        self._start(text)
        return self._observation(), reward, terminated, truncated, {**info, "action_mask": self._action_mask()}

    def _start(self, text: str) -> None:
        self.tokens.start({0: text}, None if self._protocol is None else {0: self._protocol()})

    def action_masks(self) -> np.ndarray:
        """Allowed tokens now, as booleans (sb3-contrib's ``MaskablePPO`` calls this)."""
        return self.tokens.action_masks()[0]

    def render(self) -> str | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def encode_prompt(self, text: str) -> list[int]:
        """The prompt tokens of an observation text, truncated to ``max_prompt_length``."""
        return self.tokens.encode_prompt(text)

    def _action_mask(self) -> np.ndarray:
        """A new array each time: Gymnasium asks that no two steps' infos share an object."""
        return self.tokens.action_masks()[0].view(np.int8)

    def _observation(self) -> dict[str, np.ndarray]:
        return self.tokens.observation(0)


def checked_token_id(action: Any, vocab_size: int) -> int:
    """``action`` as a token id of ``Discrete(vocab_size)``: an integer (Python or NumPy, or a one-element
    integer array) in range; anything else raises :class:`~lm_gym.core.errors.InvalidActionError`.
    The token level's action rule, for :class:`TokenLevel` and a client of a served token-level task."""
    if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
        action = action.reshape(()).item()
    if not is_integer(action):
        raise InvalidActionError(
            f"action must be an integer token id, got {type(action).__name__}: {safe_repr(action)}"
        )
    if not 0 <= action < vocab_size:
        raise InvalidActionError(f"token id {int(action)} is out of range; the action space is Discrete({vocab_size})")
    return int(action)


class TokenStates:
    """The state and rules of ``num_envs`` copies of the token-level MDP, in arrays.

    This is the one implementation of the MDP's rules: :class:`TokenLevel` plays one copy,
    :class:`~lm_gym.core.token_vector.TokenVectorEnv` plays N with NumPy operations over all
    of them. The arguments are :class:`TokenLevel`'s (checked here, with the same errors);
    ``env`` is the utterance-level env (its ``action_space.max_length`` is the character
    limit of an utterance).

    Copy ``i``'s state is row ``i`` of the arrays: ``prompt_ids`` / ``prompt_mask`` (its
    prompt, left-padded), ``context_ids`` / ``context_mask`` (the utterance being written,
    right-padded), ``lengths[i]`` (its tokens) and ``char_bounds[i]`` (an upper bound of its
    decoded length, so the text is decoded mid-utterance only when it may reach the limit).

    Each copy's utterance follows the MDP's settings unless :meth:`start` is given that
    utterance's protocol (:meth:`TextEnv.token_protocol
    <lm_gym.core.text_env.TextEnv.token_protocol>`): then ``prompt_limits[i]``,
    ``new_token_limits[i]``, ``min_new_limits[i]``, ``keep_prompt_end[i]`` and
    ``char_limits[i]`` hold its own, within the MDP's settings (a maximum is capped at the
    MDP's, ``min_new_tokens`` is at least the MDP's and at most the utterance's maximum).

    A step of the MDP is :meth:`append`; for the copies whose utterance ends, the env plays
    :meth:`utterance` in the utterance-level env, gives the result to :meth:`hand_over` and
    starts the next utterance with the observation text (:meth:`start`, as after a reset).
    """

    def __init__(
        self,
        env: gymnasium.Env,
        tokenizer: Any,
        num_envs: int = 1,
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
        self.tokenizer = check_tokenizer(tokenizer)
        self.eos_token_id = int(tokenizer.eos_token_id)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = int(self.eos_token_id if pad is None else pad)
        self.vocab_size = len(tokenizer)
        self.max_utterance_chars = env.action_space.max_length
        # Upper bound of each token's share of the decoded text (a joining space included).
        self.token_chars = _token_char_bounds(tokenizer, self.vocab_size)

        self.num_envs = num_envs
        self.prompt_ids = np.full((num_envs, self.max_prompt_length), self.pad_token_id, dtype=np.int64)
        self.prompt_mask = np.zeros((num_envs, self.max_prompt_length), dtype=np.int64)
        self.context_ids = np.full((num_envs, self.max_new_tokens), self.pad_token_id, dtype=np.int64)
        self.context_mask = np.zeros((num_envs, self.max_new_tokens), dtype=np.int64)
        self.lengths = np.zeros(num_envs, dtype=np.int64)
        self.char_bounds = np.zeros(num_envs, dtype=np.int64)
        self._rows = np.arange(num_envs)
        # Each copy's current utterance protocol: the MDP's settings unless start() is given another.
        self.prompt_limits = np.full(num_envs, self.max_prompt_length, dtype=np.int64)
        self.new_token_limits = np.full(num_envs, self.max_new_tokens, dtype=np.int64)
        self.min_new_limits = np.full(num_envs, self.min_new_tokens, dtype=np.int64)
        self.keep_prompt_end = np.full(num_envs, self.prompt_truncation_side == "left")
        self.char_limits = np.full(num_envs, self.max_utterance_chars, dtype=np.int64)
        self._any_min_new = bool(self.min_new_tokens)
        self._decoded: dict[int, str] = {}  # texts decoded by the character-limit check, for utterance()

    def observation_space(self) -> spaces.Dict:
        """One copy's observation space: the ``Dict`` of ``int64`` ``Box``es."""
        token_box = lambda n: spaces.Box(0, self.vocab_size - 1, shape=(n,), dtype=np.int64)  # noqa: E731
        mask_box = lambda n: spaces.Box(0, 1, shape=(n,), dtype=np.int64)  # noqa: E731
        return spaces.Dict(
            {
                "prompt_ids": token_box(self.max_prompt_length),
                "prompt_mask": mask_box(self.max_prompt_length),
                "context_ids": token_box(self.max_new_tokens),
                "context_mask": mask_box(self.max_new_tokens),
            }
        )

    def encode_prompt(self, text: str) -> list[int]:
        """The prompt tokens of an observation text, truncated to ``max_prompt_length``."""
        return self._truncate(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _truncate(self, ids: Sequence[int], limit: int | None = None, keep_end: bool | None = None) -> list[int]:
        limit = self.max_prompt_length if limit is None else limit
        if len(ids) <= limit:
            return list(ids)
        if (self.prompt_truncation_side == "left") if keep_end is None else keep_end:
            return list(ids[-limit:])
        return list(ids[:limit])

    def start(self, texts: Mapping[int, str], protocols: Mapping[int, Mapping[str, Any]] | None = None) -> None:
        """Copy ``i`` starts an utterance for each ``i: text`` of ``texts``: ``text`` becomes its
        prompt, its context is empty. A ``transformers`` tokenizer encodes the texts in one call.

        ``protocols[i]`` (optional) is the utterance's :meth:`TextEnv.token_protocol
        <lm_gym.core.text_env.TextEnv.token_protocol>`: copy ``i`` plays it by those settings
        (within the MDP's) instead of the MDP's; a bad one raises ``ConfigurationError``."""
        if not texts:
            return
        if protocols is not None:
            for i, protocol in protocols.items():
                self._set_protocol(i, protocol)
            self._any_min_new = bool(self.min_new_limits.any())
        truncate = self._truncate_copy if protocols is not None else lambda ids, i: self._truncate(ids)
        if len(texts) > 1 and _encodes_batches(self.tokenizer):
            encoded = self.tokenizer(list(texts.values()), add_special_tokens=False)["input_ids"]
            prompts = {i: truncate(ids, i) for i, ids in zip(texts, encoded, strict=True)}
        else:
            prompts = {
                i: truncate(self.tokenizer(text, add_special_tokens=False)["input_ids"], i) for i, text in texts.items()
            }
        for i, ids in prompts.items():
            self.prompt_ids[i] = self.pad_token_id
            self.prompt_mask[i] = 0
            if ids:
                self.prompt_ids[i, -len(ids) :] = ids
                self.prompt_mask[i, -len(ids) :] = 1
            self._decoded.pop(i, None)
        rows = list(prompts)
        self.context_ids[rows] = self.pad_token_id
        self.context_mask[rows] = 0
        self.lengths[rows] = 0
        self.char_bounds[rows] = 0

    def _truncate_copy(self, ids: Sequence[int], i: int) -> list[int]:
        return self._truncate(ids, int(self.prompt_limits[i]), bool(self.keep_prompt_end[i]))

    def _set_protocol(self, i: int, protocol: Mapping[str, Any]) -> None:
        """Copy ``i``'s next utterance follows ``protocol`` (a ``token_protocol()``), within the MDP's settings."""
        if not isinstance(protocol, Mapping) or not set(protocol) <= set(PROTOCOL_KEYS):
            raise ConfigurationError(
                f"token_protocol() must return a dict with keys from {list(PROTOCOL_KEYS)}, got {safe_repr(protocol)}"
            )
        get = lambda key, default: protocol.get(key, default)  # noqa: E731
        name = "token_protocol()[{!r}]".format
        new_tokens = min(
            check_int(name("max_new_tokens"), get("max_new_tokens", self.max_new_tokens), 1), self.max_new_tokens
        )
        self.new_token_limits[i] = new_tokens
        self.prompt_limits[i] = min(
            check_int(name("max_prompt_length"), get("max_prompt_length", self.max_prompt_length), 1),
            self.max_prompt_length,
        )
        min_new = check_int(name("min_new_tokens"), get("min_new_tokens", self.min_new_tokens), 0)
        self.min_new_limits[i] = min(max(min_new, self.min_new_tokens), new_tokens)
        side = check_choice(
            name("prompt_truncation_side"),
            get("prompt_truncation_side", self.prompt_truncation_side),
            ("left", "right"),
        )
        self.keep_prompt_end[i] = side == "left"
        self.char_limits[i] = min(
            check_int(name("max_utterance_chars"), get("max_utterance_chars", self.max_utterance_chars), 1),
            self.max_utterance_chars,
        )

    def append(self, tokens: np.ndarray, playing: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Play the valid token ids ``tokens`` (``int64``, one per copy) in the copies where ``playing`` (default: all).

        A token other than EOS is appended to the copy's utterance. Returns two bool arrays:
        the copies whose utterance ends now (EOS, ``max_new_tokens`` tokens, or the decoded
        text at the character limit) and those whose EOS came before ``min_new_tokens``.
        """
        eos = tokens == self.eos_token_id
        if playing is not None:
            eos &= playing
        writing = ~eos if playing is None else playing & ~eos
        if writing.all():  # the hot path: every copy appends a token
            rows, pairs, written = slice(None), self._rows, tokens
        else:
            rows = pairs = np.flatnonzero(writing)
            written = tokens[rows]
        early_eos = eos & (self.lengths < self.min_new_limits)
        columns = self.lengths[rows]
        self.context_ids[pairs, columns] = written
        self.context_mask[pairs, columns] = 1
        self.lengths[rows] += 1
        self.char_bounds[rows] += self.token_chars[written]
        ends = eos | (writing & (self.lengths >= self.new_token_limits))
        near_limit = self.char_bounds >= self.char_limits
        if near_limit.any():  # the text may be at the character limit
            for i in np.flatnonzero(writing & ~ends & near_limit):
                text = self._decode(i)
                if len(text) >= self.char_limits[i]:
                    ends[i] = True
                    self._decoded[int(i)] = text
        return ends, early_eos

    def utterance(self, i: int) -> str:
        """Copy ``i``'s utterance as text (special tokens skipped), cut to the character limit."""
        text = self._decoded.pop(i, None)
        if text is None:
            text = self._decode(i)
        return text[: self.char_limits[i]]

    def hand_over(self, i: int, result: tuple[Any, Any, bool, bool, dict[str, Any]], early_eos: bool):
        """Copy ``i``'s step result once the utterance env played its utterance (``result``, a step's 5-tuple).

        Adds ``info["num_tokens"]``, the early-EOS penalty and ``info["early_eos"]``. Returns
        the step's ``(text, reward, terminated, truncated, info)`` with a ``float`` reward;
        ``text`` is the copy's next prompt (:meth:`start` it).
        """
        text, reward, terminated, truncated, info = result
        info = {**info, "num_tokens": int(self.lengths[i])}
        if early_eos:
            reward -= self.early_eos_penalty
            info["early_eos"] = True
        return text, float(reward), terminated, truncated, info

    def observation(self, i: int | None = None) -> dict[str, np.ndarray]:
        """Copy ``i``'s observation, or every copy's (arrays of ``num_envs`` rows): new arrays each call."""
        rows = slice(None) if i is None else i
        return {
            "prompt_ids": self.prompt_ids[rows].copy(),
            "prompt_mask": self.prompt_mask[rows].copy(),
            "context_ids": self.context_ids[rows].copy(),
            "context_mask": self.context_mask[rows].copy(),
        }

    def action_masks(self) -> np.ndarray:
        """Allowed tokens of each copy, ``(num_envs, vocab_size)`` bools: EOS is masked before ``min_new_tokens``."""
        masks = np.ones((self.num_envs, self.vocab_size), dtype=bool)
        if self._any_min_new:
            masks[:, self.eos_token_id] = self.lengths >= self.min_new_limits
        return masks

    def _decode(self, i: int) -> str:
        return self.tokenizer.decode(self.context_ids[i, : self.lengths[i]].tolist(), skip_special_tokens=True)


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
        raise ConfigurationError(
            f"tokenizer must be {expected}; calling it failed with {type(error).__name__}: {error}"
        ) from error
    pad = getattr(tokenizer, "pad_token_id", None)
    if (
        not is_integer(size)
        or not 0 <= tokenizer.eos_token_id < size
        or not (pad is None or (is_integer(pad) and 0 <= pad < size))
        or not all(is_integer(i) and 0 <= i < size for i in ids)
        or not isinstance(text, str)
    ):
        raise ConfigurationError(
            f"tokenizer must be {expected}, with token ids (eos_token_id, pad_token_id, input_ids) "
            "in [0, len(tokenizer)) and decode returning a str"
        )
    return tokenizer


def _encodes_batches(tokenizer: Any) -> bool:
    """Whether ``tokenizer(list_of_texts, add_special_tokens=False)`` encodes a batch: ``transformers`` tokenizers."""
    transformers = sys.modules.get("transformers")  # a transformers tokenizer means transformers is imported
    return transformers is not None and isinstance(tokenizer, transformers.PreTrainedTokenizerBase)


def _token_char_bounds(tokenizer: Any, vocab_size: int) -> np.ndarray:
    """Per token: an upper bound of the characters it adds to a decoded text."""
    to_tokens = getattr(tokenizer, "convert_ids_to_tokens", None)
    if callable(to_tokens):  # a token's string has at least as many characters as it decodes to
        strings = to_tokens(list(range(vocab_size)))
    else:
        strings = [tokenizer.decode([i], skip_special_tokens=True) for i in range(vocab_size)]
    return np.array([len(s or "") + 1 for s in strings], dtype=np.int64)
