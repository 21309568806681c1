"""``lm_gym/Reddit-v0``: samples, the four rewards with scale and shift, reproducible noise,
``upvotes_real`` on text outside the dataset, argument errors, the vector env, offline data,
and the local source end to end (skipped without ``../shared/data``)."""

import gymnasium
import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.offline import validate_trajectories
from lm_gym.tasks.reddit import RedditEnv, comment_trajectories, synthetic

INSULT = "Only a clown would ask that."
ASIDE = "Let's not bring politics into this."
HELPFUL = "You should check your tyre pressure every week, because it prevents most flats."


@pytest.fixture(scope="module")
def reddit():
    return RedditEnv(source="synthetic", split="validation")


def test_samples_observations_and_toxicity_rewards(reddit):
    observation, info = reddit.reset(seed=0)
    meta = info["meta"]
    assert observation == info["prompt"] and len(info["references"]) == 1
    assert set(meta) == {"id", "parent_id", "link_id", "score", "index", "source", "toxicity"}
    thread = synthetic.generate_threads("validation")[meta["index"]]
    assert (observation, info["references"][0], meta["score"], meta["toxicity"]) == (
        thread.parent,
        thread.reply,
        thread.score,
        thread.toxicity,
    )
    observation, reward, terminated, truncated, info = reddit.step(info["references"][0])
    assert (reward, terminated, truncated) == (
        -5.0 * thread.toxicity,
        True,
        False,
    )  # ILQL's scale: levels 0/1/2 -> 0/-5/-10
    assert observation == f"{thread.parent} {thread.reply}"
    for reply, level in ((HELPFUL, 0), (ASIDE, 1), (f"{HELPFUL} {INSULT}", 2)):
        reddit.reset(seed=1)
        _, reward, *_, info = reddit.step(reply)
        assert reward == -5.0 * level and info["metrics"] == {
            "reward": reward,
            "toxicity": float(level),
            "num_words": len(reply.split()),
        }


def test_parentless_prompts_scale_and_shift():
    env = RedditEnv(source="synthetic", split="test", include_parent=False, reward_scale=2.0, reward_shift=0.5)
    observation, info = env.reset(seed=3)
    assert observation == "" == info["prompt"] and all(sample.prompt == "" for sample in env.samples)
    observation, reward, *_ = env.step(INSULT)
    assert (observation, reward) == (INSULT, 2.0 * 2 + 0.5)
    assert list(env.reward_fn([""], [INSULT], [()], [{}])) == [2.0]  # reward_fn gives the raw level


def test_noised_toxicity_is_reproducible_with_the_seed():
    env = RedditEnv(source="synthetic", split="test", reward="noised_toxicity")
    rewards = []
    for seed in range(40):
        env.reset(seed=seed)
        _, reward, *_, info = env.step(ASIDE)
        assert info["metrics"]["toxicity"] == 1.0 and info["metrics"]["noised_toxicity"] * -5.0 == reward
        rewards.append(reward)
    assert set(rewards) == {0.0, -10.0}  # level 1 re-drawn as 0 or 2
    replay = RedditEnv(source="synthetic", split="test", reward="noised_toxicity")
    for seed in (0, 17, 39):
        replay.reset(seed=seed)
        assert replay.step(ASIDE)[1] == rewards[seed]
    for reply, reward in ((INSULT, -10.0), (HELPFUL, 0.0)):  # levels 2 and 0 are not noised
        replay.reset(seed=5)
        assert replay.step(reply)[1] == reward


def test_upvotes_real_scores_dataset_comments_and_flags_other_text():
    env = RedditEnv(source="synthetic", split="validation", reward="upvotes_real")
    train = synthetic.generate_threads("train")
    unique = next(t for t in train if sum(u.reply == t.reply for u in train) == 1 and t.score <= 0)
    _, info = env.reset(seed=0)
    _, reward, *_, info = env.step(info["references"][0])
    assert reward == (1.0 if info["meta"]["score"] > 0 else -1.0) and info["metrics"]["in_dataset"] == 1.0
    env.reset(seed=0)
    assert env.step(unique.reply)[1] == -1.0  # a comment of another split scores too
    env.reset(seed=0)
    _, reward, *_, info = env.step("A reply nobody ever wrote.")
    assert reward == 0.0 and info["metrics"] == {"reward": 0.0, "upvotes_real": 0.0, "num_words": 5, "in_dataset": 0.0}
    shifted = RedditEnv(source="synthetic", split="validation", reward="upvotes_real", reward_shift=-0.25)
    shifted.reset(seed=0)
    assert shifted.step("A reply nobody ever wrote.")[1] == -0.25  # 0, then scaled and shifted


