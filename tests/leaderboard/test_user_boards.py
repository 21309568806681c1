"""Boards over your own tasks: ``[boards.<name>]`` tables in a TOML file of yours (the suite file),
read with ``--boards FILE`` (docs/leaderboard.md, "A board over your own tasks").

The runs are fabricated ``result.json`` files of two registered tasks of a user's module
(``my/SayTheWord-v0``, single-turn, and ``my/CountUp-v0``, multi-turn, both reporting the metric
``said``); one test runs the harness on the example suite, ``benchmark/suites/examples/own.toml``,
with the real PPO baseline.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmark.suite import ROOT, expand_jobs, load_suite
from leaderboard import scoring
from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.boards import BoardsError, boards, forget_user_boards, load_boards_file, task_metrics
from leaderboard.compile import collect_entries, compile_board
from leaderboard.entry import load_entry
from leaderboard.entry_schema import ENTRY_SCHEMA, entry_schema
from leaderboard.recipe import forget_suite_files, recipe_argument
from leaderboard.submit import SubmitError, build_entry
from lm_gym.results import make_result, write_result

SAY, COUNT = "my/SayTheWord-v0", "my/CountUp-v0"
EXAMPLE_SUITE = ROOT / "benchmark" / "suites" / "examples" / "own.toml"
BUILTIN = dict(boards())

BOARD = """
[boards.mine]
description = "my two tasks"
source = "made up"
eval_episodes = 8
[boards.mine.env_kwargs]
"my_task:my/SayTheWord-v0" = {}
"my/CountUp-v0" = { turns = 2 }
[boards.mine.metrics."my_task:my/SayTheWord-v0"]
task = ["mean_said"]
[boards.mine.metrics."my/CountUp-v0"]
task = ["mean_said", "mean_return"]
naturalness = []
"""
SAY_POINTS = """
[boards.mine.reference_points."my/SayTheWord-v0"]
mean_said = { low = 0.0, high = 1.0 }
"""
COUNT_POINTS = """
[boards.mine.reference_points."my_task:my/CountUp-v0"]
mean_said = { low = 0.1, high = 0.9 }
mean_return = { low = 0.0, high = 2.0 }
"""


@pytest.fixture(autouse=True)
def _forget_boards():
    yield
    forget_user_boards()  # the other tests see boards.toml's boards only
    forget_suite_files()  # and recipes are checked against benchmark/suites/


def board_file(tmp_path: Path, body: str = BOARD + SAY_POINTS + COUNT_POINTS, name: str = "mine") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(body)
    return path


def said(algorithm: str, env_id: str, seed: int) -> float:
    """The fabricated runs' ``mean_said``: ppo says more than grpo."""
    base = {"ppo": 0.7, "grpo": 0.4}[algorithm] + (0.1 if env_id == SAY else 0.0)
    return base + 0.05 * seed


def write_runs(root: Path, algorithm: str, seeds=(1, 2, 3), tasks=(SAY, COUNT), episodes=8, metric="said") -> Path:
    """Runs as the baselines write them for the suite ``mine`` (``result.json``'s env_id: the registered id)."""
    for env_id in tasks:
        for seed in seeds:
            value = said(algorithm, env_id, seed)
            final = {"num_episodes": episodes, "mean_return": 2 * value, "std_return": 0.1, f"mean_{metric}": value}
            write_result(
                root / "mine" / env_id.split("/")[1] / algorithm / f"seed{seed}",
                make_result(
                    env_id=env_id,
                    algorithm=algorithm,
                    seed=seed,
                    config={"env_id": f"my_task:{env_id}", "seed": seed, "model_name": "tiny"},
                    initial_eval={**final, "mean_return": 0.0},
                    final_eval=final,
                    curves=[{"step": step, "mean_return": value * step / 4} for step in range(1, 5)],
                    wall_time_s=1.0,
                    tokens_per_s=1.0,
                    episodes_per_s=1.0,
                    peak_memory_mb=1.0,
                    checkpoint=None,
                    device="cpu",
                    samples=[{"prompt": "Say river.", "generation": "river", "return": 1.0}],
                ),
            )
    return root / "mine"


