"""lm-gym's env contract as checks for your own envs, as PettingZoo ships ``api_test``::

    from lm_gym.testing import check_text_env

    check_text_env(MyEnv())  # raises AssertionError saying what broke

Every registered lm-gym env passes these checks (``tests/contract`` runs them over every
registered id, at both action levels and as native vector envs); a task of your own that
passes them plays in the same code: the baselines, the vector envs, the token-level MDP.

=========================  ====================================================================
function                   checks
=========================  ====================================================================
:func:`check_text_env`     an lm-gym env: a :class:`~lm_gym.core.text_env.TextEnv` (or an env
                           made from one by ``gymnasium.make``); at token level it runs
                           :func:`check_token_env`
:func:`check_token_env`    a token-level env: :class:`~lm_gym.core.token_level.TokenLevel`
                           (``TokenLevel(my_text_env, tokenizer)`` or ``action_level="token"``)
:func:`check_vector_env`   a native vector env: :class:`~lm_gym.core.vector.TextVectorEnv` or
                           :class:`~lm_gym.core.token_vector.TokenVectorEnv` (``make_vec(...,
                           vectorization_mode="vector_entry_point")``)
=========================  ====================================================================

Each runs these checks, in order; each is also a function of its own:

1. **API checkers** (:func:`check_api`): Gymnasium's ``check_env`` on ``env.unwrapped`` and on
   ``env``, where any warning fails too. At token level also stable-baselines3's ``check_env``
   (SB3 supports no ``Text`` space, so not at utterance level). stable-baselines3 is an
   optional extra (``pip install "lm-gym[sb3]"``): with ``sb3=None`` (the default) its check
   runs when it is installed and is skipped with a warning when it is not; ``sb3=True``
   requires it, ``sb3=False`` skips it. A vector env gets the checks of its spaces and of what
   ``reset`` and ``step`` return (Gymnasium has no vector env checker).
2. **Determinism** (:func:`check_determinism`): a seed plays the same episodes (observations,
   rewards, terminations, infos) twice in ``env`` and once in a second env from ``make_env()``
   (default: ``gymnasium.make(env.spec)`` for an env made by ``gymnasium.make``, else
   ``copy.deepcopy(env)``), and another seed plays other episodes (``seed_sensitive=False``
   for an env that has no randomness).
3. **Random play** (:func:`check_random_play`): ``num_steps`` steps of random valid actions
   (``action_space.sample()``: random text, random token ids), resetting after each episode.
   Observations stay in the observation space, rewards are finite numbers, terminations and
   truncations bools, infos dicts; the final step of an episode has ``info["metrics"]`` (a
   dict: the per-episode task metrics that evaluations average), at least one episode ends,
   and a step after the end of an episode is refused. At token level every info holds
   ``action_mask`` (``int8``, one entry per token).
4. **Bad input** (:func:`check_bad_actions`, :func:`check_bad_resets`): actions outside the
   action space (:func:`bad_actions`: wrong types, texts over ``max_length``, token ids out
   of range or of the wrong type, vector actions of the wrong shape), bad ``reset`` seeds and
   options each raise a typed error (:data:`TYPED_ERRORS`: lm-gym's
   :class:`~lm_gym.core.errors.LMGymError` or Gymnasium's ``gymnasium.error.Error``) and
   change nothing: the episode played with the bad call in its middle is the episode played
   without it. :func:`check_bad_call` checks one call of your own the same way.

The episodes of the checks are played by :class:`RandomPlayer`, a seeded policy for any
lm-gym env (echoed words of the observation, random and odd text, random token ids), and
recorded by :func:`play` as plain data (:func:`to_data`) so that two runs compare exactly.
"""

from lm_gym.testing.api import check_api
from lm_gym.testing.bad_input import (
    TYPED_ERRORS,
    bad_actions,
    check_bad_actions,
    check_bad_call,
    check_bad_resets,
    is_valid_action,
    is_valid_seed,
)
from lm_gym.testing.checks import check_text_env, check_token_env, check_vector_env
from lm_gym.testing.episodes import check_determinism, check_random_play
from lm_gym.testing.playing import RandomPlayer, play, to_data

__all__ = [
    "TYPED_ERRORS",
    "RandomPlayer",
    "bad_actions",
    "check_api",
    "check_bad_actions",
    "check_bad_call",
    "check_bad_resets",
    "check_determinism",
    "check_random_play",
    "check_text_env",
    "check_token_env",
    "check_vector_env",
    "is_valid_action",
    "is_valid_seed",
    "play",
    "to_data",
]
