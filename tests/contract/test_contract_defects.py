"""One test per contract defect found by the conformance suite (issue: the contract every env must pass).

Each failed before its fix; ``tests/contract`` keeps finding the general case.
"""

import time
import warnings

import gymnasium
import numpy as np
import pytest
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from lm_gym.core import TokenLevel
from lm_gym.core.errors import ConfigurationError, DataUnavailableError, InvalidActionError
from lm_gym.core.spaces import to_charset
from lm_gym.tasks.imdb.data import clean_review
from lm_gym.tasks.wordle import WordleEnv
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary


def longest_token(tokenizer) -> int:
    return max(range(len(tokenizer)), key=lambda i: len(tokenizer.decode([i], skip_special_tokens=True)))


def test_wordle_token_level_hands_over_at_the_character_limit():
    env = gymnasium.make("lm_gym/Wordle-v0", action_level="token")
    token_env = env.unwrapped
    long_token = longest_token(token_env.tokenizer)  # " elsewhere": 10 characters
    assert len(token_env.tokenizer.decode([long_token])) * token_env.max_new_tokens > 64
    env.reset(seed=0)
    for _step in range(token_env.max_new_tokens):
        _, reward, terminated, _, info = env.step(long_token)
        if "num_tokens" in info:
            break
    assert info["num_tokens"] < token_env.max_new_tokens and reward == -1.0  # the 64-character text, an invalid guess
    for _ in range(3):  # EOS and more tokens still play
        env.step(token_env.eos_token_id)
    _, reward, *_ = env.step(long_token)
    assert np.isfinite(reward)


def test_imdb_with_many_new_tokens_hands_over_at_2048_characters():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", max_new_tokens=2000)
    long_token = longest_token(env.unwrapped.tokenizer)
    env.reset(seed=0)
    for _step in range(2000):
        _, reward, terminated, _, info = env.step(long_token)
        if terminated:
            break
    assert len(info["utterance"]) == 2048 and info["num_tokens"] == _step + 1 < 2000


def test_registered_token_env_is_token_level_all_the_way_down():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token")
    assert isinstance(env.unwrapped, TokenLevel)
    sb3_check_env(env.unwrapped)


def test_token_level_follows_the_task_generation_defaults():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token")
    token_env = env.unwrapped
    assert token_env.min_new_tokens == 48
    _, info = env.reset(seed=0)
    assert info["action_mask"][token_env.eos_token_id] == 0 and info["action_mask"].sum() == token_env.vocab_size - 1
    assert not token_env.action_masks()[token_env.eos_token_id]
    for _ in range(3):
        _, reward, terminated, _, info = env.step(5)
        assert info["action_mask"][token_env.eos_token_id] == 0
    _, reward, terminated, _, info = env.step(token_env.eos_token_id)
    assert terminated and info["early_eos"] and reward == pytest.approx(info["metrics"]["sentiment"] - 1.0)
    shorter = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", max_new_tokens=10)
    assert shorter.unwrapped.min_new_tokens == 10  # the default minimum follows a lower maximum
    with pytest.raises(ConfigurationError, match="min_new_tokens"):
        gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", max_new_tokens=10, min_new_tokens=11)


def test_eos_is_allowed_after_the_minimum():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", min_new_tokens=2)
    eos = env.unwrapped.eos_token_id
    env.reset(seed=0)
    _, _, _, _, info = env.step(5)
    assert info["action_mask"][eos] == 0
    _, _, _, _, info = env.step(6)
    assert info["action_mask"][eos] == 1
    _, reward, terminated, _, info = env.step(eos)
    assert terminated and "early_eos" not in info and reward == info["metrics"]["sentiment"]


@pytest.fixture(scope="module")
def venv():
    return gymnasium.make_vec("lm_gym/IMDB-v0", num_envs=2, vectorization_mode="vector_entry_point", source="synthetic")


@pytest.mark.parametrize("actions", [None, (a for a in ["x", "y"]), {"x", "y"}, {0: "x", 1: "y"}, np.array("x")])
def test_vector_env_refuses_non_sequence_actions(venv, actions):
    venv.reset(seed=0)
    with pytest.raises(InvalidActionError, match="list, tuple or array of 2 utterances"):
        venv.step(actions)
    _, _, terminations, _, _ = venv.step(["x", "y"])
    assert terminations.all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"options": "x"}, "options must be a dict"),
        ({"options": 5}, "options must be a dict"),
        ({"seed": True}, "seed must be"),
        ({"seed": 3.5}, "seed must be"),
        ({"seed": [1, -2]}, "seed must be"),
        ({"options": {"reset_mask": [True, False]}}, "reset_mask"),
        ({"options": {"idx": 1}}, "unknown reset option"),
    ],
)
def test_vector_env_reset_arguments_get_configuration_errors(venv, kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        venv.reset(**kwargs)


@pytest.mark.parametrize("action", [np.timedelta64(5), np.array([5], dtype="m8[s]"), np.datetime64("2020-01-01")])
def test_token_level_refuses_time_values(imdb_token_env, action):
    imdb_token_env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="integer token id"):
        imdb_token_env.step(action)


@pytest.mark.parametrize("penalty", [float("nan"), float("inf"), -1.0, "1"])
def test_wordle_unknown_word_penalty_must_be_a_finite_non_negative_number(penalty):
    with pytest.raises(ConfigurationError, match="unknown_word_penalty"):
        WordleEnv(unknown_word_penalty=penalty)


