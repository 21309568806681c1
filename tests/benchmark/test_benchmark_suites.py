"""Benchmark suites (benchmark/suite.py): the shipped suites' coverage and command lines, the expansion of a
suite into jobs (selection, needed jobs, merged flags, placeholders) and the refusal of a bad suite."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_baseline
from fake_suites import harness, write_suite

import lm_gym
from benchmark.__main__ import build_parser
from benchmark.suite import ROOT, SuiteError, expand_jobs, load_suite, render_flags

BASELINES = sorted(path.name for path in (ROOT / "baselines").glob("*.py"))


# ----------------------------------------------------------------------------- suites and jobs
def test_the_smoke_suite_covers_every_registered_task_and_every_baseline(tmp_path):
    jobs = expand_jobs(load_suite("smoke"), tmp_path)
    env_ids = {job.argv[job.argv.index("--env-id") + 1] for job in jobs if job.is_baseline}
    assert env_ids == {env_id for env_id in lm_gym.registered_tasks() if env_id.startswith("lm_gym/")}
    # every baseline; ippo.py plays the multi-agent envs: the multiagent suite runs it
    assert {Path(job.argv[0]).name for job in jobs if job.is_baseline} == set(BASELINES) - {"ippo.py"}
    multiagent = expand_jobs(load_suite("multiagent"), tmp_path / "multiagent")
    assert "ippo.py" in {Path(job.argv[0]).name for job in multiagent}
    by_key = {job.key: job for job in jobs}
    # RL starts from the task's SFT checkpoint where the task has SFT; Prompts-v0 has none
    assert by_key["imdb/ppo/seed1"].needs == ("imdb/sft/seed1",)
    ppo_argv = by_key["imdb/ppo/seed1"].argv
    assert ppo_argv[ppo_argv.index("--init-from") + 1] == str(tmp_path.resolve() / "imdb/sft/seed1/checkpoint")
    assert by_key["prompts/ppo/seed1"].needs == () and "--init-from" not in by_key["prompts/ppo/seed1"].argv
    assert by_key["wordle/filtered_bc/seed1"].needs == ("wordle/data/mixture",)
    assert by_key["wordle/data/mixture"].argv[:2] == ("-m", "lm_gym.tasks.wordle.offline_data")
    # every job after the jobs it needs
    position = {job.key: index for index, job in enumerate(jobs)}
    assert all(position[need] < position[job.key] for job in jobs for need in job.needs)


def test_selection_pulls_in_needed_jobs_and_seeds_are_replaced(tmp_path):
    suite = load_suite("smoke")
    jobs = expand_jobs(suite, tmp_path, tasks=["wordle"], algorithms=["ppo", "bc"], seeds=[4, 5])
    assert [job.key for job in jobs] == [
        "wordle/sft/seed4",
        "wordle/ppo/seed4",
        "wordle/sft/seed5",
        "wordle/ppo/seed5",
        "wordle/data/mixture",
        "wordle/bc/seed4",
        "wordle/bc/seed5",
    ]
    with pytest.raises(SuiteError, match="--tasks: the suite has no tasks \\['chess'\\]"):
        expand_jobs(suite, tmp_path, tasks=["chess"])
    with pytest.raises(SuiteError, match="--algos"):
        expand_jobs(suite, tmp_path, algorithms=["dqn"])
    with pytest.raises(SuiteError, match="no suite named 'nope'"):
        load_suite("nope")


def test_task_defaults_merge_between_algorithm_and_task_args_and_script_data_jobs_get_the_tasks_env(tmp_path):
    body = """
