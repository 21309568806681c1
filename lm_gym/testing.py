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

from __future__ import annotations

import copy
import string
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import LMGymError, safe_repr
from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenLevel
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.validation import is_integer
from lm_gym.core.vector import TextVectorEnv, episode_info

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

#: The errors a refused call may raise: lm-gym's own, or Gymnasium's (e.g. its ``OrderEnforcing``).
TYPED_ERRORS = (LMGymError, gymnasium.error.Error)
#: What Gymnasium's ``check_env`` says of every env that ``gymnasium.make`` wraps, whatever the env.
WRAPPED_NOTE = "is different from the unwrapped version"
#: What it says of an env built without ``gymnasium.make`` (it can only test the render mode it was built with).
NO_SPEC_NOTE = "environment not having a spec"

WORD_EDGES = string.punctuation + string.whitespace
ODD_UTTERANCES = ("", "caf\u00e9 \u2014 na\u00efve \u2026 \U0001f600", "  CRANE  ", "\t\n", "a" * 80)
UTTERANCE_STEPS, TOKEN_STEPS, VECTOR_STEPS = 200, 2_000, 100


# ---- the three checks ---------------------------------------------------------------------------
def check_text_env(
    env: gymnasium.Env,
    *,
    num_steps: int | None = None,
    seed: int = 0,
    make_env: Callable[[], gymnasium.Env] | None = None,
    seed_sensitive: bool = True,
    sb3: bool | None = None,
) -> None:
    """Check an lm-gym env against the whole contract (see the module docstring).

    Args:
        env: a :class:`~lm_gym.core.text_env.TextEnv`, or an env made from one
            (``gymnasium.make``, Gymnasium's wrappers that keep its spaces). A token-level env
            (``action_level="token"``, :class:`~lm_gym.core.token_level.TokenLevel`) is checked
            by :func:`check_token_env`.
        num_steps: steps of random play; default 200 utterances (2,000 token steps at token level).
        seed: the seed of the episodes played.
        make_env: builds a second env like ``env`` for the determinism check (default
            ``gymnasium.make(env.spec)`` or ``copy.deepcopy(env)``).
        seed_sensitive: whether two seeds must play different episodes.
        sb3: stable-baselines3's checker at token level (``None``: when installed).

    Raises:
        AssertionError: what broke the contract.
    """
    if _level_and_kind(env) == ("token", "scalar"):
        check_token_env(env, num_steps=num_steps, seed=seed, make_env=make_env, seed_sensitive=seed_sensitive, sb3=sb3)
        return
    _expect(env, "utterance", "scalar", "check_text_env")
    check_api(env)
    check_determinism(env, seed=seed, make_env=make_env, seed_sensitive=seed_sensitive)
    check_random_play(env, UTTERANCE_STEPS if num_steps is None else num_steps, seed=seed)
    check_bad_actions(env, seed=seed)
    check_bad_resets(env, seed=seed)


def check_token_env(
    env: gymnasium.Env,
    *,
    num_steps: int | None = None,
    seed: int = 0,
    make_env: Callable[[], gymnasium.Env] | None = None,
    seed_sensitive: bool = True,
    sb3: bool | None = None,
) -> None:
    """Check a token-level env (:class:`~lm_gym.core.token_level.TokenLevel` of a
    :class:`~lm_gym.core.text_env.TextEnv`) against the contract; ``num_steps`` defaults to 2,000
    token steps. The arguments are :func:`check_text_env`'s; ``sb3=True`` fails without
    stable-baselines3, ``sb3=False`` skips its checker.
    """
    _expect(env, "token", "scalar", "check_token_env")
    check_api(env, sb3=sb3)
    check_determinism(env, seed=seed, make_env=make_env, seed_sensitive=seed_sensitive)
    check_random_play(env, TOKEN_STEPS if num_steps is None else num_steps, seed=seed)
    check_bad_actions(env, seed=seed)
    check_bad_resets(env, seed=seed)


