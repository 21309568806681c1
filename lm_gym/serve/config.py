"""The server's settings: what ``python -m lm_gym.serve`` parses, and what every worker process reads.

Env ids and env kwargs come only from here (the server's command line), never from a client.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import ACTION_LEVELS
from lm_gym.serve.auth import TOKEN_VARIABLE, check_exposure, check_token, server_token

#: Environment variable through which the parent process hands the settings to its workers (JSON).
CONFIG_VARIABLE = "LM_GYM_SERVE_CONFIG"


@dataclass(frozen=True)
class ServeConfig:
    """Settings of one server (all its worker processes).

    ``env_id`` is a registered lm-gym task, ``"module:env_id"`` for one that ``module`` registers;
    ``env_kwargs`` are its constructor arguments (JSON). Limits: ``max_sessions`` WebSocket
    sessions per worker, ``max_message_bytes`` per message, ``idle_timeout_s`` before a silent
    session is closed, ``max_steps_per_s`` messages per second per session (0: no limit).
    ``batch_window_ms``: how long a step waits for other sessions' steps; ``batching=False``
    plays each step on its own. ``shutdown_grace_s``: how long a shutdown waits for steps in flight.
    ``token``: the bearer token every request but ``/health`` must carry (``None``: none); a
    ``host`` beyond loopback needs one unless ``insecure`` (:mod:`lm_gym.serve.auth`).
    """

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    action_level: str = "utterance"
    host: str = "127.0.0.1"
    port: int = 8000
    max_sessions: int = 256
    batch_window_ms: float = 2.0
    batching: bool = True
    workers: int = 1
    max_message_bytes: int = 1 << 20
    idle_timeout_s: float = 600.0
    max_steps_per_s: float = 0.0
    shutdown_grace_s: float = 10.0
    token: str | None = field(default=None, repr=False)
    insecure: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ConfigurationError(f"env_id must be a registered lm-gym id, got {safe_repr(self.env_id)}")
        if not isinstance(self.env_kwargs, dict):
            raise ConfigurationError(f"env_kwargs must be a JSON object, got {safe_repr(self.env_kwargs)}")
        if self.action_level not in ACTION_LEVELS:
            raise ConfigurationError(f"action_level must be one of {list(ACTION_LEVELS)}, got {self.action_level!r}")
        for name, low in (("max_sessions", 1), ("workers", 1), ("max_message_bytes", 256), ("port", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigurationError(f"{name} must be an int >= {low}, got {safe_repr(value)}")
        for name in ("batch_window_ms", "idle_timeout_s", "max_steps_per_s", "shutdown_grace_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ConfigurationError(f"{name} must be a number >= 0, got {safe_repr(value)}")
        if not isinstance(self.host, str) or not self.host:
            raise ConfigurationError(f"host must be an address to bind, got {safe_repr(self.host)}")
        if self.token is not None:
            check_token(self.token, "token")
        if not isinstance(self.insecure, bool):
            raise ConfigurationError(f"insecure must be a bool, got {safe_repr(self.insecure)}")
        check_exposure(self.host, self.token, self.insecure)

    def task_digest(self) -> str:
        """SHA-256 of what decides the episodes: the env id, its kwargs and the action level."""
        task = json.dumps([self.env_id.rpartition(":")[2], self.env_kwargs, self.action_level], sort_keys=True)
        return hashlib.sha256(task.encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        return cls(**json.loads(text))


def session_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings :func:`add_session_arguments` parsed, by ``ServeConfig``'s names."""
    return {
        "max_sessions": args.max_sessions,
        "batch_window_ms": args.batch_window_ms,
        "batching": not args.no_batching,
        "workers": args.workers,
        "max_message_bytes": args.max_message_bytes,
        "idle_timeout_s": args.idle_timeout_s,
        "max_steps_per_s": args.max_steps_per_s,
        "shutdown_grace_s": args.shutdown_grace_s,
    }


def parsed_env_kwargs(parser: argparse.ArgumentParser, text: str) -> Any:
    """``--env-kwargs``' JSON (``ServeConfig`` checks it is an object), or the parser's error naming the flag."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        parser.error(f"--env-kwargs is not JSON: {error}")


def parse_args(argv: list[str] | None = None) -> ServeConfig:
    """The settings of ``python -m lm_gym.serve ENV_ID [options]``."""
    parser = argparse.ArgumentParser(
        prog="python -m lm_gym.serve",
        description="Serve an lm-gym task over OpenEnv's protocol, batching steps across sessions.",
    )
    parser.add_argument("env_id", help="a registered lm-gym id, or 'module:env_id' for one a module of yours registers")
    add_task_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000)
    add_session_arguments(parser)
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help=f"file holding the bearer token clients must send (else ${TOKEN_VARIABLE}, if set)",
    )
    parser.add_argument(
        "--insecure", action="store_true", help="serve beyond loopback without a token (a network you trust)"
    )
    args = parser.parse_args(argv)
    env_kwargs = parsed_env_kwargs(parser, args.env_kwargs)
    try:
        token = server_token(args.token_file)
        return ServeConfig(
            env_id=args.env_id,
            env_kwargs=env_kwargs,
            action_level=args.action_level,
            host=args.host,
            port=args.port,
            **session_settings(args),
            token=token,
            insecure=args.insecure,
        )
    except ConfigurationError as error:
        parser.error(str(error))


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """The task's options, shared by the server and ``export``: its constructor arguments and action level."""
    parser.add_argument("--env-kwargs", default="{}", help="the task's constructor arguments as a JSON object")
    parser.add_argument("--action-level", default="utterance", choices=ACTION_LEVELS)


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """The sessions' limits and batching, shared by the server and ``export`` (which bakes them in)."""
    parser.add_argument("--max-sessions", type=int, default=256, help="WebSocket sessions per worker")
    parser.add_argument("--batch-window-ms", type=float, default=2.0, help="how long a step waits for other sessions'")
    parser.add_argument("--no-batching", action="store_true", help="play each step on its own (a baseline)")
    parser.add_argument("--workers", type=int, default=1, help="server processes sharing the port")
    parser.add_argument("--max-message-bytes", type=int, default=1 << 20)
    parser.add_argument("--idle-timeout-s", type=float, default=600.0)
    parser.add_argument("--max-steps-per-s", type=float, default=0.0, help="messages per second per session; 0: none")
    parser.add_argument("--shutdown-grace-s", type=float, default=10.0)
