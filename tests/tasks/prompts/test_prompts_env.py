"""lm_gym/Prompts-v0: prompts from lists and files, reward functions written for TRL, the word-level tokenizer."""

import json

import gymnasium
import pytest

from lm_gym.core.errors import ConfigurationError
from lm_gym.core.tokenizer import word_tokenizer
from lm_gym.tasks.prompts import synthetic_prompts, vowel_words, word_list


def length_reward(completions, **kwargs):  # the shape of a TRL reward function; imported by name below
    return [float(len(c)) for c in completions]


def test_synthetic_prompts_are_fixed_per_split_and_tokenize_to_their_word_count():
    train, validation = synthetic_prompts("train"), synthetic_prompts("validation")
    assert (
        len(train) == 1024
        and len(validation) == 256
        and train == synthetic_prompts("train")
        and train[0] != validation[0]
    )
    tokenizer = word_tokenizer(word_list(), "test-prompts")
    assert len(tokenizer) == 4000
    ids = tokenizer(train[:5], add_special_tokens=False)["input_ids"]
    assert [len(row) for row in ids] == [64] * 5 and tokenizer.decode(ids[0]) == train[0]
    assert tokenizer.unk_token_id not in {i for row in ids for i in row}


def test_default_env_scores_vowel_words():
    env = gymnasium.make("lm_gym/Prompts-v0")
    prompt, info = env.reset(seed=0)
    assert len(prompt.split()) == 64 and info["prompt"] == prompt
    _, reward, terminated, truncated, info = env.step("an old apple fell")
    assert (
        reward == pytest.approx(0.75)
        and terminated
        and not truncated
        and info["metrics"] == {"reward": 0.75, "num_words": 4}
    )
    assert vowel_words([], ["", "Egg"]) == [0.0, 1.0]


@pytest.mark.parametrize("form", ["list", "txt", "json", "jsonl", "dict"])
def test_prompts_from_lists_files_and_splits(form, tmp_path):
    prompts = ["first prompt", "second prompt"]
    if form == "list":
        source = prompts
    elif form == "txt":
        source = tmp_path / "p.txt"
        source.write_text("first prompt\n\nsecond prompt\n")
    elif form == "json":
        source = tmp_path / "p.json"
        source.write_text(json.dumps([{"prompt": p} for p in prompts]))
    elif form == "jsonl":
        source = tmp_path / "p.jsonl"
        source.write_text("\n".join(json.dumps({"prompt": p, "id": i}) for i, p in enumerate(prompts)))
    else:
        source = {"train": prompts, "validation": ["held out"]}
    env = gymnasium.make(
        "lm_gym/Prompts-v0", prompts=source if form in ("list", "dict") else str(source), reward_fn=length_reward
    )
    seen = {env.reset(options={"index": i})[0] for i in range(2)}
    assert seen == set(prompts)
    assert env.step("abc")[1] == 3.0
    if form == "dict":
        validation = gymnasium.make("lm_gym/Prompts-v0", prompts=source, split="validation")
        assert validation.reset(seed=0)[0] == "held out"


def test_reward_by_module_path_and_one_call_per_vector_step(monkeypatch):
    calls = []

    def counting(prompts, completions, **kwargs):
        calls.append(list(completions))
        return [1.0] * len(completions)

    venv = gymnasium.make_vec(
        "lm_gym/Prompts-v0", num_envs=3, vectorization_mode="vector_entry_point", prompts=["a", "b"], reward_fn=counting
    )
    venv.reset(seed=0)
    _, rewards, *_ = venv.step(("x", "y", "z"))
    assert calls == [["x", "y", "z"]] and rewards.tolist() == [1.0, 1.0, 1.0]
    env = gymnasium.make("lm_gym/Prompts-v0", prompts=["p"], reward_fn="test_prompts_env:length_reward")
    env.reset(seed=0)
    assert env.step("four")[1] == 4.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompts": []}, "prompts must be None, a non-empty list of str"),
        ({"prompts": [1, 2]}, "prompts must be None, a non-empty list of str"),
        ({"prompts": "missing.txt"}, "is not a file"),
        ({"prompts": {"train": ["a"]}, "split": "validation"}, "prompts has no 'validation' split"),
        ({"prompts": ["a"], "num_prompts": 3}, "num_prompts applies to the synthetic prompts only"),
        ({"reward_fn": 3}, "reward_fn must be a callable"),
        ({"reward_fn": "no_such_module_xyz:f"}, "could not import module 'no_such_module_xyz'"),
        ({"reward_fn": "json:no_such_function"}, "is not a callable"),
        ({"prompt_words": 0}, "prompt_words must be an int"),
        ({"split": "dev"}, "split must be one of"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        gymnasium.make("lm_gym/Prompts-v0", **kwargs)


def test_a_reward_function_that_returns_the_wrong_thing_is_named_and_the_env_still_works():
    answers = iter([[1.0, 2.0], [None], [0.5]])
    env = gymnasium.make("lm_gym/Prompts-v0", prompts=["p"], reward_fn=lambda prompts, completions: next(answers))
    for _ in range(2):
        env.reset(seed=0)
        with pytest.raises(ValueError, match="<lambda> must return 1 finite numbers"):
            env.step("x")
    env.reset(seed=0)
    assert env.step("x")[1] == 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompts": "\x00"}, "prompts: "),
        ({"prompts": "x" * 5000}, "prompts: "),
        ({"reward_fn": ".relative:f"}, "could not import module"),
        ({"reward_fn": lambda texts: texts}, "must take the keyword arguments prompts= and completions="),
        ({"reward_fn": print}, "must take the keyword arguments"),
    ],
)
def test_unusable_paths_and_reward_functions_are_refused_at_construction(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        gymnasium.make("lm_gym/Prompts-v0", **kwargs)
