"""The public step protocol of ``TextEnv`` (prepare_step, the batched reward, finish_step), its
companions (parse_action, current_sample, the token-level settings) and ``lm_gym.metrics.corpus_metrics``."""

import gymnasium
import pytest

from lm_gym.core import ConfigurationError, InvalidActionError, ResetNeededError, TokenSettings
from lm_gym.core.text_env import RewardQuery, score_by_reward_fn, score_queries
from lm_gym.metrics import corpus_metrics, diversity
from lm_gym.tasks.imdb import IMDBEnv


@pytest.fixture(scope="module")
def imdb():
    return IMDBEnv(source="synthetic")


def test_score_by_reward_fn_calls_each_reward_function_once_in_order():
    calls = []

    def reward(name):
        def score(prompts, utterances, references, meta):
            calls.append((name, list(utterances)))
            return [len(utterance) for utterance in utterances]

        return score

    short, long = reward("short"), reward("long")
    queries = [
        (short, RewardQuery("p", "ab")),
        (long, RewardQuery("p", "abcd")),
        (short, None),
        (short, RewardQuery("p", "abc")),
    ]
    assert score_by_reward_fn(queries) == [2.0, 4.0, None, 3.0]
    assert calls == [("short", ["ab", "abc"]), ("long", ["abcd"])]
    assert score_by_reward_fn([(short, None)]) == [None] and len(calls) == 2


def test_prepare_score_finish_is_a_step(imdb):
    other = imdb.replicate()
    imdb.reset(seed=3)
    other.reset(seed=3)
    expected = imdb.step("a wonderful film")
    utterance, query = other.prepare_step("a wonderful film")
    assert (
        utterance == "a wonderful film" and query.utterance == utterance and query.prompt == other.current_sample.prompt
    )
    (score,) = score_queries(other.reward_fn, [query])
    assert other.finish_step(utterance, float(score)) == expected


def test_prepare_step_changes_nothing_and_refuses_outside_an_episode(imdb):
    fresh = imdb.replicate()
    with pytest.raises(ResetNeededError, match="call reset"):
        fresh.prepare_step("hello")
    imdb.reset(seed=0)
    assert imdb.prepare_step("one") == imdb.prepare_step("one")
    with pytest.raises(InvalidActionError, match="must be a str"):
        imdb.prepare_step(42)
    _, _, terminated, _, _ = imdb.step("still the same episode")
    assert terminated
    with pytest.raises(ResetNeededError, match="after the episode ended"):
        imdb.prepare_step("again")


def test_parse_action_validates_without_stepping(imdb):
    fresh = imdb.replicate()  # no episode needed
    assert fresh.parse_action("caf\u00e9 \u2014 ok") == "cafe - ok"
    with pytest.raises(InvalidActionError, match="at most"):
        fresh.parse_action("x" * (fresh.action_space.max_length + 1))


def test_current_sample_is_the_episode_sample(imdb):
    with pytest.raises(ResetNeededError, match="no current sample"):
        imdb.replicate().current_sample  # noqa: B018
    observation, info = imdb.reset(options={"index": 5})
    assert imdb.current_sample is imdb.samples[5] and observation == imdb.current_sample.prompt == info["prompt"]
    with pytest.raises(AttributeError):
        imdb.current_sample = imdb.samples[0]


def test_token_settings_are_read_only_properties_of_the_token_envs():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token").unwrapped
    venv = gymnasium.make_vec(
        "lm_gym/IMDB-v0", num_envs=2, vectorization_mode="vector_entry_point", source="synthetic", action_level="token"
    )
    names = [name for name, value in vars(TokenSettings).items() if isinstance(value, property)]
    assert len(names) == 10
    for token_env in (env, venv):
        assert isinstance(token_env, TokenSettings)
        for name in names:
            assert getattr(token_env, name) == getattr(token_env.tokens, name)
        with pytest.raises(AttributeError):
            token_env.vocab_size = 3
    assert env.min_new_tokens == 48 and env.action_space.n == env.vocab_size


def test_corpus_metrics_takes_any_form_of_the_env():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", split="test")
    finals = []
    for seed in range(3):
        _, info = env.reset(seed=seed)
        finals.append(env.step(info["references"][0])[4])
    expected = corpus_metrics(env.unwrapped, finals)
    assert expected == diversity([final["utterance"] for final in finals])  # IMDB adds no corpus metric of its own
    token_env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", split="test", action_level="token")
    venv = gymnasium.make_vec("lm_gym/IMDB-v0", num_envs=2, vectorization_mode="vector_entry_point", source="synthetic")
    for form in (env, token_env, token_env.unwrapped, venv, venv.envs[0]):
        assert corpus_metrics(form, finals) == expected
    with pytest.raises(ConfigurationError, match="must be an lm-gym env"):
        corpus_metrics(object(), finals)


def test_corpus_metrics_of_a_multi_turn_task_are_its_own():
    wordle = gymnasium.make("lm_gym/Wordle-v0")
    wordle.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, _, info = wordle.step("crane")
    assert corpus_metrics(wordle, [info]) == wordle.unwrapped.task_corpus_metrics([info]) == {}
