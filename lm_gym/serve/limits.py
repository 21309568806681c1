"""An ASGI layer in front of OpenEnv's app: the server's limits, and typed error replies.

For every WebSocket message it enforces the message size (``max_message_bytes``; uvicorn's
own cap, a few times larger, closes the connection), the per-session rate
(``max_steps_per_s``), the idle timeout (``idle_timeout_s``: the session gets a
``SessionError`` reply and is closed, which frees it) and the shutdown (new messages get
``ServerShuttingDownError``). A refused message gets an error reply in OpenEnv's format and the
session goes on. It adds ``data["error_type"]`` to every error reply
(:func:`~lm_gym.serve.errors.error_type_of`). HTTP bodies over the size limit get ``413``.
``POST /mcp`` gets lm-gym's stateless JSON-RPC answer (:mod:`lm_gym.serve.mcp`), never OpenEnv's MCP server.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lm_gym import __version__
from lm_gym.serve.errors import error_type_of
from lm_gym.serve.mcp import answer_mcp

Scope = dict[str, Any]
Message = dict[str, Any]
#: OpenEnv's MCP endpoint (its session methods could close other sessions): HTTP gets lm-gym's own
#: session-free JSON-RPC answer, the WebSocket is refused.
MCP_PATH = "/mcp"
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


def error_reply(error_type: str, message: str, code: str = "VALIDATION_ERROR") -> str:
    """An error reply in OpenEnv's WebSocket format, with ``error_type``."""
    data = {"message": f"{error_type}: {message}", "code": code, "error_type": error_type}
    return json.dumps({"type": "error", "data": data})


