"""``lm_gym/Remote-v0``: a served lm-gym task as a Gymnasium env, over OpenEnv's WebSocket protocol.

``gymnasium.make("lm_gym/Remote-v0", url="http://host:8000")`` (after ``import lm_gym.serve``)
opens one session of the server at ``url``; ``gymnasium.make_vec("lm_gym/Remote-v0", num_envs=N,
vectorization_mode="vector_entry_point", url=...)`` opens N sessions and steps them
concurrently, so the server plays their steps with one reward call. The task, its kwargs and
its action level are the server's (``env_id=`` and ``action_level=`` only check them). Seeds
pass through: a session reset with seed ``s`` plays the episode of a local env reset with ``s``;
the vector env seeds copy ``i`` with ``s + i`` and autoresets ``"NextStep"``, as lm-gym's native
vector envs do. Server errors come back as lm-gym's typed errors
(:func:`~lm_gym.serve.errors.error_from_reply`).

The messages are OpenEnv's (``{"type": "reset" | "step" | "state" | "close", "data": ...}`` on
``/ws``; replies ``{"type": "observation" | "state" | "error", "data": ...}``), sent with the
``websockets`` package on one background event loop per process.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import ConfigurationError, InvalidActionError, safe_repr
from lm_gym.core.text_env import checked_utterance
from lm_gym.core.validation import check_int, check_seed, is_integer
from lm_gym.core.vector import MAX_ENVS
from lm_gym.serve.errors import LMGymError, SessionError, error_from_reply
from lm_gym.serve.wire import build_spaces, decode_info, token_observation

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _event_loop() -> asyncio.AbstractEventLoop:
    """The process's background event loop of client connections (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="lm-gym-remote", daemon=True).start()
        return _loop


def _run(coroutine: Coroutine, timeout_s: float) -> Any:
    return asyncio.run_coroutine_threadsafe(coroutine, _event_loop()).result(timeout_s + 5)


def websocket_url(url: str) -> str:
    """The ``/ws`` address of a server at ``url`` (``http://``, ``https://``, ``ws://`` or ``wss://``)."""
    if not isinstance(url, str) or "://" not in url:
        raise ConfigurationError(f"url must be an address such as 'http://127.0.0.1:8000', got {safe_repr(url)}")
    scheme, _, rest = url.partition("://")
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(scheme.lower())
    if scheme is None:
        raise ConfigurationError(f"url must start with http://, https://, ws:// or wss://, got {safe_repr(url)}")
    rest = rest.rstrip("/")
    return f"{scheme}://{rest}" if rest.endswith("/ws") else f"{scheme}://{rest}/ws"


class Session:
    """One WebSocket session of an OpenEnv server (used on the background loop)."""

    def __init__(self, url: str, timeout_s: float):
        self.url = websocket_url(url)
        self.timeout_s = timeout_s
        self.ws: Any = None

    async def open(self) -> Session:
        from websockets.asyncio.client import connect

        try:
            self.ws = await connect(self.url, open_timeout=self.timeout_s, max_size=None, proxy=None)
        except Exception as error:
            raise SessionError(f"cannot connect to {self.url}: {type(error).__name__}: {error}") from error
        return self

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message``; the reply's ``data``, or its typed error raised."""
        if self.ws is None:
            raise SessionError(f"the session with {self.url} is closed")
        try:
            await self.ws.send(json.dumps(message))
            reply = json.loads(await asyncio.wait_for(self.ws.recv(), self.timeout_s))
        except Exception as error:
            self.ws = None
            raise SessionError(f"the session with {self.url} ended: {type(error).__name__}: {error}") from error
        if reply.get("type") == "error":
            raise error_from_reply(reply.get("data", {}))
        return reply.get("data", {})

    async def close(self) -> None:
        ws, self.ws = self.ws, None
        if ws is not None:
            try:
                await ws.send(json.dumps({"type": "close"}))
                await ws.close()
            except Exception:  # the server may be gone already
                pass