def check_vector_env(
    venv: VectorEnv,
    *,
    num_steps: int = VECTOR_STEPS,
    seed: int = 0,
    make_env: Callable[[], VectorEnv] | None = None,
    seed_sensitive: bool = True,
) -> None:
    """Check a native vector env (:class:`~lm_gym.core.vector.TextVectorEnv` or
    :class:`~lm_gym.core.token_vector.TokenVectorEnv`, any autoreset mode): its spaces and
    returns, determinism (``make_env`` default: ``gymnasium.make_vec(venv.spec)`` or
    ``copy.deepcopy(venv)``), ``num_steps`` vector steps of random play and bad input (actions
    of the wrong type or shape, bad copies' actions, seeds and ``reset_mask``)."""
    _expect(venv, None, "vector", "check_vector_env")
    check_api(venv)
    check_determinism(venv, seed=seed, make_env=make_env, seed_sensitive=seed_sensitive)
    check_random_play(venv, num_steps, seed=seed)
    check_bad_actions(venv, seed=seed)
    check_bad_resets(venv, seed=seed)


# ---- 1. the API checkers --------------------------------------------------------------------------
def check_api(env: gymnasium.Env | VectorEnv, sb3: bool | None = None) -> None:
    """Gymnasium's ``check_env`` (and at token level stable-baselines3's) on ``env.unwrapped`` and
    ``env``, without a warning; for a vector env, its spaces and what ``reset`` and ``step`` return."""
    level, kind = _level_and_kind(env)
    if kind == "vector":
        _check_vector_api(env)
        return
    allowed = () if env.unwrapped.spec is not None else (NO_SPEC_NOTE,)
    _without_warnings("Gymnasium's check_env(env.unwrapped)", gymnasium_check_env, env.unwrapped, allowed)
    if env is not env.unwrapped:
        _without_warnings("Gymnasium's check_env(env)", gymnasium_check_env, env, (*allowed, WRAPPED_NOTE))
    if level == "token" and sb3 is not False:
        try:
            from stable_baselines3.common.env_checker import check_env as sb3_check_env
        except ImportError as error:
            if sb3:
                raise ImportError(f"sb3=True needs stable-baselines3: pip install 'lm-gym[sb3]' ({error})") from error
            warnings.warn(
                "stable-baselines3 is not installed, so its check_env was skipped; pip install 'lm-gym[sb3]' to run it "
                "(or pass sb3=False to skip it without this warning)",
                stacklevel=2,
            )
            return

        def sb3_check(checked: gymnasium.Env) -> None:
            sb3_check_env(checked, warn=True)

        _without_warnings("stable-baselines3's check_env(env.unwrapped)", sb3_check, env.unwrapped)
        if env is not env.unwrapped:
            _without_warnings("stable-baselines3's check_env(env)", sb3_check, env)


def _without_warnings(what: str, check: Callable[[Any], None], env: Any, allowed: Sequence[str] = ()) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check(env)
        except AssertionError as error:
            raise AssertionError(f"{what} failed: {error}") from error
        except Exception as error:  # the checker found a crash: a contract failure
            raise AssertionError(f"{what} failed with {type(error).__name__}: {error}") from error
    unexpected = [str(w.message) for w in caught if not any(note in str(w.message) for note in allowed)]
    assert not unexpected, f"{what} warned: {unexpected}"


def _check_vector_api(venv: VectorEnv) -> None:
    n = venv.num_envs
    assert is_integer(n) and n >= 1, f"num_envs must be a positive int, got {safe_repr(n)}"
    for name in ("observation_space", "action_space"):
        single, batched = getattr(venv, f"single_{name}"), getattr(venv, name)
        assert batched == batch_space(single, n), f"{name} {batched} is not single_{name} {single} batched {n} times"
    result = venv.reset(seed=0)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"reset() must return (observations, infos), got {safe_repr(result)}"
    )
    observations, infos = result
    assert venv.observation_space.contains(observations), (
        f"reset()'s observations are outside the observation space: {observations!r:.200}"
    )
    assert isinstance(infos, dict), f"reset()'s infos must be a dict, got {type(infos).__name__}"
    venv.action_space.seed(0)
    result = venv.step(venv.action_space.sample())
    assert isinstance(result, tuple) and len(result) == 5, (
        "step() must return (observations, rewards, terminations, truncations, infos)"
    )
    _check_vector_step(venv, *result)


def _check_vector_step(venv: VectorEnv, observations, rewards, terminations, truncations, infos) -> None:
    n = venv.num_envs
    assert venv.observation_space.contains(observations), (
        f"step()'s observations are outside the observation space: {observations!r:.200}"
    )
    assert isinstance(rewards, np.ndarray) and rewards.shape == (n,) and rewards.dtype.kind == "f", (
        f"step()'s rewards must be a float array of shape ({n},), got {safe_repr(rewards)}"
    )
    assert np.isfinite(rewards).all(), f"step()'s rewards are not finite: {rewards}"
    for name, flags in (("terminations", terminations), ("truncations", truncations)):
        assert isinstance(flags, np.ndarray) and flags.shape == (n,) and flags.dtype == bool, (
            f"step()'s {name} must be a bool array of shape ({n},), got {safe_repr(flags)}"
        )
    assert isinstance(infos, dict), f"step()'s infos must be a dict, got {type(infos).__name__}"


