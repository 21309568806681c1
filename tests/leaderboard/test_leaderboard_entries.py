"""Leaderboard entries (leaderboard/entry.py, leaderboard/submit.py): building, validating, accepting.

Entries are untrusted input: besides a valid entry's round trip, :data:`MALFORMED` lists
hand-written malformed and malicious files (each refused with a message naming the problem,
and counted), and Hypothesis mutates a valid entry and draws random JSON, all of which must be
refused.
"""

import copy
import functools
import hashlib
import itertools
import json
import math
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.boards import boards, task_metrics
from leaderboard.entry import (
    ENTRY_SCHEMA,
    MAX_ENTRY_BYTES,
    EntryError,
    accept_entry,
    canonical_json,
    entry_file_name,
    load_entry,
    validate_entry,
)
from leaderboard.submit import SubmitError, build_entry
from lm_gym.results import load_result, make_result, write_result

OFFLINE = boards()["offline-text"].tasks
SEEDS = (0, 1, 2)
IMDB = "lm_gym/IMDB-v0"
COMMONGEN = "lm_gym/CommonGen-v0"
SAFE_FILE_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*-[0-9a-f]{12}\.json")

# Plausible final scores of a small PPO policy per metric (the initial policy scores less).
FINAL_SCORES = {
    "mean_return": 0.42,
    "mean_sentiment": 0.61,
    "mean_meteor": 0.18,
    "mean_rouge2": 0.07,
    "corpus_cider": 0.35,
    "mean_coverage": 0.52,
    "mean_intent_match": 0.31,
    "mean_solved": 0.12,
    "mean_reached_cutoff": 0.4,
    "corpus_distinct_2": 0.47,
    "corpus_msttr": 0.55,
}


@functools.cache
def result_template():
    """One result made by make_result (its versions and commit), copied for every run: git is asked once."""
    return make_result(
        env_id=IMDB,
        algorithm="ppo",
        seed=0,
        config={},
        initial_eval=None,
        final_eval=None,
        curves=[],
        wall_time_s=1.0,
        tokens_per_s=1.0,
        episodes_per_s=1.0,
        peak_memory_mb=1.0,
        checkpoint=None,
        device="cpu",
    )


def evaluation(env_id, scale):
    split = task_metrics()[env_id]
    values = {
        "num_episodes": boards()["offline-text"].eval_episodes,
        # the return of the policy that plays the samples (entry_flags flags a mean far from its samples')
        "mean_return": math.fsum(sample["return"] for sample in honest_samples(env_id)) / len(GENERATIONS) * scale,
        "std_return": 0.21,
    }
    values.update(
        {name: round(FINAL_SCORES[name] * scale, 4) for name in (*split.task, *split.naturalness) if name not in values}
    )
    return values


# What the fabricated runs' policy says on the first episodes of every evaluation: played on the board's envs
# (honest_samples), so that the samples re-score as validate replays them.
GENERATIONS = ["a fine film with a warm heart", "a dog runs in the park", "thank you so much", "it is", ""]


@functools.cache
def honest_samples(env_id, board="offline-text"):
    """The first 5 episodes of ``board``'s evaluation of ``env_id`` played with :data:`GENERATIONS`."""
    from leaderboard.replay import play_samples

    if env_id not in boards()[board].env_kwargs:  # runs of other boards are only submitted, not re-scored
        return [
            {"prompt": f"prompt {index}", "generation": text, "return": 0.0} for index, text in enumerate(GENERATIONS)
        ]
    return play_samples(env_id, boards()[board].env_kwargs[env_id], [[text] for text in GENERATIONS])


RECIPE = {  # a recipe as submit builds it from harness runs (the fabricated runs have no harness_job.json)
    "suite": "offline",
    "algorithm": "ppo",
    "tasks": {
        IMDB: "imdb",
        COMMONGEN: "commongen",
        "lm_gym/DailyDialog-v0": "dailydialog",
        "lm_gym/Prompts-v0": "prompts",
    },
    "device": "cpu",
    "versions": {"python": "3.11.9", "lm_gym": "0.1.0", "torch": "2.13.0+cpu"},
    "jobs": [
        {"name": "imdb/ppo/seed0", "argv": ["baselines/ppo.py", "--seed", "0", "--out-dir", "{runs}/imdb/ppo/seed0"]}
    ],
}


