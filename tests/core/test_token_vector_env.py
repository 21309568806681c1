"""The native token-level vector env: the scalar env's episodes, autoreset, bad actions, one reward call."""

import gymnasium
import numpy as np
import pytest

from lm_gym.core import TokenVectorEnv
from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.core.registration import NATIVE_VECTOR_LEVELS, task_class
from lm_gym.core.text_env import join_text
from lm_gym.core.tokenizer import word_tokenizer
from lm_gym.core.vector import episode_info

N = 3
# Short utterances keep the tests fast; IMDB keeps a minimum length, so early EOS is played too.
TASKS = {
    "lm_gym/IMDB-v0": {"max_new_tokens": 8, "min_new_tokens": 3},
    "lm_gym/Wordle-v0": {},
    "lm_gym/Prompts-v0": {"max_new_tokens": 6},
}
TINY_WORDS = ("apple", "egg", "ice", "oak", "up", "big", "cat", "dog", "red", "sun", "tree", "moon")


def make_vec(env_id="lm_gym/Prompts-v0", num_envs=N, **kwargs):
    kwargs = {**task_class(env_id).offline_kwargs, **TASKS.get(env_id, {}), **kwargs}
    return gymnasium.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", action_level="token", **kwargs
    )


def make_scalar(env_id, **kwargs):
    kwargs = {**task_class(env_id).offline_kwargs, **TASKS.get(env_id, {}), **kwargs}
    return gymnasium.make(env_id, action_level="token", **kwargs)


def random_tokens(rng, venv, eos_rate=0.15):
    tokens = rng.integers(0, venv.vocab_size, size=venv.num_envs)
    tokens[rng.random(venv.num_envs) < eos_rate] = venv.eos_token_id
    return tokens


def tiny_prompts_kwargs():
    prompts = [" ".join(TINY_WORDS[i : i + 5]) for i in range(len(TINY_WORDS) - 5)]
    return {"prompts": prompts, "tokenizer": word_tokenizer(TINY_WORDS, "test-tiny-words"), "max_prompt_length": 8}


def assert_same_observation(vector_obs, i, scalar_obs):
    for key, value in scalar_obs.items():
        np.testing.assert_array_equal(vector_obs[key][i], value, err_msg=key)


def without_mask(info):
    return {key: value for key, value in info.items() if key != "action_mask"}


@pytest.mark.parametrize("env_id", list(TASKS))
def test_copy_i_plays_the_scalar_env_reset_with_seed_plus_i(env_id):
    """Step by step: observations, rewards, ends, infos and action masks of each copy are the scalar env's."""
    venv = make_vec(env_id)
    rng = np.random.default_rng(1)
    observations, infos = venv.reset(seed=10)
    trace = [(None, observations, None, None, None, infos, venv.action_masks())]
    for _ in range(40):
        actions = random_tokens(rng, venv)
        observations, rewards, terminations, truncations, infos = venv.step(actions)
        trace.append((actions, observations, rewards, terminations, truncations, infos, venv.action_masks()))
    assert any(t[3] is not None and t[3].any() for t in trace), "no episode ended"

    scalar = make_scalar(env_id)
    for i in range(N):  # replay copy i's actions in the scalar env
        observation, info = scalar.reset(seed=10 + i)
        assert_same_observation(trace[0][1], i, observation)
        assert episode_info(trace[0][5], i) == without_mask(info)
        needs_reset = False
        for actions, vector_obs, rewards, terminations, truncations, infos, masks in trace[1:]:
            if needs_reset:  # NextStep autoreset: the action is ignored
                observation, info = scalar.reset()
                reward, terminated, truncated = 0.0, False, False
            else:
                observation, reward, terminated, truncated, info = scalar.step(int(actions[i]))
            assert_same_observation(vector_obs, i, observation)
            assert (rewards[i], terminations[i], truncations[i]) == (reward, terminated, truncated)
            copy_info = episode_info(infos, i)
            assert copy_info == (without_mask(info) if needs_reset or "num_tokens" in info else {})
            np.testing.assert_array_equal(masks[i], info["action_mask"].astype(bool))
            np.testing.assert_array_equal(masks[i], scalar.unwrapped.action_masks())
            needs_reset = terminated or truncated