def compile_runs(runs: Path, out: Path) -> dict:
    return compile_board(collect_entries([runs]), out, reps=200, poi_reps=50)


def entry_named(data: dict, method: str) -> dict:
    return next(item for item in data["entries"] if item["method"] == method)


# ----------------------------------------------------------------------------- scores
def test_a_board_over_two_user_tasks_is_scored_by_the_reference_points_of_its_file(tmp_path):
    (board,) = load_boards_file(board_file(tmp_path))
    assert board.name == "mine" and board.suite == "mine" and board.tasks == (SAY, COUNT)  # "module:" dropped
    assert task_metrics("mine")[COUNT].task == ("mean_said", "mean_return")
    for algorithm in ("ppo", "grpo"):
        runs = write_runs(tmp_path / "runs", algorithm)
    data = compile_runs(runs, tmp_path / "board")

    assert data["tasks"] == [SAY, COUNT] and data["metrics"] == {
        SAY: ["mean_said"],
        COUNT: ["mean_said", "mean_return"],
    }
    assert "the reference points of the board's file, mine.toml" in data["statistics"]
    ppo = entry_named(data, "ppo")
    assert ppo["source"] == "made up" and ppo["seeds"] == [1, 2, 3]
    # per run: the mean of the task's normalised metrics; per task: the mean over seeds
    expected = {
        SAY: [said("ppo", SAY, seed) for seed in (1, 2, 3)],
        COUNT: [np.mean([(said("ppo", COUNT, s) - 0.1) / 0.8, 2 * said("ppo", COUNT, s) / 2.0]) for s in (1, 2, 3)],
    }
    for env_id, scores in expected.items():
        assert ppo["tasks"][env_id]["task_score"]["value"] == pytest.approx(np.mean(scores))
        assert ppo["tasks"][env_id]["task_score"]["ci"] is not None  # 3 seeds: an interval
        assert ppo["tasks"][env_id]["naturalness_score"] == {"reason": "no naturalness metric"}
        assert ppo["tasks"][env_id]["metrics"]["mean_said"]["value"] == pytest.approx(
            np.mean([said("ppo", env_id, seed) for seed in (1, 2, 3)])
        )
    assert ppo["overall"]["task_mean"]["value"] == pytest.approx(np.mean([*expected[SAY], *expected[COUNT]]))
    assert "value" in ppo["overall"]["task_iqm"] and ppo["overall"]["naturalness_iqm"] == {
        "reason": "no naturalness metric on this board"
    }
    # the scores are scoring.aggregate's, as on a built-in board
    entries = {entry["method"]: entry for entry in collect_entries([runs])}
    assert scoring.aggregate({"ppo": entries["ppo"]}, reps=200)["ppo"]["mean"]["value"] == pytest.approx(
        ppo["overall"]["task_mean"]["value"]
    )
    # every task scored: the probability of improvement, ppo above grpo on every run
    matrix = data["improvement"]["matrix"]
    assert matrix[ppo["id"]][entry_named(data, "grpo")["id"]]["value"] > 0.5
    assert (tmp_path / "board" / "index.html").is_file() and (tmp_path / "board" / "plots" / "scores.png").is_file()


def test_without_reference_points_the_board_shows_raw_metrics_and_says_why_there_is_no_score(tmp_path):
    load_boards_file(board_file(tmp_path, BOARD + SAY_POINTS))  # CountUp has no reference points
    for algorithm in ("ppo", "grpo"):
        runs = write_runs(tmp_path / "runs", algorithm)
    data = compile_runs(runs, tmp_path / "board")

    ppo = entry_named(data, "ppo")
    why = (
        "no reference points for my/CountUp-v0 mean_said, mean_return: "
        "add [boards.mine.reference_points] low/high to score it"
    )
    assert ppo["tasks"][COUNT]["task_score"] == {"reason": why}
    assert ppo["tasks"][COUNT]["metrics"]["mean_said"]["value"] == pytest.approx(
        np.mean([said("ppo", COUNT, seed) for seed in (1, 2, 3)])
    )
    assert ppo["tasks"][COUNT]["metrics"]["mean_return"]["ci"] is not None  # mean and CI over seeds
    assert ppo["tasks"][SAY]["task_score"]["value"] == pytest.approx(
        np.mean([said("ppo", SAY, seed) for seed in (1, 2, 3)])
    )
    for key in ("task_mean", "task_iqm"):
        assert ppo["overall"][key] == {"reason": "no reference points for my/CountUp-v0 mean_said, mean_return"}
    assert data["improvement"] == {"entries": [], "matrix": {}}  # it needs a score on every task
    markdown = (tmp_path / "board" / "board.md").read_text()
    assert why in markdown and "## my/CountUp-v0" in markdown
    assert json.loads((tmp_path / "board" / "board.json").read_text())["entries"][0]["tasks"][COUNT]["task_score"]


