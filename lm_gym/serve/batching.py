"""Steps of many sessions through one batched reward call.

Every session of a server holds its own env (a ``TextEnv``, or a ``TokenLevel`` around one). A
step is the core's three-part step protocol (``prepare_step``, ``score_queries``,
``finish_step``); :func:`play_steps` makes it for the steps of many sessions at once, with
**one** call of the task's reward function for all the utterances that need it (the core's
``score_by_reward_fn``).

:class:`StepBatcher` collects the steps that arrive from different sessions within
``window_s`` (a lone step waits at most the window; once every open session has a step waiting
they go at once) and plays them in one worker thread, so the event loop keeps reading messages
while a batch is scored, and the next batch gathers meanwhile. With ``batching=False`` each step
is played on its own (the baseline of ``benchmark/perf/serve_throughput.py``). Resets wait in the
same queue, so a batch hands its sessions' resets and steps to the worker thread at once.

A reward function that raises for a batch is called again per step, so only the steps whose
scoring fails get :class:`~lm_gym.serve.errors.RewardFunctionError`; their episodes are as
before the step (at token level, as after ``TokenLevel.step`` raising there: the last token
is played).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lm_gym.core.text_env import RewardQuery, StepResult, TextEnv, score_by_reward_fn, score_queries
from lm_gym.core.token_level import PendingUtterance, TokenLevel
from lm_gym.serve.errors import RewardFunctionError

#: A finished step: the step's five values, or the error its session gets.
Outcome = StepResult | BaseException


class _Pending:
    """One step of one session between ``prepare_step`` and ``finish_step``: the env, and what it prepared."""

    __slots__ = ("env", "prepared", "query")

    def __init__(self, env: TextEnv | TokenLevel, prepared: Any, query: RewardQuery | None):
        self.env, self.prepared, self.query = env, prepared, query


def _prepare(env: TextEnv | TokenLevel, action: Any) -> StepResult | _Pending:
    """The first part of ``env``'s step (both levels follow the step protocol): a finished result
    (a token that ends no utterance) or what to score."""
    if isinstance(env, TokenLevel):
        prepared = env.prepare_step(action)
        return _Pending(env, prepared, prepared.query) if isinstance(prepared, PendingUtterance) else prepared
    utterance, query = env.prepare_step(action)
    return _Pending(env, utterance, query)


def _finish(pending: _Pending, score: float | None) -> StepResult:
    """The last part of a step, with its utterance's score."""
    return pending.env.finish_step(pending.prepared, score)


def _score(reward_fn: Any, queries: list[RewardQuery]) -> list[float | BaseException]:
    """Scores of ``queries`` with one call; when it raises, one call per query, so only the failing ones fail."""
    try:
        return [float(score) for score in score_queries(reward_fn, queries)]
    except Exception as error:
        if len(queries) == 1:
            return [_reward_error(error)]
    outcomes: list[float | BaseException] = []
    for query in queries:
        try:
            outcomes.append(float(score_queries(reward_fn, [query])[0]))
        except Exception as error:
            outcomes.append(_reward_error(error))
    return outcomes


def _reward_error(error: Exception) -> RewardFunctionError:
    return RewardFunctionError(f"the task's reward function raised {type(error).__name__}: {error}")


def play_steps(steps: list[tuple[Any, Any]]) -> list[Outcome]:
    """Play ``(env, action)`` steps of different sessions: each env's ``prepare`` part, one reward call
    per reward function (the sessions of one server share one), then each ``finish`` part.

    Returns, in order, each step's five values or the exception its session gets (a typed
    lm-gym error raised by the env, or :class:`RewardFunctionError`).
    """
    outcomes: list[Outcome | _Pending | None] = [None] * len(steps)
    for i, (env, action) in enumerate(steps):
        try:
            outcomes[i] = _prepare(env, action)
        except Exception as error:
            outcomes[i] = error
    pending = [(i, outcome) for i, outcome in enumerate(outcomes) if isinstance(outcome, _Pending)]
    scores = score_by_reward_fn([(outcome.env.reward_fn, outcome.query) for _, outcome in pending], _score)
    for (i, outcome), score in zip(pending, scores, strict=True):
        if isinstance(score, BaseException):
            outcomes[i] = score
            continue
        try:
            outcomes[i] = _finish(outcome, score)
        except Exception as error:
            outcomes[i] = error
    return outcomes  # type: ignore[return-value]