def test_make_vec_builds_the_token_vector_env_with_make_env_defaults():
    assert "token" in NATIVE_VECTOR_LEVELS
    venv = gymnasium.make_vec(
        "lm_gym/IMDB-v0", num_envs=2, vectorization_mode="vector_entry_point", source="synthetic", action_level="token"
    )
    scalar = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token").unwrapped
    assert isinstance(venv, TokenVectorEnv) and venv.unwrapped is venv
    for name in (
        "max_prompt_length",
        "max_new_tokens",
        "min_new_tokens",
        "prompt_truncation_side",
        "early_eos_penalty",
        "vocab_size",
        "eos_token_id",
        "pad_token_id",
    ):
        assert getattr(venv, name) == getattr(scalar, name), name
    assert venv.min_new_tokens == 48  # IMDB's generation_defaults
    assert venv.single_observation_space == scalar.observation_space and venv.single_action_space == scalar.action_space
    assert venv.action_space == gymnasium.spaces.MultiDiscrete([scalar.vocab_size] * 2)
    observations, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(observations)
    assert observations["prompt_ids"].shape == (2, 64) and observations["context_ids"].shape == (2, 48)
    masks = venv.action_masks()
    assert masks.shape == (2, venv.vocab_size) and masks.dtype == bool
    assert not masks[:, venv.eos_token_id].any() and masks.sum() == 2 * (venv.vocab_size - 1)
    with pytest.raises(ConfigurationError, match="max_new_tokens"):
        gymnasium.make_vec(
            "lm_gym/IMDB-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            source="synthetic",
            action_level="token",
            max_new_tokens=0,
        )
    with pytest.raises(ConfigurationError, match="only apply with action_level='token'"):
        gymnasium.make_vec(
            "lm_gym/IMDB-v0", num_envs=2, vectorization_mode="vector_entry_point", source="synthetic", max_new_tokens=4
        )


def test_steps_that_only_append_return_new_arrays_and_no_info():
    venv = make_vec(max_new_tokens=4)
    first, _ = venv.reset(seed=0)
    kept = {key: value.copy() for key, value in first.items()}
    observations, rewards, terminations, truncations, infos = venv.step(np.array([5, 6, 7]))
    assert infos == {} and not rewards.any() and not terminations.any() and not truncations.any()
    assert observations["context_ids"][:, 0].tolist() == [5, 6, 7] and observations["context_mask"].sum() == 3
    assert all(observations[key] is not first[key] for key in first)
    venv.step(np.array([8, 9, 10]))
    for key in first:  # the first observation was not changed by later steps
        np.testing.assert_array_equal(first[key], kept[key])


def test_one_reward_call_per_step_with_the_utterances_that_end():
    calls = []

    def reward_fn(prompts, completions, **kwargs):
        calls.append(list(completions))
        return [float(len(c)) for c in completions]

    venv = make_vec(
        num_envs=4, max_new_tokens=3, reward_fn=reward_fn, autoreset_mode="SameStep", **tiny_prompts_kwargs()
    )
    venv.reset(seed=0)
    eos, word = venv.eos_token_id, 3  # id 3 is TINY_WORDS[0]
    plan = [[word, eos, word, word], [word, word, word, eos], [word, word, word, word], [eos, eos, eos, eos]]
    expected_batches = [1, 1, 2, 4]  # copy 1 at EOS; copy 3 at EOS; copies 0 and 2 at max_new_tokens; all at EOS
    for actions, batch in zip(plan, expected_batches, strict=True):
        calls_before = len(calls)
        _, rewards, terminations, _, _ = venv.step(np.array(actions))
        assert len(calls) == calls_before + 1 and len(calls[-1]) == batch == terminations.sum()
        assert rewards[terminations].tolist() == [float(len(c)) for c in calls[-1]]
    assert calls[0] == [""] and calls[1] == ["apple"] and calls[2] == ["apple apple apple"] * 2
    assert calls[3] == ["", "apple apple", "", "apple"]


def test_next_step_autoreset_ignores_the_action_but_refuses_a_bad_one():
    venv = make_vec(max_new_tokens=2)
    venv.reset(seed=0)
    _, _, terminations, _, _ = venv.step(np.array([venv.eos_token_id, 5, 5]))
    assert terminations.tolist() == [True, False, False]
    with pytest.raises(InvalidActionError, match="out of range"):
        venv.step(np.array([venv.vocab_size, 5, 5]))  # copy 0's action is ignored, but checked
    observations, rewards, terminations, _, infos = venv.step(np.array([7, 5, 5]))
    assert rewards[0] == 0 and terminations.tolist() == [False, True, True]
    assert observations["context_mask"][0].sum() == 0  # copy 0 was reset, its token ignored
    assert infos["_prompt"].tolist() == [True, True, True] and infos["_num_tokens"].tolist() == [False, True, True]
    assert (
        venv.encode_prompt(infos["prompt"][0])
        == observations["prompt_ids"][0][observations["prompt_mask"][0] == 1].tolist()
    )


