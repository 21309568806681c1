"""The native token-level vector env: N token-level MDPs stepped with array actions and observations."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import InvalidActionError, safe_repr
from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenSettings, TokenStates, protocol_hook
from lm_gym.core.validation import is_integer
from lm_gym.core.vector import NativeVectorEnv


class TokenVectorEnv(TokenSettings, NativeVectorEnv):
    """``num_envs`` copies of the token-level MDP of one :class:`TextEnv`, stepped with arrays.

    ``gymnasium.make_vec(id, N, vectorization_mode="vector_entry_point", action_level="token")``
    builds it with the arguments and defaults of ``gymnasium.make(id, action_level="token")``.
    Copy ``i`` is :class:`~lm_gym.core.token_level.TokenLevel`: the same rules (they live in
    one place, :class:`~lm_gym.core.token_level.TokenStates`), so copy ``i`` reset with seed
    ``s + i`` plays exactly the episodes of a scalar token-level env reset with ``seed=s + i``
    given the same tokens.

    Actions: an integer NumPy array of shape ``(num_envs,)`` (``MultiDiscrete``), or a list
    or tuple of ``num_envs`` Python/NumPy integers, each a token id in
    ``[0, vocab_size)``. Anything else raises :class:`InvalidActionError` before any copy
    changes state.

    Observations: the ``Dict`` of ``TokenLevel`` batched, ``int64`` arrays of shape
    ``(num_envs, max_prompt_length)`` (``prompt_ids``, ``prompt_mask``) and ``(num_envs,
    max_new_tokens)`` (``context_ids``, ``context_mask``); new arrays at every step.

    A step appends the N tokens with NumPy operations over all copies. The copies whose
    utterance ends (EOS, ``max_new_tokens``, the character limit) decode it and play it in
    their utterance-level env, all scored with **one** batched call of the task's reward
    function. An env whose utterances follow different protocols (``lm_gym/Mixture-v0``, see
    :meth:`TextEnv.token_protocol <lm_gym.core.text_env.TextEnv.token_protocol>`) plays each
    copy's utterance by its own lengths. Steps that only append give reward 0 and no info; a
    copy's info at the end of an utterance is ``TokenLevel``'s (``num_tokens``, ``early_eos``, the task's keys), in
    Gymnasium's vector convention (``info[key]`` array plus ``info["_" + key]`` mask).

    Action masks are **not** in the infos: an ``(num_envs, vocab_size)`` array at every step
    would cost ``num_envs x vocab_size`` bytes (3.2 MB at 64 copies of GPT-2's vocabulary)
    where only the EOS column varies. :meth:`action_masks` returns them as an
    ``(num_envs, vocab_size)`` bool array (sb3-contrib's ``MaskablePPO`` interface, see
    :mod:`lm_gym.integrations.sb3`); EOS is masked exactly where ``context_mask.sum(1) <
    min_new_tokens``.

    Seeding, reset options (``reset_mask`` included) and autoreset (``"NextStep"``,
    ``"SameStep"``, ``"Disabled"``) are those of :class:`~lm_gym.core.vector.TextVectorEnv`;
    with ``"SameStep"`` a finished copy's final observation and info are in
    ``info["final_obs"]`` (an object array of per-copy observation dicts) and
    ``info["final_info"]``.

    ``tokenizer`` and the keyword ``settings`` (``max_prompt_length``, ``max_new_tokens``,
    ``min_new_tokens``, ``prompt_truncation_side``, ``early_eos_penalty``) are those of
    :class:`~lm_gym.core.token_level.TokenLevel`, with the same defaults (:class:`TokenStates`
    applies them).
    """

    def __init__(
        self,
        env: TextEnv,
        num_envs: int,
        tokenizer: Any,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        **settings: Any,
    ):
        super().__init__(env, num_envs, autoreset_mode)
        #: The N copies' state and rules (``TokenLevel`` uses the same class for its one copy).
        self.tokens = TokenStates(env, tokenizer, self.num_envs, **settings)
        self._varies = protocol_hook(env) is not None  # the copies' utterances follow their own protocols
        self.single_observation_space = self.tokens.observation_space()
        self.single_action_space = spaces.Discrete(self.vocab_size)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._expected_actions = (
            f"an integer NumPy array of shape ({self.num_envs},) or a list or tuple of {self.num_envs} ints, "
            f"token ids in [0, {self.vocab_size})"
        )

    def _start(self, texts: dict[int, str]) -> None:
        if self._varies:
            self.tokens.start(texts, {i: self.envs[i].token_protocol() for i in texts})
        else:
            self.tokens.start(texts)

    def _observation(self, i: int) -> dict[str, np.ndarray]:
        return self.tokens.observation(i)

    def _observations(self) -> dict[str, np.ndarray]:
        return self.tokens.observation()

    def step(self, actions: Any):
        tokens = self._token_ids(actions)
        autoreset = self._autoreset_now()
        resetting = autoreset.any()
        ends, early_eos = self.tokens.append(tokens, ~autoreset if resetting else None)

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        if not (resetting or ends.any()):  # the hot path: every copy only appended a token
            return self._observations(), rewards, terminations, truncations, {}
        ending = np.flatnonzero(ends)
        results = self._play_utterances({i: self.envs[i].prepare_step(self.tokens.utterance(i)) for i in ending})
        texts: dict[int, str] = {}
        infos: dict[int, dict[str, Any]] = {}
        for i in np.flatnonzero(autoreset):
            texts[i], infos[i] = self.envs[i].reset()
        for i in ending:
            texts[i], rewards[i], terminations[i], truncations[i], infos[i] = self.tokens.hand_over(
                i, results[i], early_eos[i]
            )
        observations, infos = self._finish(texts, infos, terminations, truncations)
        return observations, rewards, terminations, truncations, infos

    def action_masks(self) -> np.ndarray:
        """Allowed tokens of every copy now, ``(num_envs, vocab_size)`` bools (EOS masked before ``min_new_tokens``)."""
        return self.tokens.action_masks()

    def encode_prompt(self, text: str) -> list[int]:
        """The prompt tokens of an observation text, truncated to ``max_prompt_length``."""
        return self.tokens.encode_prompt(text)

    def _token_ids(self, actions: Any) -> np.ndarray:
        """``actions`` as ``int64`` token ids, checked all at once; raises ``InvalidActionError``."""
        if isinstance(actions, np.ndarray):
            if actions.dtype.kind not in "iu" or actions.shape != (self.num_envs,):
                raise InvalidActionError(
                    f"actions must be {self._expected_actions}; "
                    f"got an array of dtype {actions.dtype} and shape {actions.shape}"
                )
            tokens = actions
        elif (
            isinstance(actions, (list, tuple)) and len(actions) == self.num_envs and all(is_integer(a) for a in actions)
        ):
            bad = [i for i, a in enumerate(actions) if not 0 <= a < self.vocab_size]
            if bad:
                raise InvalidActionError(self._out_of_range(bad[0], actions[bad[0]]))
            return np.array(actions, dtype=np.int64)
        else:
            raise InvalidActionError(
                f"actions must be {self._expected_actions}; got {type(actions).__name__}: {safe_repr(actions)}"
            )
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            bad = int(np.flatnonzero((tokens < 0) | (tokens >= self.vocab_size))[0])
            raise InvalidActionError(self._out_of_range(bad, tokens[bad]))
        return tokens.astype(np.int64, copy=False)

    def _out_of_range(self, i: int, token: Any) -> str:
        return (
            f"token id {int(token)} of env {i} is out of range; each env's action space is Discrete({self.vocab_size})"
        )