class StepBatcher:
    """Gathers steps and resets of many sessions and plays them in one worker thread.

    ``await batcher.step(env, action)`` returns the step's five values or raises the session's
    error; ``await batcher.call(fn)`` runs any other env call (a reset) in the same thread, so no
    two calls touch the envs at once. Both wait in one queue: a batch plays its calls, then its
    steps with one reward call, in one hand-over to the worker thread. ``open_sessions`` is a
    callable giving the number of sessions that could send a message now: once that many wait,
    they go without waiting out the window.
    """

    def __init__(self, window_s: float = 0.002, batching: bool = True, open_sessions: Callable[[], int] | None = None):
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s}")
        self.window_s = window_s
        self.batching = batching
        self._open_sessions = open_sessions or (lambda: 0)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lm-gym-steps")
        self._waiting: list[tuple[Any, Any, asyncio.Future]] = []  # (env, action, future); (fn, _CALL, future)
        self._timer: asyncio.TimerHandle | None = None
        self._busy = False
        #: Steps and calls accepted and not yet answered (the graceful shutdown waits for 0).
        self.in_flight = 0
        #: Sizes of the batches played so far (for tests and the benchmark): count and total steps.
        self.batches = 0
        self.batched_steps = 0

    async def call(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in the worker thread (with the next batch when batching)."""
        outcome = await self._submit(fn, _CALL)
        if isinstance(outcome, _Raised):
            raise outcome.error
        return outcome

    async def step(self, env: Any, action: Any) -> StepResult:
        """One session's step, played with the other sessions' steps that arrive within the window."""
        outcome = await self._submit(env, action)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def _submit(self, target: Any, action: Any) -> Any:
        self.in_flight += 1
        try:
            loop = asyncio.get_running_loop()
            if not self.batching:
                return (await loop.run_in_executor(self._executor, _play, [(target, action, None)]))[0]
            future = loop.create_future()
            self._waiting.append((target, action, future))
            self._schedule()
            return await future
        finally:
            self.in_flight -= 1

    def _schedule(self) -> None:
        if self._busy:
            return  # the running batch's end starts the next one
        if len(self._waiting) >= max(1, self._open_sessions()) or self.window_s == 0:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.window_s, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._busy or not self._waiting:
            return
        batch, self._waiting = self._waiting, []
        self._busy = True
        steps = sum(action is not _CALL for _, action, _ in batch)
        if steps:
            self.batches += 1
            self.batched_steps += steps
        work = asyncio.get_running_loop().run_in_executor(self._executor, _play, batch)
        work.add_done_callback(lambda done: self._done(batch, done))

    def _done(self, batch: list[tuple[Any, Any, asyncio.Future]], done: asyncio.Future) -> None:
        self._busy = False
        error = done.exception()
        outcomes = [error] * len(batch) if error is not None else done.result()
        for (_, _, future), outcome in zip(batch, outcomes, strict=True):
            if not future.done():
                future.set_result(outcome)
        if self._waiting:  # messages that came while this batch played: at once if the window is over
            self._flush()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


#: The ``action`` of a queued call (a reset) rather than a step.
_CALL = object()


class _Raised:
    """A call's exception, carried as its outcome (a step's outcome may be an exception itself)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def _play(batch: list[tuple[Any, Any, Any]]) -> list[Any]:
    """The outcomes of a batch: its calls' results (or ``_Raised``), and its steps played by :func:`play_steps`."""
    outcomes: list[Any] = [None] * len(batch)
    steps = []
    for i, (target, action, _) in enumerate(batch):
        if action is _CALL:
            try:
                outcomes[i] = target()
            except Exception as error:
                outcomes[i] = _Raised(error)
        else:
            steps.append(i)
    for i, outcome in zip(steps, play_steps([batch[i][:2] for i in steps]), strict=True):
        outcomes[i] = outcome
    return outcomes