def test_same_step_autoreset_reports_the_final_observation():
    venv = make_vec(max_new_tokens=2, autoreset_mode="SameStep")
    venv.reset(seed=0)
    venv.step(np.array([5, 5, 5]))
    observations, _, terminations, _, infos = venv.step(np.array([6, 6, 6]))
    assert terminations.all() and infos["_final_obs"].all()
    for i in range(N):
        final = infos["final_obs"][i]
        final_text = join_text(infos["final_info"]["prompt"][i], infos["final_info"]["utterance"][i])
        assert final["prompt_ids"][final["prompt_mask"] == 1].tolist() == venv.encode_prompt(final_text)
        assert final["context_mask"].sum() == 0 and infos["final_info"]["num_tokens"][i] == 2
        prompt = observations["prompt_ids"][i][observations["prompt_mask"][i] == 1].tolist()
        assert prompt == venv.encode_prompt(infos["prompt"][i])  # the next episode's
    _, _, terminations, _, _ = venv.step(np.array([5, 5, 5]))
    assert not terminations.any()


def test_disabled_autoreset_needs_an_explicit_reset():
    venv = make_vec(max_new_tokens=1, autoreset_mode="Disabled")
    with pytest.raises(ResetNeededError, match="before reset"):
        venv.step(np.array([5, 5, 5]))
    venv.reset(seed=0)
    venv.step(np.array([5, 5, 5]))
    with pytest.raises(ResetNeededError, match="reset_mask"):
        venv.step(np.array([5, 5, 5]))
    mask = np.array([True, False, True])
    _, infos = venv.reset(options={"reset_mask": mask})
    assert infos["_prompt"].tolist() == mask.tolist()
    with pytest.raises(ResetNeededError):
        venv.step(np.array([5, 5, 5]))
    venv.reset(options={"reset_mask": ~mask})
    _, _, terminations, _, _ = venv.step(np.array([5, 5, 5]))
    assert terminations.all()


@pytest.mark.parametrize(
    "actions, match",
    [
        (np.array([1, 2]), r"shape \(3,\)"),
        (np.array([[1, 2, 3]]), r"shape \(3,\)"),
        (np.array([1.0, 2.0, 3.0]), "dtype float64"),
        (np.array([True, False, True]), "dtype bool"),
        (np.array([1, -1, 2]), "token id -1 of env 1 is out of range"),
        (np.array([1, 2, 2**40], dtype=np.uint64), "of env 2 is out of range"),
        ([1, 2, "3"], "list or tuple of 3 ints"),
        ((1, 2, 10**30), "out of range"),
        ([1, 2], "list or tuple of 3 ints"),
        (5, "integer NumPy array of shape"),
        (None, "integer NumPy array of shape"),
        ([True, 1, 2], "list or tuple of 3 ints"),
    ],
)
def test_bad_actions_raise_before_any_copy_changes(actions, match):
    venv = make_vec(max_new_tokens=3)
    venv.reset(seed=2)
    venv.step(np.array([4, 4, 4]))
    state = {key: value.copy() for key, value in venv.tokens.observation().items()}
    with pytest.raises(InvalidActionError, match=match):
        venv.step(actions)
    for key, value in venv.tokens.observation().items():
        np.testing.assert_array_equal(value, state[key])
    observations, *_ = venv.step([6, np.int32(6), np.uint8(6)])  # lists of ints are fine; nothing was lost
    assert observations["context_ids"][:, :2].tolist() == [[4, 6]] * 3


def test_seeds_lists_and_reset_masks():
    venv = make_vec()
    first, _ = venv.reset(seed=7)
    listed, _ = venv.reset(seed=[7, 8, 9])
    for key in first:
        np.testing.assert_array_equal(first[key], listed[key])
    other, _ = venv.reset(seed=[9, 8, 7])
    np.testing.assert_array_equal(other["prompt_ids"][0], first["prompt_ids"][2])
    venv.step(np.array([5, 5, 5]))
    observations, infos = venv.reset(seed=[1, None, None], options={"reset_mask": np.array([True, False, False])})
    assert observations["context_mask"].sum(axis=1).tolist() == [0, 1, 1] and infos["_prompt"].tolist() == [
        True,
        False,
        False,
    ]
    with pytest.raises(ConfigurationError, match="seed must be"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ConfigurationError, match="reset_mask"):
        venv.reset(options={"reset_mask": [True] * N})
