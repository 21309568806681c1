"""The GPU check (benchmark/perf/gpu_check.py and its setup, gpu_check_setup.py) on the CPU: its dry run
goes through every part's code path (about a minute: in the deep run, which CI runs), so the script
cannot rot between the GPU runs it is made for."""

import json
import os
import subprocess
import sys
from pathlib import Path

import gpu_check  # benchmark/perf is on sys.path (pyproject.toml's pytest pythonpath)
import gpu_check_setup
import profiling
import pytest
import torch
import trl_envs

ROOT = Path(__file__).resolve().parents[2]


def dry_run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    command = [sys.executable, "benchmark/perf/gpu_check.py", "--device", "cpu", "--tiny", *extra]
    command += ["--work-dir", str(tmp_path / "work"), "--results-dir", str(tmp_path / "results")]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900, check=False)
    files = list((tmp_path / "results").glob("gpu-cpu-*.json"))
    assert len(files) == 1, completed.stdout + completed.stderr
    return completed, json.loads(files[0].read_text())


@pytest.mark.slow
def test_the_dry_run_goes_through_every_part_and_writes_the_results(tmp_path):
    completed, record = dry_run(tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr[-3000:]
    assert record["device"]["name"] == "cpu" and record["device"]["torch"]
    assert list(record["parts"]) == ["speed", "cnn_dailymail", "smoke"]
    assert all(part["status"] == "done" for part in record["parts"].values()), record["parts"]

    speed = record["parts"]["speed"]
    ours = {"lm-gym-ppo", "lm-gym-grpo-beta0.05"}
    assert {"generate-limit", *ours, *(f"{name}+graphs" for name in ours)} <= set(speed["contenders"])
    assert all(row["episodes_per_s"] > 0 for row in speed["contenders"].values())
    for name in ours:  # the decode paths on and off, side by side
        assert speed["ratios"][f"{name}+graphs / {name} episodes/s"] > 0
    for name, row in speed["contenders"].items():  # where each contender's time went, on the CPU: ops, not kernels
        profile = row["profile"]
        assert profile["device"] == "cpu" and profile["aten_ops_per_iteration"] > 1000, name
        assert profile["kernels_per_iteration"] is None and 0 < profile["device_s"] <= profile["wall_s"] * 4
        assert profile["host_syncs_per_iteration"] == profile["sync_counts"]["aten::_local_scalar_dense"]
        assert f"| speed | {name} per iteration | " in completed.stdout
    rollout = speed["goals"]["lm-gym-ppo rollout / generate limit tokens/s"]
    assert rollout["value"] > 0 and rollout["met"] == (rollout["value"] >= 1.0)
    for trainer in ("ppo", "grpo-beta0.05"):  # TRL's contender ran, or says why not
        name = f"trl-{trainer}"
        assert name in speed["contenders"] or "trl==" in speed["skipped"][name], speed

    cnn = record["parts"]["cnn_dailymail"]
    assert cnn["device"] == "cpu" and cnn["ppo_iterations"] == 2
    assert 0 <= cnn["sft_start_rouge1"] <= 1 and 0 <= cnn["ppo_rouge1"] <= 1
    assert cnn["goals"]["PPO's validation ROUGE-1 above its SFT start"]["met"] == (
        cnn["ppo_rouge1"] > cnn["sft_start_rouge1"]
    )

    smoke = record["parts"]["smoke"]
    assert smoke["jobs"] == smoke["done"] == 2 and not smoke["not_on_the_device"]
    assert smoke["report_written"] and smoke["board_written"]
    assert "| smoke | every smoke job done on cpu | 2 | 2 | yes |" in completed.stdout


def test_a_part_out_of_time_is_recorded_and_the_others_still_run(tmp_path):
    # a box too short for any contender: the speed part says so; the results file still has every part
    completed, record = dry_run(tmp_path, "--minutes", "0.1", "--parts", "speed", "smoke")
    assert completed.returncode == 1
    speed, smoke = record["parts"]["speed"], record["parts"]["smoke"]
    assert speed["status"] == "failed" and not speed["contenders"]
    assert set(speed["failed"].values()) == {"not started: the part's time box ran out"}
    assert (
        smoke["status"] in ("stopped at the time box", "failed")
        and not smoke["goals"]["every smoke job done on cpu"]["met"]
    )


def test_a_dry_run_leaves_the_checkout_as_it_was(tmp_path):
    """Without --results-dir a dry run's results go to a new temporary folder, named in the output;
    benchmark/perf/results (what is published) gets no file."""
    published = ROOT / "benchmark" / "perf" / "results"
    before = sorted(published.iterdir())
    command = [sys.executable, "benchmark/perf/gpu_check.py", "--device", "cpu", "--tiny", "--minutes", "0.05"]
    command += ["--parts", "speed", "--work-dir", str(tmp_path / "work")]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    files = list(tmp_path.glob("gpu-check-dry-run-*/gpu-cpu-*.json"))
    assert len(files) == 1, completed.stdout + completed.stderr
    assert f"written to {files[0]}" in completed.stdout
    assert json.loads(files[0].read_text())["parts"]["speed"]["status"] == "failed"  # its box too short
    assert sorted(published.iterdir()) == before


def test_the_carried_wheels_are_what_the_gpu_image_lacks():
    requirements = gpu_check_setup.check_requirements()
    names = {line.split(">")[0].split("<")[0].split("=")[0].split(";")[0].strip() for line in requirements}
    assert {"gymnasium", "datasets", "nltk", "rouge-score", "tyro", "rliable", "pandas"} <= names
    assert not names & set(gpu_check_setup.LEFT_OUT)
    carried = gpu_check_setup.carried_distributions()
    image = gpu_check_setup.gpu_image_packages()
    assert {"gymnasium", "datasets", "nltk", "rouge-score", "tyro", "rliable", "arch", "dill", "multiprocess"} <= set(
        carried
    )
    assert not {"torch", "transformers", "accelerate", "pyarrow", "wordfreq", "pycocoevalcap", "wandb"} & set(carried)
    assert set(carried) - set(gpu_check_setup.ALWAYS_CARRIED) <= set(carried) - image


def test_the_setup_installs_offline_from_a_wheel_folder_and_names_what_it_lacks(tmp_path, monkeypatch):
    """On a machine that has every requirement, the setup's pip installs nothing from an empty wheel
    folder; the word lists are installed; a TRL release with no wheel there is recorded, by name."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "lm_gym.tasks.word_lists", "export", str(wheels / "word-lists")], check=True, cwd=ROOT
    )
    (wheels / "manifest.json").write_text(json.dumps({"requirements": gpu_check_setup.check_requirements()}))
    monkeypatch.setattr(trl_envs, "VERSIONS", ("0.0.1",))  # a release no folder holds
    env = gpu_check.subprocess_env(tmp_path / "work")
    setup = gpu_check_setup.set_up(wheels, tmp_path / "work", env)
    assert setup["python"] == str(tmp_path / "work" / "venv" / "bin" / "python")
    assert "error" not in setup["steps"]["pip"] and not setup["steps"]["pip"]["installed"]
    assert {Path(p).name for p in setup["steps"]["word_lists"]} == {
        "prompts-words.json", "wordle-answers.json", "wordle-guesses.json"
    }  # fmt: skip
    assert "trl==0.0.1" in setup["steps"]["trl_envs"]["0.0.1"]["error"]


@pytest.mark.slow
def test_the_whole_check_from_a_wheel_folder_runs_in_its_venv(tmp_path):
    """--wheels: the setup, then the check again inside its venv (the GPU flow, on the CPU)."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "lm_gym.tasks.word_lists", "export", str(wheels / "word-lists")], check=True, cwd=ROOT
    )
    (wheels / "manifest.json").write_text(json.dumps({"requirements": gpu_check_setup.check_requirements()}))
    completed, record = dry_run(tmp_path, "--wheels", str(wheels), "--parts", "cnn_dailymail")
    assert completed.returncode == 0, completed.stdout + completed.stderr[-3000:]
    assert record["setup"]["python"].endswith("work/venv/bin/python")
    assert record["parts"]["cnn_dailymail"]["status"] == "done"


