# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""Fuzzed messages over the wire, on one long-lived WebSocket session per test.

- Whole messages (JSON objects with known or random ``type`` and random ``data``: wrong types,
  huge ints, floats, nested lists, unicode, lone surrogates, missing and extra fields), text that
  is not JSON, and binary frames: each gets one well-formed reply (an observation, a state, or an
  error whose ``error_type`` is one of ``lm_gym.serve.errors.WIRE_ERRORS``), the session stays
  open, and a reset with a fixed seed and a step then play exactly the local env's episode.
- Bodies of the Task API's routes (``/{env}/task``, ``/task_range``, ``/num_tasks``, ``/tasks``):
  random splits, indices and bounds of any JSON type get ``200``, a typed ``400`` or FastAPI's ``422``,
  never a ``500``, and the routes still answer.
- Valid-shaped, random actions (strings: non-ASCII, lone surrogates, over-long; tokens:
  negative, out of range, huge): the server replies what the local env does with the same action
  after the same reset, its result or its typed error.
"""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

WORDLE = "lm_gym/Wordle-v0"
SEED = 3
TIMEOUT_S = 10
MAX_MESSAGE_BYTES = 1 << 16  # the fuzzed server's limit: larger messages get LimitExceededError

# ---- strategies ----------------------------------------------------------------------------

#: Strings with anything JSON can carry: unicode of every plane, and lone surrogates (``"\ud800"``).
strings = st.text(max_size=12) | st.text(st.characters(codec=None, categories=["Cs", "Lo", "So"]), max_size=4)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10),
    st.integers(-(2**200), 2**200),
    st.floats(),  # NaN and infinities too: Python's JSON writes them, and the server's reads them
    strings,
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(strings, children, max_size=4),
    max_leaves=12,
)
KNOWN_KEYS = ["seed", "options", "episode_id", "text", "token", "metadata", "index", "answer", "split"]
#: ``data`` with the keys of the protocol's messages and values of the right type or not.
known_data = st.dictionaries(st.sampled_from(KNOWN_KEYS), strings | st.integers(-5, 5000) | json_values, max_size=2)
#: The protocol's types; ``"close"`` is left out: it ends the session, as the protocol says.
known_types = st.sampled_from(["reset", "step", "state", "mcp"])
message_types = known_types | strings.filter(lambda t: t != "close") | scalars
#: Messages of the protocol's types, some of them valid.
messages = st.fixed_dictionaries({"type": known_types}, optional={"data": known_data})
#: Any other JSON object: random types, data of any JSON type, missing and extra fields.
odd_objects = st.fixed_dictionaries(
    {}, optional={"type": message_types, "data": json_values, "extra": json_values, "seed": json_values}
) | st.dictionaries(strings, json_values, max_size=4)


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


#: What goes over the wire: JSON values of every kind, text that is not JSON, binary frames, messages
#: about the size limit.
frames = st.one_of(
    messages.map(json.dumps),
    json_values.map(json.dumps),
    odd_objects.map(json.dumps),
    st.text(max_size=40).filter(lambda text: not is_json(text)),
    st.binary(max_size=40),
    st.integers(MAX_MESSAGE_BYTES - 20, 2 * MAX_MESSAGE_BYTES).map(
        lambda n: json.dumps({"type": "step", "data": {"text": "x" * n}})
    ),
)

# ---- the session ---------------------------------------------------------------------------


class Session:
    """One WebSocket session (the ``websockets`` package's sync client), opened again after the server
    closes it, so that only the example that closed it fails."""

    def __init__(self, url: str):
        self.url = url.replace("http://", "ws://") + "/ws"
        self.connections = ExitStack()
        self.ws = self.connect()

    def connect(self):
        from websockets.sync.client import connect

        return self.connections.enter_context(connect(self.url, max_size=None, proxy=None))

    def exchange(self, frame: str | bytes | dict) -> dict:
        """Send ``frame`` and return its reply."""
        from websockets.exceptions import ConnectionClosed

        try:
            self.ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
            return json.loads(self.ws.recv(timeout=TIMEOUT_S))
        except ConnectionClosed as closed:
            self.ws = self.connect()
            raise AssertionError(f"the server had closed the session ({closed}) when {frame!r:.200} was sent") from None

    def close(self) -> None:
        self.connections.close()


@contextmanager
def session(url: str):
    """``exchange(frame) -> reply`` on one session, closed afterwards."""
    opened = Session(url)
    try:
        yield opened.exchange
    finally:
        opened.close()


def sent_type(frame: str | bytes) -> object:
    """The ``type`` of a frame that is a JSON object, else ``None``."""
    if isinstance(frame, str) and is_json(frame):
        message = json.loads(frame)
        return message.get("type") if isinstance(message, dict) else None
    return None


def assert_well_formed(reply: dict, frame: str | bytes) -> None:
    """``reply`` is an observation or state answering ``frame``'s type, or a typed error reply."""
    from lm_gym.serve.errors import WIRE_ERRORS

    kind, data, asked = reply.get("type"), reply.get("data"), sent_type(frame)
    assert isinstance(data, dict), reply
    if kind == "error":
        assert data["error_type"] in WIRE_ERRORS and data["message"].startswith(data["error_type"]), reply
    elif kind == "observation":
        assert asked in ("reset", "step"), reply
        obs = data["observation"]
        assert isinstance(obs["text"], str) and isinstance(obs["info"], dict), reply
        assert data["done"] is (obs["terminated"] or obs["truncated"]), reply
        assert data["reward"] is None or isinstance(data["reward"], (int, float)), reply
    elif kind == "state":
        assert asked == "state" and data["env_id"] == WORDLE and isinstance(data["step_count"], int), reply
    else:
        raise AssertionError(f"a reply of type {kind!r}: {reply}")  # MCP is refused with ProtocolError


def local_episode_start() -> tuple[dict, dict]:
    """The wire form of the local env's reset with ``SEED`` and its step ``"crane"``."""
    env = gymnasium.make(WORDLE)
    obs, info = env.reset(seed=SEED)
    reset = {"text": obs, "reward": None}
    obs, reward, *_ = env.step("crane")
    return reset, {"text": obs, "reward": float(reward)}


def assert_still_plays(exchange, expected: tuple[dict, dict]) -> None:
    """The session is open and answers state, and a fixed reset and step play the local episode."""
    assert exchange({"type": "state"})["type"] == "state"
    for message, want in zip(
        ({"type": "reset", "data": {"seed": SEED}}, {"type": "step", "data": {"text": "crane"}}), expected, strict=True
    ):
        reply = exchange(message)
        assert reply["type"] == "observation", reply
        assert {"text": reply["data"]["observation"]["text"], "reward": reply["data"]["reward"]} == want


# ---- the fuzz ------------------------------------------------------------------------------


def test_fuzzed_frames_get_well_formed_replies_and_the_session_goes_on(start_server):
    url, _, _ = start_server(WORDLE, max_message_bytes=MAX_MESSAGE_BYTES)
    expected = local_episode_start()
    with session(url) as exchange:

        @settings(max_examples=4 * settings().max_examples)
        @given(frame=frames)
        def fuzz(frame):
            assert_well_formed(exchange(frame), frame)
            assert_still_plays(exchange, expected)

        fuzz()


def wire_result(result: tuple) -> dict:
    """A local step's five values as the server sends them, OpenEnv's ``metadata`` aside."""
    from lm_gym.serve.wire import encode_info, to_json

    obs, reward, terminated, truncated, info = result
    fields = {"text": obs} if isinstance(obs, str) else to_json(obs)
    terminated, truncated = bool(terminated), bool(truncated)
    observation = {**fields, "terminated": terminated, "truncated": truncated, "info": encode_info(info)}
    return {"observation": observation, "reward": float(reward), "done": terminated or truncated}


def local_outcome(env, action) -> dict:
    """What the server should reply to a step with ``action``: the local step's result or its typed error."""
    from lm_gym.core.errors import LMGymError
    from lm_gym.serve.errors import to_wire

    try:
        return {"type": "observation", "data": wire_result(env.step(action))}
    except LMGymError as error:
        return {"type": "error", "error_type": to_wire(error).error_type}


def remote_outcome(reply: dict) -> dict:
    if reply["type"] == "error":
        return {"type": "error", "error_type": reply["data"]["error_type"]}
    data = reply["data"]
    return {**reply, "data": {**data, "observation": {k: v for k, v in data["observation"].items() if k != "metadata"}}}


UTTERANCES = st.one_of(
    st.sampled_from(["crane", "CRANE", "slate", "", " ", "crane\n"]),
    strings,
    st.text(max_size=70),  # the action space allows 64 characters
    st.text(st.characters(codec="ascii"), min_size=60, max_size=200),
)
TOKENS = st.one_of(
    st.integers(0, 4095),  # Wordle's token level has 4096 tokens
    st.sampled_from([-1, 4096, 2**31, 2**63, 2**64, -(2**63) - 1]),
    st.integers(-(2**100), 2**100),
)


@pytest.mark.parametrize(
    ("level", "actions", "key"),
    [("utterance", UTTERANCES, "text"), ("token", TOKENS, "token")],
    ids=["utterance", "token"],
)
def test_fuzzed_actions_get_what_the_local_env_gives(start_server, level, actions, key):
    url, _, _ = start_server(WORDLE, action_level=level)
    local = gymnasium.make(WORDLE, action_level=level)
    with session(url) as exchange:

        @settings(max_examples=4 * settings().max_examples)
        @given(seed=st.integers(0, 2**64), episode=st.lists(actions, min_size=1, max_size=8))
        def fuzz(seed, episode):
            reply = exchange({"type": "reset", "data": {"seed": seed}})
            local.reset(seed=seed)
            assert reply["type"] == "observation", reply
            for action in episode:  # past the episode's end too: ResetNeededError from both
                reply = exchange({"type": "step", "data": {key: action}})
                assert remote_outcome(reply) == local_outcome(local, action), action

        fuzz()


# ---- the bugs the fuzz found ---------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    ["[]", "5", '"reset"', "null", "NaN", "[" * 5000 + "]" * 5000, '{"data": ' + "[" * 5000 + "]" * 5000 + "}"],
    ids=["list", "int", "string", "null", "nan", "deep-list", "deep-list-in-object"],
)
def test_json_that_is_not_an_object_gets_a_protocol_error_and_the_session_goes_on(start_server, frame):
    url, _, _ = start_server(WORDLE)
    with session(url) as exchange:
        reply = exchange(frame)
        assert reply["type"] == "error" and reply["data"]["error_type"] == "ProtocolError", reply
        assert exchange({"type": "state"})["type"] == "state"  # closed now: ConnectionClosed