# ---- 2. determinism ----------------------------------------------------------------------------
def check_determinism(
    env: gymnasium.Env | VectorEnv,
    *,
    seed: int = 0,
    make_env: Callable[[], Any] | None = None,
    seed_sensitive: bool = True,
    steps: int | None = None,
) -> None:
    """The same seed plays the same episodes twice in ``env`` and in a second env from ``make_env()``
    (default ``gymnasium.make(env.spec)`` / ``gymnasium.make_vec(env.spec)``, or ``copy.deepcopy(env)``);
    with ``seed_sensitive``, ``seed + 1`` plays other episodes. ``steps``: :func:`play`'s."""
    first = play(env, seed, steps)
    assert play(env, seed, steps) == first, f"the env reset again with seed {seed} played differently"
    other = _second_env(env) if make_env is None else make_env()
    try:
        assert play(other, seed, steps) == first, f"a second env reset with seed {seed} played differently"
    finally:
        other.close()
    if seed_sensitive:
        assert play(env, seed + 1, steps) != first, (
            f"seeds {seed} and {seed + 1} played the same episodes "
            "(pass seed_sensitive=False for an env with no randomness)"
        )


def _second_env(env: Any) -> Any:
    if env.spec is not None:
        return gymnasium.make_vec(env.spec) if isinstance(env, VectorEnv) else gymnasium.make(env.spec)
    return copy.deepcopy(env)


# ---- 3. random play -----------------------------------------------------------------------------
def check_random_play(env: gymnasium.Env | VectorEnv, num_steps: int, *, seed: int = 0) -> None:
    """``num_steps`` steps of ``action_space.sample()`` (seeded with ``seed``) with the invariants of
    the module docstring; a scalar env is reset after each episode, a vector env autoresets."""
    level, kind = _level_and_kind(env)
    if kind == "vector":
        _random_play_vector(env, num_steps, seed)
        return
    env.action_space.seed(seed)
    observation, info = env.reset(seed=seed)
    _check_observation(env, observation, info, "reset()")
    episodes = 0
    for step in range(num_steps):
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        where = f"step {step} of random play"
        _check_observation(env, observation, info, where)
        assert isinstance(reward, (int, float, np.integer, np.floating)) and not isinstance(reward, (bool, np.bool_)), (
            f"{where}: the reward must be a number, got {safe_repr(reward)}"
        )
        assert np.isfinite(reward), f"{where}: the reward {reward!r} is not finite"
        assert isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_)), (
            f"{where}: terminated and truncated must be bools, got {safe_repr(terminated)} and {safe_repr(truncated)}"
        )
        if level == "token":
            mask = info.get("action_mask")
            assert isinstance(mask, np.ndarray) and mask.shape == (env.action_space.n,) and mask.dtype == np.int8, (
                f"{where}: info['action_mask'] must be an int8 array of {env.action_space.n} entries, "
                f"got {safe_repr(mask)}"
            )
        if terminated or truncated:
            assert isinstance(info.get("metrics"), dict), (
                f"{where}: the episode ended without info['metrics'] (a dict): {sorted(info)}"
            )
            if not episodes:
                _expect_refused(lambda: env.step(env.action_space.sample()), "step() after the episode ended")
            episodes += 1
            observation, info = env.reset()
            _check_observation(env, observation, info, "reset()")
    assert episodes > 0, f"no episode ended in {num_steps} steps of random actions"


def _check_observation(env: gymnasium.Env, observation: Any, info: Any, where: str) -> None:
    assert env.observation_space.contains(observation), (
        f"{where}: the observation is outside the observation space: {observation!r:.200}"
    )
    assert isinstance(info, dict), f"{where}: info must be a dict, got {type(info).__name__}"


