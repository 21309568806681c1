"""Fixtures of the server's tests (imported by them; a conftest.py here would shadow tests/conftest.py):
servers in this process, on a loopback port, torn down after each test.

The tests import ``lm_gym.serve`` inside fixtures and tests, never at collection, and the ids it
and ``serve_tasks`` register are removed after each test module, so the rest of the suite sees
the registry it expects.
"""

from __future__ import annotations

import threading
import time

import gymnasium
import pytest


@pytest.fixture(autouse=True, scope="module")
def restore_registry():
    before = set(gymnasium.registry)
    yield
    for env_id in set(gymnasium.registry) - before:
        del gymnasium.registry[env_id]


def register_user_tasks() -> None:
    """Register ``tests/user_tasks.py``'s tasks, again after an earlier module's registration was removed."""
    import importlib

    import user_tasks

    if "user/CountUp-v0" not in gymnasium.registry:
        importlib.reload(user_tasks)


@pytest.fixture
def start_server():
    """``start_server(env_id, **settings) -> (url, served, server)``: a server in a thread on a free port."""
    from lm_gym.serve.app import DrainingServer, ServedApp, uvicorn_config
    from lm_gym.serve.config import ServeConfig

    running = []

    def start(env_id: str, **settings):
        import lm_gym.serve

        lm_gym.serve.register_remote()  # again, after an earlier module's registration was removed
        if env_id.startswith("serve_tasks:") and "serve_test/Counting-v0" not in gymnasium.registry:
            import serve_tasks  # registers on its first import; an earlier module's registration was removed

            if "serve_test/Counting-v0" not in gymnasium.registry:
                serve_tasks.register()
        config = ServeConfig(env_id=env_id, port=0, **settings)
        served = ServedApp(config)
        server = DrainingServer(uvicorn_config(config, served.asgi, log_level="warning"), served)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        running.append((server, thread))
        return f"http://127.0.0.1:{port}", served, server

    yield start
    for server, thread in running:
        server.should_exit = True
        thread.join(10)
        server.served.service.batcher.shutdown()