def write_runs(root, *, algorithm="ppo", seeds=SEEDS, tasks=OFFLINE, steps=100, eval_every=10, samples=None):
    """result.json files under ``root/<algorithm>/<task>/seed<k>``, as a baseline writes them."""
    for env_id in tasks:
        for seed in seeds:
            out = root / algorithm / env_id.split("/")[1] / f"seed{seed}"
            (out / "checkpoint").mkdir(parents=True)
            config = {
                "env_id": env_id,
                "seed": seed,
                "out_dir": str(out),
                "checkpoint_dir": str(out / "checkpoint"),
                "learning_rate": 1e-4,
                "model_name": None,
                "model_config": '{"model_type": "gpt2", "n_layer": 2}',
                "init_from": None,
                "device": "cpu",
                "track": False,
            }
            base = 0.0 if env_id in boards()["offline-text"].env_kwargs else -1.0  # the games' returns are negative
            curves = [
                {"step": step, "mean_return": base + 0.1 + step / steps / 2, "loss": 1.0 / (step + 1)}
                | ({"eval/mean_return": base + 0.2 + step / steps / 2} if step % eval_every == 0 else {})
                for step in range(steps)
            ]
            result = copy.deepcopy(result_template()) | {
                "env_id": env_id,
                "algorithm": algorithm,
                "seed": seed,
                "config": config,
                "curves": curves,
                "initial_eval": evaluation(env_id, 0.5),
                "final_eval": evaluation(env_id, 1 + seed / 20),
                "wall_time_s": 600.0 + seed,
            }
            result["samples"] = honest_samples(env_id) if samples is None else samples
            write_result(out, result)
    return root


def edit_result(path, change):
    result = load_result(path)
    change(result)
    write_result(path.parent, result)


@pytest.fixture(scope="module")
def offline_runs(tmp_path_factory):
    return write_runs(tmp_path_factory.mktemp("runs") / "offline")


@pytest.fixture(scope="module")
def valid_entry(offline_runs):
    """A built entry with a recipe, so that every field of the format is present; its samples re-score."""
    entry = build_entry([offline_runs], name="PPO (lm-gym)", description="3 seeds, synthetic data")
    entry["recipe"] = copy.deepcopy(RECIPE)
    validate_entry(entry)
    return entry


# --- a valid entry's round trip ---------------------------------------------------------------


def test_a_built_entry_round_trips_through_submit_validate_and_accept(offline_runs, tmp_path, capsys):
    out = tmp_path / "entry.json"
    assert leaderboard_cli(["submit", str(offline_runs), "--name", "PPO (lm-gym)", "--out", str(out)]) == 0
    entry = load_entry(out)
    assert entry["board"] == "offline-text" and sorted(entry["tasks"]) == sorted(OFFLINE)
    assert entry["method"] == "ppo" and entry["model"] == "GPT-2 (2 layers), random init"  # the model_config in words
    assert entry["library_version"] == result_template()["versions"]["lm_gym"]
    assert all([run["seed"] for run in task["runs"]] == list(SEEDS) for task in entry["tasks"].values())
    run = entry["tasks"][IMDB]["runs"][1]
    assert run["final_eval"] == evaluation(IMDB, 1.05) and run["samples"] == honest_samples(IMDB)
    assert run["curve"][0] == [0, 0.2] and len(run["curve"]) == 10  # the evaluation rows, every 10 steps

    entries = tmp_path / "entries"
    capsys.readouterr()
    assert leaderboard_cli(["validate", str(out), "--accept-into", str(entries)]) == 0
    accepted = entries / entry_file_name(entry)
    assert capsys.readouterr().out == f"{out}: valid, accepted as {accepted}\n"
    assert load_entry(accepted) == entry and SAFE_FILE_NAME.fullmatch(accepted.name)
    canonical = accepted.read_bytes().rstrip(b"\n")
    assert canonical == canonical_json(entry).encode()
    assert accepted.name.endswith(hashlib.sha256(canonical).hexdigest()[:12] + ".json")