def _random_play_vector(venv: VectorEnv, num_steps: int, seed: int) -> None:
    venv.action_space.seed(seed)
    venv.reset(seed=seed)
    episodes = 0
    for _ in range(num_steps):
        observations, rewards, terminations, truncations, infos = venv.step(venv.action_space.sample())
        _check_vector_step(venv, observations, rewards, terminations, truncations, infos)
        ended = terminations | truncations
        for i in np.flatnonzero(ended):
            final = episode_info(infos, i)
            if venv.autoreset_mode == AutoresetMode.SAME_STEP:
                final = final.get("final_info", {})
            assert isinstance(final.get("metrics"), dict), (
                f"copy {i}'s episode ended without info['metrics'] (a dict): {sorted(final)}"
            )
        episodes += int(ended.sum())
        _reset_finished(venv, "vector", terminations, truncations)
    assert episodes > 0, f"no episode ended in {num_steps} vector steps of random actions"


# ---- 4. bad input -------------------------------------------------------------------------------
class _Unprintable:
    """A caller's object whose ``repr`` and ``str`` raise: an error message must not call them unguarded."""

    def __repr__(self) -> str:
        raise RuntimeError("repr of an unprintable object")

    __str__ = __repr__


def bad_actions(env: gymnasium.Env | VectorEnv) -> list[Any]:
    """Actions outside ``env``'s action space: wrong types, too long texts, token ids out of range or
    not integers, and for a vector env actions of the wrong type or shape and one bad copy's action."""
    level, kind = _level_and_kind(env)
    if kind == "scalar" and level == "utterance":
        limit = env.action_space.max_length
        return [
            None,
            42,
            3.5,
            True,
            b"bytes",
            ["a", "list"],
            ("a",),
            {"a": 1},
            np.array(["x"]),
            _Unprintable(),
            "x" * (limit + 1),
        ]
    if kind == "scalar":
        n = env.action_space.n
        return [
            None, 1.5, "12", True, np.bool_(True), np.float32(1.0), np.array([1.5]), np.array([1, 2]),
            np.array([], dtype=np.int64),
            [0], -1, n, np.int64(-3), np.uint64(2**63), 2**70, _Unprintable(),
        ]  # fmt: skip
    n = env.num_envs
    good: Any = "" if level == "utterance" else 0
    actions: list[Any] = [None, "abc", 3, [good] * (n + 1), [good] * (n - 1) if n > 1 else [], _Unprintable()]
    wrong = (
        [42, None, "x" * (env.single_action_space.max_length + 1)]
        if level == "utterance"
        else [-1, env.vocab_size, 1.5, True, "3"]
    )
    for i in range(n):  # one bad copy, in each place
        actions.append(tuple(wrong[i % len(wrong)] if j == i else good for j in range(n)))
    if level == "token":
        actions += [np.zeros(n, dtype=np.float64), np.zeros((n, 1), dtype=np.int64), np.zeros(n + 1, dtype=np.int64),
                    np.full(n, -1), np.full(n, env.vocab_size)]  # fmt: skip
    else:
        actions.append(np.array([good] * n)[:, None])
    return actions


def check_bad_actions(
    env: gymnasium.Env | VectorEnv, actions: Iterable[Any] | None = None, *, seed: int = 0, at: int = 2
) -> None:
    """Each of ``actions`` (default :func:`bad_actions`; each must be outside the action space) is refused
    with a typed error and changes nothing (:func:`check_bad_call` for each, before step ``at``)."""
    actions = bad_actions(env) if actions is None else list(actions)
    reference = _trial(env, seed, at)
    for action in actions:
        if is_valid_action(env, action):
            raise ValueError(f"check_bad_actions: {safe_repr(action)} is a valid action of this env")
        _check_refused(env, _Step(action), f"step({safe_repr(action)})", reference, seed, at, may_accept=False)