def test_the_compile_command_takes_the_boards_file_and_needs_it(tmp_path, capsys):
    runs = write_runs(tmp_path / "runs", "ppo", seeds=(1,))
    assert leaderboard_cli(["compile", str(runs), "--out", str(tmp_path / "a")]) == 2
    assert "cannot tell the board from the folders" in capsys.readouterr().err
    path = board_file(tmp_path, BOARD)  # no reference points at all
    assert leaderboard_cli(["compile", str(runs), "--boards", str(path), "--out", str(tmp_path / "b")]) == 0
    assert "1 entries on board mine" in capsys.readouterr().out
    data = json.loads((tmp_path / "b" / "board.json").read_text())
    assert data["entries"][0]["tasks"][SAY]["task_score"]["reason"].startswith("no reference points for my/Say")
    assert data["entries"][0]["tasks"][SAY]["metrics"]["mean_said"] == {"value": 0.85, "ci": None, "n": 1}


def test_a_task_of_the_board_without_runs(tmp_path, capsys):
    path = board_file(tmp_path)
    runs = write_runs(tmp_path / "runs", "ppo", tasks=(SAY,))
    assert leaderboard_cli(["compile", str(runs), "--boards", str(path), "--out", str(tmp_path / "b")]) == 0
    assert "note: board mine has no runs of my/CountUp-v0" in capsys.readouterr().err
    data = json.loads((tmp_path / "b" / "board.json").read_text())
    assert data["entries"][0]["overall"]["task_iqm"] == {"reason": "only 1 of 2 tasks"}
    with pytest.raises(SubmitError, match=r"no runs of my/CountUp-v0: board mine needs .*\[boards\.mine\.env_kwargs\]"):
        build_entry([runs], name="x")


# ----------------------------------------------------------------------------- entries
def test_submit_and_validate_an_entry_of_a_user_board(tmp_path, capsys):
    path = board_file(tmp_path)
    runs = write_runs(tmp_path / "runs", "ppo")
    entry_file = tmp_path / "entry.json"
    argv = ["submit", str(runs), "--name", "PPO on mine", "--out", str(entry_file), "--boards", str(path)]
    assert leaderboard_cli(argv) == 0
    entry = json.loads(entry_file.read_text())
    assert entry["board"] == "mine" and set(entry["tasks"]) == {SAY, COUNT}
    assert leaderboard_cli(["validate", str(entry_file), "--boards", str(path)]) == 0
    assert f"{entry_file}: valid" in capsys.readouterr().out
    forget_user_boards()
    assert entry_schema() is ENTRY_SCHEMA  # the built-in boards' schema, unchanged
    assert leaderboard_cli(["validate", str(entry_file)]) == 1  # without the board's definition
    assert '"mine" is not one of' in capsys.readouterr().out
    load_boards_file(path)
    data = compile_board([load_entry(entry_file)], tmp_path / "board", reps=100)
    assert data["entries"][0]["overall"]["task_iqm"]["ci"] is not None


