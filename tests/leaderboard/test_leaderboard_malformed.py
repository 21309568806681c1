"""Malformed and malicious leaderboard entries (leaderboard/safe_read.py, entry_schema.py, entry_checks.py).

Entries are untrusted input: :data:`MALFORMED` lists hand-written malformed and malicious files (each refused
with a message naming the problem, and counted), and Hypothesis mutates a valid entry and draws random JSON,
all of which must be refused.
"""

import copy
import functools
import hashlib
import json
import math

import pytest
from fabricated_entries import (  # noqa: F401  (offline_runs and valid_entry: fixtures)
    COMMONGEN,
    IMDB,
    OFFLINE,
    evaluation,
    offline_runs,
    valid_entry,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.entry import accept_entry, load_entry
from leaderboard.entry_checks import validate_entry
from leaderboard.entry_schema import ENTRY_SCHEMA, MAX_ENTRY_BYTES, EntryError

# --- malformed and malicious entries -----------------------------------------------------------

RUN2 = ("tasks", IMDB, "runs", 2)
_RAW = "\x00raw-placeholder\x00"


def changed(path, value=None, *, delete=False, raw=None):
    """A case's file: the valid entry with the field at ``path`` set (or deleted, or given raw JSON text)."""

    def make(entry):
        entry = copy.deepcopy(entry)
        *parents, last = path
        parent = functools.reduce(lambda node, key: node[key], parents, entry)
        if delete:
            del parent[last]
        else:
            parent[last] = _RAW if raw is not None else value
        text = json.dumps(entry)  # NaN and Infinity come out as those literals
        return text.replace(json.dumps(_RAW), raw).encode() if raw is not None else text.encode()

    return make


def replaced(make_text):
    """A case's file made from the valid entry's JSON text."""
    return lambda entry: make_text(json.dumps(entry)).encode()


def extra_run(entry):
    runs = entry["tasks"][IMDB]["runs"]
    return [*runs, *(run | {"seed": 100 + index} for index, run in enumerate(runs * 6))][:21]


MALFORMED = [  # (what, file bytes or a function of the valid entry, a fragment of the message)
    # the file itself
    ("empty file", b"", "not JSON: Expecting value"),
    ("whitespace only", b"  \n\t ", "not JSON"),
    ("a JSON array at top level", b"[]", "entry: expected object, got array"),
    ("a JSON string at top level", b'"entry"', "entry: expected object, got string"),
    ("null at top level", b"null", "entry: expected object, got null"),
    ("a number at top level", b"42", "entry: expected object, got integer"),
    ("non-UTF-8 bytes", b'{"name": "\xff\xfe"}', "not UTF-8: byte 0xff at offset 10"),
    ("UTF-16", lambda entry: json.dumps(entry).encode("utf-16"), "not UTF-8"),
    ("a UTF-8 byte order mark", lambda entry: b"\xef\xbb\xbf" + json.dumps(entry).encode(), "not JSON"),
    ("truncated JSON", lambda entry: json.dumps(entry).encode()[:5000], "not JSON"),
    ("trailing garbage", replaced(lambda text: text + " x"), "not JSON: Extra data"),
    ("two documents", replaced(lambda text: text + text), "not JSON: Extra data"),
    ("single quotes", b"{'name': 'x'}", "not JSON"),
    ("a comment", replaced(lambda text: "// entry\n" + text), "not JSON"),
    (
        "a 10 MB file",
        b'{"name": "' + b"a" * 10_000_000 + b'"}',
        "the file is 10000012 bytes, over the limit of 5000000",
    ),
    ("one byte over the limit", b" " * (MAX_ENTRY_BYTES + 1), "over the limit"),
    ("10^5 open brackets", b"[" * 100_000, "entry: nested 100000 levels deep, at most 12 allowed"),
    ("10^5 nested arrays", b"[" * 100_000 + b"]" * 100_000, "nested 100000 levels deep"),
    ("10^4 nested objects", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nested 10000 levels deep"),
    (
        "13 levels inside a field",
        changed(("description",), functools.reduce(lambda inner, _: [inner], range(11), [])),
        "nested 13 levels",
    ),
    ("an integer of 5000 digits", changed(RUN2 + ("seed",), raw="9" * 5000), "not JSON"),
    # numbers
    (
        "a NaN literal",
        changed(RUN2 + ("final_eval", "mean_return"), math.nan),
        'tasks["lm_gym/IMDB-v0"].runs[2].final_eval.mean_return: nan is not a finite number',
    ),
    (
        "an Infinity literal",
        changed(RUN2 + ("wall_time_s",), math.inf),
        "runs[2].wall_time_s: inf is not a finite number",
    ),
    (
        "a -Infinity literal",
        changed(RUN2 + ("curve", 3, 1), -math.inf),
        "runs[2].curve[3][1]: -inf is not a finite number",
    ),
    (
        "1e400",
        changed(RUN2 + ("final_eval", "mean_sentiment"), raw="1e400"),
        "final_eval.mean_sentiment: inf is not a finite number",
    ),
    (
        "-1e400 in a sample",
        changed(RUN2 + ("samples", 0, "return"), raw="-1e400"),
        "samples[0].return: -inf is not a finite number",
    ),
    ("NaN as a seed", changed(RUN2 + ("seed",), raw="NaN"), "runs[2].seed: nan is not a finite number"),
    (
        "a metric beyond 1e9",
        changed(RUN2 + ("final_eval", "corpus_msttr"), 1e10),
        "corpus_msttr: 10000000000.0 is above 1e+09",
    ),
    ("a seed beyond 1e9", changed(RUN2 + ("seed",), 10**12), "runs[2].seed: 1000000000000 is above 1e+09"),
    ("a negative wall time", changed(RUN2 + ("wall_time_s",), -1.0), "wall_time_s: -1.0 is below 0"),
    ("zero episodes", changed(RUN2 + ("final_eval", "num_episodes"), 0), "num_episodes: 0 is below 1"),
    ("a negative std", changed(RUN2 + ("final_eval", "std_return"), -0.1), "std_return: -0.1 is below 0"),
    (
        "a boolean metric",
        changed(RUN2 + ("final_eval", "mean_return"), True),
        "mean_return: expected number, got boolean",
    ),
    (
        "a metric as a string",
        changed(RUN2 + ("final_eval", "mean_return"), "0.5"),
        "mean_return: expected number, got string",
    ),
    ("a fractional seed", changed(RUN2 + ("seed",), 1.5), "runs[2].seed: expected integer, got number"),
    # fields
    ("an unknown top-level field", changed(("extra",), 1), 'entry: unknown field "extra"'),
    ("an unknown run field", changed(RUN2 + ("checkpoint",), "/etc/passwd"), 'runs[2]: unknown field "checkpoint"'),
    ("an unknown sample field", changed(RUN2 + ("samples", 0, "html"), "<b>"), 'samples[0]: unknown field "html"'),
    ("a __proto__ field", changed(("__proto__",), {}), 'unknown field "__proto__"'),
    ("no name", changed(("name",), delete=True), "entry: lacks name"),
    ("no tasks", changed(("tasks",), delete=True), "entry: lacks tasks"),
    ("a run without seed", changed(RUN2 + ("seed",), delete=True), "runs[2]: lacks seed"),
    ("schema version 2", changed(("schema_version",), 2), "schema_version: must be 1"),
    ("a name as a number", changed(("name",), 5), "name: expected string, got integer"),
    ("a name as a list", changed(("name",), ["a"]), "name: expected string, got array"),
    ("tasks as a list", changed(("tasks",), []), "tasks: expected object, got array"),
    ("runs as an object", changed(("tasks", IMDB, "runs"), {}), "runs: expected array, got object"),
    (
        "initial_eval as a string",
        changed(RUN2 + ("initial_eval",), "none"),
        "initial_eval: expected object or null, got string",
    ),
    ("a null final_eval", changed(RUN2 + ("final_eval",), None), "final_eval: expected object, got null"),
    # texts
    ("an empty name", changed(("name",), ""), 'name: "" is 0 characters long, at least 1 allowed'),
    ("a 100k-character name", changed(("name",), "n" * 100_000), 'name: "nnnn'),
    (
        "a 2001-character description",
        changed(("description",), "d" * 2001),
        "is 2001 characters long, at most 2000 allowed",
    ),
    ("a 201-character model", changed(("model",), "m" * 201), "model:"),
    (
        "a NUL in the name",
        changed(("name",), "PPO\x00"),
        "name: holds the control or invisible character U+0000 at index 3",
    ),
    (
        "a final newline in the name",
        changed(("name",), "PPO\n"),
        "name: holds the control or invisible character U+000A",
    ),
    (
        "a terminal escape in the method",
        changed(("method",), "\x1b[31mppo"),
        "method: holds the control or invisible character U+001B",
    ),
    ("a bidi override in the name", changed(("name",), "PPO \u202eevil"), "U+202E"),
    ("a zero-width space in the model", changed(("model",), "gpt\u200b2"), "U+200B"),
    ("a lone surrogate", changed(("name",), "\ud800"), "name: holds the control or invisible character U+D800"),
    (
        "a bell in the description",
        changed(("description",), "ding\x07"),
        "description: holds the control or invisible character U+0007",
    ),
    (
        "a carriage return in a generation",
        changed(RUN2 + ("samples", 0, "generation"), "a\rb"),
        "generation: holds the control or invisible character U+000D",
    ),
    ("a 2001-character prompt", changed(RUN2 + ("samples", 0, "prompt"), "p" * 2001), 'prompt: "pppp'),
    # identifiers
    (
        "an unknown board",
        changed(("board",), "nonexistent"),
        'board: "nonexistent" is not one of grue, multiagent, offline-games, offline-text, smoke',
    ),
    ("a board path", changed(("board",), "../offline"), 'board: "../offline" is not one of'),
    ("a bad date", changed(("date",), "2024-13-01"), 'date: "2024-13-01" is not a valid date'),
    ("a US date", changed(("date",), "01/02/2024"), 'date: "01/02/2024" is not a date (YYYY-MM-DD)'),
    ("a date with a final newline", changed(("date",), "2024-01-01\n"), "is not a date"),
    ("a short config hash", changed(("config_hash",), "abc"), 'config_hash: "abc" is not a SHA-256'),
    ("an upper-case config hash", changed(("config_hash",), "A" * 64), "is not a SHA-256"),
    ("a shell command as commit", changed(("git_commit",), "abc1234; rm -rf /"), "is not a git commit"),
    ("an empty library version", changed(("library_version",), ""), 'library_version: "" is not a version'),
    (
        "a metric name with markup",
        changed(RUN2 + ("final_eval", "mean_<b>"), 1.0),
        'final_eval: key "mean_<b>" is not a metric name',
    ),
    ("a metric name of 80 characters", changed(RUN2 + ("final_eval", "mean_" + "m" * 75), 1.0), "is not a metric name"),
    (
        "a task id with a path",
        replaced(lambda text: text.replace('"lm_gym/IMDB-v0"', '"lm_gym/../../IMDB-v0"')),
        'tasks: key "lm_gym/../../IMDB-v0" is not an env id',
    ),
    (
        "a task id of another namespace",
        replaced(lambda text: text.replace('"lm_gym/IMDB-v0"', '"gym/IMDB-v0"')),
        'key "gym/IMDB-v0" is not an env id',
    ),
    # lists
    (
        "two runs",
        changed(("tasks", IMDB, "runs", 2), delete=True),
        'tasks["lm_gym/IMDB-v0"].runs: has 2 items, at least 3 allowed',
    ),
    (
        "21 runs",
        lambda entry: changed(("tasks", IMDB, "runs"), extra_run(entry))(entry),
        "has 21 items, at most 20 allowed",
    ),
    (
        "201 curve points",
        changed(RUN2 + ("curve",), [[step, 0.5] for step in range(201)]),
        "curve: has 201 items, at most 200 allowed",
    ),
    ("a curve triple", changed(RUN2 + ("curve", 0), [0, 0.5, 1]), "curve[0]: has 3 items, at most 2 allowed"),
    ("a negative curve step", changed(RUN2 + ("curve", 0, 0), -1), "curve[0][0]: -1 is below 0"),
    ("a fractional curve step", changed(RUN2 + ("curve", 0, 0), 0.5), "curve[0][0]: expected integer, got number"),
    (
        "six samples",
        changed(RUN2 + ("samples",), [{"prompt": "p", "generation": "g", "return": 0}] * 6),
        "samples: has 6 items, at most 5 allowed",
    ),
    ("a sample without return", changed(RUN2 + ("samples", 0, "return"), delete=True), "samples[0]: lacks return"),
    ("no tasks at all", changed(("tasks",), {}), "tasks: has 0 entries, at least 1 allowed"),
    # what the board asks for
    (
        "a missing task",
        changed(("tasks", IMDB), delete=True),
        "tasks: lacks lm_gym/IMDB-v0, a task of board offline-text",
    ),
    (
        "an extra task",
        lambda entry: changed(("tasks", "lm_gym/CNNDailyMail-v0"), entry["tasks"][IMDB])(entry),
        'tasks["lm_gym/CNNDailyMail-v0"]: not a task of board offline-text',
    ),
    (
        "the offline tasks on the smoke board",
        changed(("board",), "smoke"),
        "tasks: lacks lm_gym/CNNDailyMail-v0, a task of board smoke",
    ),
    (
        "a duplicated seed",
        changed(RUN2 + ("seed",), 0),
        'tasks["lm_gym/IMDB-v0"].runs[2].seed: seed 0 repeats runs[0]\'s seed',
    ),
    (
        "other seeds in one task",
        changed(("tasks", COMMONGEN, "runs", 2, "seed"), 7),
        'tasks["lm_gym/CommonGen-v0"]: seeds [0, 1, 7] differ from lm_gym/IMDB-v0\'s [0, 1, 2]',
    ),
    (
        "a missing task metric",
        changed(RUN2 + ("final_eval", "mean_sentiment"), delete=True),
        "runs[2].final_eval: lacks mean_sentiment, which the board scores lm_gym/IMDB-v0 on",
    ),
    ("a missing naturalness metric", changed(RUN2 + ("final_eval", "corpus_msttr"), delete=True), "lacks corpus_msttr"),
    (
        "a missing CommonGen metric",
        changed(("tasks", COMMONGEN, "runs", 0, "final_eval", "mean_coverage"), delete=True),
        "lacks mean_coverage",
    ),
    (
        "an evaluation of another size",
        changed(("tasks", COMMONGEN, "runs", 1, "final_eval", "num_episodes"), 64),
        'tasks["lm_gym/CommonGen-v0"].runs[1].final_eval.num_episodes: 64, '
        "but board offline-text scores final evaluations of 128 episodes",
    ),
    # JSON tricks
    (
        "a duplicated top-level key",
        replaced(lambda text: '{"board": "smoke", ' + text[1:]),
        'not JSON: duplicated key "board"',
    ),
    (
        "a duplicated metric key",
        changed(RUN2 + ("final_eval", "mean_return"), raw='0.9, "mean_return": 0.1'),
        'duplicated key "mean_return"',
    ),
    (
        "a duplicated task",
        replaced(lambda text: text.replace('"tasks": {', '"tasks": {"lm_gym/CommonGen-v0": {"runs": []}, ', 1)),
        'duplicated key "lm_gym/CommonGen-v0"',
    ),
]


def test_malformed_and_malicious_entries_are_refused_with_a_reason(valid_entry, tmp_path):  # noqa: F811
    entries, refused, wrong = tmp_path / "entries", set(), []
    for index, (what, make, expected) in enumerate(MALFORMED):
        data = make(valid_entry) if callable(make) else make
        path = tmp_path / f"case{index}.json"
        path.write_bytes(data)
        try:
            accept_entry(path, entries)
            wrong.append(f"{what}: accepted")
        except EntryError as error:
            message = str(error)
            if expected not in message or not message.isprintable() or len(message) > 2000:
                wrong.append(f"{what}: {message[:300]!r} (expected {expected!r})")
            refused.add(hashlib.sha256(data).digest())
        path.unlink()
    assert not wrong, "\n".join(wrong)
    assert not entries.exists()  # nothing was written for any of them
    assert len(refused) == len(MALFORMED) >= 50  # distinct inputs, each refused


# Values wrong for every field: non-finite or out-of-range numbers, over-long or control
# texts, and wrong types (no field allows booleans, and strings and numbers never stand in for each other).
WRONG_SCALARS = [math.nan, math.inf, -math.inf, 1e10, -1e10, "x" * 5000, "\x00", "\u202e", True, False]
WRONG_CONTAINERS = [[], {}, [1, 2], {"unexpected": 1}]
REQUIRED_EVALUATION_KEYS = {"num_episodes", "mean_return", "std_return"}


def paths_in(value, path=()):
    """Every node's path, with whether it is a leaf."""
    yield path, not isinstance(value, (dict, list))
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from paths_in(inner, (*path, key))


def node(entry, path):
    return functools.reduce(lambda inner, key: inner[key], path, entry)


def required_key_paths(entry):
    """Paths of keys that may not be deleted: all of them, but initial_eval's optional metrics."""
    return [
        path
        for path, _ in paths_in(entry)
        if path
        and isinstance(path[-1], str)
        and isinstance(node(entry, path[:-1]), dict)
        and not (len(path) > 1 and path[-2] == "initial_eval" and path[-1] not in REQUIRED_EVALUATION_KEYS)
        and path != ("recipe",)  # optional: an entry without one is valid, but not verifiable
    ]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder for Hypothesis's examples (a function's tmp_path would be shared by them anyway)."""
    return tmp_path_factory.mktemp("examples")


@settings(max_examples=60)
@given(data=st.data())
def test_entries_with_a_randomly_broken_field_are_refused(valid_entry, scratch, data):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    nodes = list(paths_in(entry))
    mutation = data.draw(st.sampled_from(["replace", "delete", "add a key", "repeat a run"]))
    if mutation == "replace":
        path, is_leaf = data.draw(st.sampled_from(nodes[1:]))
        node(entry, path[:-1])[path[-1]] = data.draw(
            st.sampled_from(WRONG_SCALARS + WRONG_CONTAINERS if is_leaf else WRONG_SCALARS)
        )
    elif mutation == "delete":
        path = data.draw(st.sampled_from(required_key_paths(entry)))
        del node(entry, path[:-1])[path[-1]]
    elif mutation == "add a key":
        path = data.draw(st.sampled_from([path for path, _ in nodes if isinstance(node(entry, path), dict)]))
        node(entry, path)["unexpected"] = data.draw(st.sampled_from([1, "x", None]))
    else:
        runs = entry["tasks"][data.draw(st.sampled_from(OFFLINE))]["runs"]
        runs.append(copy.deepcopy(runs[data.draw(st.integers(0, len(runs) - 1))]))
    with pytest.raises(EntryError):
        validate_entry(entry)
    path = scratch / "mutated.json"
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError):
        load_entry(path)


ENTRY_KEYS = sorted({*ENTRY_SCHEMA["properties"], "runs", "seed", "final_eval", "curve", "samples", IMDB})
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(ENTRY_KEYS) | st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=60)
@given(JSON_VALUES)
def test_random_json_values_are_refused(value):
    with pytest.raises(EntryError):
        validate_entry(value)


@settings(max_examples=30)
@given(st.binary(max_size=300))
def test_random_bytes_are_refused(scratch, data):
    path = scratch / "random.json"
    path.write_bytes(data)
    with pytest.raises(EntryError):
        load_entry(path)
