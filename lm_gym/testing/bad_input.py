"""Check 4, bad input: actions outside the action space and bad ``reset`` arguments are refused with a
typed error and change nothing; and which actions and seeds an env must take."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import VectorEnv

from lm_gym.core.errors import LMGymError, safe_repr
from lm_gym.core.validation import is_integer
from lm_gym.testing.kinds import level_and_kind
from lm_gym.testing.playing import RandomPlayer, reset_finished, to_data

#: The errors a refused call may raise: lm-gym's own, or Gymnasium's (e.g. its ``OrderEnforcing``).
TYPED_ERRORS = (LMGymError, gymnasium.error.Error)


class _Unprintable:
    """A caller's object whose ``repr`` and ``str`` raise: an error message must not call them unguarded."""

    def __repr__(self) -> str:
        raise RuntimeError("repr of an unprintable object")

    __str__ = __repr__


def bad_actions(env: gymnasium.Env | VectorEnv) -> list[Any]:
    """Actions outside ``env``'s action space: wrong types, too long texts, token ids out of range or
    not integers, and for a vector env actions of the wrong type or shape and one bad copy's action."""
    level, kind = level_and_kind(env)
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
    _, kind = level_and_kind(env)
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


def expect_refused(call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except TYPED_ERRORS:
        return
    except Exception as error:  # any other error breaks the contract
        raise AssertionError(f"{what} raised {type(error).__name__}: {error}; expected a typed error") from error
    raise AssertionError(f"{what} was accepted; expected a typed error (lm_gym.core.errors.ResetNeededError)")


def _trial(env: Any, seed: int, at: int, interrupt: Callable[[Any], None] | None = None, steps: int = 6) -> list:
    """``steps`` steps of :class:`RandomPlayer` from ``reset(seed=seed)``; ``interrupt(env)`` before step ``at``."""
    level, kind = level_and_kind(env)
    player = RandomPlayer(seed)
    observation, info = env.reset(seed=seed)
    records = [to_data((observation, info))]
    for step in range(steps):
        if step == at and interrupt is not None:
            interrupt(env)
        observation, reward, terminated, truncated, info = env.step(player.act(env, level, kind, observation))
        records.append(to_data((observation, reward, terminated, truncated, info)))
        if (reset := reset_finished(env, kind, terminated, truncated)) is not None:
            observation, info = reset
            records.append(to_data(reset))
    return records


def is_valid_action(env: gymnasium.Env | VectorEnv, action: Any) -> bool:
    """Whether ``env`` must take ``action``: a ``str`` of at most ``max_length`` characters (utterance
    level), an integer token id in range (token level: a Python or NumPy integer, or a one-element
    integer array), or for a native vector env a list, tuple or 1-d array of ``num_envs`` such
    actions (token level: a list or tuple of them, or an integer array of shape ``(num_envs,)``)."""
    level, kind = level_and_kind(env)
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
