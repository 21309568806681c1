"""IMDB data sources: synthetic generator, original aclImdb layout, review/sentiment CSV."""

import csv

import gymnasium
import pytest

from lm_gym.core.errors import DataUnavailableError
from lm_gym.tasks.imdb import synthetic
from lm_gym.tasks.imdb.data import clean_review, load_reviews
from lm_gym.tasks.imdb.env import split_review


def test_synthetic_source_is_deterministic_and_balanced():
    for split, size in synthetic.SPLIT_SIZES.items():
        reviews = load_reviews("synthetic", split)
        assert len(reviews) == size
        assert sum(label for _, label in reviews) == size // 2
    assert synthetic.generate_reviews("validation") == synthetic.generate_reviews("validation")
    assert synthetic.generate_reviews("train", 50) != synthetic.generate_reviews("test", 50)


def test_local_acl_imdb_exact_counts(shared_data):
    root = shared_data / "imdb" / "aclImdb"
    train = load_reviews("local", "train", root)
    validation = load_reviews("local", "validation", root.parent)  # the parent directory works too
    test = load_reviews("local", "test", root)
    assert (len(train), len(validation), len(test)) == (320, 80, 400)
    assert sum(label for _, label in train + validation) == 200
    assert sum(label for _, label in test) == 200
    assert not set(train) & set(validation)
    assert all("<br" not in text and text.isascii() for text, _ in train + validation + test)


def test_local_env_end_to_end(shared_data):
    env = gymnasium.make("lm_gym/IMDB-v0", source="local", data_dir=str(shared_data / "imdb" / "aclImdb"), split="test")
    obs, info = env.reset(seed=0)
    assert obs and info["meta"]["source"] == "local"
    _, reward, terminated, _, _ = env.step("I loved it, a brilliant and moving film.")
    assert terminated and 0.0 <= reward <= 1.0


def write_csv(path, rows):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["review", "sentiment"])
        writer.writerows(rows)


def test_local_csv_source(tmp_path):
    rows = [
        (f"Review number {i}.<br /><br />It was {'great' if i % 2 else 'bad'}.", "positive" if i % 2 else "negative")
        for i in range(20)
    ]
    write_csv(tmp_path / "IMDB Dataset.csv", rows)
    splits = {split: load_reviews("local", split, tmp_path) for split in ("train", "validation", "test")}
    assert [len(s) for s in splits.values()] == [8, 2, 10]
    texts = {text for s in splits.values() for text, _ in s}
    assert len(texts) == 20 and all("<br" not in t for t in texts)
    assert ("Review number 3. It was great.", 1) in [r for s in splits.values() for r in s]


def test_bad_local_data_is_reported(tmp_path):
    write_csv(tmp_path / "reviews.csv", [("fine", "maybe")])
    with pytest.raises(DataUnavailableError, match="sentiment must be 'positive' or 'negative'"):
        load_reviews("local", "train", tmp_path / "reviews.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataUnavailableError, match="holds no IMDB data"):
        load_reviews("local", "train", tmp_path / "empty")


def test_cleaning_and_prompt_split():
    assert clean_review("Great<br />film,  tr\u00e8s  bien") == "Great film, tres bien"
    assert split_review("one two three four five") == ("one two", "three four five")
    assert split_review("single") == ("single", "")


def test_hub_source_reads_the_datasets_schema(monkeypatch):
    """The hub path, with ``datasets.load_dataset`` answering from memory instead of the hub."""
    import datasets

    from lm_gym.tasks.imdb import data

    requested = []

    def fake_load_dataset(name, split):
        requested.append((name, split))
        rows = [(f"{split} review {i}<br />text", i % 2) for i in range(10)]
        return datasets.Dataset.from_dict({"text": [t for t, _ in rows], "label": [y for _, y in rows]})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    data._load_cached.cache_clear()
    try:
        train, validation, test = (load_reviews("hub", split) for split in ("train", "validation", "test"))
    finally:
        data._load_cached.cache_clear()
    assert {name for name, _ in requested} == {data.HUB_DATASET}
    assert (len(train), len(validation), len(test)) == (8, 2, 10)
    assert ("test review 3 text", 1) in test and not set(train) & set(validation)