#: the suite ``mine`` that runs the board's tasks, in a file of its own (the board's file holds only boards)
MINE_SUITE = """
[suite]
seeds = [1, 2, 3]
[defaults]
eval-episodes = 8
[algorithms.ppo]
script = "baselines/ppo.py"
args = { model-name = "tiny" }
[tasks.say]
env_id = "my_task:my/SayTheWord-v0"
algorithms = ["ppo"]
[tasks.count]
env_id = "my/CountUp-v0"
env_kwargs = { turns = 2 }
algorithms = ["ppo"]
"""


def test_a_recipe_of_a_suite_of_your_own_is_checked_against_the_suite_file_given(tmp_path, capsys):
    boards_file = board_file(tmp_path)
    suite_file = tmp_path / "suite" / "mine.toml"
    suite_file.parent.mkdir()
    suite_file.write_text(MINE_SUITE)
    runs = write_runs(tmp_path / "runs", "ppo")
    load_boards_file(boards_file)
    entry = build_entry([runs], name="PPO on mine")
    jobs = expand_jobs(load_suite(str(suite_file)), runs, algorithms=["ppo"])
    entry["recipe"] = {  # as submit builds it from the harness's runs of the suite
        "suite": "mine",
        "algorithm": "ppo",
        "tasks": {SAY: "say", COUNT: "count"},
        "device": "cpu",
        "versions": {"python": "3.11.9", "lm_gym": "0.1.0", "torch": "2.13.0+cpu"},
        "jobs": [
            {"name": job.key, "argv": [recipe_argument(part, runs.resolve()) for part in job.argv]} for job in jobs
        ],
    }
    entry_file = tmp_path / "entry.json"
    entry_file.write_text(json.dumps(entry))
    validate = ["validate", str(entry_file), "--boards", str(boards_file)]
    capsys.readouterr()
    assert leaderboard_cli(validate) == 1  # mine.toml beside the board holds no suite: nothing to check the jobs by
    assert capsys.readouterr().out.startswith(
        f'{entry_file}: recipe.suite: "mine" is not a suite of benchmark/suites/ (grue, multiagent, offline, smoke): '
        "to check the recipe's jobs, pass the file of a suite of your own as --suite FILE"
    )
    assert leaderboard_cli([*validate, "--suite", str(suite_file)]) == 0
    assert capsys.readouterr().out.startswith(f"{entry_file}: valid")
    entry["recipe"]["jobs"][4]["argv"][-3] = "7"  # count/ppo/seed2's --seed
    entry_file.write_text(json.dumps(entry))
    assert leaderboard_cli([*validate, "--suite", str(suite_file)]) == 1
    argv = entry["recipe"]["jobs"][4]["argv"]
    assert capsys.readouterr().out == (
        f'{entry_file}: recipe.jobs[4].argv[{len(argv) - 3}] (job count/ppo/seed2): "7" after "--seed", where suite '
        'mine runs "2"\n'
    )
    assert leaderboard_cli([*validate, "--suite", str(tmp_path / "absent.toml")]) == 2
    assert capsys.readouterr().out == (
        f"python -m leaderboard validate: error: argument --suite: no suite file {tmp_path / 'absent.toml'}\n"
    )


def test_submit_names_the_metric_key_the_runs_lack_and_refuses_an_unknown_board(tmp_path, capsys):
    path = board_file(tmp_path)
    runs = write_runs(tmp_path / "runs", "ppo", metric="spoken")  # the runs report mean_spoken, not mean_said
    argv = ["submit", str(runs), "--name", "x", "--out", str(tmp_path / "e.json"), "--boards", str(path)]
    assert leaderboard_cli(argv) == 1
    error = capsys.readouterr().err
    assert 'final_eval lacks mean_said, which [boards.mine.metrics."my/SayTheWord-v0"] of' in error
    assert "(the run has mean_return, mean_spoken, num_episodes, std_return)" in error
    assert leaderboard_cli([*argv, "--board", "nope"]) == 2
    assert "argument --board: invalid choice: 'nope'" in capsys.readouterr().err
    assert leaderboard_cli(["compile", str(runs), "--boards", str(path), "--out", str(tmp_path / "b")]) == 2
    assert '[boards.mine.metrics."my/SayTheWord-v0"]' in capsys.readouterr().err