[defaults]
iterations = 1
[algorithms.rl]
script = "FAKE"
args = { iterations = 2, steps = 3 }
[algorithms.fixed]
script = "FAKE"
[tasks.a]
env_id = "lm_gym/VisDial-v0"
env_kwargs = { source = "synthetic" }
algorithms = ["rl", "fixed"]
defaults = { steps = 5, kl-coef = 0.2 }
args = { rl = { init-from = "{data.warm}" }, fixed = { kl-coef = 0.5, init-from = "{data.other}" } }
[tasks.a.data.pairs]
module = "lm_gym.multiagent.demonstrations"
args = { out = "{out}/t.parquet" }
[tasks.a.data.warm]
script = "FAKE"
args = { dataset = "{data.pairs}/t.parquet" }
[tasks.a.data.other]
script = "FAKE"
args = { env-kwargs = { source = "local" } }
"""
    jobs = {job.key: job for job in expand_jobs(load_suite(write_suite(tmp_path, body)), tmp_path, seeds=[1])}

    def flags(key):
        argv = jobs[key].argv
        return {name: argv[k + 1] for k, name in enumerate(argv) if name.startswith("--")}

    assert flags("a/rl/seed1") | {"--out-dir": ""} == {
        "--iterations": "2",  # the algorithm's over [defaults]
        "--steps": "5",  # the task's defaults over the algorithm's
        "--kl-coef": "0.2",
        "--env-id": "lm_gym/VisDial-v0",
        "--env-kwargs": '{"source": "synthetic"}',
        "--init-from": str(tmp_path.resolve() / "a/data/warm"),
        "--seed": "1",
        "--out-dir": "",
    }
    assert flags("a/fixed/seed1")["--kl-coef"] == "0.5"  # the task x algorithm's over the task's defaults
    assert flags("a/data/warm")["--env-id"] == "lm_gym/VisDial-v0"
    assert flags("a/data/warm")["--env-kwargs"] == '{"source": "synthetic"}'
    assert flags("a/data/other")["--env-kwargs"] == '{"source": "local"}'
    assert "--env-id" not in flags("a/data/pairs") and "--iterations" not in flags("a/data/warm")
    bad = body.replace("defaults = { steps = 5, kl-coef = 0.2 }", "defaults = 5")
    with pytest.raises(SuiteError, match=r"\[tasks.a\] defaults"):
        load_suite(write_suite(tmp_path, bad, name="bad"))


def test_flags_render_as_the_baselines_parse_them():
    assert render_flags(
        {"rloo": True, "scale_rewards": False, "seeds": [1, 2], "env-kwargs": {"source": "synthetic"}, "lr": 1e-5}
    ) == [
        "--rloo",
        "--no-scale-rewards",
        "--seeds",
        "1",
        "2",
        "--env-kwargs",
        '{"source": "synthetic"}',
        "--lr",
        "1e-05",
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[suite]\nseeds = [1, 1]\n[tasks.a]\nenv_id = 'x'", "seeds must be a non-empty list of distinct integers"),
        ("[suite]\nretrys = 2\n[tasks.a]\nenv_id = 'x'", "unknown keys \\['retrys'\\]"),
        (
            "[tasks.a]\nenv_id = 'x'\nalgorithms = ['ppo']",
            "names algorithms \\['ppo'\\] with no \\[algorithms.<label>\\] table",
        ),
        (
            "[algorithms.p]\nscript = 'FAKE'\nargs = { x = '{nope}' }\n[tasks.a]\nenv_id = 'x'\nalgorithms = ['p']",
            "unknown placeholder \\{nope\\}",
        ),
        (
            "[algorithms.p]\nscript = 'FAKE'\nargs = { x = '{q}' }\n"
            "[algorithms.q]\nscript = 'FAKE'\nargs = { x = '{p}' }\n"
            "[tasks.a]\nenv_id = 'x'\nalgorithms = ['p', 'q']",
            "cycle",
        ),
        ("[tasks.a]\nenv_id = 'x'\n[tasks.a.data.d]\nargs = {}", "exactly one of module"),
        ("[tasks.a\nenv_id = 'x'", "not valid TOML"),
    ],
)
def test_bad_suites_are_refused_with_the_reason(tmp_path, body, message):
    with pytest.raises(SuiteError, match=message):
        expand_jobs(load_suite(str(write_suite(tmp_path, body))), tmp_path / "runs")


@pytest.mark.parametrize("name", ["smoke", "offline", "grue", "multiagent"])
def test_every_shipped_suites_command_lines_are_accepted_by_their_baselines(tmp_path, name):
    import tyro

    suite = load_suite(name)
    jobs = expand_jobs(suite, tmp_path)
    assert {job.seed for job in jobs if job.is_baseline} == set(suite.seeds)
    for job in jobs:
        if job.is_baseline:
            args = tyro.cli(load_baseline(Path(job.argv[0]).stem).Args, args=list(job.argv[1:]))
            assert args.seed == job.seed and args.out_dir == str(job.out_dir)
        elif Path(job.argv[0]).parent.name == "baselines":  # a seed-independent baseline run (a shared warm start)
            args = tyro.cli(load_baseline(Path(job.argv[0]).stem).Args, args=list(job.argv[1:]))
            assert args.out_dir == str(job.out_dir), job.key
        else:  # data modules: every flag is one their --help lists
            help_text = subprocess.run(
                [sys.executable, *job.argv[:2], "--help"], capture_output=True, text=True, cwd=ROOT
            ).stdout
            assert all(flag in help_text for flag in job.argv[2:] if flag.startswith("--")), job.key


def test_the_run_commands_help_lists_every_suite_of_the_folder(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    suites = sorted(path.stem for path in (ROOT / "benchmark" / "suites").glob("*.toml"))
    assert {"smoke", "offline", "grue", "multiagent"} <= set(suites)
    assert f"a suite of benchmark/suites/ ({', '.join(suites)}) or a path to a .toml file" in help_text


def test_grue_is_every_task_over_five_seeds_and_its_dry_run_lists_the_jobs(tmp_path):
    jobs = expand_jobs(load_suite("grue"), tmp_path)
    assert {job.seed for job in jobs if job.is_baseline} == {1, 2, 3, 4, 5}
    # GRUE's tasks: every built-in task but the two that play the user's data and tasks
    users = {"lm_gym/TextGeneration-v0", "lm_gym/Mixture-v0"}
    assert {job.argv[job.argv.index("--env-id") + 1] for job in jobs if job.is_baseline} == {
        env_id for env_id in lm_gym.registered_tasks() if env_id.startswith("lm_gym/")
    } - users
    listing = harness("--suite", "grue", "--dry-run", "--out", tmp_path)
    assert f"{len(jobs)} jobs: 8 tasks" in listing.stdout and "python baselines/ppo.py" in listing.stdout
    assert not (tmp_path / "grue").exists()  # a dry run runs and writes nothing
