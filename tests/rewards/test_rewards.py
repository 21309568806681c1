"""Sentiment rewards: the offline n-gram classifier and a transformers classifier."""

import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError
from lm_gym.core.tokenizer import train_tokenizer
from lm_gym.rewards.sentiment import ClassifierSentimentReward, NgramSentimentReward
from lm_gym.tasks.imdb import IMDBEnv
from lm_gym.tasks.imdb.data import load_reviews

POSITIVE = "The acting was brilliant and the ending was wonderful."
NEGATIVE = "The acting was awful and the ending was boring."


@pytest.fixture(scope="module")
def trained_reward():
    train = load_reviews("synthetic", "train")
    return NgramSentimentReward.trained_on([t for t, _ in train], [y for _, y in train], "imdb-synthetic")


def test_trained_classifier_learns_the_synthetic_sentiment(trained_reward):
    validation = load_reviews("synthetic", "validation")
    texts, labels = [t for t, _ in validation], np.array([y for _, y in validation])
    probabilities = trained_reward([""] * len(texts), texts, None, None)
    assert np.mean((probabilities > 0.5) == labels) > 0.9
    first_halves = [" ".join(t.split()[: len(t.split()) // 2]) for t in texts]
    assert np.mean((trained_reward(first_halves, first_halves) > 0.5) == labels) > 0.75


def test_trained_reward_is_batched_and_batch_independent(trained_reward):
    texts = [POSITIVE, NEGATIVE, "", "plain words about a film"]
    batch = trained_reward([""] * 4, texts)
    single = np.concatenate([trained_reward([""], [t]) for t in texts])
    np.testing.assert_allclose(batch, single, rtol=1e-6)
    assert batch[0] > 0.8 > 0.2 > batch[1] and 0.0 < batch[2] < 1.0


@pytest.fixture(scope="module")
def tiny_classifier_dir(tmp_path_factory):
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    directory = tmp_path_factory.mktemp("tiny-classifier")
    tokenizer = train_tokenizer([POSITIVE, NEGATIVE] * 10, "tiny-classifier", vocab_size=400)
    tokenizer.save_pretrained(directory)
    config = DistilBertConfig(
        vocab_size=len(tokenizer),
        dim=32,
        hidden_dim=64,
        n_layers=1,
        n_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        id2label={0: "NEGATIVE", 1: "POSITIVE"},
    )
    DistilBertForSequenceClassification(config).save_pretrained(directory)
    return directory


def test_transformers_classifier_reward(tiny_classifier_dir):
    reward = ClassifierSentimentReward(str(tiny_classifier_dir), device="cpu", batch_size=2)
    assert reward.positive_index == 1
    texts = [POSITIVE, NEGATIVE, "short", POSITIVE + " " + NEGATIVE]
    batch = reward([""] * 4, texts)
    assert batch.shape == (4,) and ((0 < batch) & (batch < 1)).all()
    single = np.concatenate([reward([""], [t]) for t in texts])
    np.testing.assert_allclose(batch, single, rtol=1e-4)
    assert ClassifierSentimentReward(str(tiny_classifier_dir), positive_label="NEGATIVE").positive_index == 0
    with pytest.raises(ConfigurationError, match="positive_label"):
        ClassifierSentimentReward(str(tiny_classifier_dir), positive_label="joy")


def test_imdb_env_with_a_transformers_classifier(tiny_classifier_dir):
    env = IMDBEnv(source="synthetic", reward_model=str(tiny_classifier_dir))
    env.reset(seed=0)
    _, reward, *_ = env.step(POSITIVE)
    assert reward == pytest.approx(env.reward_fn([""], [POSITIVE])[0])
