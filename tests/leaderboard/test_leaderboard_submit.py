"""``python -m leaderboard submit``'s refusals (leaderboard/submit.py): each names the runs and why they do not make
an entry."""

import pytest
from fabricated_entries import (  # noqa: F401  (offline_runs: a fixture)
    IMDB,
    OFFLINE,
    edit_result,
    evaluation,
    offline_runs,
    write_runs,
)

from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.boards import boards
from leaderboard.entry import load_entry
from leaderboard.submit import SubmitError, build_entry


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


def test_submit_refuses_an_invalid_name_or_a_broken_result(offline_runs, tmp_path, capsys):  # noqa: F811
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


def test_submit_warns_that_runs_of_a_dirty_working_tree_cannot_be_re_run(tmp_path, capsys):
    """A ``-dirty`` commit names code no checkout holds: the entry is written, with a warning saying so."""
    root = write_runs(tmp_path / "offline")
    for commit, warned in (("0123456789abcdef0123456789abcdef01234567", False), ("0123456-dirty", True)):
        for path in root.rglob("result.json"):
            edit_result(path, lambda result, commit=commit: result.update(git_commit=commit))
        out = tmp_path / "entry.json"
        assert leaderboard_cli(["submit", str(root), "--name", "PPO", "--out", str(out)]) == 0
        assert load_entry(out, rescore=False)["git_commit"] == commit
        expected = (
            "python -m leaderboard submit: warning: the runs come from lm-gym 0123456-dirty, a working tree with "
            "uncommitted changes: no commit holds the code that made them, so no one can re-run the entry as it ran"
        )
        assert (expected in capsys.readouterr().err) == warned
