"""The ASGI app of a served task (OpenEnv's ``create_app`` behind :class:`LimitsMiddleware`, and
:class:`TokenMiddleware` in front when the server has a token) and the uvicorn server that runs
it, in one process or several (``workers``), with a graceful shutdown.

Shutdown (SIGTERM, SIGINT or :meth:`DrainingServer.drain`): new messages are refused with
``ServerShuttingDownError``, steps in flight are played and answered (for at most
``shutdown_grace_s``), then uvicorn closes the connections and exits.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.http_server import create_app
from starlette.exceptions import HTTPException as StarletteHTTPException

from lm_gym.serve.auth import TokenMiddleware
from lm_gym.serve.config import ServeConfig
from lm_gym.serve.environment import SessionEnvironment, TaskService
from lm_gym.serve.errors import WireError, error_type_of
from lm_gym.serve.limits import LimitsMiddleware
from lm_gym.serve.routes import add_task_routes
from lm_gym.serve.wire import to_json


class ServedApp:
    """The app of one server process: ``asgi`` (what uvicorn runs) and the ``service`` behind it;
    ``auth``, the token check in front of everything (``None`` when the server has no token)."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self.service = TaskService(config)
        os.environ.setdefault("ENABLE_WEB_INTERFACE", "false")  # OpenEnv's Gradio UI stays off
        app = create_app(
            lambda: SessionEnvironment(self.service),
            self.service.action_cls,
            self.service.observation_cls,
            env_name=self.service.env_id.replace("/", "-"),
            max_concurrent_envs=config.max_sessions,
        )

        @app.exception_handler(WireError)
        async def typed_error(request: Request, error: WireError) -> JSONResponse:  # HTTP /reset, /step
            status = 503 if error.error_type == "ServerShuttingDownError" else 400
            data = {"message": str(error), "error_type": error_type_of({"message": str(error)})}
            return JSONResponse(status_code=status, content={"detail": data["message"], **data})

        @app.exception_handler(RequestValidationError)
        async def invalid_body(request: Request, error: RequestValidationError) -> Response:
            # FastAPI's own 422 echoes the input with allow_nan=False and UTF-8: a body holding Infinity, NaN or a
            # lone surrogate made it a 500. This one echoes it as JSON can carry it, and names the typed error.
            errors = to_json(jsonable_encoder(error.errors(), custom_encoder={bytes: repr}))
            fields = ", ".join(".".join(str(part) for part in item.get("loc", ())) for item in errors[:5])
            message = f"ProtocolError: the request's body does not fit {request.url.path}: {fields}"
            content = {"detail": errors, "message": message, "error_type": "ProtocolError"}
            return Response(json.dumps(content, ensure_ascii=True), status_code=422, media_type="application/json")

        @app.exception_handler(StarletteHTTPException)
        async def http_error(request: Request, error: StarletteHTTPException) -> Response:
            # FastAPI's own, with the detail made JSON-safe: OpenEnv's HTTP /step puts the invalid input in it
            content = json.dumps({"detail": to_json(error.detail)}, ensure_ascii=True)
            status, headers = error.status_code, error.headers
            return Response(content, status_code=status, headers=headers, media_type="application/json")

        self.routes = add_task_routes(app, self.service)  # GET /lm-gym/task, ... (lm_gym.serve.routes)
        self.fastapi = app
        limited = LimitsMiddleware(
            app,
            max_message_bytes=config.max_message_bytes,
            idle_timeout_s=config.idle_timeout_s,
            max_steps_per_s=config.max_steps_per_s,
            is_draining=lambda: self.service.draining,
            server_name=f"lm-gym {self.service.env_id}",
        )
        # Outermost, so a refused request reaches neither the limits nor OpenEnv (which would open a session).
        self.auth = None if config.token is None else TokenMiddleware(limited, config.token)
        self.asgi = limited if self.auth is None else self.auth


def uvicorn_config(config: ServeConfig, app: Any, **overrides: Any) -> uvicorn.Config:
    """uvicorn's settings for ``app``: the host and port, and a hard WebSocket frame cap above the message limit."""
    settings: dict[str, Any] = {
        "host": config.host,
        "port": config.port,
        "ws_max_size": max(4 * config.max_message_bytes, config.max_message_bytes + 65536),
        "ws_per_message_deflate": False,
        "access_log": False,
        "log_level": "info",
        "lifespan": "on",
        "timeout_graceful_shutdown": max(1, int(config.shutdown_grace_s)),
    }
    return uvicorn.Config(app, **{**settings, **overrides})


class DrainingServer(uvicorn.Server):
    """uvicorn's server whose first exit signal drains the service before exiting; a second one exits at once."""

    def __init__(self, config: uvicorn.Config, served: ServedApp):
        super().__init__(config)
        self.served = served

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self.served.service.draining:
            super().handle_exit(sig, frame)
        else:
            self.drain()

    def drain(self) -> None:
        """Refuse new messages, answer the steps in flight (at most ``shutdown_grace_s``), then exit."""
        service = self.served.service
        service.draining = True

        def wait_then_exit() -> None:
            deadline = time.monotonic() + self.served.config.shutdown_grace_s
            while service.batcher.in_flight and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # the last answers leave the event loop
            self.should_exit = True

        threading.Thread(target=wait_then_exit, name="lm-gym-drain", daemon=True).start()


def run_worker(config_json: str, sockets: list[socket.socket] | None = None) -> None:
    """One server process: build the task and serve it (on ``sockets`` the parent bound, if given)."""
    config = ServeConfig.from_json(config_json)
    served = ServedApp(config)
    server = DrainingServer(uvicorn_config(config, served.asgi), served)
    server.run(sockets=sockets)
    served.service.batcher.shutdown()


def serve(config: ServeConfig) -> None:
    """Serve ``config``'s task until SIGTERM or SIGINT: in this process, or in ``config.workers`` processes
    sharing one listening socket (each WebSocket session lives in one of them)."""
    if config.workers == 1:
        run_worker(config.to_json())
        return
    multiprocessing.allow_connection_pickling()
    sock = uvicorn_config(config, None).bind_socket()
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=run_worker, args=(config.to_json(), [sock])) for _ in range(config.workers)]
    for worker in workers:
        worker.start()
    print(f"lm-gym serve: {config.env_id} on http://{config.host}:{config.port} ({config.workers} workers)", flush=True)

    def forward(sig: int, frame: Any) -> None:
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for worker in workers:
        worker.join()
    sock.close()
