"""``lm_gym/Remote-v0``: a served lm-gym task as a Gymnasium env, over OpenEnv's WebSocket protocol.

``gymnasium.make("lm_gym/Remote-v0", url="http://host:8000")`` (after ``import lm_gym.serve``)
opens one session of the server at ``url``; ``gymnasium.make_vec("lm_gym/Remote-v0", num_envs=N,
vectorization_mode="vector_entry_point", url=...)`` opens N sessions and steps them
concurrently, so the server plays their steps with one reward call. The task, its kwargs and
its action level are the server's (``env_id=`` and ``action_level=`` only check them). Seeds
pass through: a session reset with seed ``s`` plays the episode of a local env reset with ``s``;
the vector env seeds copy ``i`` with ``s + i`` and autoresets ``"NextStep"``, as lm-gym's native
vector envs do. Server errors come back as lm-gym's typed errors
(:func:`~lm_gym.serve.errors.error_from_reply`). A server with a token: ``token=...`` or the
``LM_GYM_SERVE_TOKEN`` environment variable (:mod:`lm_gym.serve.auth`), sent as
``Authorization: Bearer <token>`` with every request (``AuthenticationError`` when refused).

The messages are OpenEnv's (``{"type": "reset" | "step" | "state" | "close", "data": ...}`` on
``/ws``; replies ``{"type": "observation" | "state" | "error", "data": ...}``), sent with the
``websockets`` package on one background event loop per process.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Coroutine, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError, safe_repr
from lm_gym.core.text_env import checked_utterance
from lm_gym.core.token_level import checked_token_id
from lm_gym.core.validation import check_int, check_seed, is_integer
from lm_gym.core.vector import MAX_ENVS
from lm_gym.serve.auth import client_token
from lm_gym.serve.errors import AuthenticationError, RemoteError, SessionError, error_from_reply
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
    """``coroutine``'s result, run on the background loop; ``SessionError`` after ``timeout_s``.

    One timeout for the whole call (a vector step's requests share it), not one per request.
    """

    async def bounded() -> Any:
        return await asyncio.wait_for(coroutine, timeout_s)

    try:
        return asyncio.run_coroutine_threadsafe(bounded(), _event_loop()).result()
    except (asyncio.TimeoutError, TimeoutError):
        raise SessionError(f"the server did not answer within {timeout_s:g} s (timeout_s)") from None


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


def http_url(url: str) -> str:
    """The HTTP address of a server at ``url`` (``http://``, ``https://``, ``ws://`` or ``wss://``; ``/ws`` or not)."""
    scheme, _, rest = websocket_url(url).partition("://")
    return f"{'https' if scheme == 'wss' else 'http'}://{rest.removesuffix('/ws')}"


def auth_headers(token: str | None) -> dict[str, str]:
    """The headers that carry ``token`` (none without one)."""
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def http_request(url: str, path: str, timeout_s: float, body: Any = None, token: str | None = None) -> Any:
    """``GET`` (``body`` None) or ``POST`` (``body`` as JSON) of the server's ``path`` (with ``token``, if
    given): the reply's JSON, or its typed error raised (``error_type`` of the reply)."""
    request = urllib.request.Request(
        http_url(url) + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json", **auth_headers(token)},
        method="GET" if body is None else "POST",
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # as the WebSocket: no proxy
    try:
        with opener.open(request, timeout=timeout_s) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as error:
        try:
            data = json.loads(error.read())
        except ValueError:
            data = {}
        if error.code == 404 and not data.get("error_type"):
            raise RemoteError(f"{http_url(url)} has no {path} (is it an lm-gym server of this version?)") from None
        message = data.get("message") or data.get("detail") or f"HTTP {error.code}"
        reply = {"message": str(message), "error_type": data.get("error_type"), "code": error.code}
        raise error_from_reply(reply) from None
    except (OSError, ValueError) as error:
        raise SessionError(f"{http_url(url)}{path} did not answer: {type(error).__name__}: {error}") from error


def _split_urls(url: Any, split: str | None) -> Any:
    """``url``, or with a dict ``{split: url or urls}`` the entry of ``split``."""
    if not isinstance(url, dict):
        return url
    if split is None:
        raise ConfigurationError(f"url is a dict of splits {sorted(url)}: pass split= to pick one")
    if split not in url:
        raise ConfigurationError(f"split {split!r} was asked for, but url has only the splits {sorted(url)}")
    return url[split]


def _check_split(task: dict[str, Any], split: str | None, url: Any) -> None:
    """A requested ``split`` must be the one the server plays (a task without splits plays any)."""
    served = task.get("split")
    if split is None or served is None or split == served:
        return
    suggestion = "{" + ", ".join(f"{name!r}: ..." for name in dict.fromkeys(["train", "validation", split])) + "}"
    raise ConfigurationError(
        f"split {split!r} was asked for, but the server at {url} serves the split {served!r}: serve each split "
        f"(--env-kwargs '{{\"split\": ...}}') and pass url={suggestion}, one server per split"
    )


class Session:
    """One WebSocket session of an OpenEnv server (used on the background loop)."""

    def __init__(self, url: str, timeout_s: float, token: str | None = None):
        self.url = websocket_url(url)
        self.timeout_s = timeout_s
        self.token = token
        self.ws: Any = None

    async def open(self) -> Session:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus

        try:
            self.ws = await connect(
                self.url,
                open_timeout=self.timeout_s,
                max_size=None,
                proxy=None,
                additional_headers=auth_headers(self.token),
            )
        except InvalidStatus as error:
            if error.response.status_code != 401:
                raise SessionError(f"cannot connect to {self.url}: {error}") from error
            given = "its token was refused" if self.token else "it needs a token"
            raise AuthenticationError(
                f"{self.url} refused the connection: {given} (token= or the LM_GYM_SERVE_TOKEN environment variable)"
            ) from None
        except Exception as error:
            raise SessionError(f"cannot connect to {self.url}: {type(error).__name__}: {error}") from error
        return self

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message``; the reply's ``data``, or its typed error raised."""
        if self.ws is None:
            raise SessionError(f"the session with {self.url} is closed")
        try:
            await self.ws.send(json.dumps(message))
            reply = json.loads(await self.ws.recv())
        except asyncio.CancelledError:  # timed out: a late reply would answer the next request
            ws, self.ws = self.ws, None
            asyncio.ensure_future(ws.close())
            raise
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
    served_level = state.get("spaces", {}).get("action_level")
    if action_level is not None and action_level != served_level:
        raise ConfigurationError(f"action_level {action_level!r} was asked for, but the server serves {served_level!r}")


def _check_same_task(urls: list[str], states: list[dict[str, Any]]) -> None:
    """Servers behind one vector env must serve the same task (id, kwargs, level): equal ``task_digest``s."""
    first = states[0]
    for url, state in zip(urls[1:], states[1:], strict=True):
        if (state.get("task_digest"), state.get("spaces")) != (first.get("task_digest"), first.get("spaces")):
            raise ConfigurationError(
                f"the servers at {urls[0]} and {url} serve different tasks ({first.get('env_id')!r} and "
                f"{state.get('env_id')!r}, or the same id with other kwargs or action level); "
                "one vector env plays one task"
            )


def _urls(url: Any) -> list[str]:
    """``url`` (one address, or a list of them) as a list; each checked."""
    urls = [url] if isinstance(url, str) else list(url) if isinstance(url, (list, tuple)) else None
    if not urls:
        raise ConfigurationError(f"url must be an address or a non-empty list of addresses, got {safe_repr(url)}")
    for address in urls:
        websocket_url(address)
    return urls


class _Remote:
    """What the scalar and vector clients share: the spaces, action checks and reply decoding, and
    the task's attributes a trainer reads (from ``GET /lm-gym/task`` and the other ``/lm-gym`` routes,
    :mod:`lm_gym.serve.routes`)."""

    task_info: dict[str, Any]
    http_base: str
    token: str | None

    def _describe(self, state: dict[str, Any]) -> None:
        self.remote_env_id: str = state.get("env_id", "")
        self.spaces_description = state.get("spaces", {})
        self.action_level: str = self.spaces_description.get("action_level", "utterance")
        self._single_obs_space, self._single_act_space = build_spaces(self.spaces_description)
        self._vocab = self.spaces_description.get("vocab_size")

    def _read_task(self, url: str, split: str | None) -> None:
        """The task's description, read once; ``split`` checked against it."""
        self.http_base = url
        self.task_info = http_request(url, "/lm-gym/task", self.timeout_s, token=self.token)
        _check_split(self.task_info, split, url)

    @property
    def split(self) -> str | None:
        """The split the server plays (``None``: its task takes none)."""
        return self.task_info.get("split")

    @property
    def token_level_defaults(self) -> dict[str, Any]:
        """The served task's ``token_level_defaults`` (its protocol's prompt and utterance lengths)."""
        return dict(self.task_info.get("token_level_defaults") or {})

    @property
    def generation_defaults(self) -> dict[str, Any]:
        """The served task's ``generation_defaults`` (``min_new_tokens``)."""
        return dict(self.task_info.get("generation_defaults") or {})

    @property
    def single_turn(self) -> bool:
        """Whether the served task is single-turn (one prompt, one utterance, scored)."""
        return bool(self.task_info.get("single_turn"))

    def tokenizer_corpus(self) -> tuple[str, Any]:
        """The served task's tokenizer corpus ``(key, texts)``, fetched: the texts a local tokenizer trains
        on (a :class:`~lm_gym.core.tokenizer.StridedCorpus`), so ``lm_gym.core.registration.resolve_tokenizer``
        trains the tokenizer a local run of the task trains."""
        from lm_gym.core.tokenizer import StridedCorpus

        reply = http_request(self.http_base, "/lm-gym/tokenizer-corpus", self.timeout_s, token=self.token)
        return reply["key"], StridedCorpus(reply["texts"], reply["stride"])

    def corpus_metrics(
        self, episodes: Sequence[dict[str, Any]], language_model: Any = None, task: str | None = None
    ) -> dict[str, float]:
        """``lm_gym.metrics.corpus_metrics`` of the served task for ``episodes`` (final infos): the server
        computes the task's (with ``task``, those of a mixture's task); with ``language_model`` this
        process adds the perplexities of a single-turn task's utterances and references
        (``lm_gym.metrics.corpus.perplexity_metrics``). ``lm_gym.metrics.corpus_metrics(env, ...)``
        calls this for a remote env."""
        from lm_gym.serve.wire import to_json

        if not episodes:
            raise ConfigurationError("corpus_metrics needs at least one episode's final info")
        body = {"episodes": to_json(list(episodes)), "task": task}
        reply = http_request(self.http_base, "/lm-gym/corpus-metrics", self.timeout_s, body, self.token)
        results = {key: float("nan") if value is None else value for key, value in reply["metrics"].items()}
        if language_model is not None and reply.get("single_turn"):
            from lm_gym.metrics.corpus import perplexity_metrics

            results.update(perplexity_metrics(episodes, language_model))
        return results

    def _empty_observation(self) -> Any:
        if self.action_level == "utterance":
            return ""
        return {key: np.zeros(space.shape, dtype=np.int64) for key, space in self._single_obs_space.spaces.items()}

    def _action(self, action: Any) -> dict[str, Any]:
        """The step message's data; bad actions raise ``InvalidActionError`` before anything is sent."""
        if self.action_level == "token":
            return {"token": checked_token_id(action, self._vocab)}
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
        url: the server, e.g. ``"http://127.0.0.1:8000"``, or a dict ``{split: url}`` (one server per split).
        env_id: if given, the task the server must serve (else ``ConfigurationError``).
        action_level: if given, the action level the server must serve.
        timeout_s: how long to wait for the connection and for each reply.
        split: if given, the split the server must play (a task without splits plays any); with a
            dict ``url``, the split whose server to play.
        token: the server's bearer token (default: the ``LM_GYM_SERVE_TOKEN`` environment variable, if set).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        url: str | dict[str, str],
        env_id: str | None = None,
        action_level: str | None = None,
        timeout_s: float = 60.0,
        split: str | None = None,
        token: str | None = None,
    ):
        self.timeout_s = float(timeout_s)
        self.token = client_token(token)
        url = _split_urls(url, split)
        if not isinstance(url, str):
            raise ConfigurationError(f"url must be an address such as 'http://127.0.0.1:8000', got {safe_repr(url)}")
        self.session = Session(url, self.timeout_s, self.token)
        _run(self.session.open(), self.timeout_s)
        try:
            state = _run(self.session.request({"type": "state"}), self.timeout_s)
            _check_server(state, env_id, action_level)
            self._read_task(url, split)
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
    """``num_envs`` sessions of the servers at ``url``, stepped concurrently (``lm_gym/Remote-v0``'s vector form).

    ``url`` is one server or a list of servers (one per host, say) serving the same task with
    the same kwargs and action level (checked: their ``task_digest``); session ``i`` lives on
    ``url[i % len(url)]``. Seeding and autoreset as lm-gym's native vector envs:
    ``reset(seed=s)`` seeds copy ``i`` with ``s + i``; ``autoreset_mode`` ``"NextStep"`` (the
    default: the step after an episode ends resets that copy, reward 0), ``"SameStep"`` (the
    step that ends an episode resets it; ``info["final_obs"]`` and ``info["final_info"]`` hold
    the end) or ``"Disabled"`` (reset ended copies with ``reset(options={"reset_mask": mask})``).
    Utterance level: observations are a tuple of ``str``; token level: a dict of stacked arrays.

    ``split``: the split the servers must play (``ConfigurationError`` naming both when they play
    another; a task without splits plays any); ``url`` may be a dict ``{split: url or urls}``, one
    set of servers per split, of which ``split`` picks one. The task's attributes a trainer reads
    come from the server: ``token_level_defaults``, ``generation_defaults``, ``single_turn``,
    ``tokenizer_corpus()`` and ``corpus_metrics(episodes)``. ``token``: the servers' bearer token
    (default: the ``LM_GYM_SERVE_TOKEN`` environment variable, if set).
    """

    def __init__(
        self,
        num_envs: int = 1,
        url: str | Sequence[str] | dict[str, str | Sequence[str]] = "",
        env_id: str | None = None,
        action_level: str | None = None,
        timeout_s: float = 60.0,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        split: str | None = None,
        token: str | None = None,
    ):
        self.num_envs = check_int("num_envs", num_envs, 1, MAX_ENVS)
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except (TypeError, ValueError):
            raise ConfigurationError(
                f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {safe_repr(autoreset_mode)}"
            ) from None
        self.metadata = {"render_modes": [], "autoreset_mode": self.autoreset_mode}
        self.urls = _urls(_split_urls(url, split))
        self.timeout_s = float(timeout_s)
        self.token = client_token(token)
        self.sessions = [
            Session(self.urls[i % len(self.urls)], self.timeout_s, self.token) for i in range(self.num_envs)
        ]
        self._needs_reset = np.ones(self.num_envs, dtype=bool)
        self._reset_called = False
        try:
            self._gather([session.open() for session in self.sessions])
            first = self.sessions[: len(self.urls)]  # one session on each server
            states = self._gather([session.request({"type": "state"}) for session in first])
            _check_server(states[0], env_id, action_level)
            _check_same_task(self.urls, states)
            self._read_task(self.urls[0], split)
        except BaseException:
            self.close_extras()
            raise
        self._describe(states[0])
        self.single_observation_space, self.single_action_space = self._single_obs_space, self._single_act_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        #: Each copy's last observation (a copy not reset yet: an empty one).
        self._observations: list[Any] = [self._empty_observation()] * self.num_envs

    def _gather(self, coroutines: list[Coroutine]) -> list[Any]:
        """Run ``coroutines`` concurrently (one timeout for all); raise the first error after all of them finished."""

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
        options = dict(options) if isinstance(options, dict) else options
        reset_mask = np.ones(self.num_envs, dtype=bool)
        if isinstance(options, dict) and "reset_mask" in options:
            reset_mask = options.pop("reset_mask")
            if not (
                isinstance(reset_mask, np.ndarray) and reset_mask.dtype == bool and reset_mask.shape == (self.num_envs,)
            ):
                raise ConfigurationError(
                    f"options['reset_mask'] must be a bool NumPy array of shape ({self.num_envs},), "
                    f"got {safe_repr(reset_mask)}"
                )
            options = options or None
        seeds = self._seeds(seed)
        resets = np.flatnonzero(reset_mask)
        replies = self._gather([self.sessions[i].request(_reset_message(seeds[i], options)) for i in resets])
        infos: dict[str, Any] = {}
        for i, reply in zip(resets, replies, strict=True):
            obs, _, _, _, info = self._decode(reply)
            self._observations[i] = obs
            self._needs_reset[i] = False
            infos = self._add_info(infos, info, i)
        self._reset_called = True
        return self._batch(self._observations), infos

    def step(self, actions: Sequence[Any]):
        if not self._reset_called:
            raise ResetNeededError("RemoteVectorEnv.step() called before reset(); call reset() first")
        if self.autoreset_mode == AutoresetMode.DISABLED and self._needs_reset.any():
            raise ResetNeededError(
                f"envs {np.flatnonzero(self._needs_reset).tolist()} finished their episodes; with autoreset_mode "
                "'Disabled' call reset(options={'reset_mask': mask}) first"
            )
        if isinstance(actions, np.ndarray):
            actions = list(actions)
        if not isinstance(actions, (list, tuple)) or len(actions) != self.num_envs:
            raise InvalidActionError(
                f"actions must be a list, tuple or array of {self.num_envs} actions, got {safe_repr(actions)}"
            )
        data = [self._action(action) for action in actions]  # every action checked before any is sent
        autoreset = self._needs_reset.copy()
        replies = self._gather(
            [
                session.request(_reset_message(None, None) if autoreset[i] else {"type": "step", "data": data[i]})
                for i, session in enumerate(self.sessions)
            ]
        )
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any]] = []
        for i, reply in enumerate(replies):
            obs, reward, terminated, truncated, info = self._decode(reply)
            if not autoreset[i]:
                rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            self._observations[i] = obs
            infos.append(info)
        ended = np.flatnonzero(terminations | truncations)
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.size:
            resets = self._gather([self.sessions[i].request(_reset_message(None, None)) for i in ended])
            for i, reply in zip(ended, resets, strict=True):
                obs, _, _, _, reset_info = self._decode(reply)
                final_obs, self._observations[i] = self._observations[i], obs
                infos[i] = {**reset_info, "final_obs": final_obs, "final_info": infos[i]}
        self._needs_reset = (terminations | truncations) & (self.autoreset_mode != AutoresetMode.SAME_STEP)
        vector_infos: dict[str, Any] = {}
        for i, info in enumerate(infos):
            vector_infos = self._add_info(vector_infos, info, i)
        return self._batch(self._observations), rewards, terminations, truncations, vector_infos

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