def test_the_config_hash_ignores_seeds_and_paths_but_not_hyperparameters(offline_runs, tmp_path):
    elsewhere = write_runs(tmp_path / "offline")
    assert build_entry([elsewhere], name="a")["config_hash"] == build_entry([offline_runs], name="b")["config_hash"]
    for path in elsewhere.rglob("result.json"):
        edit_result(path, lambda result: result["config"].update(learning_rate=3e-4))
    assert build_entry([elsewhere], name="a")["config_hash"] != build_entry([offline_runs], name="b")["config_hash"]


def test_long_curves_are_thinned_evenly_keeping_both_ends(tmp_path):
    root = write_runs(tmp_path / "offline", steps=250, eval_every=1)
    curve = build_entry([root], name="long")["tasks"][IMDB]["runs"][0]["curve"]
    assert len(curve) == 200 and curve[0][0] == 0 and curve[-1][0] == 249
    assert all(later[0] > earlier[0] for earlier, later in itertools.pairwise(curve))


def test_samples_are_copied_cleaned_and_cut_to_the_limits(tmp_path):
    samples = [
        {"prompt": f"prompt {i}\r\nline two", "generation": "\x1b[31mred" + "x" * 3000, "return": i / 10}
        for i in range(7)
    ]
    root = write_runs(tmp_path / "offline", samples=samples)
    kept = build_entry([root], name="with samples")["tasks"][IMDB]["runs"][0]["samples"]
    assert len(kept) == 5 and kept[3]["return"] == 0.3
    assert kept[0]["prompt"] == "prompt 0\u240d\nline two"  # controls as their pictures: the text replays
    assert kept[0]["generation"].startswith("\u241b[31mred") and len(kept[0]["generation"]) == 2000
    assert kept[0]["generation"].endswith("\u2026")


def test_names_keep_any_printable_text_and_file_names_stay_safe(valid_entry, tmp_path):
    names = [
        "<script>alert(1)</script>",
        "../../etc/passwd",
        "..",
        "/",
        "a/b\\c:d",
        ".hidden",
        "PPO \"quoted\" & 'single'",
        "Méthode ✓ – été",
        "日本語",
        "x" * 100,
    ]
    entries = tmp_path / "entries"
    for index, name in enumerate(names):
        source = tmp_path / f"entry{index}.json"
        source.write_text(json.dumps(valid_entry | {"name": name}))
        accepted = accept_entry(source, entries)
        assert accepted.parent == entries and SAFE_FILE_NAME.fullmatch(accepted.name), name
        assert load_entry(accepted)["name"] == name  # stored as given; the board escapes it
    assert entry_file_name(valid_entry | {"name": "../../etc/passwd"}).startswith("etc-passwd-")
    assert entry_file_name(valid_entry | {"name": "Méthode"}).startswith("methode-")
    assert entry_file_name(valid_entry | {"name": "日本語"}).startswith("entry-")
    assert len(list(entries.iterdir())) == len(names)


def test_accepting_replaces_a_link_in_the_entries_folder_instead_of_writing_through_it(valid_entry, tmp_path):
    entries, victim = tmp_path / "entries", tmp_path / "victim.txt"
    entries.mkdir()
    victim.write_text("untouched")
    (entries / entry_file_name(valid_entry)).symlink_to(victim)
    source = tmp_path / "entry.json"
    source.write_text(json.dumps(valid_entry))
    accepted = accept_entry(source, entries)
    assert victim.read_text() == "untouched" and not accepted.is_symlink() and load_entry(accepted) == valid_entry


def test_texts_may_hold_brackets_and_newlines_where_allowed(valid_entry, tmp_path):
    path = tmp_path / "entry.json"
    path.write_text(
        json.dumps(valid_entry | {"description": "[{" * 900 + "\nsecond line\twith a tab", "name": "]]]}}}"})
    )
    assert load_entry(path)["name"] == "]]]}}}"


