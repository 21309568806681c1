"""Completions from any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, a hosted API), many at once.

    with CompletionClient(base_url="http://localhost:8000/v1", model="Qwen/Qwen3-0.6B", cache_dir=Path("c")) as client:
        completions = client.complete([CompletionRequest(messages=(...,), temperature=1.0, top_p=1.0, max_tokens=64)])

It talks through the official ``openai`` package (``pip install "lm-gym[evaluate-server]"``), with
the retry policy its own: at most ``concurrency`` requests in flight; 408, 409, 429, 5xx, timeouts
and dropped connections retried with exponential backoff and jitter (at least what a
``Retry-After`` asks) up to ``max_retries`` times, then a :class:`ServerError` naming the URL, the
model and the last failure. A reply without a text (malformed JSON, no choices, no content) or a
request the server refuses (400) is no exception: its :class:`Completion` has an empty text and
the reason in ``error``, and it is not cached, so a rerun asks again. Every text the server gives
is cached on disk (:mod:`benchmark.evaluation.completion_cache`) as it arrives, keyed by the
server, the model, the API, the prompt, the sampling settings and the sample index: a rerun of a
finished evaluation asks nothing, and one stopped at any point asks only for the rest. A client
keeps its connections, and its check of the server (``GET /models``, once), from one call of
:meth:`~CompletionClient.complete` to the next until it is closed (``close()``, or a ``with`` block).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import random
import urllib.parse
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchmark.evaluation.completion_cache import CompletionCache
from lm_gym.core.errors import LMGymError, require_extra

try:
    import openai
except ModuleNotFoundError:  # an optional extra: CompletionClient says how to install it
    openai = None

logger = logging.getLogger(__name__)

APIS = ("chat", "completions")
#: Statuses retried besides 5xx (as openai's own client does): request timeout, conflict, rate limited.
RETRIED_STATUSES = (408, 409, 429)
#: The longest wait a server's ``Retry-After`` may impose before one retry.
MAX_RETRY_AFTER_S = 120.0


@dataclass(frozen=True, kw_only=True)
class CompletionRequest:
    """One sample to ask for: chat ``messages`` (the chat API) or a ``prompt`` (the completions API).

    ``sample_index`` is which of the samples of the same prompt this is: it is part of the cache
    key and of the request's ``seed`` (:func:`request_seed`), so the samples differ and each is the
    same again on a server that honours seeds.
    """

    messages: tuple[dict[str, Any], ...] | None = None
    prompt: str | None = None
    temperature: float
    top_p: float
    max_tokens: int
    sample_index: int = 0
    stop: tuple[str, ...] = ()


@dataclass
class Asked:
    """A distinct request still to ask the server, and the positions in the caller's list it answers."""

    key: str
    request_json: str
    request: CompletionRequest
    indices: list[int] = field(default_factory=list)


@dataclass
class Completion:
    """A request's text; ``error`` says why the text is empty when the server gave none (not cached then)."""

    text: str
    error: str | None = None
    cached: bool = False


class ServerError(LMGymError, ConnectionError):
    """The server cannot be used: nobody answers at the URL, it refused the key, or a request failed every retry."""


class ModelNotServedError(ServerError):
    """The server does not serve the model asked for."""


def request_seed(request: CompletionRequest) -> int:
    """The ``seed`` sent with a request: a hash of its prompt (or messages) and its sample index, below 2**31.

    Not the sample index alone: sample ``k`` of every prompt would then draw the same random numbers,
    and a model's samples of different prompts would be correlated (a tiny random model's would be the
    same text)."""
    asked = [request.prompt, None if request.messages is None else list(request.messages), request.sample_index]
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True, ensure_ascii=False).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def backoff_delay(retry: int, backoff_s: float, max_backoff_s: float, rng: random.Random) -> float:
    """The wait before retry ``retry`` (0-based): half of ``backoff_s * 2**retry`` (at most ``max_backoff_s``)
    plus a random part up to the other half, so that clients failing together do not retry together."""
    ceiling = min(max_backoff_s, backoff_s * 2**retry)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def retry_after_s(error: Exception) -> float:
    """The wait the server asked for in a reply's ``retry-after-ms`` or ``retry-after`` (in seconds), else 0."""
    response = getattr(error, "response", None)
    if response is None:
        return 0.0
    for header, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            return min(MAX_RETRY_AFTER_S, max(0.0, float(response.headers[header]) * scale))
        except (KeyError, ValueError):  # absent, or an HTTP date: the backoff decides
            continue
    return 0.0


