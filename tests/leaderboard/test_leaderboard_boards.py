"""The boards (leaderboard/boards.toml) score what their suites (benchmark/suites/) run: the same
tasks, env arguments and number of final-evaluation episodes."""

import json

import pytest

from benchmark.suite import expand_jobs, load_suite
from leaderboard.boards import boards, suite_boards, task_metrics


def flag(argv, name):
    """The value of ``--name`` in a job's command line (None when absent)."""
    return argv[argv.index(name) + 1] if name in argv else None


#: The smoke suite runs them (everything runs end to end), no built-in board scores them: they play the
#: user's data and tasks, which have no reference points; compiling leaves their runs out with a note.
USERS_TASKS = ("lm_gym/TextGeneration-v0", "lm_gym/Mixture-v0")


@pytest.mark.parametrize("suite_name", sorted({board.suite for board in boards().values()}))
def test_every_run_of_a_suite_is_scored_by_one_of_its_boards_as_it_ran(suite_name, tmp_path):
    jobs = expand_jobs(load_suite(suite_name), tmp_path)
    # data jobs and runs that do not evaluate (the multiagent suite's per-agent warm starts) are no board's
    jobs = [job for job in jobs if job.algorithm != "data" and flag(job.argv, "--eval-episodes") != "0"]
    assert jobs
    for job in jobs:
        env_id = flag(job.argv, "--env-id")
        if env_id in USERS_TASKS:
            continue
        owners = [board for board in suite_boards(suite_name) if env_id in board.tasks]
        assert len(owners) == 1, f"{job.key}: {env_id} is on {len(owners)} boards of suite {suite_name}"
        board = owners[0]
        assert json.loads(flag(job.argv, "--env-kwargs") or "{}") == board.env_kwargs[env_id], job.key
        assert flag(job.argv, "--eval-episodes") == str(board.eval_episodes), job.key


def test_every_board_task_has_its_metrics_split():
    for board in boards().values():
        assert board.tasks and board.eval_episodes >= 1
        for env_id in board.tasks:
            split = task_metrics(board.name)[env_id]
            assert split.task, f"{env_id} has no task metrics"


def test_a_board_may_score_a_task_on_its_own_metrics():
    default, multiagent = task_metrics()["lm_gym/DailyDialog-v0"], task_metrics("multiagent")["lm_gym/DailyDialog-v0"]
    assert multiagent.task == default.task and default.naturalness and not multiagent.naturalness
    assert task_metrics("multiagent")["lm_gym/VisDial-v0"] == task_metrics()["lm_gym/VisDial-v0"]
