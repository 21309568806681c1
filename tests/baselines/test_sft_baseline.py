"""Smoke trainings of the supervised warm start (baselines/sft.py) and its hand-over to PPO."""

import math

import pytest
from conftest import load_baseline

from lm_gym.results import load_result

T5_CONFIG = '{"model_type": "t5", "d_model": 64, "d_ff": 128, "d_kv": 16, "num_layers": 2, "num_heads": 4}'
GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}'
ENVS = {
    "imdb": ("lm_gym/IMDB-v0", '{"source": "synthetic"}'),
    "wordle": ("lm_gym/Wordle-v0", '{"num_answers": 100}'),
}


@pytest.fixture(scope="module")
def sft():
    return load_baseline("sft")


def run(sft, out_dir, env="imdb", model_config=GPT2_CONFIG, **overrides):
    env_id, env_kwargs = ENVS[env]
    settings = dict(
        env_id=env_id,
        env_kwargs=env_kwargs,
        model_config=model_config,
        batch_size=8,
        max_examples=48,
        max_steps=3,
        eval_episodes=4,
        eval_batch_size=4,
        out_dir=str(out_dir),
    )
    return sft.main(sft.Args(**{**settings, **overrides}))


@pytest.mark.parametrize("env", ["imdb", "wordle"])
@pytest.mark.parametrize("architecture", ["causal", "seq2seq"])
def test_smoke_training_and_ppo_start(sft, env, architecture, tmp_path):
    run(sft, tmp_path / "sft", env=env, model_config=GPT2_CONFIG if architecture == "causal" else T5_CONFIG)
    saved = load_result(tmp_path / "sft")  # validates against lm_gym.results' schema
    assert saved["samples"] and all(set(sample) == {"prompt", "generation", "return"} for sample in saved["samples"])
    assert saved["algorithm"] == "sft" and saved["env_id"] == ENVS[env][0]
    assert [row["step"] for row in saved["curves"]] == [1, 2, 3]
    assert all(math.isfinite(row["loss"]) and row["loss"] > 0 for row in saved["curves"])
    assert saved["final_eval"]["num_episodes"] == 4 and math.isfinite(saved["final_eval"]["mean_return"])
    assert saved["tokens_per_s"] > 0 and saved["peak_memory_mb"] > 0 and saved["episodes_per_s"] > 0
    assert saved["initial_eval"]["num_episodes"] == 4 and set(saved["initial_eval"]) == set(saved["final_eval"])
    checkpoint = tmp_path / "sft" / saved["checkpoint"]
    assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "tokenizer.json").is_file()

    # the RL baselines start from this checkpoint, and its starting evaluation is the SFT policy's
    ppo = load_baseline("ppo")
    result = ppo.main(
        ppo.Args(
            env_id=ENVS[env][0],
            env_kwargs=ENVS[env][1],
            init_from=str(checkpoint),
            num_envs=4,
            iterations=1,
            update_epochs=1,
            num_minibatches=1,
            eval_episodes=4,
            eval_batch_size=4,
            out_dir=str(tmp_path / "ppo"),
        )
    )
    assert result["curves"][0]["step"] == 1 and math.isfinite(result["curves"][0]["pg_loss"])
    assert set(load_result(tmp_path / "ppo")["final_eval"]) == set(saved["final_eval"])  # one set of metric names


def test_training_lowers_the_loss(sft, tmp_path):
    result = run(sft, tmp_path, max_examples=64, epochs=10, max_steps=40, learning_rate=3e-3, eval_episodes=0)
    losses = [row["loss"] for row in result["curves"]]
    assert sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5


def test_resume_continues_from_the_checkpoint(sft, tmp_path):
    first = run(sft, tmp_path, max_steps=2)
    # nothing left to train: the resumed run holds the saved weights, so its evaluation is the same
    again = run(sft, tmp_path, max_steps=2, resume=True)
    assert again["curves"] == first["curves"] and again["final_eval"] == first["final_eval"]
    resumed = run(sft, tmp_path, max_steps=4, resume=True)
    assert [row["step"] for row in resumed["curves"]] == [1, 2, 3, 4]
    assert resumed["curves"][:2] == first["curves"][:2]


def test_same_seed_same_losses(sft, tmp_path):
    first = run(sft, tmp_path / "a", max_steps=2, eval_episodes=0)["curves"]
    second = run(sft, tmp_path / "b", max_steps=2, eval_episodes=0)["curves"]
    other = run(sft, tmp_path / "c", max_steps=2, eval_episodes=0, seed=2)["curves"]
    assert [row["loss"] for row in first] == [row["loss"] for row in second]
    assert first[0]["loss"] != other[0]["loss"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"env_kwargs": "source=synthetic"}, "--env-kwargs must be a JSON object"),
        ({"model_config": '{"n_layer": 1}'}, "--model-config needs a 'model_type'"),
        ({"batch_size": 0}, "--batch-size must be an int >= 1"),
        ({"max_new_tokens": 1}, "--max-new-tokens must be >= 2"),
        ({"env_kwargs": '{"source": "synthetic", "action_level": "token"}'}, "utterance-level"),
    ],
)
def test_bad_arguments_are_named(sft, tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        run(sft, tmp_path, **overrides)


def test_perplexity_model_adds_the_same_perplexities_to_every_algorithm(sft, tmp_path):
    """``--perplexity-model``: one fixed LM (here an SFT checkpoint) scores generations and references in SFT and
    PPO."""
    first = run(sft, tmp_path / "lm", eval_episodes=0)
    checkpoint = str(tmp_path / "lm" / first["checkpoint"])
    saved = run(sft, tmp_path / "sft", perplexity_model=checkpoint)
    ppo = load_baseline("ppo")
    result = ppo.main(
        ppo.Args(
            env_id=ENVS["imdb"][0],
            env_kwargs=ENVS["imdb"][1],
            init_from=checkpoint,
            num_envs=4,
            iterations=1,
            update_epochs=1,
            num_minibatches=1,
            eval_episodes=4,
            eval_batch_size=4,
            perplexity_model=checkpoint,
            out_dir=str(tmp_path / "ppo"),
        )
    )
    for evaluation in (saved["final_eval"], result["initial_eval"], result["final_eval"]):
        assert evaluation["corpus_perplexity_generations"] > 1 and evaluation["corpus_perplexity_references"] > 1
    assert set(saved["final_eval"]) == set(result["final_eval"])
