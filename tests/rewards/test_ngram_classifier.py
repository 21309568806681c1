"""The offline n-gram classifier: hashing, its numpy Adagrad (the updates of torch's), accuracy
on real dialogue acts, progress logs, the cached config."""

import json
import logging
import zlib

import numpy as np
import pytest
import torch

from lm_gym.core.cache import cache_root
from lm_gym.rewards.classifiers import (
    NgramClassifier,
    hashed_ngrams,
    load_ngram_classifier,
    ngram_ids,
    train_ngram_classifier,
    trained_ngram_classifier,
)
from lm_gym.rewards.ngram_adagrad import fit_adagrad
from lm_gym.tasks.dailydialog.data import load_dialogues

ACTS = ("inform", "question", "directive", "commissive")


def test_an_ngram_id_is_the_crc32_of_its_text():
    """Cached classifiers depend on these ids (the same as when n-grams were hashed one by one in Python)."""
    grams = ["where", "where is", "is", "is it", "it", "it ?", "?"]
    assert ngram_ids("Where, is it ?", 2**18) == [zlib.crc32(gram.encode()) % 2**18 for gram in grams]


def test_hashed_ngrams_are_each_texts_words_and_bigrams():
    texts = ["Where is it ?", "", "?!", "Where is it", "it is where", "where"]
    ids, lengths = hashed_ngrams(texts, 2**18)
    assert lengths.tolist() == [7, 0, 3, 5, 5, 1]
    assert ids.tolist() == [i for text in texts for i in ngram_ids(text, 2**18)]
    assert sorted(ngram_ids("it is where", 2**18)) != sorted(ngram_ids("where is it", 2**18))  # bigrams keep word order
    assert (
        hashed_ngrams([], 16)[0].size == 0
        and 0 <= hashed_ngrams(texts, 16)[0].min()
        and hashed_ngrams(texts, 16)[0].max() < 16
    )


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")  # torch, about its sparse gradients
def test_numpy_adagrad_makes_the_updates_of_torch_adagrad():
    rng = np.random.default_rng(1)
    texts = [" ".join(rng.choice(["a", "b", "c", "d", "e", "f", "!"], rng.integers(0, 6))) for _ in range(40)]
    targets = rng.integers(0, 3, len(texts))
    ids, lengths = hashed_ngrams(texts, 64)
    weights, bias = fit_adagrad(ids, lengths, targets, 3, 64, "test", epochs=2, batch_size=8, learning_rate=0.5, seed=3)

    model = NgramClassifier(3, 64)
    model.weights = torch.nn.EmbeddingBag(64, 3, mode="mean", sparse=True)
    torch.nn.init.zeros_(model.weights.weight)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.5)
    orders = np.random.default_rng(3)
    for _ in range(2):
        order = orders.permutation(len(texts))
        for first in range(0, len(texts), 8):
            batch = [texts[i] for i in order[first : first + 8]]
            loss = torch.nn.functional.cross_entropy(
                model(*model.encode(batch)), torch.from_numpy(targets[order[first : first + 8]])
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    np.testing.assert_allclose(weights, model.weights.weight.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(bias, model.bias.detach().numpy(), atol=1e-5)


def test_trained_on_real_dialogue_acts_predicts_held_out_ones(shared_data):
    """Train on 800 real DailyDialog validation dialogues, score the other 200 (overall 0.723 when written)."""
    dialogues = load_dialogues("local", "validation", shared_data / "dailydialog").dialogues
    train = [turn for dialogue in dialogues[:800] for turn in dialogue]
    test = [turn for dialogue in dialogues[800:] for turn in dialogue]
    model = train_ngram_classifier([u for u, _, _ in train], [a - 1 for _, a, _ in train], num_classes=4)
    predicted = model.probabilities([u for u, _, _ in test]).argmax(-1) + 1
    acts = np.array([a for _, a, _ in test])
    accuracy = {name: np.mean(predicted[acts == act] == act) for act, name in enumerate(ACTS, start=1)}
    assert np.mean(predicted == acts) > 0.7
    assert (
        accuracy["question"] > 0.8
        and accuracy["inform"] > 0.75
        and accuracy["directive"] > 0.5
        and accuracy["commissive"] > 0.2
    )


def test_progress_is_logged_when_not_in_a_terminal(caplog):
    texts, labels = ["good film", "bad film", "great acting", "awful plot"] * 5, [1, 0, 1, 0] * 5
    with caplog.at_level(
        logging.INFO, logger="lm_gym.rewards"
    ):  # pytest captures stderr: no terminal, so no progress bar
        model = train_ngram_classifier(texts, labels, epochs=4, description="training the test classifier")
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("training the test classifier: 20 texts, 60 n-grams hashed in ")
    assert [line.split(", mean loss")[0] for line in lines[1:5]] == [
        f"training the test classifier: epoch {e}/4 ({25 * e}%)" for e in range(1, 5)
    ]
    assert lines[5].startswith("training the test classifier: done in ") and lines[5].endswith(
        "training accuracy 1.000"
    )
    assert (model.probabilities(["good acting", "bad plot"]).argmax(-1) == [1, 0]).all()


def test_cached_classifier_records_its_training_accuracy():
    texts, labels = (
        ["yes please", "yes please", "no thanks", "no thanks"],
        [1, 0, 0, 0],
    )  # one "yes please" cannot be right
    model = trained_ngram_classifier(texts, labels, "test-accuracy")
    (directory,) = (cache_root() / "reward_models").glob("test-accuracy-*")
    config = json.loads((directory / "config.json").read_text())
    assert config == {"num_classes": 2, "num_buckets": 2**18, "train_examples": 4, "train_accuracy": 0.75}
    np.testing.assert_allclose(load_ngram_classifier(directory).probabilities(texts), model.probabilities(texts))
