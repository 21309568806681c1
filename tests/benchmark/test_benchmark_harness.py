"""The benchmark harness (``python -m benchmark run``): placement, the job records, resume after SIGKILL and
Ctrl-C, retries, failures, and the Ray and Slurm (submitit) backends.

Scheduling tests run the harness as a user does (``python -m benchmark run``, a process)
on suites of ``harness_fake_baseline.py``, which takes seconds; one test runs the real
``smoke`` suite's Prompts-v0 jobs with the real baselines, then the report.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_suites import FAKE_SUITE, harness, results, write_suite

from benchmark.attempt import LOG_FILE, Attempt, failure_cause, is_permanent
from benchmark.placement import Slot, launcher, parse_gpus, plan_slots
from benchmark.suite import ROOT, expand_jobs, load_suite
from lm_gym.core.errors import ConfigurationError
from lm_gym.results import load_result
from lm_gym.results.harness_job import HarnessJob, read_harness_job


# ----------------------------------------------------------------------------- placement
def test_slots_on_fake_gpus_and_cpu_workers():
    assert plan_slots(["3", "5"], jobs_per_gpu=2, cpu_count=8) == [
        Slot("gpu3.0", "3", 2),
        Slot("gpu5.0", "5", 2),
        Slot("gpu3.1", "3", 2),
        Slot("gpu5.1", "5", 2),
    ]
    assert plan_slots([], threads_per_job=2, cpu_count=8) == [Slot(f"cpu.{k}", None, 2) for k in range(4)]
    assert plan_slots([], workers=3, cpu_count=8) == [Slot(f"cpu.{k}", None, 2) for k in range(3)]
    assert Slot("cpu.0", None, 2).env() == {"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    assert parse_gpus("0, 2") == ["0", "2"] and parse_gpus("none") == []
    with pytest.raises(ConfigurationError, match="--gpus"):
        parse_gpus("0,0")


def test_data_parallel_jobs_take_several_gpus_or_cpu_shares():
    assert plan_slots(["0", "1", "2", "3", "4"], procs_per_job=2, cpu_count=8) == [
        Slot("gpu0+1.0", "0,1", 2),
        Slot("gpu2+3.0", "2,3", 2),
    ]
    assert plan_slots([], threads_per_job=2, procs_per_job=2, cpu_count=8) == [
        Slot(f"cpu.{k}", None, 2) for k in range(2)
    ]
    assert plan_slots([], workers=1, procs_per_job=2, cpu_count=8) == [Slot("cpu.0", None, 4)]
    with pytest.raises(ConfigurationError, match="--procs-per-job 2 takes 2 whole GPUs per job"):
        plan_slots(["0", "1"], jobs_per_gpu=2, procs_per_job=2)
    assert launcher(1) == (sys.executable,)
    assert launcher(2)[1:] == ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")


def test_jobs_get_their_gpu_through_cuda_visible_devices(tmp_path):
    suite = write_suite(tmp_path, FAKE_SUITE.replace("step-seconds = 0.2", "step-seconds = 0.3"))
    # another lm_gym on PYTHONPATH, as an installed release would be: the jobs must not import it
    decoy = tmp_path / "elsewhere" / "lm_gym"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(decoy.parent)}
    harness("--suite", suite, "--out", tmp_path / "runs", "--gpus", "3,5", "--jobs-per-gpu", "2", env=env)
    runs = results(tmp_path / "runs" / "tiny")
    assert len(runs) == 9
    intervals = {"3": [], "5": []}
    for result in runs.values():
        gpu = result["config"]["cuda_visible_devices"]
        intervals[gpu].append((result["config"]["started"], result["config"]["ended"]))
        assert result["config"]["omp_num_threads"] == str(max(1, os.cpu_count() // 4))
        # the job imports the checkout's lm_gym, as the harness does
        assert Path(result["config"]["lm_gym_file"]) == ROOT / "lm_gym" / "__init__.py"
    assert intervals["3"] and intervals["5"]  # both GPUs used
    for spans in intervals.values():  # never more than 2 jobs at once on one GPU
        for start, _ in spans:
            assert sum(s <= start < e for s, e in spans) <= 2


def test_each_job_folder_holds_the_record_of_its_suite_task_algorithm_seed_and_command(tmp_path):
    suite = write_suite(tmp_path, FAKE_SUITE.replace("steps = 4, step-seconds = 0.2", "steps = 1"))
    harness("--suite", suite, "--out", tmp_path / "runs", "--tasks", "a", "--num-seeds", "1")
    jobs = {job.key: job for job in expand_jobs(load_suite(str(suite)), tmp_path / "runs" / "tiny", tasks=["a"])}
    for key, algorithm in (("a/warm/seed1", "warm"), ("a/rl/seed1", "rl")):
        record = read_harness_job(tmp_path / "runs" / "tiny" / key)
        assert record == HarnessJob("tiny", key, "a", algorithm, 1, jobs[key].argv)


# ----------------------------------------------------------------------------- resume and faults
@pytest.mark.slow  # a suite killed and run again (50 s); the deep run keeps it, the rerun below keeps resuming
def test_a_suite_killed_with_sigkill_resumes_with_every_result_once(tmp_path):
    suite = write_suite(tmp_path, FAKE_SUITE)
    root = tmp_path / "runs" / "tiny"
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmark", "run", "--suite", suite, "--out", tmp_path / "runs", "--workers", "2"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill it once one job finished and an RL job is mid-way
        finished = list(root.rglob("result.json"))
        midway = [p for p in root.rglob("state.json") if not (p.parents[1] / "result.json").exists()]
        if finished and any(p.parents[1].parent.name == "rl" for p in midway):
            break
        time.sleep(0.05)
    process.kill()
    process.wait()
    time.sleep(1.0)
    pids = [int(pid) for path in root.rglob("pids.txt") for pid in path.read_text().split()]
    assert not any(_alive(pid) for pid in pids), "the harness's children outlived it"
    assert len(results(root)) < 9

    harness("--suite", suite, "--out", tmp_path / "runs", "--workers", "2")
    runs = results(root)
    assert len(runs) == 9
    for job_dir in (root / key for key in runs):
        assert len((job_dir / "finishes.txt").read_text().splitlines()) == 1  # no result written twice
    assert any(result["config"]["resumed_from"] > 0 for result in runs.values()), "no job continued from its checkpoint"
    assert not list(root.rglob("*.tmp"))
    status = json.loads((root / "harness.json").read_text())
    assert status["counts"] == {"done": 9}


@pytest.mark.slow  # a suite stopped and run again (48 s); the deep run keeps it
def test_ctrl_c_stops_the_running_jobs_and_a_rerun_finishes(tmp_path):
    suite = write_suite(tmp_path, FAKE_SUITE.replace("step-seconds = 0.2", "step-seconds = 1.0"))
    root = tmp_path / "runs" / "tiny"
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmark", "run", "--suite", suite, "--out", tmp_path / "runs", "--workers", "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(root.rglob("state.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = harness("--suite", suite, "--out", tmp_path / "runs", check=False)  # the folder is taken
    assert second.returncode == 2 and "another harness is running" in second.stdout
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    status = json.loads((root / "harness.json").read_text())
    assert status["counts"].get("interrupted") and "interrupted" in output
    pids = [int(pid) for path in root.rglob("pids.txt") for pid in path.read_text().split()]
    assert not any(_alive(pid) for pid in pids)
    harness("--suite", suite, "--out", tmp_path / "runs", "--workers", "2")
    assert len(results(root)) == 9


@pytest.mark.slow  # retries with their back-off (31 s); the next test records a failure in the default run
def test_a_failing_job_is_retried_then_recorded_without_stopping_the_suite(tmp_path):
    body = FAKE_SUITE.replace(
        'args = { init-from = "{warm?}/checkpoint", steps = 4, step-seconds = 0.2 }',
        'args = { init-from = "{warm?}/checkpoint", steps = 2, fail-first-attempt = true }',
    )
    body = body.replace(
        '[algorithms.warm]\nscript = "FAKE"', '[algorithms.warm]\nscript = "FAKE"\nargs = { fail-seeds = [2] }'
    )
    suite = write_suite(tmp_path, body)
    completed = harness("--suite", suite, "--out", tmp_path / "runs", "--workers", "2", check=False)
    assert completed.returncode == 1
    root = tmp_path / "runs" / "tiny"
    status = json.loads((root / "harness.json").read_text())["jobs"]
    assert status["a/warm/seed2"]["state"] == "failed" and status["a/warm/seed2"]["attempts"] == 2
    assert status["a/rl/seed2"]["state"] == "skipped" and "a/warm/seed2" in status["a/rl/seed2"]["note"]
    for key in (
        "a/rl/seed1",
        "a/rl/seed3",
        "b/rl/seed1",
        "b/rl/seed2",
        "b/rl/seed3",
    ):  # failed once, resumed on the retry
        assert status[key]["state"] == "done" and status[key]["attempts"] == 2
        assert load_result(root / key)["config"]["resumed_from"] == 1
    assert "failing on purpose" in (root / "a/warm/seed2/harness.log").read_text()
    assert "2 failed" not in completed.stdout and "1 failed, 1 skipped" in completed.stdout
    # the cause is on the console, in the summary and in harness.json, not only in the log
    assert status["a/warm/seed2"]["note"] == "exit code 1 after 2 attempts: failing on purpose"
    assert "retrying a/warm/seed2: attempt 1 exit code 1: failing on purpose" in completed.stdout
    assert "failed a/warm/seed2: exit code 1 after 2 attempts: failing on purpose" in completed.stdout
    assert (
        "  failed a/warm/seed2: exit code 1 after 2 attempts: failing on purpose; log"
        in completed.stdout.split("9 jobs:")[1]
    )


def test_an_error_no_retry_can_fix_is_not_retried_and_the_report_covers_the_finished_jobs(tmp_path):
    suite = write_suite(
        tmp_path,
        """
