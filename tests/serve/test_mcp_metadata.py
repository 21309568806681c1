# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""OpenEnv's quality bar: ``openenv validate --url`` passes a served task; ``POST /mcp`` answers
session-free JSON-RPC (no tools, nothing that reaches a session), OpenEnv's MCP WebSocket and
``mcp`` message stay refused; ``GET /metadata`` carries the task's manual, version and documentation page."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import urllib.error
import urllib.request

import gymnasium
import pytest

import lm_gym
from lm_gym.core.registration import task_class

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from servers import register_user_tasks, restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

WORDLE = "lm_gym/Wordle-v0"


def post(url: str, body: bytes) -> tuple[int, dict | None]:
    request = urllib.request.Request(f"{url}/mcp", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read()
            return reply.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def every_task() -> list:
    """Every built-in task with its offline arguments (only Wordle in the default run), and a user's task."""
    ids = sorted(name for name in gymnasium.registry if name.startswith("lm_gym/") and name != "lm_gym/Remote-v0")
    cases = [
        pytest.param(env_id, task_class(env_id).offline_kwargs, marks=() if env_id == WORDLE else pytest.mark.slow)
        for env_id in ids
    ]
    return [*cases, pytest.param("user/CountUp-v0", {}, marks=pytest.mark.slow)]


@pytest.mark.parametrize(("env_id", "env_kwargs"), every_task())
def test_openenv_validate_passes_every_criterion(start_server, env_id, env_kwargs):
    register_user_tasks()

    executable = shutil.which("openenv")
    if executable is None:
        pytest.skip("OpenEnv's command is not on PATH")
    url, _, _ = start_server(env_id, env_kwargs=env_kwargs)
    completed = subprocess.run(
        [executable, "validate", "--url", url, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    assert report["passed"] and report["summary"]["failed_criteria"] == [], report["summary"]
    assert report["summary"]["passed_count"] == report["summary"]["total_count"] >= 6
    assert {"mcp_endpoint", "metadata_endpoint"} <= {c["id"] for c in report["criteria"] if c["passed"]}


def test_mcp_answers_json_rpc_without_tools(start_server):
    url, served, _ = start_server(WORDLE)
    status, reply = post(url, b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}')
    assert status == 200 and reply["id"] == 1 and reply["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert reply["result"]["serverInfo"] == {"name": f"lm-gym {WORDLE}", "version": lm_gym.__version__}
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    asked = b'{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}'
    assert post(url, asked)[1]["result"]["protocolVersion"] == "2025-03-26"
    assert post(url, b'{"jsonrpc": "2.0", "id": "t", "method": "tools/list"}') == (
        200,
        {"jsonrpc": "2.0", "id": "t", "result": {"tools": []}},
    )
    assert post(url, b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}')[1]["result"] == {}
    assert post(url, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}') == (202, None)
    for body, code in (
        (b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "close"}}', -32601),
        (b"{}", -32600),
        (b'{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}', -32600),
        (b'[{"jsonrpc": "2.0", "id": 6, "method": "tools/list"}]', -32600),
        (b"not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "\\ud800"}', -32601),
    ):
        status, reply = post(url, body)
        assert status == 200 and reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code, (body, reply)
    status, reply = post(url, b"x" * (served.config.max_message_bytes + 1))
    assert status == 413
    with urllib.request.urlopen(urllib.request.Request(f"{url}/health"), timeout=10) as health:
        assert health.status == 200


def test_mcp_never_reaches_a_session_and_its_websocket_stays_refused(start_server):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url, served, _ = start_server(WORDLE)
    ws_url = url.replace("http://", "ws://")
    with connect(ws_url + "/ws", proxy=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
        assert json.loads(ws.recv())["type"] == "observation"
        for method in ("tools/call", "close", "session/close", "resources/list"):
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": "close"}}).encode()
            assert post(url, body)[1]["error"]["code"] == -32601
        ws.send(json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}))
        reply = json.loads(ws.recv())
        assert reply["data"]["error_type"] == "ProtocolError" and 'got "mcp"' in reply["data"]["message"]
        ws.send(json.dumps({"type": "step", "data": {"text": "crane"}}))
        assert json.loads(ws.recv())["type"] == "observation"  # the session goes on
        assert served.service.sessions == 1
    with pytest.raises(InvalidStatus, match="403"):
        connect(ws_url + "/mcp", proxy=None)


def test_metadata_carries_the_manual_version_and_documentation_page(start_server):
    from lm_gym.core.registration import task_class

    url, _, _ = start_server(WORDLE)
    with urllib.request.urlopen(f"{url}/metadata", timeout=10) as reply:
        metadata = json.load(reply)
    manual = inspect.getdoc(task_class(WORDLE))
    assert metadata["name"] == WORDLE and metadata["version"] == lm_gym.__version__
    assert metadata["readme_content"] == manual and "## Description" in manual
    assert metadata["description"] == f"lm-gym task {WORDLE} (utterance level): {manual.splitlines()[0]}"
    assert metadata["documentation_url"] == "docs/environments/wordle-v0.md"