def describe_failure(error: Exception, timeout_s: float) -> str:
    """A failed attempt in a few words: the status and the server's message, or what happened to the connection."""
    if isinstance(error, openai.APIStatusError):  # the server's own message where its body has one
        body = error.body if isinstance(error.body, dict) else {}
        return f"HTTP {error.status_code}: {body.get('message') or error.message}"
    root = error
    while root.__cause__ is not None:
        root = root.__cause__
    # the transport's own error: openai's aiohttp transport reports a refused connection as a timeout
    if isinstance(error, openai.APITimeoutError) and "Timeout" in type(root).__name__:
        return f"no reply within {timeout_s:g} s"
    return str(error) if root is error else f"{type(root).__name__}: {root}"


class CompletionClient:
    """Completions of one model from one OpenAI-compatible server, ``concurrency`` at a time, cached on disk.

    Args:
        base_url: the server's API root, e.g. ``http://localhost:8000/v1`` (vLLM), ``http://localhost:11434/v1``
            (Ollama), ``https://api.openai.com/v1``.
        model: the model's name as the server knows it (``GET {base_url}/models`` lists them).
        api: ``"chat"`` (``/chat/completions``: requests with messages) or ``"completions"`` (``/completions``:
            requests with a prompt, for base models).
        api_key: the key sent as ``Authorization: Bearer``; local servers take any (``"EMPTY"``).
        concurrency: the most requests in flight at once.
        timeout_s: how long one attempt may wait for its reply.
        max_retries: retries of a request after its first attempt, for 408, 409, 429, 5xx, timeouts and
            dropped connections.
        cache_dir: the folder of the completion cache; ``None`` caches nothing.
        backoff_s: the first retry waits between half of it and all of it; each further retry twice as long.
        max_backoff_s: the longest wait between two attempts of the backoff (a ``Retry-After`` may ask more).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api: Literal["chat", "completions"] = "chat",
        api_key: str = "EMPTY",
        concurrency: int = 32,
        timeout_s: float = 60.0,
        max_retries: int = 5,
        cache_dir: Path | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
    ):
        require_extra("evaluate-server", "talking to an OpenAI-compatible server", "openai")
        parts = urllib.parse.urlsplit(base_url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http(s) URL such as http://localhost:8000/v1, got {base_url!r}")
        if not model:
            raise ValueError("model must name the model the server serves (GET {base_url}/models lists them)")
        if api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")
        for name, value in (("concurrency", concurrency), ("max_retries", max_retries)):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "concurrency" else 0):
                raise ValueError(f"{name} must be an integer >= {1 if name == 'concurrency' else 0}, got {value!r}")
        for name, value in (("timeout_s", timeout_s), ("backoff_s", backoff_s), ("max_backoff_s", max_backoff_s)):
            if not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api = api
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.rng = random.Random()
        #: the models ``GET /models`` listed at the first call that asked the server (None: it lists none)
        self.served_models: list[str] | None = None
        # kept from call to call, so a caller asking turn by turn reuses the server's connections and
        # checks it once: the event loop they live in, openai's client, the cache; close() ends them
        self.loop: asyncio.AbstractEventLoop | None = None
        self.openai_client = None
        self.cache: CompletionCache | None = None
        self.server_checked = False

    def __enter__(self) -> CompletionClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections to the server and the cache; the next :meth:`complete` opens them again."""
        if self.openai_client is not None:
            self.run(self.openai_client.close())
            self.openai_client = None
        if self.loop is not None:
            self.loop.close()
            self.loop = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None
        self.server_checked = False

    def request_key(self, request: CompletionRequest) -> tuple[str, str]:
        """``(key, request_json)``: the request with the server, model and API, as canonical JSON, and its SHA-256."""
        asked = {
            "base_url": self.base_url,
            "model": self.model,
            "api": self.api,
            "messages": None if request.messages is None else list(request.messages),
            "prompt": request.prompt,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "stop": list(request.stop),
            "sample_index": request.sample_index,
        }
        request_json = json.dumps(asked, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(request_json.encode("utf-8")).hexdigest(), request_json

    def complete(
        self, requests: Sequence[CompletionRequest], on_done: Callable[[int, int], None] | None = None
    ) -> list[Completion]:
        """The completion of each request, in the order of ``requests``.

        ``on_done(n_done, n_total)`` is called as completions arrive (cached ones first, at once), e.g. to
        advance a progress bar. Raises :class:`ServerError` (:class:`ModelNotServedError` for a model the
        server does not serve); what was answered before is in the cache then.
        """
        for index, request in enumerate(requests):
            self.check_request(index, request)
        return self.run(self.complete_all(requests, on_done))

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coroutine`` to its end in this client's event loop: in this thread, or in a thread of its own
        where this thread already runs a loop (a notebook)."""
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.loop.run_until_complete(coroutine)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
            return executor.submit(self.loop.run_until_complete, coroutine).result()

    def check_request(self, index: int, request: CompletionRequest) -> None:
        if not isinstance(request, CompletionRequest):
            raise TypeError(f"requests[{index}] must be a CompletionRequest, got {type(request).__name__}")
        if self.api == "chat" and (request.messages is None or request.prompt is not None):
            raise ValueError(f"requests[{index}]: the chat API takes messages (and no prompt)")
        if self.api == "completions" and (request.prompt is None or request.messages is not None):
            raise ValueError(f"requests[{index}]: the completions API takes a prompt (and no messages)")
        if isinstance(request.max_tokens, bool) or not isinstance(request.max_tokens, int) or request.max_tokens < 1:
            raise ValueError(f"requests[{index}].max_tokens must be a positive integer, got {request.max_tokens!r}")

    async def complete_all(
        self, requests: Sequence[CompletionRequest], on_done: Callable[[int, int], None] | None
    ) -> list[Completion]:
        total = len(requests)
        results: list[Completion | None] = [None] * total
        asked: dict[str, Asked] = {}  # identical requests (same key) are asked once
        for index, request in enumerate(requests):
            key, request_json = self.request_key(request)
            asked.setdefault(key, Asked(key, request_json, request)).indices.append(index)
        if self.cache_dir is not None and self.cache is None:
            self.cache = CompletionCache(self.cache_dir)
        for key, text in ({} if self.cache is None else self.cache.texts(asked)).items():
            for index in asked.pop(key).indices:
                results[index] = Completion(text, cached=True)
        done = total - sum(len(pending.indices) for pending in asked.values())
        if on_done and done:
            on_done(done, total)
        if not asked:
            return results
        if self.openai_client is None:
            self.openai_client = (
                openai.AsyncOpenAI(  # max_retries=0: the retry policy is this module's, so it is tested
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout_s,
                    max_retries=0,
                    http_client=aiohttp_transport(),
                )
            )
        if not self.server_checked:
            self.served_models = await self.listed_models(self.openai_client)
            self.server_checked = True
        slots = asyncio.Semaphore(self.concurrency)

        async def ask(pending: Asked) -> None:
            nonlocal done
            async with slots:
                completion = await self.ask_with_retries(self.openai_client, pending.request)
            if self.cache is not None and completion.error is None:
                self.cache.put(pending.key, pending.request_json, completion.text)
            for index in pending.indices:
                results[index] = completion
            done += len(pending.indices)
            if on_done:
                on_done(done, total)

        tasks = [asyncio.ensure_future(ask(pending)) for pending in asked.values()]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # a ServerError, or cancelled: the other requests stop too
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return results

    async def listed_models(self, client) -> list[str] | None:
        """The model ids ``GET /models`` lists (``None`` where the server does not list them); before any
        completion is asked, so a server that is down fails at once, naming the URL."""
        try:
            page = await self.with_retries(client.models.list, retry_connection_errors=False)
        except openai.APIConnectionError as error:
            raise ServerError(
                f"no server answers at {self.base_url} ({describe_failure(error, self.timeout_s)}): start it, "
                "or check the URL (an OpenAI-compatible server's API root usually ends in /v1)"
            ) from error
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise self.refused_key(error) from error
        except openai.APIStatusError:  # e.g. 404: the server lists no models; the completions will tell
            return None
        return [model.id for model in getattr(page, "data", None) or []]

    async def with_retries(self, call: Callable[[], Coroutine[Any, Any, Any]], retry_connection_errors: bool = True):
        """``await call()``, retried on 408, 409, 429, 5xx and (with ``retry_connection_errors``) timeouts and
        dropped connections; after the last retry a :class:`ServerError`. Other errors pass through."""
        for retry in range(self.max_retries + 1):
            try:
                return await call()
            except openai.APIStatusError as error:
                if error.status_code not in RETRIED_STATUSES and error.status_code < 500:
                    raise
                failure = error
            except openai.APIConnectionError as error:  # timeouts included
                if not retry_connection_errors:
                    raise
                failure = error
            if retry < self.max_retries:
                delay = max(backoff_delay(retry, self.backoff_s, self.max_backoff_s, self.rng), retry_after_s(failure))
                logger.info(
                    "%s: %s; retry %d of %d in %.2f s",
                    self.base_url,
                    describe_failure(failure, self.timeout_s),
                    retry + 1,
                    self.max_retries,
                    delay,
                )
                await asyncio.sleep(delay)
        raise ServerError(
            f"the server at {self.base_url} failed for model {self.model!r} after {self.max_retries + 1} attempts; "
            f"the last: {describe_failure(failure, self.timeout_s)} (what was answered before is cached: run again "
            "to resume)"
        ) from failure

    async def ask_with_retries(self, client, request: CompletionRequest) -> Completion:
        """One request's completion; a reply without text, or a request the server refuses, has an error."""
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "seed": request_seed(request),
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if self.api == "chat":
            body["messages"] = list(request.messages)
        else:
            body["prompt"] = request.prompt
        path = "/chat/completions" if self.api == "chat" else "/completions"

        # openai's generic post, the reply as bytes: the same client, errors and status handling as
        # chat.completions.create, without its typed-parameter walk and its reply model, which took
        # half of the CPU time of a request (benchmark/perf/server_requests.py)
        def call():
            return client.post(path, body=body, cast_to=bytes)

        try:
            reply = await self.with_retries(call)
        except openai.NotFoundError as error:
            raise self.not_served(error) from error
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise self.refused_key(error) from error
        except openai.APIStatusError as error:  # 400, 413, 422...: this request, not the server
            return Completion("", f"refused: {describe_failure(error, self.timeout_s)}")
        return self.completion_of(reply)

    def completion_of(self, reply: bytes) -> Completion:
        """The text of a reply; a reply that is not JSON, or has no choice or no text, is an empty Completion
        with the reason."""
        try:
            parsed = json.loads(reply)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return Completion("", f"malformed reply: {error}")
        choices = parsed.get("choices") if isinstance(parsed, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            return Completion("", "empty reply: no choices")
        choice = choices[0]
        message = choice.get("message")
        if self.api == "chat":
            text = message.get("content") if isinstance(message, dict) else None
        else:
            text = choice.get("text")
        if not isinstance(text, str):
            return Completion("", f"empty reply: no text (finish_reason {choice.get('finish_reason')!r})")
        return Completion(text)

    def not_served(self, error: Exception) -> ServerError:
        """The error for a 404 on a completion: the model is not served, or (when it is listed) the API is not."""
        endpoint = "/chat/completions" if self.api == "chat" else "/completions"
        failure = describe_failure(error, self.timeout_s)
        if self.served_models and self.model in self.served_models:
            other = "completions" if self.api == "chat" else "chat"
            return ServerError(
                f"{self.base_url}{endpoint} answered {failure}, though the server lists model {self.model!r}: it may "
                f"not offer the {self.api} API for it (try the {other} API)"
            )
        if self.served_models is None:
            listed = f"it does not list its models at {self.base_url}/models (is the URL its API root, e.g. .../v1?)"
        else:
            listed = f"it serves: {', '.join(self.served_models) or 'no model'}"
        return ModelNotServedError(
            f"the server at {self.base_url} does not serve model {self.model!r} ({failure}); {listed}"
        )

    def refused_key(self, error: Exception) -> ServerError:
        return ServerError(
            f"the server at {self.base_url} refused the API key for model {self.model!r} "
            f"({describe_failure(error, self.timeout_s)})"
        )


def aiohttp_transport():
    """openai's aiohttp transport, where this openai has it (``openai[aiohttp]``; 3.x needs only aiohttp), else
    ``None``: its default, httpx, which spends about twice the CPU time a request (benchmark/perf/server_requests)."""
    try:
        return openai.DefaultAioHttpClient()
    except (AttributeError, RuntimeError):  # an openai without it, or without its packages
        return None