def test_an_unknown_type_with_a_lone_surrogate_gets_a_protocol_error(start_server):
    url, _, _ = start_server(WORDLE)
    with session(url) as exchange:
        reply = exchange('{"type": "\\ud800"}')  # valid JSON; the error reply that echoes it cannot be written
        assert exchange({"type": "state"})["type"] == "state"
    assert reply["data"]["error_type"] == "ProtocolError", reply


@pytest.mark.parametrize(
    "message",
    [
        {"type": "step", "data": {"text": ["\ud800"]}},
        {"type": "step", "data": {"text": 5, "x": "\ud800"}},
        {"type": "step", "data": {"\ud800": 1}},
        {"type": "step", "data": "\ud800"},
        {"type": "step", "data": {"token": "\ud800"}},
        {"type": "state", "data": {"\ud800": "\ud800"}},
        {"type": "reset", "data": {"episode_id": "\ud800"}},
    ],
    ids=["text-list", "extra-field", "key", "data", "token", "state", "episode-id"],
)
def test_a_lone_surrogate_that_openenv_would_echo_gets_a_protocol_error(start_server, message):
    """The fuzz's deep run found these: OpenEnv's reply to a refused field echoes its value, writing a lone
    surrogate fails, and its handler closed the session. A step's text may hold one (the local env's rule)."""
    url, _, _ = start_server(WORDLE)
    with session(url) as exchange:
        reply = exchange(message)
        assert exchange({"type": "state"})["type"] == "state"  # closed before: ConnectionClosed
        assert_still_plays(exchange, local_episode_start())
        text_reply = exchange({"type": "step", "data": {"text": "cr\ud800ane"}})
    assert reply["type"] == "error" and reply["data"]["error_type"] == "ProtocolError", reply
    assert text_reply["type"] == "observation", text_reply


