"""Typed errors of the env server and its clients, and how an error travels over the wire.

An error reply of the server is OpenEnv's ``{"type": "error", "data": {"message", "code"}}``;
lm-gym's server adds ``data["error_type"]``, the name of the typed error (the message starts with
it too: ``"InvalidActionError: ..."``), so a client raises the same typed error that a local env
would (:func:`error_from_reply`).
"""

from __future__ import annotations

import re
from typing import Any

from lm_gym.core.errors import (
    ConfigurationError,
    DataUnavailableError,
    InvalidActionError,
    LMGymError,
    ResetNeededError,
    UnknownArgumentError,
)


class RemoteError(LMGymError, RuntimeError):
    """The server could not be reached, closed the session, or failed in a way with no local counterpart."""


class AuthenticationError(RemoteError):
    """The server refused the request: its bearer token is missing, malformed or wrong (HTTP ``401``)."""


class SessionError(RemoteError):
    """An unknown session id, or a session the server closed (idle timeout, shutdown)."""


class ProtocolError(LMGymError, ValueError):
    """A message that does not follow the protocol: malformed JSON, an unknown message type, or fields
    of the wrong type (OpenEnv's ``INVALID_JSON``, ``UNKNOWN_TYPE`` and ``VALIDATION_ERROR`` codes)."""


class LimitExceededError(LMGymError, ValueError):
    """A message over one of the server's limits (message size, step rate); the session goes on."""


class CapacityError(LimitExceededError):
    """The server already holds its ``--max-sessions`` sessions."""


class RewardFunctionError(LMGymError, RuntimeError):
    """The task's reward function raised while scoring this session's step; the episode is as before the step."""


class ServerShuttingDownError(RemoteError):
    """The server is shutting down: steps in flight are answered, new ones refused."""


#: The typed errors a reply may name, by name.
WIRE_ERRORS: dict[str, type[LMGymError]] = {
    cls.__name__: cls
    for cls in (
        InvalidActionError,
        ResetNeededError,
        ConfigurationError,
        UnknownArgumentError,
        DataUnavailableError,
        RemoteError,
        AuthenticationError,
        SessionError,
        ProtocolError,
        LimitExceededError,
        CapacityError,
        RewardFunctionError,
        ServerShuttingDownError,
    )
}

#: OpenEnv's error codes and the typed error each stands for, where the message does not name one.
CODE_ERRORS = {
    "INVALID_JSON": "ProtocolError",
    "UNKNOWN_TYPE": "ProtocolError",
    "VALIDATION_ERROR": "ProtocolError",
    "CAPACITY_REACHED": "CapacityError",
    "SESSION_ERROR": "SessionError",
    "FACTORY_ERROR": "RemoteError",
    "EXECUTION_ERROR": "RemoteError",
}

_NAMED = re.compile(r"^(?P<name>[A-Za-z]+Error): ")


class WireError(Exception):
    """An exception whose text is ``"<TypeName>: <message>"``: what the server raises inside OpenEnv's
    handlers, which reply with ``str(exception)``."""

    def __init__(self, error_type: str, message: str):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type


def to_wire(error: BaseException) -> WireError:
    """``error`` as a :class:`WireError`: lm-gym's typed errors keep their name; anything else is named
    :class:`RemoteError` with its own type in the message."""
    if isinstance(error, WireError):
        return error
    if isinstance(error, LMGymError) and type(error).__name__ in WIRE_ERRORS:
        return WireError(type(error).__name__, str(error))
    if isinstance(error, LMGymError):  # a task's own subclass: the nearest known base
        for base in type(error).__mro__:
            if base.__name__ in WIRE_ERRORS:
                return WireError(base.__name__, f"{type(error).__name__}: {error}")
    return WireError("RemoteError", f"{type(error).__name__}: {error}")


def error_type_of(data: dict[str, Any]) -> str:
    """The typed error an error reply's ``data`` stands for (its ``error_type``, the message's prefix, or its code)."""
    name = data.get("error_type")
    if isinstance(name, str) and name in WIRE_ERRORS:
        return name
    match = _NAMED.match(str(data.get("message", "")))
    if match and match.group("name") in WIRE_ERRORS:
        return match.group("name")
    return CODE_ERRORS.get(str(data.get("code", "")), "RemoteError")


def error_from_reply(data: dict[str, Any]) -> LMGymError:
    """The typed error to raise for an error reply's ``data``."""
    name = error_type_of(data)
    message = _NAMED.sub("", str(data.get("message", "the server replied with an error")), count=1)
    cls = WIRE_ERRORS[name]
    if cls is UnknownArgumentError:
        cls = ConfigurationError  # its TypeError wording does not survive the wire
    return cls(f"{message} (server code {data.get('code', '?')})")
