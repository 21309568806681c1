"""The speed benchmark's floor (benchmark/perf/roofline.py): it counts a model's arithmetic right, and its
report turns a results file into floors and goal bounds that follow from them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import roofline  # benchmark/perf is on sys.path (pyproject.toml's pytest pythonpath)
import torch
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = Path(__file__).resolve().parents[2]


def test_the_recorded_kernels_of_a_forward_pass_hold_the_models_arithmetic():
    torch.manual_seed(0)
    layers, width, vocab, batch, length = 2, 32, 100, 3, 10
    config = GPT2Config(n_layer=layers, n_head=2, n_embd=width, vocab_size=vocab, n_positions=32)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, vocab, (batch, length))
    calls = roofline.recorded(lambda: model(input_ids=ids))
    tokens = batch * length
    products = 2 * tokens * (layers * 12 * width * width + vocab * width)  # 4 weight matrices a layer, the LM head
    attention = layers * 4 * batch * length * length * width  # scores and weighted values, every head
    assert sum(map(roofline.flops, calls)) == products + attention
    assert len(calls) == layers * (4 + 1) + 1  # the layers' products and attention, the LM head
    assert roofline.replay_seconds(calls) > 0

    with torch.enable_grad():  # the backward pass: twice the products' arithmetic, and attention's backward
        backward = roofline.recorded(lambda: model(input_ids=ids).logits.sum().backward())
    assert sum(map(roofline.flops, backward)) > 2.9 * products


@pytest.mark.slow  # the script in its own process on the tiny model: about 8 s
def test_the_report_sets_floors_beside_the_measured_times_and_bounds_the_goals(tmp_path):
    seconds = {"generate-limit": 0.5, "lm-gym-ppo": 1.0, "lm-gym-nlpo": 1.3, "lm-gym-grpo-beta0.05": 0.8}
    seconds |= {"lm-gym-grpo-beta0": 0.7, "lm-gym-rloo-beta0.05": 0.8, "trl-grpo-beta0.05": 2.0}
    summary = {name: {"iteration_s": s, "rollout_tokens_per_s": 64 * 48 / (s / 2)} for name, s in seconds.items()}
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"summary": summary}))
    out = tmp_path / "roofline.json"
    command = [sys.executable, "benchmark/perf/roofline.py", "--size", "tiny", "--results", str(results)]
    command += ["--workload-dir", str(tmp_path / "work"), "--out", str(out)]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(out.read_text())

    floors = {name: row["floor_s"] for name, row in report["contenders"].items()}
    assert floors["lm-gym-nlpo"] > floors["lm-gym-ppo"] > floors["generate-limit"] > 0
    assert floors["lm-gym-grpo-beta0.05"] > floors["lm-gym-grpo-beta0"]
    phases = report["phases"]
    assert phases["sampling, 16 prompts x 4"]["gflop"] < phases["sampling, 64 prompts"]["gflop"]  # prompts run once
    assert phases["update, 64 prompts, value head"]["gflop"] > 2.9 * phases["reference pass, 64 prompts"]["gflop"]
    grpo = report["contenders"]["lm-gym-grpo-beta0.05"]
    assert grpo["floor_share"] == grpo["floor_s"] / 0.8

    bound = report["goal_bounds"]["lm-gym-grpo-beta0.05 at least 3x trl-grpo-beta0.05"]
    assert bound["bound"] == 2.0 / grpo["floor_s"]
    assert bound["required_floor_share"] == grpo["floor_s"] / (2.0 / 3)
    assert "lm-gym-rloo-beta0.05 at least 3x trl-rloo-beta0.05" not in report["goal_bounds"]  # no TRL time: no bound
    assert "NLPO / PPO s/iteration at most 1.15" in completed.stdout
