"""``POST /mcp``: a JSON-RPC 2.0 endpoint with no tools and no state, in place of OpenEnv's MCP server.

OpenEnv's validator (``openenv validate --url``) requires ``POST /mcp`` to answer JSON-RPC.
OpenEnv's own MCP endpoint is not served, because its session methods could close other clients'
sessions; this one holds nothing between requests, so no request can reach a session. It answers
``initialize`` (the server's name and version, a ``tools`` capability), ``tools/list`` (an empty
list: lm-gym's tasks are played over ``/ws``) and ``ping``; any other method gets JSON-RPC's
"method not found", a notification (no ``id``) ``202`` with no body, a batch "invalid request"
(MCP has no batches since its 2025-06-18 revision), and text that is not JSON "parse error".
"""

from __future__ import annotations

import json
from typing import Any

#: The MCP revision ``initialize`` answers when the client names none.
PROTOCOL_VERSION = "2025-06-18"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def jsonrpc_reply(body: bytes, server_name: str, version: str) -> dict[str, Any] | None:
    """The JSON-RPC reply to ``body`` (``None`` for a notification, which gets none)."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "parse error: the body is not JSON")
    if not isinstance(request, dict):
        return _error(None, INVALID_REQUEST, "invalid request: a JSON-RPC request is one JSON object (no batches)")
    request_id = request.get("id")
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    method = request.get("method")
    if request.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(request_id, INVALID_REQUEST, 'invalid request: it needs "jsonrpc": "2.0" and a string "method"')
    if "id" not in request:
        return None
    if method == "initialize":
        params = request.get("params")
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        result: dict[str, Any] = {
            "protocolVersion": asked if isinstance(asked, str) else PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": server_name, "version": version},
            "instructions": "lm-gym tasks have no MCP tools: play the task over the WebSocket /ws (docs/serving.md)",
        }
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "ping":
        result = {}
    else:
        shown = json.dumps(method)[:80]  # ASCII: a lone surrogate stays escaped
        return _error(request_id, METHOD_NOT_FOUND, f"method not found: {shown} (this server has no MCP tools)")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def answer_mcp(scope: dict[str, Any], receive, send, *, max_bytes: int, server_name: str, version: str) -> None:
    """Answer one HTTP request to ``/mcp``: ``POST`` with JSON-RPC, anything else ``405``."""
    if scope.get("method") != "POST":
        await _send_json(send, 405, _error(None, INVALID_REQUEST, "/mcp takes POST with a JSON-RPC request"))
        return
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return  # the client left
        body += message.get("body", b"")
        if len(body) > max_bytes:
            await _send_json(send, 413, _error(None, INVALID_REQUEST, f"the body is over {max_bytes} bytes"))
            return
        if not message.get("more_body"):
            break
    reply = jsonrpc_reply(body, server_name, version)
    if reply is None:
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    await _send_json(send, 200, reply)


async def _send_json(send, status: int, content: dict[str, Any]) -> None:
    body = json.dumps(content).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["PROTOCOL_VERSION", "answer_mcp", "jsonrpc_reply"]
