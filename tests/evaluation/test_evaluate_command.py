"""``python -m benchmark evaluate``: a local model and a served one on built-in and users' tasks, K samples
and pass@k, the baselines' own numbers for their checkpoints, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import load_baseline, tiny_causal_lm
from openai_servers import SERVED_NAME, run_test_server, save_tiny_model

from benchmark.__main__ import main

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]  # the servers: loopback only
IMDB = ["--env-id", "lm_gym/IMDB-v0", "--env-kwargs", '{"source": "synthetic"}']
TINY_GPT2 = {"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}
CHAT_TEMPLATE = (
    "{% for message in messages %}<{{ message['role'] }}>{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def evaluate(out: Path, *flags: str) -> int:
    return main(["evaluate", "--out", str(out), *flags])


def result_of(out: Path, task: str) -> dict:
    return json.loads((out / task / "result.json").read_text())


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def chat_model_dir(tmp_path_factory) -> Path:
    """A tiny GPT-2 whose tokenizer has a chat template (trained on Wordle's text)."""
    directory = tmp_path_factory.mktemp("tiny-chat")
    model, tokenizer = tiny_causal_lm("lm_gym/Wordle-v0")
    tokenizer.chat_template = CHAT_TEMPLATE
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def seq2seq_model_dir(tmp_path_factory) -> Path:
    """A one-layer T5 with the tokenizer lm-gym trains on IMDB's synthetic text."""
    from transformers import T5Config, T5ForConditionalGeneration

    directory = tmp_path_factory.mktemp("tiny-t5")
    _, tokenizer = tiny_causal_lm("lm_gym/IMDB-v0", {"source": "synthetic"})
    config = T5Config(
        vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=8, num_layers=1, num_heads=2,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    T5ForConditionalGeneration(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_a_local_model_plays_every_task_of_the_smoke_suite(model_dir, tmp_path):
    flags = ["--suite", "smoke", "--model", str(model_dir), "--episodes", "2", "--max-tokens", "6", "--report"]
    assert evaluate(tmp_path, *flags) == 0
    results = {path.parent.name: json.loads(path.read_text()) for path in tmp_path.glob("*/result.json")}
    assert set(results) == {"imdb", "commongen", "cnn_dailymail", "dailydialog", "wordle", "visdial", "reddit",
                            "prompts", "text_generation", "mixture"}  # fmt: skip
    assert all(result["final_eval"]["num_episodes"] == 2 for result in results.values())
    assert "corpus_bleu" in results["commongen"]["final_eval"] and results["mixture"]["tasks"]
    assert (tmp_path / "report.md").is_file()


def test_a_seq2seq_model_plays_single_and_multi_turn_tasks(seq2seq_model_dir, tmp_path):
    for flags in (IMDB, ["--env-id", "user_tasks:user/CountUp-v0"]):
        assert (
            evaluate(tmp_path, *flags, "--model", str(seq2seq_model_dir), "--episodes", "3", "--max-tokens", "4") == 0
        )
    assert result_of(tmp_path, "lm_gym_IMDB-v0")["final_eval"]["num_episodes"] == 3
    assert "mean_hits" in result_of(tmp_path, "user_CountUp-v0")["final_eval"]  # three turns each, played to the end


def test_a_ppo_checkpoint_evaluated_gives_its_own_final_evaluation(tmp_path):
    ppo = load_baseline("ppo")
    run_dir = tmp_path / "ppo"
    args = ppo.Args(
        env_id="lm_gym/IMDB-v0", env_kwargs='{"source": "synthetic"}', model_config=json.dumps(TINY_GPT2),
        num_envs=4, num_minibatches=2, iterations=1, eval_every=0, eval_episodes=6, eval_batch_size=4, seed=2,
        torch_threads=1, out_dir=str(run_dir),
    )  # fmt: skip
    ppo.main(args)
    trained = json.loads((run_dir / "result.json").read_text())
    assert evaluate(tmp_path / "eval", *IMDB, "--model", str(run_dir / "checkpoint"), "--episodes", "6",
                    "--batch-size", "4") == 0  # fmt: skip
    evaluated = result_of(tmp_path / "eval", "lm_gym_IMDB-v0")
    assert evaluated["final_eval"] == trained["final_eval"]  # the same episodes, draws and metrics path
    assert evaluated["algorithm"] == "eval" and evaluated["initial_eval"] is None and evaluated["curves"] == []
    assert evaluated["config"]["model_digest"] and evaluated["config"]["chat"] is False


def test_k_samples_give_mean_best_spread_and_pass_at_k_on_a_users_task(model_dir, tmp_path):
    flags = ["--env-id", "user_tasks:user/SayTheWord-v0", "--model", str(model_dir), "--episodes", "5"]
    assert evaluate(tmp_path, *flags, "--samples", "4", "--success-metric", "said", "--batch-size", "8") == 0
    result = result_of(tmp_path, "user_SayTheWord-v0")
    statistics = result["sampling"]["statistics"]
    assert result["final_eval"]["num_episodes"] == 20 and result["sampling"]["samples_per_episode"] == 4
    assert statistics["mean@4"] == pytest.approx(result["final_eval"]["mean_return"])
    assert statistics["pass@1"] == pytest.approx(result["final_eval"]["mean_said"])
    passes = [statistics[f"pass@{k}"] for k in range(1, 5)]
    assert passes == sorted(passes) and statistics["best@4"] >= statistics["mean@4"]
    # sample 0 of every episode is the evaluation of one sample: the K samples are other draws of the same episodes
    assert evaluate(tmp_path / "one", *flags, "--samples", "1", "--batch-size", "8") == 0
    assert result_of(tmp_path / "one", "user_SayTheWord-v0")["final_eval"]["num_episodes"] == 5


def test_a_chat_model_plays_a_multi_turn_task_turn_by_turn(chat_model_dir, tmp_path):
    flags = ["--env-id", "lm_gym/Wordle-v0", "--env-kwargs", '{"num_answers": 20}', "--model", str(chat_model_dir)]
    assert evaluate(tmp_path, *flags, "--episodes", "2", "--max-tokens", "4") == 0
    result = result_of(tmp_path, "lm_gym_Wordle-v0")
    assert result["config"]["chat"] is True and result["final_eval"]["mean_num_guesses"] == 6
    assert evaluate(tmp_path / "plain", *flags, "--episodes", "2", "--max-tokens", "4", "--no-chat") == 0
    assert result_of(tmp_path / "plain", "lm_gym_Wordle-v0")["config"]["chat"] is False


@pytest.mark.slow
def test_a_served_model_through_faults_gives_the_numbers_of_a_run_without_faults(model_dir, tmp_path):
    flags = [*IMDB, "--model", SERVED_NAME, "--api", "completions", "--episodes", "6", "--samples", "2"]
    with run_test_server(model_dir, tmp_path) as server:
        assert evaluate(tmp_path / "clean", *flags, "--base-url", server.url) == 0
        asked = server.completion_requests()
        assert asked == 12
        assert evaluate(tmp_path / "clean", *flags, "--base-url", server.url) == 0  # the cache answers the rerun
        assert server.completion_requests() == asked
    faults = "drop,429,ok,500*2,slow,ok,drop"
    with run_test_server(model_dir, tmp_path, "--faults", faults, "--slow-s", "3") as server:
        assert evaluate(tmp_path / "faults", *flags, "--base-url", server.url, "--timeout", "1") == 0
    clean, faulty = result_of(tmp_path / "clean", "lm_gym_IMDB-v0"), result_of(tmp_path / "faults", "lm_gym_IMDB-v0")
    assert faulty["final_eval"] == clean["final_eval"] and faulty["sampling"] == clean["sampling"]
    assert clean["config"]["base_url"].endswith("/v1") and clean["sampling"]["malformed_replies"] == 0


def test_a_chat_server_plays_wordle_and_counts_malformed_replies(model_dir, tmp_path):
    flags = ["--env-id", "lm_gym/Wordle-v0", "--env-kwargs", '{"num_answers": 20}', "--model", SERVED_NAME]
    with run_test_server(model_dir, tmp_path, "--faults", "malformed") as server:
        assert evaluate(tmp_path, *flags, "--base-url", server.url, "--episodes", "2", "--max-tokens", "4") == 0
    result = result_of(tmp_path, "lm_gym_Wordle-v0")
    assert result["config"]["chat"] is True and result["sampling"]["malformed_replies"] == 1
    assert result["final_eval"]["num_episodes"] == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([*IMDB, "--samples", "0"], "--samples must be at least 1"),
        (["--env-id", "lm_gym/Nope-v0"], "not a registered lm-gym task"),
        ([*IMDB, "--suite", "smoke"], "one of --env-id"),
        (["--suite", "smoke", "--tasks", "nope"], "not tasks of suite smoke"),
        ([*IMDB[:2], "--env-kwargs", "[1]"], "--env-kwargs must be a JSON object"),
        ([*IMDB, "--temperature", "0"], "--temperature must be > 0"),
    ],
)
def test_bad_arguments_are_named(flags, message, model_dir, tmp_path, capsys):
    assert evaluate(tmp_path, "--model", str(model_dir), *flags) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.rglob("result.json"))


def test_a_folder_without_a_model_and_a_server_that_is_down_are_named(tmp_path, capsys):
    assert evaluate(tmp_path, *IMDB, "--model", str(tmp_path), "--episodes", "1") == 2
    assert f"could not load tokenizer {str(tmp_path)!r}" in capsys.readouterr().err  # the first thing a model needs
    down = "http://127.0.0.1:9/v1"
    assert evaluate(tmp_path, *IMDB, "--model", "m", "--base-url", down, "--episodes", "1", "--max-retries", "0") == 1
    error = capsys.readouterr().err
    assert "127.0.0.1:9" in error and "the same command resumes" in error