def test_a_reset_with_an_episode_id_that_is_not_a_string_gets_a_typed_error(start_server):
    url, _, _ = start_server(WORDLE)
    with session(url) as exchange:
        reply = exchange({"type": "reset", "data": {"episode_id": {"a": [1]}}})
        state = exchange({"type": "state"})  # else the state holds it, and pydantic warns as it writes it
    assert isinstance(state["data"]["episode_id"], (str, type(None))), state
    assert reply["type"] == "error" and reply["data"]["error_type"] in ("ConfigurationError", "ProtocolError"), reply


#: ``Authorization`` values an HTTP client can send: visible ASCII, spaces and bytes over 0x7f (h11 refuses controls).
header_values = st.binary(max_size=80).map(lambda raw: bytes(b for b in raw if b >= 0x20 and b != 0x7F).strip())
authorizations = header_values | header_values.map(lambda value: b"Bearer " + value)


def test_fuzzed_authorization_headers_are_refused_with_401_and_never_reach_the_env(start_server):
    import http.client
    import urllib.parse

    token = "fuzzed-server-token-0123456789"
    url, served, _ = start_server(WORDLE, token=token)
    address = urllib.parse.urlsplit(url)

    def status_and_body(authorization: bytes) -> tuple[int, dict]:
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=TIMEOUT_S)
        try:
            connection.putrequest("POST", "/reset")
            connection.putheader("Authorization", authorization)
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", "2")
            connection.endheaders(b"{}")
            reply = connection.getresponse()
            return reply.status, json.loads(reply.read())
        finally:
            connection.close()

    sent, envs_made = [], []
    new_env = served.service.new_env
    served.service.new_env = lambda *split: envs_made.append(1) or new_env(*split)  # one per HTTP /reset

    @given(authorization=authorizations)
    def fuzz(authorization):
        status, body = status_and_body(authorization)
        sent.append(authorization)
        assert status == 401 and body["error_type"] == "AuthenticationError", (authorization, body)

    fuzz()
    assert served.auth.refused == len(sent) and not envs_made
    assert status_and_body(f"Bearer {token}".encode())[0] == 200 and envs_made