def test_wordle_constructor_arguments(tmp_path):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("crane\nna\xefve\n".encode("latin-1"))
    answers = tmp_path / "answers.txt"
    answers.write_text("crane\nslate\n")
    for kwargs, error, match in [
        ({"answers_file": 5}, ConfigurationError, "answers_file must be a path"),
        ({"subset_seed": -1}, ConfigurationError, "subset_seed must be an int >= 0"),
        ({"subset_seed": "x"}, ConfigurationError, "subset_seed"),
        ({"vocabulary": "crane"}, ConfigurationError, "vocabulary must be a WordleVocabulary"),
        ({"answers_file": latin1}, DataUnavailableError, "not UTF-8"),
        ({"guesses_file": answers}, ConfigurationError, "guesses_file needs answers_file"),
        ({"mode": np.array(["filtering"])}, ConfigurationError, "mode must be one of"),
    ]:
        with pytest.raises(error, match=match):
            WordleEnv(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"source": "local", "data_dir": 5}, "data_dir must be a path"),
        ({"source": "synthetic", "reward_device": 5}, "reward_device"),
        ({"source": "synthetic", "positive_label": 1.5}, "positive_label"),
        ({"source": ["synthetic"]}, "source must be one of"),
    ],
)
def test_imdb_constructor_arguments(kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        gymnasium.make("lm_gym/IMDB-v0", **kwargs)


class DuckTokenizer:
    """Has the attributes a tokenizer has, but they do not work."""

    eos_token_id = 0

    def __len__(self):
        return 10

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [99]}  # out of range

    def decode(self, ids, skip_special_tokens=True):
        return "x"


@pytest.mark.parametrize(
    "tokenizer, match", [(5, "lacks"), (DuckTokenizer(), "in \\[0, len\\(tokenizer\\)\\)"), (object(), "lacks")]
)
def test_token_level_tokenizer_must_be_a_tokenizer(tokenizer, match):
    with pytest.raises(ConfigurationError, match=f"tokenizer must be .*{match}"):
        gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", tokenizer=tokenizer)


def test_wordle_unknown_word_rows_are_bounded():
    env = WordleEnv(num_answers=50)
    env.table.max_cached_rows = 100
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    env.reset(seed=0)
    for _ in range(400):
        guess = "".join(rng.choice(letters, size=5))
        _, _, terminated, _, _ = env.step(guess)
        if terminated:
            env.reset()
    assert len(env.table._rows) <= 100


def test_non_ascii_punctuation_is_transliterated_not_deleted():
    assert (
        to_charset("trash\u2014just awful\u2026 it\u2019s \u00a3500 and \u00b4quoted\u00b4")
        == "trash-just awful... it's GBP500 and 'quoted'"
    )
    review = (
        "A <i>great</i> film&nbsp;&mdash; &quot;really&quot;<br /><br />The end\x96almost <em>perfect</em>. 3 < 5 > 2"
    )
    assert clean_review(review) == 'A great film - "really" The end-almost perfect. 3 < 5 > 2'


def test_mixed_length_word_lists_keep_their_five_letter_words(tmp_path):
    words = tmp_path / "10k_words.txt"
    words.write_text("crane\nabout\nit\nelephant\nCRANE\nslate\n\nhello world\n")
    with pytest.warns(UserWarning, match="kept 3 five-letter words; dropped 3 lines .* and 1 repeated"):
        vocabulary = WordleVocabulary.from_files(words)
    assert vocabulary.answers == ("crane", "about", "slate")


@pytest.mark.filterwarnings("ignore:A test tried to use socket")  # the probe meets pytest-socket's block
def test_hub_sources_fail_fast_when_the_hub_is_unreachable(monkeypatch):
    from huggingface_hub import constants

    from lm_gym.core import hub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # as on a machine without the variable
    hub.hub_reachable.cache_clear()
    start = time.perf_counter()
    with pytest.raises(DataUnavailableError, match="hub is unreachable.*source='synthetic'"):
        gymnasium.make("lm_gym/IMDB-v0")
    with pytest.raises(DataUnavailableError, match="hub is unreachable"):
        gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", tokenizer="gpt2")
    assert time.perf_counter() - start < 10
    hub.hub_reachable.cache_clear()


def test_no_warning_for_a_clean_word_list(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("crane\nslate")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WordleVocabulary.from_files(words)


@pytest.mark.parametrize("name", ["x" * 5000, "model\x00name"])
def test_a_model_name_no_file_system_takes_is_a_hub_name_not_a_crash(name):
    """Found by the fuzz: a 5,000-character tokenizer name made pathlib raise OSError (name too long)."""
    from lm_gym.core.hub import is_local_path

    assert not is_local_path(name)
    with pytest.raises(DataUnavailableError, match="could not load tokenizer"):
        gymnasium.make("lm_gym/VisDial-v0", action_level="token", tokenizer=name)
    env = gymnasium.make("lm_gym/VisDial-v0", action_level="token")  # and the next make works
    env.reset(seed=0)


def test_a_timedelta_is_not_a_number_of_seconds():
    """Found by the fuzz: numpy counts ``np.timedelta64`` as an integer, so ``server_timeout=np.timedelta64(3)``
    passed the type check and crashed in the range check with numpy's UFuncTypeError."""
    with pytest.raises(ConfigurationError, match=r"server_timeout must be a finite number >= 0.001"):
        gymnasium.make("lm_gym/VisDial-v0", server_timeout=np.timedelta64(3))
    gymnasium.make("lm_gym/VisDial-v0", server_timeout=3).reset(seed=0)  # and the next make works
