"""The server's bearer token: where it comes from, when it is required, and the ASGI layer that checks it.

A server with a token answers only requests that carry ``Authorization: Bearer <token>``:
every HTTP route but ``/health`` (a load balancer's probe), and the WebSocket handshake. The
token comes from ``--token-file FILE`` or, without that flag, the :data:`TOKEN_VARIABLE`
environment variable; a server that binds anything but loopback refuses to start without one
unless ``--insecure`` is given (:func:`check_exposure`). Clients read the same variable
(:func:`client_token`).

A refused request never reaches OpenEnv's app: a refused WebSocket gets ``401`` at its handshake,
before OpenEnv opens a session, so refused clients cannot use up ``--max-sessions``. Each
refusal is logged (logger ``lm_gym.serve.auth``) and counted (:attr:`TokenMiddleware.refused`,
per worker process).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
from pathlib import Path
from typing import Any

from lm_gym.core.errors import ConfigurationError, safe_repr

#: The environment variable holding the token, read by the server (without ``--token-file``) and by clients.
TOKEN_VARIABLE = "LM_GYM_SERVE_TOKEN"
#: Routes open without a token: the health probe, which says nothing about the task.
OPEN_PATHS = ("/health",)
MIN_TOKEN_CHARS = 16
_PRINTABLE_ASCII = frozenset(chr(code) for code in range(0x21, 0x7F))
_SCHEME = b"bearer "

logger = logging.getLogger("lm_gym.serve.auth")


def check_token(token: Any, source: str) -> str:
    """``token`` if it is usable in an ``Authorization`` header (printable ASCII, no spaces, at least
    :data:`MIN_TOKEN_CHARS` characters), else ``ConfigurationError`` naming ``source``."""
    if not isinstance(token, str):
        raise ConfigurationError(f"{source} must be a str, got {safe_repr(token)}")
    if not set(token) <= _PRINTABLE_ASCII:  # the token itself is never shown
        raise ConfigurationError(f"{source} must be printable ASCII without spaces or control characters")
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigurationError(
            f"{source} has {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def server_token(token_file: str | None) -> str | None:
    """The server's token: the file's content (surrounding whitespace stripped) when ``token_file``
    is given, else :data:`TOKEN_VARIABLE` if set, else ``None``. The flag wins over the variable."""
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigurationError(f"--token-file {token_file!r} cannot be read: {error}") from None
        return check_token(text.strip(), f"the token in --token-file {token_file!r}")
    value = os.environ.get(TOKEN_VARIABLE)
    return None if value is None else check_token(value.strip(), TOKEN_VARIABLE)


def client_token(token: str | None) -> str | None:
    """A client's token: ``token`` if given, else :data:`TOKEN_VARIABLE` if set, else ``None``."""
    if token is not None:
        return check_token(token, "token")
    value = os.environ.get(TOKEN_VARIABLE)
    return None if value is None else check_token(value.strip(), TOKEN_VARIABLE)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` listens on loopback only (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def check_exposure(host: str, token: str | None, insecure: bool) -> None:
    """Refuse to serve beyond loopback without a token, unless ``insecure``."""
    if token is None and not insecure and not is_loopback(host):
        raise ConfigurationError(
            f"--host {host} is not loopback, and anyone who reaches it could open sessions: give a token "
            f"(--token-file FILE or the {TOKEN_VARIABLE} environment variable), or pass --insecure to serve "
            "without one on a network you trust"
        )


def bearer_refusal(headers: list[tuple[bytes, bytes]], token: bytes) -> str | None:
    """Why a request with ``headers`` is refused (missing, malformed or wrong token), or ``None``."""
    values = [value for name, value in headers if name.lower() == b"authorization"]
    if not values:
        return "missing token: send the header 'Authorization: Bearer <token>'"
    if len(values) > 1:
        return "malformed Authorization header: it was sent more than once"
    value = values[0]
    if value[: len(_SCHEME)].lower() != _SCHEME or not value[len(_SCHEME) :].strip():
        return "malformed Authorization header: expected 'Bearer <token>'"
    if not hmac.compare_digest(value[len(_SCHEME) :].strip(), token):
        return "wrong token"
    return None


class TokenMiddleware:
    """Wraps the ASGI ``app``: requests without ``token`` are refused with ``401`` (``/health`` is open)."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode("ascii")
        #: Requests refused in this process.
        self.refused = 0

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path", "").rstrip("/") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        reason = bearer_refusal(list(scope.get("headers") or []), self.token)
        if reason is None:
            await self.app(scope, receive, send)
            return
        self.refused += 1
        client = scope.get("client") or ("?", 0)
        logger.warning(
            "refused %s %s from %s: %s (%d refused so far)",
            "WebSocket" if scope["type"] == "websocket" else scope.get("method", "HTTP"),
            scope.get("path", ""),
            client[0],
            reason,
            self.refused,
        )
        await refuse(scope, receive, send, reason)


async def refuse(scope: dict[str, Any], receive, send, reason: str) -> None:
    """Answer ``401`` with a typed error body; a WebSocket at its handshake, so no session opens."""
    body = json.dumps(
        {"error_type": "AuthenticationError", "detail": f"AuthenticationError: {reason}", "message": reason}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="lm-gym"'),
    ]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    await receive()  # websocket.connect
    if "websocket.http.response" in (scope.get("extensions") or {}):
        await send({"type": "websocket.http.response.start", "status": 401, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # a server without the denial-response extension answers 403
        await send({"type": "websocket.close", "code": 1008})


__all__ = [
    "MIN_TOKEN_CHARS",
    "TOKEN_VARIABLE",
    "TokenMiddleware",
    "bearer_refusal",
    "check_exposure",
    "check_token",
    "client_token",
    "is_loopback",
    "server_token",
]