def test_links_and_special_files_are_not_read(valid_entry, tmp_path):
    target = tmp_path / "entry.json"
    target.write_text(json.dumps(valid_entry))
    (tmp_path / "link.json").symlink_to(target)
    with pytest.raises(EntryError, match="symbolic link"):
        load_entry(tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")  # opening it for reading would wait for a writer
    with pytest.raises(EntryError, match="not a regular file"):
        load_entry(tmp_path / "fifo.json")
    with pytest.raises(EntryError, match="not a regular file"):
        load_entry(tmp_path)
    with pytest.raises(EntryError, match="cannot read"):
        load_entry(tmp_path / "absent.json")


def test_validate_prints_one_line_per_file_and_fails_if_any_is_invalid(valid_entry, tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(valid_entry))
    bad.write_text(json.dumps(valid_entry | {"board": "nope\x1b[2J"}))
    assert leaderboard_cli(["validate", str(good), str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{good}: valid",
        f'{bad}: board: "nope\\u001b[2J" is not one of grue, multiagent, offline-games, offline-text, smoke',
    ]


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


def test_malformed_and_malicious_entries_are_refused_with_a_reason(valid_entry, tmp_path):
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
def test_entries_with_a_randomly_broken_field_are_refused(valid_entry, scratch, data):
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


# --- submit's errors ---------------------------------------------------------------------------


def submit_error(capsys, argv):
    assert leaderboard_cli(["submit", *map(str, argv), "--name", "x", "--out", "unused/entry.json"]) == 1
    return capsys.readouterr().err


def test_submit_refuses_fewer_than_three_seeds(tmp_path, capsys):
    root = write_runs(tmp_path / "offline", seeds=(0, 1))
    assert "lm_gym/IMDB-v0: 2 seeds (0, 1); an entry needs 3 to 20 per task" in submit_error(capsys, [root])


def test_submit_needs_the_algorithm_when_the_folders_hold_several(tmp_path, capsys):
    root = write_runs(write_runs(tmp_path / "offline"), algorithm="sft")
    assert "several algorithms (ppo, sft): pick one with --algorithm" in submit_error(capsys, [root])
    assert build_entry([root], name="SFT", algorithm="sft")["method"] == "sft"
    with pytest.raises(SubmitError, match=r"no runs of algorithm 'nlpo' in the folders \(found: ppo, sft\)"):
        build_entry([root], name="x", algorithm="nlpo")


def test_submit_refuses_runs_whose_configs_differ(tmp_path, capsys):
    root = write_runs(tmp_path / "offline")
    edit_result(
        root / "ppo" / "IMDB-v0" / "seed2" / "result.json", lambda result: result["config"].update(learning_rate=1e-3)
    )
    message = submit_error(capsys, [root])
    assert "lm_gym/IMDB-v0: the runs' configs differ in learning_rate" in message and "seed2" in message


def test_submit_names_the_missing_task_and_the_unknown_board(tmp_path, capsys):
    root = write_runs(tmp_path / "offline", tasks=OFFLINE[1:])
    assert "no runs of lm_gym/IMDB-v0: board offline-text needs every one of its tasks" in submit_error(capsys, [root])
    elsewhere = write_runs(tmp_path / "sweep")
    assert "cannot tell the board from the folders" in submit_error(capsys, [elsewhere])
    assert build_entry([elsewhere], name="x", board="offline-text")["board"] == "offline-text"
    with pytest.raises(
        SubmitError,
        match="no runs of lm_gym/CNNDailyMail-v0, lm_gym/Wordle-v0, lm_gym/VisDial-v0, lm_gym/Reddit-v0: board grue",
    ):
        build_entry([elsewhere], name="x", board="grue")


def test_submit_picks_the_board_of_the_suite_that_has_the_runs_tasks(tmp_path, capsys):
    games = boards()["offline-games"]
    root = write_runs(tmp_path / "offline", algorithm="ilql", tasks=games.tasks)
    for result_file in root.rglob("result.json"):  # a game's evaluation plays the games board's 256 episodes
        edit_result(
            result_file,
            lambda result: [
                result[name].update(num_episodes=games.eval_episodes) for name in ("initial_eval", "final_eval")
            ],
        )
    assert build_entry([root], name="ILQL")["board"] == "offline-games"
    write_runs(root, algorithm="ppo")
    assert build_entry([root], name="PPO", algorithm="ppo")["board"] == "offline-text"
    mixed = write_runs(tmp_path / "mixed" / "offline", tasks=(IMDB, *games.tasks))
    assert "no board among offline-text, offline-games has every task of the runs" in submit_error(capsys, [mixed])


def test_submit_refuses_evaluations_of_another_size_than_the_boards(tmp_path, capsys):
    root = write_runs(tmp_path / "offline")
    run = root / "ppo" / "CommonGen-v0" / "seed2" / "result.json"
    edit_result(run, lambda result: result["final_eval"].update(num_episodes=64))
    message = submit_error(capsys, [root])
    assert (
        f"{run}: the final evaluation played 64 episodes; "
        "board offline-text scores evaluations of 128 (--eval-episodes 128)" in message
    )


def test_submit_refuses_evaluations_of_other_episodes_than_the_boards(tmp_path, capsys):
    root = write_runs(tmp_path / "offline")
    for seed in (0, 1, 2):  # the seeds of a task share one config: all of them evaluated on other episodes
        edit_result(root / "ppo" / "IMDB-v0" / f"seed{seed}" / "result.json", lambda r: r["config"].update(eval_seed=7))
    message = submit_error(capsys, [root])
    assert "the final evaluation played the episodes of --eval-seed 7; every board scores the same episodes" in message
    assert "IMDB-v0" in message


def test_submit_refuses_seeds_that_differ_or_repeat(tmp_path, capsys):
    root = write_runs(write_runs(tmp_path / "offline", tasks=OFFLINE[1:]), tasks=OFFLINE[:1], seeds=(0, 1, 3))
    assert "the tasks have different seeds (lm_gym/IMDB-v0: [0, 1, 3]" in submit_error(capsys, [root])
    repeated = write_runs(tmp_path / "b" / "offline")
    write_runs(repeated / "again", tasks=OFFLINE[:1], seeds=(1,))
    assert "lm_gym/IMDB-v0: two runs of seed 1" in submit_error(capsys, [repeated])


def test_submit_refuses_runs_of_different_versions_or_without_metrics(tmp_path, capsys):
    root = write_runs(tmp_path / "offline")
    edit_result(
        root / "ppo" / "Prompts-v0" / "seed0" / "result.json", lambda result: result["versions"].update(lm_gym="0.0.1")
    )
    assert "the runs used different lm-gym versions (0.0.1, " in submit_error(capsys, [root])
    imdb_run = root / "ppo" / "IMDB-v0" / "seed1" / "result.json"

    def drop_sentiment(result):
        del result["initial_eval"]["mean_sentiment"], result["final_eval"]["mean_sentiment"]

    edit_result(imdb_run, drop_sentiment)
    assert f"{imdb_run}: final_eval lacks mean_sentiment, which the board scores lm_gym/IMDB-v0 on" in submit_error(
        capsys, [root]
    )


def test_submit_refuses_an_invalid_name_or_a_broken_result(offline_runs, tmp_path, capsys):
    assert (
        leaderboard_cli(["submit", str(offline_runs), "--name", "\x1b[2Jevil", "--out", str(tmp_path / "entry.json")])
        == 1
    )
    expected = (
        "the entry built from the runs is invalid: name: holds the control or invisible character U+001B at index 0"
    )
    assert expected in capsys.readouterr().err and not (tmp_path / "entry.json").exists()
    root = write_runs(tmp_path / "offline")
    (root / "ppo" / "IMDB-v0" / "seed0" / "result.json").write_text('{"env_id": ')  # killed mid-write
    assert "seed0/result.json" in submit_error(capsys, [root])