def test_runs_of_another_evaluation_size_or_of_a_task_not_on_the_board_are_refused(tmp_path):
    load_boards_file(board_file(tmp_path))
    with pytest.raises(SubmitError, match="played 16 episodes; board mine scores evaluations of 8"):
        build_entry([write_runs(tmp_path / "a", "ppo", episodes=16)], name="x")
    runs = write_runs(tmp_path / "b", "ppo", tasks=(SAY, "my/Other-v0"))
    with pytest.raises(SubmitError, match=r"not on board mine: my/Other-v0 .*\[boards\.mine\.env_kwargs\] of"):
        build_entry([runs], name="x")


# ----------------------------------------------------------------------------- bad boards files
BAD_FILES = {
    "unknown metric": (
        BOARD + '[boards.mine.reference_points."my/SayTheWord-v0"]\nmean_sai = { low = 0.0, high = 1.0 }\n',
        r'\[boards\.mine\.reference_points\."my/SayTheWord-v0"\.mean_sai\] is not a metric the board scores '
        r"my/SayTheWord-v0 on \(mean_said\)",
    ),
    "equal reference points": (
        BOARD + '[boards.mine.reference_points."my/SayTheWord-v0"]\nmean_said = { low = 0.5, high = 0.5 }\n',
        r'\[boards\.mine\.reference_points\."my/SayTheWord-v0"\.mean_said\] low = high = 0\.5: equal reference '
        r"points define no scale",
    ),
    "reference point not a number": (
        BOARD + '[boards.mine.reference_points."my/SayTheWord-v0"]\nmean_said = { low = "0", high = 1 }\n',
        r"mean_said\] low must be a finite number, got '0'",
    ),
    "reference points of a task not on the board": (
        BOARD + '[boards.mine.reference_points."my/Other-v0"]\nmean_said = { low = 0, high = 1 }\n',
        r'\[boards\.mine\.reference_points\."my/Other-v0"\] is not a task of the board',
    ),
    "a metric that is no final_eval key": (
        BOARD.replace('task = ["mean_said"]', 'task = ["said"]'),
        r'\[boards\.mine\.metrics\."my_task:my/SayTheWord-v0"\] task: \'said\' is not a metric of result\.json\'s '
        r'final_eval .*did you mean "mean_said"\?',
    ),
    "a task without metrics": (
        BOARD.replace(
            '[boards.mine.metrics."my/CountUp-v0"]\ntask = ["mean_said", "mean_return"]\nnaturalness = []\n', ""
        ),
        r'\[boards\.mine\.metrics\."my/CountUp-v0"\] is missing: the metrics the board scores the task on',
    ),
    "metrics of a task not on the board": (
        BOARD + '[boards.mine.metrics."my/Other-v0"]\ntask = ["mean_said"]\n',
        r'\[boards\.mine\.metrics\."my/Other-v0"\] is not a task of the board',
    ),
    "an unknown key": (
        BOARD.replace("eval_episodes = 8", "eval_episodes = 8\neval_episode = 8"),
        r"\[boards\.mine\] unknown keys \['eval_episode'\]",
    ),
    "no evaluation size": (
        BOARD.replace("eval_episodes = 8\n", ""),
        r"\[boards\.mine\.eval_episodes\] must be the number of episodes .*got None",
    ),
    "no tasks": (
        BOARD.split("[boards.mine.env_kwargs]")[0],
        r"\[boards\.mine\.env_kwargs\] is missing",
    ),
    "a task twice": (
        BOARD.replace('"my/CountUp-v0" = { turns = 2 }', '"my/CountUp-v0" = {}\n"m:my/CountUp-v0" = {}'),
        r'\[boards\.mine\.env_kwargs\."m:my/CountUp-v0"\] names my/CountUp-v0 twice',
    ),
    "a built-in board's name": (
        BOARD.replace("boards.mine", "boards.smoke"),
        r"\[boards\.smoke\]: 'smoke' is a built-in board",
    ),
    "no boards": ("[suite]\nseeds = [1]\n", r"no \[boards\.<name>\] table"),
    "not TOML": ("[boards.mine\n", "not valid TOML"),
}


