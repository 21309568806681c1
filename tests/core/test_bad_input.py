"""Bad actions and arguments get typed, clear errors or documented outcomes."""

import gymnasium
import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError, safe_repr
from lm_gym.tasks.imdb import IMDBEnv


@pytest.fixture(scope="module")
def raw_env():
    return IMDBEnv(source="synthetic")


@pytest.mark.parametrize("action", [42, None, b"bytes", ["a", "list"], 3.5])
def test_non_string_utterance_is_rejected(raw_env, action):
    raw_env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="must be a str"):
        raw_env.step(action)
    raw_env.step("still usable")  # the episode was not consumed


def test_too_long_utterance_is_rejected(raw_env):
    raw_env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="at most 2048"):
        raw_env.step("x" * 2049)


def test_empty_utterance_is_scored(raw_env):
    raw_env.reset(seed=0)
    _, reward, terminated, _, info = raw_env.step("")
    assert terminated and 0.0 < reward < 1.0 and info["metrics"]["num_words"] == 0


def test_non_ascii_utterance_is_mapped_into_the_charset(raw_env):
    obs, _ = raw_env.reset(seed=0)
    next_obs, _, _, _, info = raw_env.step("A café scene \u2014 tr\u00e8s joli \U0001f600 \u201cfine\u201d\u2026 \x00")
    assert info["utterance"] == 'A cafe scene - tres joli :grinning: "fine"... '

    assert raw_env.observation_space.contains(next_obs)


def test_step_after_termination_and_before_reset(raw_env):
    fresh = IMDBEnv(source="synthetic")
    with pytest.raises(ResetNeededError, match="reset"):
        fresh.step("hello")
    raw_env.reset(seed=0)
    raw_env.step("fine")
    with pytest.raises(ResetNeededError, match="reset"):
        raw_env.step("again")


@pytest.mark.parametrize("action", [1.0, "12", np.array([1.5]), np.array([1, 2]), True, None])
def test_token_level_rejects_non_integer_actions(imdb_token_env, action):
    imdb_token_env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="integer token id"):
        imdb_token_env.step(action)


@pytest.mark.parametrize("offset", [-1, 0])
def test_token_level_rejects_out_of_range_ids(imdb_token_env, offset):
    imdb_token_env.reset(seed=0)
    bad = -1 if offset < 0 else imdb_token_env.action_space.n
    with pytest.raises(InvalidActionError, match="out of range"):
        imdb_token_env.step(bad)


def test_token_level_accepts_numpy_integers(imdb_token_env):
    imdb_token_env.reset(seed=0)
    for action in (np.int64(5), np.array(6), np.array([7], dtype=np.int32)):
        obs, *_ = imdb_token_env.step(action)
    assert obs["context_ids"][:3].tolist() == [5, 6, 7]


def test_token_level_immediate_eos_gives_an_empty_utterance_and_the_early_eos_penalty(imdb_token_env):
    imdb_token_env.reset(seed=0)
    eos = imdb_token_env.unwrapped.eos_token_id
    _, reward, terminated, _, info = imdb_token_env.step(eos)
    assert terminated and info["utterance"] == "" and info["num_tokens"] == 0 and info["early_eos"]
    assert reward == pytest.approx(info["metrics"]["sentiment"] - 1.0)
    with pytest.raises(ResetNeededError, match="after the episode ended"):
        imdb_token_env.step(5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"source": "kaggle"}, "source must be one of"),
        ({"source": "synthetic", "split": "dev"}, "split must be one of"),
        ({"source": "synthetic", "action_level": "word"}, "action_level must be one of"),
        ({"source": "synthetic", "tokenizer": "gpt2"}, "only apply with action_level='token'"),
        ({"source": "synthetic", "data_dir": "/tmp"}, "only used with source='local'"),
        ({"source": "local"}, "needs data_dir"),
        ({"source": "synthetic", "render_mode": "human"}, "render_mode"),
        (
            {"source": "synthetic", "action_level": "token", "max_new_tokens": 0},
            r"max_new_tokens must be an int in \[1, ",
        ),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        gymnasium.make("lm_gym/IMDB-v0", **kwargs)


def test_bad_reset_index(raw_env):
    with pytest.raises(ConfigurationError, match=r"options\['index'\]"):
        raw_env.reset(options={"index": len(raw_env.samples)})
    obs, info = raw_env.reset(options={"index": 3})
    assert info["meta"]["index"] == 3 and obs == raw_env.samples[3].prompt


# ---- objects whose repr and str raise ---------------------------------------------------------
class Unprintable:
    """A caller's object whose ``repr`` and ``str`` raise: error messages must not call them unguarded."""

    def __repr__(self):
        raise RuntimeError("repr of Unprintable")

    __str__ = __repr__


class NotAStringRepr:
    def __repr__(self):
        return 42


def test_safe_repr_cuts_long_reprs_and_survives_failing_ones():
    assert safe_repr("abc") == "'abc'" and safe_repr(None) == "None"
    assert safe_repr("x" * 200) == "'" + "x" * 79 + "..." and safe_repr("x" * 200, limit=10) == "'xxxxxxxxx..."
    assert (
        safe_repr(Unprintable()) == "<Unprintable object>" and safe_repr(NotAStringRepr()) == "<NotAStringRepr object>"
    )


def test_unprintable_utterance_gets_an_invalid_action_error(imdb_env):
    imdb_env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="<Unprintable object>"):
        imdb_env.step(Unprintable())
    _, _, terminated, _, _ = imdb_env.step("still usable")
    assert terminated


def test_unprintable_token_gets_an_invalid_action_error(imdb_token_env):
    imdb_token_env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="<Unprintable object>"):
        imdb_token_env.step(Unprintable())
    observation, *_ = imdb_token_env.step(5)
    assert observation["context_mask"].sum() == 1 and observation["context_ids"][0] == 5


@pytest.mark.parametrize("action_level", ["utterance", "token"])
def test_unprintable_vector_actions_get_invalid_action_errors(action_level):
    venv = gymnasium.make_vec(
        "lm_gym/IMDB-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        source="synthetic",
        action_level=action_level,
    )
    venv.reset(seed=0)
    valid = ["fine", "also fine"] if action_level == "utterance" else np.array([5, 6])
    for actions in (Unprintable(), [Unprintable(), valid[1]], np.array([Unprintable(), valid[1]], dtype=object)):
        with pytest.raises(InvalidActionError):
            venv.step(actions)
    _, rewards, *_ = venv.step(valid)
    assert rewards.shape == (2,)


def test_unprintable_seed_options_and_arguments_get_configuration_errors(imdb_env):
    for kwargs in ({"seed": Unprintable()}, {"options": Unprintable()}, {"options": {Unprintable(): 1}}):
        with pytest.raises(ConfigurationError, match="<Unprintable object>"):
            imdb_env.reset(**kwargs)
    with pytest.raises(ConfigurationError, match="<Unprintable object>"):
        gymnasium.make("lm_gym/IMDB-v0", source=Unprintable())
    venv = gymnasium.make_vec("lm_gym/IMDB-v0", num_envs=2, vectorization_mode="vector_entry_point", source="synthetic")
    for kwargs in ({"seed": Unprintable()}, {"options": {"reset_mask": Unprintable()}}):
        with pytest.raises(ConfigurationError, match="<Unprintable object>"):
            venv.reset(**kwargs)