def check_bad_resets(
    env: gymnasium.Env | VectorEnv,
    seeds: Iterable[Any] | None = None,
    options: Iterable[Any] | None = None,
    *,
    seed: int = 0,
    at: int = 2,
) -> None:
    """Each bad ``reset`` seed of ``seeds`` and options of ``options`` (defaults: negative, float, str,
    bool seeds, ...; options that are not a dict or hold an unknown key, ...) is refused with a typed
    error and changes nothing (:func:`check_bad_call`)."""
    _, kind = _level_and_kind(env)
    n = env.num_envs if kind == "vector" else 1
    if seeds is None:
        seeds = [-1, 1.5, "3", True, np.float64(2.0), [0] * (n + 1), np.arange(n + 1), _Unprintable()]
        if kind == "vector":
            seeds += [[0] * (n - 1) + [-1], [0] * (n - 1) + ["x"]]
    if options is None:
        options = ["x", 1, [("a", 0)], {"no_such_option": 1}, _Unprintable()]
        if kind == "vector":
            options += [
                {"reset_mask": "x"},
                {"reset_mask": np.ones(n + 1, dtype=bool)},
                {"reset_mask": np.ones(n, dtype=np.int64)},
            ]
    reference = _trial(env, seed, at)
    for bad in seeds:
        if is_valid_seed(bad, n if kind == "vector" else None):
            raise ValueError(f"check_bad_resets: {safe_repr(bad)} is a valid seed")
        _check_refused(env, _Reset(seed=bad), f"reset(seed={safe_repr(bad)})", reference, seed, at, may_accept=False)
    for bad in options:
        _check_refused(
            env, _Reset(options=bad), f"reset(options={safe_repr(bad)})", reference, seed, at, may_accept=False
        )


def check_bad_call(
    env: gymnasium.Env | VectorEnv,
    call: Callable[[Any], Any],
    what: str = "the call",
    *,
    seed: int = 0,
    at: int = 2,
    may_accept: bool = False,
) -> bool:
    """``call(env)`` in the middle of an episode (before step ``at`` of six steps of :class:`RandomPlayer`
    from ``reset(seed=seed)``) raises a typed error (:data:`TYPED_ERRORS`) and changes nothing: the
    episode goes on as if it had not been made. With ``may_accept``, ``call`` may also succeed (then
    nothing is compared). ``what`` names the call in the messages. Returns whether it was refused.
    """
    return _check_refused(env, call, what, _trial(env, seed, at), seed, at, may_accept)


class _Step:
    def __init__(self, action: Any):
        self.action = action

    def __call__(self, env: Any) -> Any:
        return env.step(self.action)


class _Reset:
    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs

    def __call__(self, env: Any) -> Any:
        return env.reset(**self.kwargs)


class _Accepted(Exception):
    """The env took a call that :func:`check_bad_call` may accept."""


def _check_refused(env, call, what: str, reference: list, seed: int, at: int, may_accept: bool) -> bool:
    def interrupt(env: Any) -> None:
        try:
            call(env)
        except TYPED_ERRORS:
            return
        except Exception as error:  # any other error breaks the contract
            raise AssertionError(
                f"{what} raised {type(error).__name__}: {error}; expected a typed error (lm_gym.core.errors.LMGymError "
                "or gymnasium.error.Error)"
            ) from error
        if may_accept:
            raise _Accepted
        raise AssertionError(
            f"{what} was accepted; expected a typed error (lm_gym.core.errors.LMGymError or gymnasium.error.Error)"
        )

    try:
        played = _trial(env, seed, at, interrupt)
    except _Accepted:
        return False
    assert played == reference, f"the refused {what} changed the episode: it played differently afterwards"
    return True