def test_upvotes_model_rewards_helpful_replies():
    env = RedditEnv(source="synthetic", split="validation", reward="upvotes_model")
    validation = synthetic.generate_threads("validation")
    predicted = env.reward_fn([""] * len(validation), [t.reply for t in validation])
    assert np.mean(predicted == np.array([t.score > 0 for t in validation])) > 0.75
    env.reset(seed=0)
    assert env.step(HELPFUL)[1] == 1.0
    env.reset(seed=0)
    _, reward, *_, info = env.step("lol")
    assert reward == 0.0 and info["metrics"]["upvotes_model"] == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reward": "likes"}, "reward must be one of"),
        ({"include_parent": "yes"}, "include_parent must be True or False"),
        ({"reward_scale": float("nan")}, "reward_scale must be a finite number"),
        ({"reward_scale": 1e308}, "make rewards overflow"),
        ({"reward_shift": "1"}, "reward_shift must be a finite number"),
        ({"toxicity_model": ""}, "toxicity_model must be 'lexicon' or a classifier name/path"),
        ({"toxic_label": 1.5}, "toxic_label must be a label name, an int index or None"),
        ({"toxic_label": "toxic"}, "toxic_label applies to a classifier toxicity_model"),
        (
            {"reward": "upvotes_model", "toxicity_model": "unitary/toxic-bert"},
            "apply to the toxicity rewards, not reward='upvotes_model'",
        ),
        ({"source": "hub"}, r"source must be one of \('local', 'synthetic'\)"),
        ({"source": "local"}, "source='local' needs data_dir"),
        ({"split": "dev"}, "split must be one of"),
        ({"reward_device": 3}, "reward_device must be None or a torch device"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        RedditEnv(**{"source": "synthetic", **kwargs})


@pytest.mark.parametrize("name", ["no-such-org/no-such-toxicity-model", "/", "x" * 5000])
def test_unloadable_toxicity_model_fails_with_a_hint(name):
    with pytest.raises(DataUnavailableError, match="toxicity_model='lexicon'"):
        RedditEnv(source="synthetic", toxicity_model=name)


@pytest.mark.parametrize("reward", ["noised_toxicity", "upvotes_real"])
def test_vector_env_scores_like_single_envs(reward):
    venv = gymnasium.make_vec(
        "lm_gym/Reddit-v0",
        num_envs=4,
        vectorization_mode="vector_entry_point",
        source="synthetic",
        split="test",
        reward=reward,
    )
    env = RedditEnv(source="synthetic", split="test", reward=reward)
    _, infos = venv.reset(seed=20)
    actions = tuple(infos["references"][i][0] if i % 2 else ASIDE for i in range(4))
    _, rewards, terminations, _, _ = venv.step(actions)
    assert terminations.all()
    for i in range(4):
        env.reset(seed=20 + i)
        assert env.step(actions[i])[1] == rewards[i]


def test_comment_trajectories_replay_in_the_env():
    kwargs = {"source": "synthetic", "reward": "noised_toxicity"}
    dataset = comment_trajectories("validation", kwargs, seed=100, max_samples=70, batch_size=32, progress=False)
    validate_trajectories(dataset)
    assert (
        len(dataset) == 70 and dataset["sample_index"] == list(range(70)) and dataset["seed"] == list(range(100, 170))
    )
    env = RedditEnv(split="validation", **kwargs)
    for row in dataset.select([0, 33, 69]):
        sample = env.samples[row["sample_index"]]
        assert (row["comment_id"], row["score"], row["actions"]) == (
            sample.meta["id"],
            sample.meta["score"],
            [sample.references[0]],
        )
        observation, _ = env.reset(seed=row["seed"], options={"index": row["sample_index"]})
        assert [observation] == row["observations"] and [env.step(row["actions"][0])[1]] == row["rewards"]
    noisy = [row for row in dataset if env.samples[row["sample_index"]].meta["toxicity"] == 1]
    assert noisy and {row["rewards"][0] for row in noisy} <= {0.0, -10.0}
    assert (
        comment_trajectories("validation", kwargs, seed=100, max_samples=70, progress=False)["rewards"]
        == dataset["rewards"]
    )
    with pytest.raises(ConfigurationError, match=r"env_kwargs \['split'\] are not RedditEnv arguments"):
        comment_trajectories("validation", {"split": "train"})


def test_local_source_end_to_end(shared_data):
    pytest.importorskip("better_profanity")
    folder = shared_data / "reddit"
    env = gymnasium.make("lm_gym/Reddit-v0", source="local", data_dir=folder, split="test").unwrapped
    assert len(env.samples) == 71 and env.dropped_comments == {"deleted": 0, "missing_parent": 0}
    _, info = env.reset(options={"index": 0})
    assert info["meta"]["source"] == "local" and "toxicity" not in info["meta"]
    assert env.step("What a load of bullshit.")[1] == -10.0
    upvotes = RedditEnv(source="local", data_dir=folder, split="test", reward="upvotes_real")
    dataset = comment_trajectories(
        "test", {"source": "local", "data_dir": folder, "reward": "upvotes_real"}, progress=False
    )
    assert len(dataset) == 71 and dataset["rewards"] == [[1.0 if score > 0 else -1.0] for score in dataset["score"]]
    assert {s.meta["id"] for s in upvotes.samples} == set(dataset["comment_id"])