@pytest.mark.parametrize("body, message", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_boards_file_gets_an_error_naming_the_key(tmp_path, body, message):
    path = board_file(tmp_path, body)
    with pytest.raises(BoardsError, match=message) as error:
        load_boards_file(path)
    assert str(path) in str(error.value)
    assert boards() == BUILTIN  # nothing of a refused file is added


def test_the_command_line_reports_a_bad_boards_file(tmp_path, capsys):
    path = board_file(tmp_path, BOARD.replace('task = ["mean_said"]', 'task = ["said"]'))
    runs = write_runs(tmp_path / "runs", "ppo", seeds=(1,))
    assert leaderboard_cli(["compile", str(runs), "--boards", str(path), "--out", str(tmp_path / "b")]) == 2
    assert 'did you mean "mean_said"?' in capsys.readouterr().err
    assert leaderboard_cli(["validate", str(tmp_path / "e.json"), "--boards", str(tmp_path / "none.toml")]) == 2
    assert "cannot read it" in capsys.readouterr().out


def test_a_board_in_its_suite_file_scores_the_tasks_as_the_suite_runs_them(tmp_path):
    suite = (ROOT / "benchmark" / "suites" / "examples" / "own.toml").read_text()
    load_suite(str(board_file(tmp_path, suite, name="own")))  # the harness reads a suite with [boards] tables
    (board,) = load_boards_file(board_file(tmp_path, suite, name="own"))
    assert board.env_kwargs == {SAY: {}, COUNT: {"turns": 2}}
    changed = suite.replace('"own_tasks:my/CountUp-v0" = { turns = 2 }', '"own_tasks:my/CountUp-v0" = {}')
    with pytest.raises(
        BoardsError, match=r'env_kwargs\."own_tasks:my/CountUp-v0"\] = \{\}, but the suite\'s \[tasks\.count\]'
    ):
        load_boards_file(board_file(tmp_path, changed, name="own"))


def test_loading_the_same_file_twice_is_one_board_and_the_built_in_boards_are_unchanged(tmp_path):
    path = board_file(tmp_path)
    load_boards_file(path)
    load_boards_file(path)
    assert set(boards()) == {*BUILTIN, "mine"}
    assert all(boards()[name] == board for name, board in BUILTIN.items())
    assert scoring.load_reference_points("smoke") == scoring.load_reference_points(
        "smoke", scoring.REFERENCE_POINTS_FILE
    )
    with pytest.raises(BoardsError, match="board 'mine' is defined differently in"):
        load_boards_file(board_file(tmp_path, BOARD.replace("my two tasks", "other"), name="other"))
    forget_user_boards()
    assert boards() == BUILTIN


# ----------------------------------------------------------------------------- end to end
@pytest.mark.slow  # a harness run (8-10 s); the deep run keeps it
def test_the_harness_compiles_the_board_of_a_user_suite(tmp_path):
    """``python -m benchmark run --suite <own suite> --board``: the real PPO baseline on the example
    suite's two tasks of its own module, one seed, then the board of its ``[boards.own]`` table."""
    out = tmp_path / "runs"
    command = [sys.executable, "-m", "benchmark", "run", "--suite", str(EXAMPLE_SUITE), "--out", str(out)]
    command += ["--algos", "ppo", "--num-seeds", "1", "--workers", "2", "--board"]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 entries on board own" in completed.stdout
    data = json.loads((out / "own" / "board" / "board.json").read_text())
    assert data["tasks"] == [SAY, COUNT]
    (ppo,) = data["entries"]
    assert ppo["method"] == "ppo" and ppo["seeds"] == [1] and ppo["source"] == "made-up words and numbers"
    assert ppo["tasks"][SAY]["task_score"]["value"] == ppo["tasks"][SAY]["metrics"]["mean_said"]["value"]  # 0..1
    assert ppo["tasks"][COUNT]["task_score"]["reason"].startswith("no reference points for my/CountUp-v0 mean_said")
    assert "value" in ppo["tasks"][COUNT]["metrics"]["mean_said"]
    assert (out / "own" / "board" / "index.html").is_file()