def train_a_little(steps: int) -> None:
    """``steps`` optimizer steps, each after reading the loss back (``aten::item``)."""
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(torch.ones(8, 4)).pow(2).mean()
        loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_the_profiler_summary_counts_a_windows_ops_and_host_syncs(tmp_path):
    """A window of two optimizer steps after the first: the two read-backs in it, its ops, time on the device (the
    CPU here) within its wall time; the hook is gone after it."""
    out = tmp_path / "profile.json"
    profiling.Window(out, start_after=1, steps=2).on_optimizer_steps()
    train_a_little(4)
    summary = json.loads(out.read_text())
    assert summary["device"] == "cpu" and summary["iterations"] == 1
    assert summary["sync_counts"]["aten::item"] == 2 and summary["host_syncs_per_iteration"] == 2
    assert summary["aten_ops_per_iteration"] > 20 and summary["kernels_per_iteration"] is None
    assert 0 < summary["device_s"] and 0 < summary["wall_s"] and summary["device_busy"] > 0
    assert "aten::addmm" in summary["top_device_time_ms"] or "aten::linear" in summary["top_device_time_ms"]
    out.unlink()
    train_a_little(4)  # the window has closed: nothing more is written
    assert not out.exists()


def test_the_profiler_runs_a_script_as_python_runs_it(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\nimport torch\n"
        "assert sys.argv[1:] == ['--steps', '3'], sys.argv\n"
        "model = torch.nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(3):\n    model(torch.ones(1, 2)).sum().backward()\n    optimizer.step()\n"
    )
    out = tmp_path / "profile.json"
    command = [sys.executable, "benchmark/perf/profiling.py", str(out), "1", "1", str(script), "--steps", "3"]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(out.read_text())["aten_ops_per_iteration"] > 0
