"""The run-result format (lm_gym.results): evaluation summaries, the validator, atomic writing."""

import copy
import json
import math

import pytest

from lm_gym.results import ResultFormatError, load_result, make_result, validate_result, write_result
from lm_gym.results.evaluation import episode_samples, summarize_episodes


def test_summarize_episodes_names_every_metric_mean_key():
    summary = summarize_episodes(
        [1.0, 3.0], [{"sentiment": 0.5, "num_words": 4}, {"sentiment": 1.0, "num_words": 6, "label": "x"}]
    )
    assert summary == {
        "num_episodes": 2,
        "mean_return": 2.0,
        "std_return": 1.0,
        "mean_sentiment": 0.75,
        "mean_num_words": 5.0,
    }
    with pytest.raises(ValueError):
        summarize_episodes([], [])


def test_episode_samples_cut_the_generation_after_the_prompt():
    finals = [
        {
            "prompt": "Review: the film",
            "observation": "Review: the film was great",
            "utterance": "was great",
        },  # single turn
        {"prompt": "Wordle: rules", "observation": "Wordle: rules\ncrane bbgyb\nslate ggggg"},  # a whole game
        {"prompt": "p", "utterance": "only an utterance"},  # no observation recorded
        {"prompt": "x" * 5000, "observation": "x" * 5000 + " " + "y" * 5000},
    ]
    samples = episode_samples(finals, [0.9, -1.0, 0.1, 0.0, 7.0], count=4)
    assert [sample["generation"] for sample in samples[:3]] == [
        "was great",
        "crane bbgyb\nslate ggggg",
        "only an utterance",
    ]
    assert samples[1] == {"prompt": "Wordle: rules", "generation": "crane bbgyb\nslate ggggg", "return": -1.0}
    assert len(samples[3]["prompt"]) == len(samples[3]["generation"]) == 2000  # cut to the limit


def test_samples_are_optional_and_checked(result):
    validate_result({key: value for key, value in result.items() if key != "samples"})  # results from before samples
    spoiled = {**result, "samples": [{"prompt": "a", "generation": "b", "return": "high"}]}
    with pytest.raises(ResultFormatError, match="samples/0/return"):
        validate_result(spoiled)


@pytest.fixture
def result():
    evaluation = summarize_episodes([0.5, 0.7], [{"sentiment": 0.5}, {"sentiment": 0.7}])
    return make_result(
        env_id="lm_gym/IMDB-v0",
        algorithm="ppo",
        seed=1,
        config={"lr": 1e-4},
        initial_eval=evaluation,
        final_eval={**evaluation, "mean_return": 0.9},
        curves=[{"step": 1, "kl": 0.1}],
        wall_time_s=3.0,
        tokens_per_s=100.0,
        episodes_per_s=2.0,
        peak_memory_mb=512.0,
        checkpoint="checkpoint",
        device="cpu",
    )


def test_a_made_result_validates_and_round_trips(result, tmp_path):
    path = write_result(tmp_path, result)
    assert load_result(tmp_path) == load_result(path) == json.loads(json.dumps(result))
    assert result["versions"]["lm_gym"] and result["versions"]["torch"] and result["schema_version"] == 1
    assert not (tmp_path / "result.json.tmp").exists()


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda r: r.pop("final_eval"), "'final_eval' is a required property"),
        (lambda r: r["final_eval"].pop("mean_sentiment"), "name different metrics"),
        (lambda r: r["final_eval"].update(mean_return=math.nan), "not finite"),
        (lambda r: r["curves"].append({"kl": 1.0}), "'step' is a required property"),
        (lambda r: r.update(checkpoint="/abs/checkpoint"), "relative"),
        (lambda r: r.update(checkpoint="../elsewhere"), "relative"),
        (lambda r: r.update(seed="1"), "is not of type 'integer'"),
        (lambda r: r.update(initial_eval=None), "both be evaluations or both be null"),
        (lambda r: r.update(extra=1), "Additional properties"),
        (lambda r: r["final_eval"].update(sentiment=0.5), "does not match"),
    ],
)
def test_the_validator_names_what_is_wrong(result, spoil, message):
    spoiled = copy.deepcopy(result)
    spoil(spoiled)
    with pytest.raises(ResultFormatError, match=message):
        validate_result(spoiled)


def test_write_refuses_an_invalid_result_and_load_refuses_nan(result, tmp_path):
    with pytest.raises(ResultFormatError):
        write_result(tmp_path, {**result, "wall_time_s": -1.0})
    assert not (tmp_path / "result.json").exists()
    (tmp_path / "result.json").write_text(json.dumps({**result, "tokens_per_s": math.nan}))
    with pytest.raises(ResultFormatError, match="NaN"):
        load_result(tmp_path)


def test_evaluations_may_both_be_null(result):
    validate_result({**result, "initial_eval": None, "final_eval": None})


def test_an_evaluation_is_written_to_result_json_and_read_back():
    """``Evaluation.result_fields`` gives result.json's evaluation fields; ``Evaluation.of_result`` the evaluations
    again (the samples are the final evaluation's); a run on one task writes no ``tasks``."""
    from lm_gym.results.evaluation import Evaluation

    def summary(mean_return):
        return {"num_episodes": 2, "mean_return": mean_return, "std_return": 0.0}

    sample = {"prompt": "p", "generation": "g", "return": -1.0}
    initial = Evaluation(summary(-2.0), {"a/B-v0": summary(-3.0), "c/D-v0": summary(-1.0)}, [sample])
    final = Evaluation(summary(-1.0), {"a/B-v0": summary(-2.0), "c/D-v0": summary(0.0)}, [sample, sample])
    bookkeeping = dict(env_id="lm_gym/Mixture-v0", algorithm="ppo", seed=1, config={}, curves=[], wall_time_s=1.0)
    bookkeeping |= dict(tokens_per_s=1.0, episodes_per_s=1.0, peak_memory_mb=1.0, checkpoint=None, device="cpu")
    result = json.loads(json.dumps(make_result(**bookkeeping, **Evaluation.result_fields(initial, final))))
    validate_result(result, check_ranges=False)
    assert result["tasks"]["c/D-v0"] == {"initial_eval": summary(-1.0), "final_eval": summary(0.0)}
    assert Evaluation.of_result(result) == final
    assert Evaluation.of_result(result, "initial") == Evaluation(initial.summary, initial.tasks, [])
    assert final.curve_entries()["eval/c/D-v0/mean_return"] == 0.0 and final.curve_entries()["eval/mean_return"] == -1.0
    single = make_result(**bookkeeping, **Evaluation.result_fields(None, Evaluation(summary(1.0))))
    assert "tasks" not in single and single["initial_eval"] is None and single["samples"] == []
    assert Evaluation.of_result(single, "initial") is None
    with pytest.raises(ValueError, match="which"):
        Evaluation.of_result(result, "best")