TASK_KEYS = ["split", "index", "start", "stop"]
task_values = st.sampled_from(["train", "validation", "test", "dev", ""]) | st.integers(-(2**40), 2**40) | json_values
task_bodies = st.dictionaries(st.sampled_from(TASK_KEYS), task_values, max_size=4) | json_values


def test_bodies_json_cannot_echo_get_a_422_not_a_500(start_server):
    """Infinity, NaN and lone surrogates in a body: FastAPI's own 422 (and OpenEnv's HTTP /step's) echoed them and
    failed to encode them (a 500); the server's handlers answer a typed 422 whose JSON carries them as it can."""
    import urllib.error
    import urllib.request

    url, _, _ = start_server(WORDLE)
    for path, body in (
        ("/lm_gym-Wordle-v0/task", '{"split": Infinity}'),
        ("/lm_gym-Wordle-v0/task_range", '{"split": "train", "start": NaN}'),
        ("/lm_gym-Wordle-v0/task", '{"split": "test", "index": "\\ud800"}'),
        ("/reset", '{"seed": -Infinity}'),
        ("/step", '{"action": {"text": NaN}}'),
        ("/step", '{"action": {"text": "crane", "extra": "\\udfff"}}'),
    ):
        request = urllib.request.Request(f"{url}{path}", data=body.encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=TIMEOUT_S)
        assert refused.value.code == 422, (path, body, refused.value.read())
        reply = json.load(refused.value)
        assert reply["detail"] and (path == "/step" or reply["error_type"] == "ProtocolError"), reply


def test_fuzzed_task_api_bodies_get_typed_answers_and_the_routes_go_on(start_server):
    import urllib.error
    import urllib.request

    from lm_gym.serve.errors import WIRE_ERRORS

    url, _, _ = start_server(WORDLE)

    def post(route: str, body: object) -> tuple[int, object]:
        data = json.dumps(body).encode()
        request = urllib.request.Request(f"{url}/lm_gym-Wordle-v0/{route}", data=data, method="POST")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:
                return reply.status, json.load(reply)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    @settings(max_examples=2 * settings().max_examples)
    @given(route=st.sampled_from(["task", "task_range", "num_tasks", "tasks"]), body=task_bodies)
    def fuzz(route, body):
        status, reply = post(route, body)
        assert status in (200, 400, 422), (route, body, status, reply)
        if status == 400:
            assert reply["error_type"] in WIRE_ERRORS, (route, body, reply)
        assert post("task", {"split": "test", "index": SEED})[1]["task"]["seed"] == SEED

    fuzz()
