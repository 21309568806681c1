"""The same runs are one entry (issue #54): ``validate --accept-into`` refuses an entry whose runs are those of an
entry already in the folder, naming it, and ``compile`` shows entries with the same runs once.

"The same runs": what an entry holds of each run's ``result.json`` (seed, evaluations, curve, wall time, samples)
is equal, task by task, whatever the entry's name, description, method or model (``leaderboard.entry.runs_digest``).
"""

import json

from fabricated_entries import IMDB, edit_result, offline_runs, write_runs  # noqa: F401  (offline_runs: a fixture)

from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.compile import collect_entries
from leaderboard.entry import entry_file_name, load_entry, runs_digest, write_entry

NAMES = ("PPO (lm-gym)", "My PPO", "PPO, tuned", "Totally new method")


def submitted(runs, tmp_path, name, *extra):
    """The entry ``submit`` builds from ``runs`` under ``name``: its file."""
    out = tmp_path / f"submitted-{len(list(tmp_path.glob('submitted-*')))}.json"
    assert leaderboard_cli(["submit", str(runs), "--name", name, *extra, "--out", str(out)]) == 0
    return out


def test_the_same_runs_under_other_names_are_refused_naming_the_accepted_entry(offline_runs, tmp_path, capsys):  # noqa: F811
    files = [
        submitted(offline_runs, tmp_path, name, "--description", f"submission {index}", "--method", f"m{index}")
        for index, name in enumerate(NAMES)
    ]
    entries = tmp_path / "entries"
    capsys.readouterr()
    assert leaderboard_cli(["validate", str(files[0]), "--accept-into", str(entries)]) == 0
    accepted = entries / entry_file_name(load_entry(files[0]))
    assert capsys.readouterr().out == f"{files[0]}: valid, accepted as {accepted}\n"
    assert leaderboard_cli(["validate", *map(str, files[1:]), "--accept-into", str(entries)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f'{path}: tasks: the same runs as the accepted entry {accepted} ("PPO (lm-gym)", {load_entry(path)["date"]}): '
        "every task's runs (seeds, evaluations, curves, wall times, samples) are equal; the board shows a set of runs "
        "once, whatever its entry's name, description or method"
        for path in files[1:]
    ]
    assert sorted(entries.iterdir()) == [accepted]
    # the very same entry accepted again rewrites its own file; without --accept-into a copy is only validated
    assert leaderboard_cli(["validate", str(files[0]), "--accept-into", str(entries)]) == 0
    assert leaderboard_cli(["validate", str(files[1])]) == 0
    assert sorted(entries.iterdir()) == [accepted]


def test_other_runs_are_accepted_beside_them(offline_runs, tmp_path, capsys):  # noqa: F811
    entries = tmp_path / "entries"
    first = submitted(offline_runs, tmp_path, "PPO")
    assert leaderboard_cli(["validate", str(first), "--accept-into", str(entries)]) == 0
    rerun = write_runs(tmp_path / "offline")  # the same runs, one of them trained a second longer
    edit_result(rerun / "ppo" / "IMDB-v0" / "seed1" / "result.json", lambda result: result.update(wall_time_s=602.0))
    other = submitted(rerun, tmp_path, "PPO, run again")
    assert runs_digest(load_entry(other)) != runs_digest(load_entry(first))
    assert leaderboard_cli(["validate", str(other), "--accept-into", str(entries)]) == 0
    assert len(list(entries.iterdir())) == 2


def test_the_runs_digest_ignores_the_order_of_runs_and_what_is_not_a_run(offline_runs, tmp_path):  # noqa: F811
    entry = load_entry(submitted(offline_runs, tmp_path, "PPO"))
    renamed = entry | {"name": "x", "method": "y", "model": "z", "description": "d", "date": "2020-01-01"}
    reordered = json.loads(json.dumps(entry))
    reordered["tasks"][IMDB]["runs"].reverse()
    assert runs_digest(renamed) == runs_digest(reordered) == runs_digest(entry)
    changed = json.loads(json.dumps(entry))
    changed["tasks"][IMDB]["runs"][0]["samples"][0]["generation"] += "!"
    assert runs_digest(changed) != runs_digest(entry)


def test_compile_shows_the_same_runs_once_keeping_the_earliest_entry(offline_runs, tmp_path, capsys):  # noqa: F811
    """A folder that holds copies (accepted before the check, or put there by hand): one is shown, the others are
    left out with a note naming the one shown."""
    entry = load_entry(submitted(offline_runs, tmp_path, "PPO"))
    folder = tmp_path / "entries"
    folder.mkdir()
    dates = {"PPO (lm-gym)": "2026-03-02", "My PPO": "2026-03-01", "PPO, tuned": "2026-03-01", "New": "2026-03-04"}
    paths = {}
    for name, date in dates.items():
        copy = entry | {"name": name, "date": date}
        paths[name] = write_entry(copy, folder / entry_file_name(copy))
    capsys.readouterr()
    shown = collect_entries([folder])
    assert [item["name"] for item in shown] == ["My PPO"]  # the earliest date; of two, the first file by name
    notes = capsys.readouterr().err.splitlines()
    kept = f'{paths["My PPO"]} ("My PPO", 2026-03-01), which the board shows'
    assert sorted(notes) == sorted(
        f"note: {paths[name]} left out: the same runs as {kept} (of entries with the same runs, the earliest dated "
        "is kept)"
        for name in ("PPO (lm-gym)", "PPO, tuned", "New")
    )
    board = tmp_path / "board"
    assert leaderboard_cli(["compile", str(folder), "--out", str(board), "--reps", "20", "--poi-reps", "5"]) == 0
    assert [item["name"] for item in json.loads((board / "board.json").read_text())["entries"]] == ["My PPO"]


def test_compile_shows_a_runs_folder_once_beside_the_entry_submitted_from_it(offline_runs, tmp_path, capsys):  # noqa: F811
    entry_file = submitted(offline_runs, tmp_path, "PPO")
    capsys.readouterr()
    entries = collect_entries([offline_runs, entry_file])
    assert [item["name"] for item in entries] == ["ppo (offline)"]  # the same date: the first input is kept
    assert f"note: {entry_file} left out: the same runs as the runs of {offline_runs}" in capsys.readouterr().err
