"""Leaderboard entries (leaderboard/entry.py, leaderboard/submit.py): a valid entry built, validated and accepted,
and the entry files read safely (links, special files) and stored under safe names.
"""

import hashlib
import itertools
import json
import os

import pytest
from fabricated_entries import (  # noqa: F401  (offline_runs and valid_entry: fixtures)
    IMDB,
    OFFLINE,
    SAFE_FILE_NAME,
    SEEDS,
    edit_result,
    evaluation,
    honest_samples,
    offline_runs,
    result_template,
    valid_entry,
    write_runs,
)

from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.entry import accept_entry, entry_file_name, load_entry
from leaderboard.entry_schema import EntryError, canonical_json
from leaderboard.submit import build_entry

# --- a valid entry's round trip ---------------------------------------------------------------


def test_a_built_entry_round_trips_through_submit_validate_and_accept(offline_runs, tmp_path, capsys):  # noqa: F811
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


def test_the_config_hash_ignores_seeds_and_paths_but_not_hyperparameters(offline_runs, tmp_path):  # noqa: F811
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


def test_names_keep_any_printable_text_and_file_names_stay_safe(valid_entry, tmp_path):  # noqa: F811
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
        entry = json.loads(json.dumps(valid_entry | {"name": name}))
        entry["tasks"][IMDB]["runs"][0]["wall_time_s"] += index  # other runs: the same runs are accepted once
        source = tmp_path / f"entry{index}.json"
        source.write_text(json.dumps(entry))
        accepted = accept_entry(source, entries)
        assert accepted.parent == entries and SAFE_FILE_NAME.fullmatch(accepted.name), name
        assert load_entry(accepted)["name"] == name  # stored as given; the board escapes it
    assert entry_file_name(valid_entry | {"name": "../../etc/passwd"}).startswith("etc-passwd-")
    assert entry_file_name(valid_entry | {"name": "Méthode"}).startswith("methode-")
    assert entry_file_name(valid_entry | {"name": "日本語"}).startswith("entry-")
    assert len(list(entries.iterdir())) == len(names)


def test_accepting_replaces_a_link_in_the_entries_folder_instead_of_writing_through_it(valid_entry, tmp_path):  # noqa: F811
    entries, victim = tmp_path / "entries", tmp_path / "victim.txt"
    entries.mkdir()
    victim.write_text("untouched")
    (entries / entry_file_name(valid_entry)).symlink_to(victim)
    source = tmp_path / "entry.json"
    source.write_text(json.dumps(valid_entry))
    accepted = accept_entry(source, entries)
    assert victim.read_text() == "untouched" and not accepted.is_symlink() and load_entry(accepted) == valid_entry


def test_texts_may_hold_brackets_and_newlines_where_allowed(valid_entry, tmp_path):  # noqa: F811
    path = tmp_path / "entry.json"
    path.write_text(
        json.dumps(valid_entry | {"description": "[{" * 900 + "\nsecond line\twith a tab", "name": "]]]}}}"})
    )
    assert load_entry(path)["name"] == "]]]}}}"


def test_links_and_special_files_are_not_read(valid_entry, tmp_path):  # noqa: F811
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


def test_validate_prints_one_line_per_file_and_fails_if_any_is_invalid(valid_entry, tmp_path, capsys):  # noqa: F811
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(valid_entry))
    bad.write_text(json.dumps(valid_entry | {"board": "nope\x1b[2J"}))
    assert leaderboard_cli(["validate", str(good), str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{good}: valid",
        f'{bad}: board: "nope\\u001b[2J" is not one of grue, multiagent, offline-games, offline-text, smoke',
    ]