class LimitsMiddleware:
    """Wraps the ASGI ``app``; ``is_draining()`` says whether the server is shutting down; ``server_name``
    is what ``/mcp``'s ``initialize`` names."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_message_bytes: int,
        idle_timeout_s: float,
        max_steps_per_s: float,
        is_draining: Callable[[], bool] = lambda: False,
        server_name: str = "lm-gym",
    ):
        self.app = app
        self.max_message_bytes = max_message_bytes
        self.idle_timeout_s = idle_timeout_s
        self.max_steps_per_s = max_steps_per_s
        self.is_draining = is_draining
        self.server_name = server_name

    async def __call__(self, scope: Scope, receive, send) -> None:
        on_mcp = scope["type"] in ("websocket", "http") and scope.get("path", "").rstrip("/") == MCP_PATH
        if on_mcp and scope["type"] == "http":
            await answer_mcp(
                scope,
                receive,
                send,
                max_bytes=self.max_message_bytes,
                server_name=self.server_name,
                version=__version__,
            )
        elif on_mcp:
            await receive()  # websocket.connect; the handshake is refused with 403
            await send({"type": "websocket.close", "code": 1008})
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive, send) -> None:
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_message_bytes):
            await self._http_refuse(
                send,
                f"the body has {length.decode(errors='replace')} bytes; at most {self.max_message_bytes} are allowed",
            )
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_message_bytes:
                return {"type": "http.disconnect"}
            return message

        await self.app(scope, counted_receive, send)

    async def _http_refuse(self, send, message: str) -> None:
        """``413`` with ``LimitExceededError``: a body over the size limit."""
        body = json.dumps({"error_type": "LimitExceededError", "detail": f"LimitExceededError: {message}"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _websocket(self, scope: Scope, receive, send) -> None:
        allowance = self.max_steps_per_s  # a token bucket of one second's messages
        last = time.monotonic()
        closed = False

        async def send_typed(message: Message) -> None:
            text = message.get("text")
            if message["type"] == "websocket.send" and isinstance(text, str) and text.startswith('{"type":"error"'):
                reply = json.loads(text)
                data = reply["data"]
                data["error_type"] = error_type = error_type_of(data)
                if not str(data.get("message", "")).startswith(error_type):
                    data["message"] = f"{error_type}: {data.get('message', '')}"
                message = {**message, "text": json.dumps(reply)}
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the client left before its answer; nothing to send to
                pass

        async def limited_receive() -> Message:
            nonlocal allowance, last, closed
            while True:
                if closed:
                    return {"type": "websocket.disconnect", "code": 1000}
                try:
                    if self.idle_timeout_s > 0:
                        message = await asyncio.wait_for(receive(), self.idle_timeout_s)
                    else:
                        message = await receive()
                except asyncio.TimeoutError:
                    closed = True
                    reason = f"the session was idle for {self.idle_timeout_s:g} s and is closed"
                    await send({"type": "websocket.send", "text": error_reply("SessionError", reason, "SESSION_ERROR")})
                    await send({"type": "websocket.close", "code": 1000, "reason": "idle timeout"})
                    return {"type": "websocket.disconnect", "code": 1000}
                if message["type"] != "websocket.receive":
                    return message
                refusal = self._refusal(message)
                if refusal is None and self.max_steps_per_s > 0:
                    now = time.monotonic()
                    allowance = min(self.max_steps_per_s, allowance + (now - last) * self.max_steps_per_s)
                    last = now
                    if allowance < 1:
                        refusal = error_reply(
                            "LimitExceededError", f"more than {self.max_steps_per_s:g} messages per second"
                        )
                    else:
                        allowance -= 1
                if refusal is None:
                    return message
                await send({"type": "websocket.send", "text": refusal})

        await self.app(scope, limited_receive, send_typed)

    def _refusal(self, message: Message) -> str | None:
        """The error reply of a message that is refused before OpenEnv reads it, or ``None``."""
        text = message.get("text")
        if text is None:
            return error_reply("ProtocolError", "binary frames are not part of the protocol; send JSON text")
        size = len(text.encode("utf-8", errors="replace"))
        if size > self.max_message_bytes:
            return error_reply(
                "LimitExceededError", f"the message has {size} bytes; at most {self.max_message_bytes} are allowed"
            )
        if self.is_draining():
            return error_reply("ServerShuttingDownError", "the server is shutting down", "EXECUTION_ERROR")
        return _protocol_refusal(text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: The message types of the protocol (OpenEnv's ``mcp`` type is not served: lm-gym's tasks have no MCP tools).
MESSAGE_TYPES = ("reset", "step", "state", "close")


def _protocol_refusal(text: str) -> str | None:
    """A ``ProtocolError`` reply for text OpenEnv's handler would fail on outside its own error
    replies (closing the session): JSON that is not an object, too deeply nested, whose ``type``
    is not one of :data:`MESSAGE_TYPES`, or that holds a lone surrogate where OpenEnv may echo it
    (:func:`_lone_surrogate`)."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError) as error:
        return error_reply("ProtocolError", f"the message is not JSON: {str(error)[:200]}", "INVALID_JSON")
    if not isinstance(message, dict):
        return error_reply("ProtocolError", f"a message is a JSON object, got a JSON {type(message).__name__}")
    kind = message.get("type")
    if kind not in MESSAGE_TYPES:
        shown = json.dumps(kind)[:80]  # ASCII: a lone surrogate stays escaped
        return error_reply("ProtocolError", f"type must be one of {list(MESSAGE_TYPES)}, got {shown}", "UNKNOWN_TYPE")
    where = _lone_surrogate(message)
    if where is not None:
        return error_reply(
            "ProtocolError",
            f"{where} holds a lone surrogate, which is not Unicode text (a step's text may: it is mapped "
            "into the action space's characters)",
        )
    return None


def _lone_surrogate(message: dict[str, Any]) -> str | None:
    """Where a message holds a lone surrogate (``"\\ud800"`` is valid JSON, not valid Unicode), or ``None``.

    OpenEnv's reply to a field it refuses echoes the field's value, and writing a lone surrogate fails:
    the handler then closes the session. Only a step's ``text``, a string OpenEnv accepts as it is, may
    hold one (the task maps it into its charset, as the local env does)."""
    data = message.get("data")
    if message["type"] == "step" and isinstance(data, dict) and isinstance(data.get("text"), str):
        message = {**message, "data": {key: value for key, value in data.items() if key != "text"}}
    pending: list[tuple[str, Any]] = [("message", message)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str) and _has_lone_surrogate(value):
            return path[:200]
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, inner in items:
            if isinstance(key, str) and _has_lone_surrogate(key):
                return f"a key of {path}"[:200]
            pending.append((f"{path}.{key}" if isinstance(key, str) else f"{path}[{key}]", inner))
    return None


def _has_lone_surrogate(text: str) -> bool:
    return _LONE_SURROGATE.search(text) is not None
