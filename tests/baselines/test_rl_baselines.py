"""Smoke trainings of the RL baselines (PPO, NLPO): IMDB and Wordle, causal and seq2seq; VisDial and Reddit."""

import math

import pytest
import torch
from conftest import load_baseline
from safetensors.torch import load_file

from lm_gym.results import load_result

T5_CONFIG = '{"model_type": "t5", "d_model": 64, "d_ff": 128, "d_kv": 16, "num_layers": 2, "num_heads": 4}'
GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}'
ENVS = {
    "imdb": ("lm_gym/IMDB-v0", '{"source": "synthetic"}'),
    "wordle": ("lm_gym/Wordle-v0", '{"num_answers": 100}'),
    "visdial": ("lm_gym/VisDial-v0", '{"source": "synthetic"}'),
    "reddit": ("lm_gym/Reddit-v0", '{"source": "synthetic"}'),
}


@pytest.fixture(scope="module", params=["ppo", pytest.param("nlpo", marks=pytest.mark.slow)])
def baseline(request):
    """Each test for PPO, and for NLPO in the slow run (NLPO's own mask test is in the default run)."""
    return load_baseline(request.param)


def run(baseline, out_dir, env="imdb", model_config=GPT2_CONFIG, **overrides):
    env_id, env_kwargs = ENVS[env]
    settings = dict(
        env_id=env_id,
        env_kwargs=env_kwargs,
        model_config=model_config,
        num_envs=8,
        iterations=2,
        update_epochs=1,
        num_minibatches=2,
        eval_episodes=8,
        eval_batch_size=8,
        eval_every=0,
        out_dir=str(out_dir),
    )
    return baseline.main(baseline.Args(**{**settings, **overrides}))


@pytest.mark.parametrize(
    ("env", "architecture"),
    [
        ("imdb", "causal"),
        ("wordle", "causal"),
        ("wordle", "seq2seq"),
        pytest.param("imdb", "seq2seq", marks=pytest.mark.slow),
    ],
)
def test_smoke_training(baseline, env, architecture, tmp_path):
    result = run(baseline, tmp_path, env=env, model_config=GPT2_CONFIG if architecture == "causal" else T5_CONFIG)
    saved = load_result(tmp_path)  # validates against lm_gym.results' schema
    # a few episodes of the final evaluation: the prompt, the generation after it, the return
    assert len(saved["samples"]) == 5 and all(sample["prompt"] for sample in saved["samples"])
    if env == "imdb":  # 48 tokens, always some text
        assert all(sample["generation"] for sample in saved["samples"])
    else:  # a multi-turn sample is the game after the rules (an untrained policy's invalid guesses leave no line)
        assert not any(sample["generation"].startswith("Wordle") for sample in saved["samples"])
    assert saved["algorithm"] == baseline.__name__.removeprefix("baseline_") and saved["env_id"] == ENVS[env][0]
    assert [row["step"] for row in saved["curves"]] == [1, 2]
    for row in saved["curves"]:
        assert all(math.isfinite(row[key]) for key in ("pg_loss", "vf_loss", "kl", "mean_return"))
    if env == "imdb":  # the task's protocol: EOS is suppressed until 48 tokens (generation_defaults)
        assert all(row["response_tokens"] == 48 for row in saved["curves"])
    assert set(saved["final_eval"]) >= {"mean_return", "std_return"} and set(saved["initial_eval"]) >= {"mean_return"}
    assert (
        saved["tokens_per_s"] > 0
        and saved["peak_memory_mb"] > 0
        and saved["wall_time_s"] > 0
        and saved["episodes_per_s"] > 0
    )
    assert (tmp_path / saved["checkpoint"] / "model.safetensors").is_file() and result["seed"] == 1


@pytest.mark.parametrize("env", [pytest.param("visdial", marks=pytest.mark.slow), "reddit"])
def test_smoke_training_on_the_ilql_dialogue_tasks(baseline, env, tmp_path):
    run(baseline, tmp_path, env=env)
    saved = load_result(tmp_path)
    assert saved["env_id"] == ENVS[env][0] and [row["step"] for row in saved["curves"]] == [1, 2]
    assert all(
        math.isfinite(row[key]) for row in saved["curves"] for key in ("pg_loss", "vf_loss", "kl", "mean_return")
    )
    if env == "visdial":  # -1 per question until the cutoff, at most 10 questions
        assert all(-10 <= row["mean_return"] <= 0 for row in saved["curves"])
    else:  # toxicity levels 0, 1, 2 times -5
        assert all(-10 <= row["mean_return"] <= 0 for row in saved["curves"])


def test_resume_continues_from_the_checkpoint(baseline, tmp_path):
    first = run(baseline, tmp_path, iterations=1)
    resumed = run(baseline, tmp_path, iterations=3, resume=True)
    assert [row["step"] for row in resumed["curves"]] == [1, 2, 3]
    assert resumed["curves"][0] == first["curves"][0] and resumed["initial_eval"] == first["initial_eval"]


def test_same_seed_same_first_iteration(baseline, tmp_path):
    first = run(baseline, tmp_path / "a", iterations=1)["curves"][0]
    second = run(baseline, tmp_path / "b", iterations=1)["curves"][0]
    for key in ("pg_loss", "vf_loss", "mean_return", "kl", "approx_kl"):
        assert first[key] == second[key], key
    other = run(baseline, tmp_path / "c", iterations=1, seed=2)["curves"][0]
    assert other["mean_return"] != first["mean_return"]


def test_nlpo_mask_model_is_refreshed(tmp_path):
    nlpo = load_baseline("nlpo")
    run(nlpo, tmp_path / "refreshed", iterations=2, mask_update_every=1)
    run(nlpo, tmp_path / "frozen", iterations=2, mask_update_every=100)

    def weights(path):
        return load_file(str(path / "model.safetensors"))

    for name, expected_policy in (("refreshed", True), ("frozen", False)):
        checkpoint = tmp_path / name / "checkpoint"
        policy, mask_model, reference = (
            weights(checkpoint),
            weights(checkpoint / "mask_model"),
            weights(checkpoint / "reference"),
        )
        same_as_policy = all(torch.equal(policy[k], mask_model[k]) for k in policy)
        same_as_reference = all(torch.equal(reference[k], mask_model[k]) for k in reference)
        assert same_as_policy == expected_policy and same_as_reference != expected_policy


def test_time_limit_stops_training(tmp_path):
    result = run(load_baseline("ppo"), tmp_path, iterations=50, time_limit_minutes=0.0)
    assert [row["step"] for row in result["curves"]] == [1] and result["final_eval"]


def test_track_logs_an_offline_wandb_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    run(load_baseline("ppo"), tmp_path, iterations=1, track=True)
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb")), "no offline wandb run was written"


def test_min_new_tokens_beyond_the_task_limit_is_refused(baseline, tmp_path):
    with pytest.raises(ValueError, match="--min-new-tokens must be in"):
        run(baseline, tmp_path, min_new_tokens=100)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"num_minibatches": 9}, r"--num-minibatches must be in \[1, num_envs\], got 9"),
        ({"temperature": 0.0}, "--temperature must be > 0"),
        ({"env_kwargs": "source=synthetic"}, "--env-kwargs must be a JSON object"),
    ],
)
def test_bad_arguments_are_named(baseline, tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        run(baseline, tmp_path, **overrides)