[suite]
seeds = [1, 2, 3]
retries = 1
[algorithms.rl]
script = "FAKE"
args = { unavailable-seeds = [3] }
[tasks.a]
env_id = "lm_gym/IMDB-v0"
algorithms = ["rl"]
[tasks.b]
env_id = "lm_gym/Wordle-v0"
algorithms = ["rl"]
""",
    )
    completed = harness("--suite", suite, "--out", tmp_path / "runs", "--workers", "2", "--report", check=False)
    assert completed.returncode == 1
    root = tmp_path / "runs" / "tiny"
    status = json.loads((root / "harness.json").read_text())["jobs"]
    cause = "lm_gym.core.errors.DataUnavailableError: no dataset for seed 3 [fake]: pass source='synthetic'"
    assert status["a/rl/seed3"]["state"] == "failed" and status["a/rl/seed3"]["attempts"] == 1
    assert status["a/rl/seed3"]["note"] == f"exit code 1, not retried (a retry cannot fix it): {cause}"
    assert f"failed a/rl/seed3: exit code 1, not retried (a retry cannot fix it): {cause}" in completed.stdout
    assert "retrying" not in completed.stdout
    # the report of the 4 jobs that finished is written all the same, and the exit status says some did not
    report = json.loads((root / "report.json").read_text())
    assert [row["seeds"] for rows in report["tasks"].values() for row in rows.values()] == [[1, 2], [1, 2]]

    rerun = harness("--suite", suite, "--out", tmp_path / "runs", "--workers", "2", check=False)
    assert rerun.returncode == 1 and "4 done (4 reused from an earlier run), 2 failed, 0 skipped" in rerun.stdout


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        (
            "=== a, attempt 1\n$ python x.py\n"
            "Traceback (most recent call last):\n  File 'x.py'\nKeyError: 'env'\n=== exit code 1\n",
            "KeyError: 'env'",
        ),
        (
            "=== a, attempt 1\n$ x\nold\n=== exit code 1\n"
            "=== a, attempt 2\n$ x\nusage: x [-h]\nx: error: unrecognized arguments: --lr\n=== exit code 2\n",
            "x: error: unrecognized arguments: --lr",
        ),
        (
            "=== a, attempt 1\n$ x\nValueError: inner\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "benchmark.x.SuiteError: outer\n",
            "benchmark.x.SuiteError: outer",
        ),
        ("=== a, attempt 1\n$ x\n=== exit code 137\n", ""),
    ],
)
def test_the_cause_of_a_failure_is_the_last_error_line_of_its_latest_attempt(tmp_path, log, cause):
    (tmp_path / LOG_FILE).write_text(log)
    assert failure_cause(tmp_path) == cause


def test_usage_and_lm_gym_configuration_or_data_errors_are_permanent():
    assert is_permanent(2, "x: error: unrecognized arguments: --lr")
    assert is_permanent(1, "lm_gym.core.errors.ConfigurationError: bad") and is_permanent(
        1, "benchmark.suite.SuiteError: bad"
    )
    assert is_permanent(1, "lm_gym.core.errors.TrajectoryFormatError: bad") and is_permanent(
        1, "DataUnavailableError: no hub"
    )
    assert (
        not is_permanent(1, "RuntimeError: CUDA out of memory")
        and not is_permanent(124, "")
        and not is_permanent(1, "ConfigurationError is fine")
    )


def test_tracking_sets_the_wandb_group_and_tags(tmp_path):
    suite = write_suite(tmp_path, FAKE_SUITE.replace("seeds = [1, 2, 3]", "seeds = [1]"))
    harness(
        "--suite",
        suite,
        "--out",
        tmp_path / "runs",
        "--track",
        "--auto-tag",
        "--tasks",
        "b",
        env={**os.environ, "WANDB_MODE": "offline"},
    )
    config = load_result(tmp_path / "runs/tiny/b/rl/seed1")["config"]
    assert (
        config["track"]
        and config["wandb_run_group"].startswith("tiny-")
        and config["wandb_tags"].split(",")[0] == "tiny"
    )


# ----------------------------------------------------------------------------- cluster backends
@pytest.mark.slow
def test_ray_backend_runs_a_suite_on_a_local_ray_instance(tmp_path):
    pytest.importorskip("ray")
    suite = write_suite(
        tmp_path,
        FAKE_SUITE.replace("seeds = [1, 2, 3]", "seeds = [1, 2]").replace("step-seconds = 0.2", "step-seconds = 0"),
    )
    harness("--suite", suite, "--out", tmp_path / "runs", "--backend", "ray", "--gpus", "none")
    runs = results(tmp_path / "runs" / "tiny")
    assert len(runs) == 6 and all(result["config"]["omp_num_threads"] == "1" for result in runs.values())


@pytest.mark.slow  # submitit's local executor (17 s); the sbatch test below keeps the Slurm backend in the default run
def test_slurm_backend_through_submitits_local_executor(tmp_path):
    pytest.importorskip("submitit")
    suite = write_suite(
        tmp_path,
        FAKE_SUITE.replace("seeds = [1, 2, 3]", "seeds = [1]").replace("step-seconds = 0.2", "step-seconds = 0"),
    )
    harness("--suite", suite, "--out", tmp_path / "runs", "--backend", "slurm", "--submitit-cluster", "local")
    assert len(results(tmp_path / "runs" / "tiny")) == 3


def test_slurm_array_and_parameters_as_sbatch_receives_them(tmp_path, monkeypatch):
    submitit = pytest.importorskip("submitit")
    from benchmark.slurm_backend import SlurmBackend, SubmititAttempt, slurm_parameters

    bin_dir = tmp_path / "bin"  # a fake Slurm: srun exists, sbatch keeps the script it is given
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\n")
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {tmp_path}/submitted.sh\necho "Submitted batch job 4242"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    parameters = slurm_parameters(
        suite="grue",
        cpus_per_task=4,
        gpus_per_task=1,
        timeout_minutes=90,
        partition="gpu",
        array_parallelism=2,
        extra={"account": "myproj", "qos": "high"},
    )
    backend = SlurmBackend(folder=tmp_path / "runs", cluster="slurm", parameters=parameters)
    attempts = [
        Attempt(key=f"t/ppo/seed{k}", argv=("python", "ppo.py"), cwd=str(tmp_path), out_dir=str(tmp_path / f"j{k}"))
        for k in range(5)
    ]
    jobs = backend.submit(attempts)
    assert [job.job_id for job in jobs] == [f"4242_{k}" for k in range(5)]  # one array
    script = (tmp_path / "submitted.sh").read_text()
    for line in (
        "#SBATCH --array=0-4%2",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --gpus-per-node=1",
        "#SBATCH --time=90",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=myproj",
        "#SBATCH --qos=high",
        "#SBATCH --job-name=lm-gym-grue",
        "#SBATCH --signal=USR2@120",
        "#SBATCH --ntasks-per-node=1",
    ):
        assert line in script, line
    # preemption or timeout: submitit requeues the same attempt, continuing from the checkpoint
    requeued = SubmititAttempt().checkpoint(attempts[0])
    assert isinstance(requeued, submitit.helpers.DelayedSubmission) and requeued.args[0].argv[-1] == "--resume"


# ----------------------------------------------------------------------------- the real suite
def test_the_smoke_suites_prompts_jobs_run_with_the_real_baselines_and_report(tmp_path):
    out = tmp_path / "runs"
    completed = harness(
        "--suite",
        "smoke",
        "--tasks",
        "prompts",
        "--algos",
        "ppo",
        "rloo",
        "--out",
        out,
        "--workers",
        "2",
        "--report",
        "--board",
    )
    runs = results(out / "smoke")
    assert set(runs) == {"prompts/ppo/seed1", "prompts/rloo/seed1"}
    assert {result["algorithm"] for result in runs.values()} == {"ppo", "rloo"}
    summary = json.loads((out / "smoke" / "report.json").read_text())
    assert (
        summary["tasks"]["lm_gym/Prompts-v0"]["ppo"]["metrics"]["mean_return"]["mean"]
        == runs["prompts/ppo/seed1"]["final_eval"]["mean_return"]
    )
    assert "| ppo |" in completed.stdout  # the report's tables on the console
    board = json.loads((out / "smoke" / "board" / "board.json").read_text())
    assert len(board["entries"]) == 2 and all("lm_gym/Prompts-v0" in entry["tasks"] for entry in board["entries"])
    assert (out / "smoke" / "board" / "index.html").is_file()


@pytest.mark.parametrize(
    "backend",
    [
        # every backend's torchrun job in the deep run (33 s and more); the default run keeps the placement's test
        # above and a baseline's own two-process run (tests/baselines/test_distributed.py)
        pytest.param(["--backend", "local", "--workers", "1"], marks=pytest.mark.slow),
        pytest.param(["--backend", "slurm", "--submitit-cluster", "local"], marks=pytest.mark.slow),
        pytest.param(["--backend", "ray", "--gpus", "none"], marks=pytest.mark.slow),
    ],
    ids=["local", "slurm", "ray"],
)
def test_data_parallel_jobs_run_under_torchrun(backend, tmp_path):
    if backend[1] != "local":
        pytest.importorskip(backend[1] if backend[1] == "ray" else "submitit")
    out = tmp_path / "runs"
    harness(
        "--suite", "smoke", "--tasks", "prompts", "--algos", "ppo", "grpo", "--out", out, "--procs-per-job", 2, *backend
    )
    runs = results(out / "smoke")
    assert set(runs) == {"prompts/ppo/seed1", "prompts/grpo/seed1"}
    assert all(result["world_size"] == 2 for result in runs.values())
    log = (out / "smoke" / "prompts" / "ppo" / "seed1" / LOG_FILE).read_text()
    assert "-m torch.distributed.run --standalone --nproc_per_node=2" in log and "x 2 processes" in log


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead; /proc says so
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