def _expect_refused(call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except TYPED_ERRORS:
        return
    except Exception as error:  # any other error breaks the contract
        raise AssertionError(f"{what} raised {type(error).__name__}: {error}; expected a typed error") from error
    raise AssertionError(f"{what} was accepted; expected a typed error (lm_gym.core.errors.ResetNeededError)")


def _trial(env: Any, seed: int, at: int, interrupt: Callable[[Any], None] | None = None, steps: int = 6) -> list:
    """``steps`` steps of :class:`RandomPlayer` from ``reset(seed=seed)``; ``interrupt(env)`` before step ``at``."""
    level, kind = _level_and_kind(env)
    player = RandomPlayer(seed)
    observation, info = env.reset(seed=seed)
    records = [to_data((observation, info))]
    for step in range(steps):
        if step == at and interrupt is not None:
            interrupt(env)
        observation, reward, terminated, truncated, info = env.step(player.act(env, level, kind, observation))
        records.append(to_data((observation, reward, terminated, truncated, info)))
        if (reset := _reset_finished(env, kind, terminated, truncated)) is not None:
            observation, info = reset
            records.append(to_data(reset))
    return records


def _reset_finished(env: Any, kind: str, terminated: Any, truncated: Any) -> tuple[Any, dict[str, Any]] | None:
    """Reset (without a seed) what a step finished and nothing resets by itself: a scalar env's
    episode, a vector env's finished copies with autoreset ``"Disabled"``; ``reset``'s result, or ``None``."""
    if kind == "scalar":
        return env.reset() if terminated or truncated else None
    finished = np.asarray(terminated) | np.asarray(truncated)
    if env.autoreset_mode == AutoresetMode.DISABLED and finished.any():
        return env.reset(options={"reset_mask": finished})
    return None


# ---- validity of actions and seeds --------------------------------------------------------------
def is_valid_action(env: gymnasium.Env | VectorEnv, action: Any) -> bool:
    """Whether ``env`` must take ``action``: a ``str`` of at most ``max_length`` characters (utterance
    level), an integer token id in range (token level: a Python or NumPy integer, or a one-element
    integer array), or for a native vector env a list, tuple or 1-d array of ``num_envs`` such
    actions (token level: a list or tuple of them, or an integer array of shape ``(num_envs,)``)."""
    level, kind = _level_and_kind(env)
    if kind == "scalar":
        return _is_valid_single(level, env.action_space, action)
    n = env.num_envs
    if level == "token" and isinstance(action, np.ndarray):
        return (
            action.dtype.kind in "iu"
            and action.shape == (n,)
            and bool(((action >= 0) & (action < env.vocab_size)).all())
        )
    if level == "token":
        return (
            isinstance(action, (list, tuple))
            and len(action) == n
            and all(is_integer(a) and 0 <= a < env.vocab_size for a in action)
        )
    listed = isinstance(action, (list, tuple)) or (isinstance(action, np.ndarray) and action.ndim == 1)
    return listed and len(action) == n and all(_is_valid_single(level, env.single_action_space, a) for a in action)


def _is_valid_single(level: str, space: Any, action: Any) -> bool:
    if level == "utterance":
        return isinstance(action, str) and len(action) <= space.max_length
    if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
        action = action.reshape(()).item()
    return is_integer(action) and 0 <= action < space.n


def is_valid_seed(seed: Any, num_envs: int | None = None) -> bool:
    """Whether ``reset(seed=seed)`` must be taken: ``None`` or a non-negative integer, or for a vector
    env of ``num_envs`` copies also a list, tuple or array of ``num_envs`` such seeds."""
    if seed is None or (is_integer(seed) and seed >= 0):
        return True
    if num_envs is None or not isinstance(seed, (list, tuple, np.ndarray)):
        return False
    seeds = list(seed) if not isinstance(seed, np.ndarray) or seed.ndim == 1 else []
    return len(seeds) == num_envs and all(s is None or (is_integer(s) and s >= 0) for s in seeds)


# ---- playing and recording episodes -------------------------------------------------------------
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
    level, kind = _level_and_kind(env)
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
        if (reset := _reset_finished(env, kind, terminated, truncated)) is not None:
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


# ---- which env this is --------------------------------------------------------------------------
def _level_and_kind(env: Any) -> tuple[str, str]:
    """``(level, kind)``: ``"utterance"`` or ``"token"``, ``"scalar"`` or ``"vector"``."""
    inner = getattr(env, "unwrapped", env)
    if isinstance(inner, TokenVectorEnv):
        return "token", "vector"
    if isinstance(inner, TextVectorEnv):
        return "utterance", "vector"
    if isinstance(inner, TokenLevel):
        return "token", "scalar"
    if isinstance(inner, TextEnv):
        return "utterance", "scalar"
    raise AssertionError(
        f"{type(env).__name__} is not an lm-gym env: env.unwrapped must be a TextEnv, a TokenLevel, a TextVectorEnv "
        f"or a TokenVectorEnv, got {type(inner).__name__}"
    )


def _expect(env: Any, level: str | None, kind: str, check: str) -> tuple[str, str]:
    found = _level_and_kind(env)
    if kind != found[1] or (level is not None and level != found[0]):
        wanted = f"a {level}-level {kind} env" if level else f"a {kind} env"
        right = "check_vector_env" if found[1] == "vector" else "check_text_env"
        raise AssertionError(f"{check} checks {wanted}; this is a {found[0]}-level {found[1]} env: use {right}")
    if kind == "scalar":
        for name in ("observation_space", "action_space"):
            assert getattr(env, name) == getattr(env.unwrapped, name), (
                f"a wrapper changed the env's {name}; check the env itself"
            )
        if found[0] == "token":
            inner = env.unwrapped.env
            assert isinstance(getattr(inner, "unwrapped", inner), TextEnv), (
                "a token-level env must play a TextEnv (env.unwrapped.env)"
            )
    return found
