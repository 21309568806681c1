"""An entry's recipe is built from the harness's job records (``harness_job.json``), never from the folders'
places: the records name the suite, the task and algorithm labels and each job's name and command; and it is
checked against its suite: its jobs are those the suite runs for the entry's runs, with the suite's commands."""

import json

import pytest
from fabricated_entries import COMMONGEN, OFFLINE, SEEDS, write_runs

from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.entry import load_entry
from leaderboard.recipe import CHECKOUT, recipe_problems
from leaderboard.submit import SubmitError, build_entry
from lm_gym.results.harness_job import (
    HARNESS_JOB_FILE,
    HarnessJob,
    HarnessJobError,
    read_harness_argv,
    read_harness_job,
    write_harness_job,
)

RAN_IN = "/elsewhere/runs/offline"
LABELS = {env_id: env_id.removeprefix("lm_gym/").removesuffix("-v0").lower() for env_id in OFFLINE}


def recorded_runs(root):
    """The offline board's runs with the records a harness of suite ``offline`` wrote when it ran them in
    ``/elsewhere/runs/offline``; the folders are not named as the harness names them (``ppo/IMDB-v0/seed0``)
    and none is named after the suite, so only the records give the labels and the board."""
    write_runs(root)
    for env_id in OFFLINE:
        for seed in SEEDS:
            job = f"ppo/{env_id.split('/')[1]}/seed{seed}"
            argv = (str(CHECKOUT / "baselines" / "ppo.py"), "--seed", str(seed), "--out-dir", f"{RAN_IN}/{job}")
            write_harness_job(root / job, HarnessJob("offline", job, LABELS[env_id], "ppo", seed, argv))
    return root


def test_a_record_round_trips_and_keeps_the_command_an_older_harness_wrote(tmp_path):
    record = HarnessJob("smoke", "imdb/data/mixture", "imdb", "data", None, ("-m", "lm_gym.offline", "--n", "3"))
    write_harness_job(tmp_path / "job", record)
    assert read_harness_job(tmp_path / "job") == record
    assert read_harness_argv(tmp_path / "job") == ["-m", "lm_gym.offline", "--n", "3"]
    (tmp_path / "job" / HARNESS_JOB_FILE).write_text('{"argv": ["baselines/ppo.py"]}')
    assert read_harness_argv(tmp_path / "job") == ["baselines/ppo.py"]
    with pytest.raises(HarnessJobError, match="lacks suite, job, task, algorithm, seed: an older harness wrote it"):
        read_harness_job(tmp_path / "job")
    (tmp_path / "job" / HARNESS_JOB_FILE).write_text(
        '{"suite": "smoke", "job": "a/b/seed1", "task": "a", "algorithm": "b", "seed": "1", "argv": []}'
    )
    with pytest.raises(HarnessJobError, match="seed of the wrong type"):
        read_harness_job(tmp_path / "job")
    assert read_harness_argv(tmp_path / "elsewhere") is None


def test_the_recipe_and_the_board_come_from_the_records_wherever_the_runs_lie(tmp_path):
    entry = build_entry([recorded_runs(tmp_path / "runs-of-mine")], name="PPO")
    assert entry["board"] == "offline-text"  # the suite the records name: no folder on the path is named after it
    recipe = entry["recipe"]
    assert recipe["suite"] == "offline" and recipe["algorithm"] == "ppo" and recipe["tasks"] == LABELS
    jobs = {job["name"]: job["argv"] for job in recipe["jobs"]}
    assert len(jobs) == len(OFFLINE) * len(SEEDS)
    # the paths in the runs folder the harness ran the job in are written {runs}/..., the script relative to the
    # checkout
    assert jobs["ppo/IMDB-v0/seed1"] == ["baselines/ppo.py", "--seed", "1", "--out-dir", "{runs}/ppo/IMDB-v0/seed1"]


def test_a_record_of_an_older_harness_is_refused_saying_to_re_run_the_job(tmp_path, capsys):
    runs = recorded_runs(tmp_path / "runs")
    old = runs / "ppo" / COMMONGEN.split("/")[1] / "seed2"
    (old / HARNESS_JOB_FILE).write_text('{"argv": ["baselines/ppo.py"]}')
    with pytest.raises(SubmitError, match="Re-run the job") as caught:
        build_entry([runs], name="PPO", board="offline-text")
    assert str(caught.value).startswith(f"{old / HARNESS_JOB_FILE} lacks suite, job, task, algorithm, seed")
    argv = ["submit", str(runs), "--name", "PPO", "--board", "offline-text", "--out", str(tmp_path / "entry.json")]
    assert leaderboard_cli(argv) == 1
    assert "an older harness wrote it" in capsys.readouterr().err
    assert not (tmp_path / "entry.json").exists()


ACCEPTED = CHECKOUT / "leaderboard" / "entries"


def test_the_recipes_of_the_accepted_entries_are_the_jobs_the_smoke_suite_runs():
    files = sorted(ACCEPTED.glob("*.json"))
    assert files
    for path in files:
        assert recipe_problems(load_entry(path, rescore=False)) == [], path.name


def test_an_accepted_entry_whose_commands_were_replaced_is_refused_naming_the_job(tmp_path, capsys):
    """The accepted PPO entry with its recipe's commands replaced by other commands (200 iterations where the smoke
    suite runs 2): its runs and samples are unchanged, so only the recipe's check against the suite can see it."""
    entry = load_entry(next(ACCEPTED.glob("ppo-*.json")), rescore=False)
    for job in entry["recipe"]["jobs"]:
        if "--iterations" in job["argv"]:
            job["argv"][job["argv"].index("--iterations") + 1] = "200"
    changed = tmp_path / "entry.json"
    changed.write_text(json.dumps(entry))
    capsys.readouterr()
    assert leaderboard_cli(["validate", str(changed)]) == 1
    first = entry["recipe"]["jobs"][0]
    position = first["argv"].index("--iterations") + 1
    assert capsys.readouterr().out.startswith(
        f'{changed}: recipe.jobs[0].argv[{position}] (job {first["name"]}): "200" after "--iterations", where suite '
        'smoke runs "2"; recipe.jobs[1].argv'
    )