def _check_server(state: dict[str, Any], env_id: str | None, action_level: str | None) -> None:
    served = state.get("env_id")
    if env_id is not None and env_id.rpartition(":")[2] != served:
        raise ConfigurationError(f"env_id {env_id!r} was asked for, but the server serves {served!r}")
    if action_level is not None and action_level != state.get("spaces", {}).get("action_level"):
        raise ConfigurationError(
            f"action_level {action_level!r} was asked for, but the server serves {state.get('action_level')!r}"
        )


class _Remote:
    """What the scalar and vector clients share: the spaces, action checks and reply decoding."""

    def _describe(self, state: dict[str, Any]) -> None:
        self.remote_env_id: str = state.get("env_id", "")
        self.spaces_description = state.get("spaces", {})
        self.action_level: str = self.spaces_description.get("action_level", "utterance")
        self._single_obs_space, self._single_act_space = build_spaces(self.spaces_description)
        self._vocab = self.spaces_description.get("vocab_size")

    def _action(self, action: Any) -> dict[str, Any]:
        """The step message's data; bad actions raise ``InvalidActionError`` before anything is sent."""
        if self.action_level == "token":
            if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
                action = action.reshape(()).item()
            if not is_integer(action):
                raise InvalidActionError(
                    f"action must be an integer token id, got {type(action).__name__}: {safe_repr(action)}"
                )
            if not 0 <= action < self._vocab:
                raise InvalidActionError(
                    f"token id {int(action)} is out of range; the action space is Discrete({self._vocab})"
                )
            return {"token": int(action)}
        checked_utterance(action, self._single_act_space.max_length)
        return {"text": action}

    def _decode(self, data: dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation = data.get("observation", {})
        obs = observation.get("text", "") if self.action_level == "utterance" else token_observation(observation)
        reward = data.get("reward")
        info = decode_info(observation.get("info", {}), self._vocab)
        return obs, float(reward or 0.0), bool(observation.get("terminated")), bool(observation.get("truncated")), info


def _reset_message(seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if seed is not None:
        data["seed"] = seed
    if options is not None:
        data["options"] = options
    return {"type": "reset", "data": data}


class RemoteEnv(_Remote, gymnasium.Env):
    """One session of the lm-gym server at ``url`` as a Gymnasium env (``lm_gym/Remote-v0``).

    Args:
        url: the server, e.g. ``"http://127.0.0.1:8000"``.
        env_id: if given, the task the server must serve (else ``ConfigurationError``).
        action_level: if given, the action level the server must serve.
        timeout_s: how long to wait for the connection and for each reply.
    """

    metadata = {"render_modes": []}

    def __init__(self, url: str, env_id: str | None = None, action_level: str | None = None, timeout_s: float = 60.0):
        self.timeout_s = float(timeout_s)
        self.session = Session(url, self.timeout_s)
        _run(self.session.open(), self.timeout_s)
        try:
            state = _run(self.session.request({"type": "state"}), self.timeout_s)
            _check_server(state, env_id, action_level)
        except BaseException:
            self.close()
            raise
        self._describe(state)
        self.observation_space, self.action_space = self._single_obs_space, self._single_act_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = check_seed(seed)
        super().reset(seed=seed)
        obs, _, _, _, info = self._decode(_run(self.session.request(_reset_message(seed, options)), self.timeout_s))
        return obs, info

    def step(self, action: Any):
        data = self._action(action)
        return self._decode(_run(self.session.request({"type": "step", "data": data}), self.timeout_s))

    def close(self) -> None:
        session = getattr(self, "session", None)
        if session is not None and session.ws is not None:
            try:
                _run(session.close(), 5.0)
            except Exception:  # closing a connection that is gone
                pass


class RemoteVectorEnv(_Remote, VectorEnv):
    """``num_envs`` sessions of the server at ``url``, stepped concurrently (``lm_gym/Remote-v0``'s vector form).

    Seeding and autoreset as lm-gym's native vector envs: ``reset(seed=s)`` seeds copy ``i`` with
    ``s + i``; ``"NextStep"`` autoreset (the step after an episode ends resets that copy, reward
    0). Utterance level: observations are a tuple of ``str``; token level: a dict of stacked arrays.
    """

    metadata = {"render_modes": [], "autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        url: str = "",
        env_id: str | None = None,
        action_level: str | None = None,
        timeout_s: float = 60.0,
        autoreset_mode: str = "NextStep",
    ):
        self.num_envs = check_int("num_envs", num_envs, 1, MAX_ENVS)
        if autoreset_mode != "NextStep":
            raise ConfigurationError(f"lm_gym/Remote-v0's vector env autoresets 'NextStep', got {autoreset_mode!r}")
        self.timeout_s = float(timeout_s)
        self.sessions = [Session(url, self.timeout_s) for _ in range(self.num_envs)]
        self._needs_reset = np.ones(self.num_envs, dtype=bool)
        self._reset_called = False
        try:
            self._gather([session.open() for session in self.sessions])
            state = _run(self.sessions[0].request({"type": "state"}), self.timeout_s)
            _check_server(state, env_id, action_level)
        except BaseException:
            self.close_extras()
            raise
        self._describe(state)
        self.single_observation_space, self.single_action_space = self._single_obs_space, self._single_act_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def _gather(self, coroutines: list[Coroutine]) -> list[Any]:
        """Run ``coroutines`` concurrently; raise the first typed error after all of them finished."""

        async def gather() -> list[Any]:
            return await asyncio.gather(*coroutines, return_exceptions=True)

        results = _run(gather(), self.timeout_s)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    def _seeds(self, seed: Any) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if is_integer(seed):
            return [check_seed(seed) + i for i in range(self.num_envs)]
        if isinstance(seed, (list, tuple, np.ndarray)) and len(seed) == self.num_envs:
            return [check_seed(s) for s in seed]
        raise ConfigurationError(
            f"seed must be None, a non-negative int or a list of {self.num_envs} such seeds, got {safe_repr(seed)}"
        )

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        seeds = self._seeds(seed)
        replies = self._gather(
            [session.request(_reset_message(s, options)) for session, s in zip(self.sessions, seeds, strict=True)]
        )
        decoded = [self._decode(reply) for reply in replies]
        self._needs_reset[:] = False
        self._reset_called = True
        infos: dict[str, Any] = {}
        for i, (_, _, _, _, info) in enumerate(decoded):
            infos = self._add_info(infos, info, i)
        return self._batch([d[0] for d in decoded]), infos

    def step(self, actions: Sequence[Any]):
        if not self._reset_called:
            raise LMGymError("RemoteVectorEnv.step() called before reset(); call reset() first")
        if isinstance(actions, np.ndarray):
            actions = list(actions)
        if not isinstance(actions, (list, tuple)) or len(actions) != self.num_envs:
            raise InvalidActionError(
                f"actions must be a list, tuple or array of {self.num_envs} actions, got {safe_repr(actions)}"
            )
        data = [self._action(action) for action in actions]  # every action checked before any is sent
        requests = [
            session.request(_reset_message(None, None) if self._needs_reset[i] else {"type": "step", "data": data[i]})
            for i, session in enumerate(self.sessions)
        ]
        replies = self._gather(requests)
        observations, infos = [], {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        for i, reply in enumerate(replies):
            obs, reward, terminated, truncated, info = self._decode(reply)
            if not self._needs_reset[i]:
                rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            observations.append(obs)
            infos = self._add_info(infos, info, i)
        self._needs_reset = terminations | truncations
        return self._batch(observations), rewards, terminations, truncations, infos

    def _batch(self, observations: list[Any]) -> Any:
        if self.action_level == "utterance":
            return tuple(observations)
        return {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}

    def close_extras(self, **kwargs: Any) -> None:
        sessions = [session for session in getattr(self, "sessions", []) if session.ws is not None]
        if sessions:
            try:
                self._gather([session.close() for session in sessions])
            except Exception:  # closing connections that are gone
                pass
