"""The boards (leaderboard/boards.toml) score what their suites (benchmark/suites/) run: the same
tasks, env arguments and number of final-evaluation episodes."""

import json

import pytest

from benchmark.suite import expand_jobs, load_suite
from leaderboard.boards import boards, suite_boards, task_metrics


def flag(argv, name):
    """The value of ``--name`` in a job's command line (None when absent)."""
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize("suite_name", sorted({board.suite for board in boards().values()}))
def test_every_run_of_a_suite_is_scored_by_one_of_its_boards_as_it_ran(suite_name, tmp_path):
    jobs = [job for job in expand_jobs(load_suite(suite_name), tmp_path) if job.algorithm != "data"]
    assert jobs
    for job in jobs:
        env_id = flag(job.argv, "--env-id")
        owners = [board for board in suite_boards(suite_name) if env_id in board.tasks]
        assert len(owners) == 1, f"{job.key}: {env_id} is on {len(owners)} boards of suite {suite_name}"
        board = owners[0]
        assert json.loads(flag(job.argv, "--env-kwargs") or "{}") == board.env_kwargs[env_id], job.key
        assert flag(job.argv, "--eval-episodes") == str(board.eval_episodes), job.key


def test_every_board_task_has_its_metrics_split():
    for board in boards().values():
        assert board.tasks and board.eval_episodes >= 1
        for env_id in board.tasks:
            split = task_metrics()[env_id]
            assert split.task, f"{env_id} has no task metrics"
