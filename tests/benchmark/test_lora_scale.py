"""The LoRA benchmark at the users' model size (benchmark/perf/lora_scale.py) on a tiny model: its dry run goes
through every contender (lm-gym's GRPO and PPO, full and LoRA, TRL's GRPOTrainer with and without LoRA), so
the script cannot rot between the full measurements it is made for."""

import json
import subprocess
import sys
from pathlib import Path

import lora_scale  # benchmark/perf is on sys.path (pyproject.toml's pytest pythonpath)
import pytest
import workload

ROOT = Path(__file__).resolve().parents[2]


def test_the_model_is_qwen2_shaped_and_loads_with_the_word_tokenizer(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    model_dir = lora_scale.build_model(tmp_path, "tiny")
    config = AutoConfig.from_pretrained(model_dir)
    assert config.model_type == "qwen2" and config.tie_word_embeddings
    assert config.num_hidden_layers == 2 and config.num_attention_heads == 7 * config.num_key_value_heads
    tokenizer = AutoTokenizer.from_pretrained(model_dir)  # as the baselines and TRL load it
    assert config.vocab_size == len(tokenizer) == len(workload.tokenizer())
    prompt = workload.prompts(1)[0]
    assert (
        tokenizer(prompt, add_special_tokens=False)["input_ids"]
        == workload.tokenizer()(prompt, add_special_tokens=False)["input_ids"]
    )
    assert lora_scale.build_model(tmp_path, "tiny") == model_dir  # made once


def test_the_ratios_hold_the_goals_of_the_rows_that_ran():
    rows = {
        "lm-gym-grpo-lora": {"peak_rss_mb": 500.0, "iteration_s": 2.0},
        "lm-gym-grpo-full": {"peak_rss_mb": 1000.0, "iteration_s": 3.0},
        "trl-grpo-lora": {"peak_rss_mb": 400.0, "iteration_s": 4.0},
        "lm-gym-ppo-lora": {"error": "exit -9 (killed: out of memory?)"},
    }
    found = {row["ratio_of"]: row for row in lora_scale.ratios(rows)}
    assert found["lm-gym-grpo-lora / lm-gym-grpo-full peak RSS"] == {
        "ratio_of": "lm-gym-grpo-lora / lm-gym-grpo-full peak RSS",
        "ratio": 0.5,
        "at_most": 0.6,
        "met": True,
    }
    assert found["lm-gym-grpo-lora / trl-grpo-lora peak RSS"]["met"] is False
    assert found["lm-gym-grpo-lora / trl-grpo-lora s/iteration"]["met"] is True
    assert len(found) == 3  # neither PPO's (one failed) nor the full fine-tunes' (TRL's did not run)


def test_prompts_the_minibatches_do_not_divide_are_refused(capsys):
    with pytest.raises(SystemExit):
        lora_scale.parse_args(["--prompts", "6"])
    assert "--prompts must be a multiple of 4" in capsys.readouterr().err


@pytest.mark.slow
def test_the_dry_run_measures_every_contender_side_by_side(tmp_path):
    pytest.importorskip("trl")
    out = tmp_path / "lora-scale.json"
    command = [sys.executable, "benchmark/perf/lora_scale.py", "--tiny", "--prompts", "4", "--group-size", "2"]
    command += ["--workload-dir", str(tmp_path / "work"), "--out", str(out)]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr[-3000:]
    record = json.loads(out.read_text())
    rows = record["rows"]
    assert list(rows) == list(lora_scale.CONTENDERS)
    for name, row in rows.items():
        assert "error" not in row, (name, row.get("error"))
        assert row["iteration_s"] > 0 and row["peak_rss_mb"] > 100 and len(row["iteration_seconds"]) == 1, name
        assert f"\n{name} " in completed.stdout
    for name in ("lm-gym-grpo", "lm-gym-ppo"):
        assert rows[f"{name}-lora"]["trained_adapters"] and not rows[f"{name}-full"]["trained_adapters"]
    lora = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": sorted(lora_scale.LORA_TARGET_MODULES)}
    assert rows["trl-grpo-lora"]["config"]["lora"] == lora
    assert rows["trl-grpo-lora"]["config"]["reference_model"] is False  # the adapters switched off
    assert rows["trl-grpo-full"]["config"]["lora"] is None and rows["trl-grpo-full"]["config"]["reference_model"]
    assert rows["trl-grpo-full"]["config"]["generation_batch_size"] == 8
    goals = {row["ratio_of"]: row for row in record["ratios"] if row["at_most"] is not None}
    assert set(goals) == {
        "lm-gym-grpo-lora / lm-gym-grpo-full peak RSS",
        "lm-gym-ppo-lora / lm-gym-ppo-full peak RSS",
        "lm-gym-grpo-lora / trl-grpo-lora peak RSS",
        "lm-gym-grpo-lora / trl-grpo-lora s/iteration",
    }
    assert all(row["met"] == (row["ratio"] <= row["at_most"]) for row in goals.values())
    assert record["model"]["num_hidden_layers"] == 2 and record["model"]["vocab_size"] == 4000
    assert record["settings"]["prompts"] == 4 and record["lora"]["r"] == 16
