"""Data sources of CommonGen, CNN/DailyMail and DailyDialog: the real release formats
(``../shared/data``, skipped when absent), the hub schemas through an in-memory ``datasets``
stand-in, and the errors bad local data gets."""

import csv
import json

import datasets
import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.tasks.cnn_dailymail import data as cnn_data
from lm_gym.tasks.commongen import data as commongen_data
from lm_gym.tasks.dailydialog import data as dailydialog_data


@pytest.fixture
def hub_stand_in(monkeypatch):
    """``datasets.load_dataset`` answering from ``tables[(name, config, split)]`` instead of the hub."""
    tables, requested = {}, []

    def load_dataset(name, config=None, split=None):
        requested.append((name, config, split))
        return datasets.Dataset.from_dict(tables[(name, config, split)])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    for module in (commongen_data, cnn_data, dailydialog_data):
        module._load_cached.cache_clear()
    yield tables, requested
    for module in (commongen_data, cnn_data, dailydialog_data):
        module._load_cached.cache_clear()


# ---- CommonGen ------------------------------------------------------------------------------


def test_commongen_official_dev_release_exact_counts(shared_data):
    sets = commongen_data.load_concept_sets("local", "validation", shared_data / "commongen")
    assert len(sets) == 993 and sum(len(scenes) for _, scenes in sets) == 4018
    concepts, scenes = sets[0]
    assert concepts == ("field", "look", "stand")  # the _N/_V part-of-speech tags are dropped
    assert scenes[0] == "The player stood in the field looking at the batter."
    single_file = commongen_data.load_concept_sets(
        "local", "validation", shared_data / "commongen" / "commongen.dev.jsonl"
    )
    assert single_file == sets


def test_commongen_hub_schema_groups_targets_per_concept_set(hub_stand_in):
    tables, requested = hub_stand_in
    tables[(commongen_data.HUB_DATASET, None, "validation")] = {
        "concept_set_idx": [0, 0, 1, 0],
        "concepts": [["dog", "frisbee", "catch"]] * 2 + [["ski", "mountain"]] + [["dog", "frisbee", "catch"]],
        "target": [
            "A dog catches a frisbee.",
            "The dog caught the frisbee.",
            "Skiing down a mountain.",
            "Dogs catch frisbees.",
        ],
    }
    tables[(commongen_data.HUB_DATASET, None, "test")] = {
        "concept_set_idx": [0],
        "concepts": [["a", "b"]],
        "target": [""],
    }
    sets = commongen_data.load_concept_sets("hub", "validation")
    assert sets == (
        (
            ("dog", "frisbee", "catch"),
            ("A dog catches a frisbee.", "The dog caught the frisbee.", "Dogs catch frisbees."),
        ),
        (("ski", "mountain"), ("Skiing down a mountain.",)),
    )
    with pytest.raises(DataUnavailableError, match="hidden"):
        commongen_data.load_concept_sets("hub", "test")
    assert {name for name, _, _ in requested} == {"allenai/common_gen"}


def test_commongen_local_hub_schema_and_errors(tmp_path):
    rows = [{"concept_set_idx": 3, "concepts": ["cat", "sit"], "target": t} for t in ("A cat sits.", "Cats sat.")]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert commongen_data.load_concept_sets("local", "train", tmp_path) == (
        (("cat", "sit"), ("A cat sits.", "Cats sat.")),
    )
    with pytest.raises(DataUnavailableError, match="commongen.dev.jsonl"):
        commongen_data.load_concept_sets("local", "validation", tmp_path)
    (tmp_path / "commongen.test.jsonl").write_text(json.dumps({"concept_set": "cat_N#sit_V", "scene": []}) + "\n")
    with pytest.raises(DataUnavailableError, match="hidden"):
        commongen_data.load_concept_sets("local", "test", tmp_path)
    with pytest.raises(ConfigurationError, match="data_dir"):
        commongen_data.load_concept_sets("local", "train")
    with pytest.raises(ConfigurationError, match="split"):
        commongen_data.load_concept_sets("synthetic", "dev")


# ---- CNN/DailyMail --------------------------------------------------------------------------


def test_cnn_dailymail_validation_csv_exact_count(shared_data):
    articles = cnn_data.load_articles("local", "validation", shared_data / "cnn_dailymail")
    assert len(articles) == 100
    article, highlights, article_id = articles[0]
    assert article.startswith("(CNN)Share, and your gift will be multiplied.")
    assert highlights.splitlines()[0] == "Zully Broussard decided to give a kidney to a stranger ."
    assert len(highlights.splitlines()) == 2 and article_id == "a4942dd663020ca54575471657a0af38d82897d6"
    assert all(text.isascii() for a, h, _ in articles for text in (a, h))


def test_cnn_dailymail_local_formats_agree(tmp_path):
    rows = [
        {"article": f"Story {i} . More text .", "highlights": f"Point {i} .\nSecond {i} .", "id": f"{i:040x}"}
        for i in range(3)
    ]
    with (tmp_path / "test.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["article", "highlights", "id"])
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "train-00000-of-00001.parquet"))
    loaded = [cnn_data.load_articles("local", split, tmp_path) for split in ("train", "validation", "test")]
    assert loaded[0] == loaded[1] == loaded[2] == tuple((r["article"], r["highlights"], r["id"]) for r in rows)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "train.csv").write_text("text,summary\na,b\n")
    with pytest.raises(DataUnavailableError, match="article,highlights,id"):
        cnn_data.load_articles("local", "train", tmp_path / "bad")


def test_cnn_dailymail_hub_schema(hub_stand_in):
    tables, requested = hub_stand_in
    tables[(cnn_data.HUB_DATASET, cnn_data.HUB_CONFIG, "test")] = {
        "article": ["By . Reporter . A caf\u00e9 opened ."],
        "highlights": ["A caf\u00e9 opened .\nIt is new ."],
        "id": ["ab" * 20],
    }
    assert cnn_data.load_articles("hub", "test") == (
        ("By . Reporter . A cafe opened .", "A cafe opened .\nIt is new .", "ab" * 20),
    )
    assert requested == [("abisee/cnn_dailymail", "3.0.0", "test")]


# ---- DailyDialog ----------------------------------------------------------------------------


def test_dailydialog_validation_release_exact_counts(shared_data):
    loaded = dailydialog_data.load_dialogues("local", "validation", shared_data / "dailydialog")
    assert len(loaded.dialogues) == 1000 and sum(len(d) for d in loaded.dialogues) == 8069
    assert loaded.dropped_dialogues == 0
    assert loaded.dialogues[0][0] == ("Good morning , sir . Is there a bank near here ?", 2, 0)


def write_release(folder, split, dialogues, acts, emotions):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"dialogues_{split}.txt").write_text("".join(" __eou__ ".join(d) + " __eou__\n" for d in dialogues))
    (folder / f"dialogues_act_{split}.txt").write_text("".join(" ".join(map(str, a)) + " \n" for a in acts))
    (folder / f"dialogues_emotion_{split}.txt").write_text("".join(" ".join(map(str, e)) + " \n" for e in emotions))


def test_dailydialog_a_dialogue_whose_labels_disagree_is_dropped_whole_never_shifted(tmp_path):
    dialogues = [["Hi .", "Hello , how are you ?", "Fine ."], ["Close the door", ".", "OK .", "Thanks .", "Sure ."]]
    # the second dialogue as in the release: a stray __eou__ in its first utterance, one label fewer than utterances
    acts, emotions = [[1, 2, 1], [3, 4, 1, 4]], [[0, 0, 4], [0, 0, 0, 0]]
    dialogues += [[f"Line {k} ." for k in range(3)] for _ in range(98)]
    acts += [[1, 1, 1]] * 98
    emotions += [[0, 0, 0]] * 98
    write_release(tmp_path / "train", "train", dialogues, acts, emotions)  # the unzipped release's <split>/ folder
    with pytest.warns(
        UserWarning,
        match=r"dialogues_train.txt: dropped 1 dialogues \(lines 2\) whose utterance and label counts disagree",
    ):
        loaded = dailydialog_data.load_dialogues("local", "train", tmp_path)
    assert loaded.dropped_dialogues == 1 and len(loaded.dialogues) == 99
    assert loaded.dialogues[0] == (("Hi .", 1, 0), ("Hello , how are you ?", 2, 0), ("Fine .", 1, 4))
    assert all(
        turn[0] != "OK ." for dialogue in loaded.dialogues for turn in dialogue
    )  # no utterance got another's act
    # many disagreeing dialogues: files that do not belong together
    write_release(tmp_path / "two_short", "test", dialogues[:3], [[1], [3, 4, 1], [1, 1, 1]], emotions[:3])
    with pytest.raises(DataUnavailableError, match="2 of 3 dialogues \\(lines 1, 2\\) .* do not belong together"):
        dailydialog_data.load_dialogues("local", "test", tmp_path / "two_short")
    write_release(tmp_path / "bad_code", "test", dialogues[:1], [[1, 2, 9]], emotions[:1])
    with pytest.raises(DataUnavailableError, match="outside the release's codes"):
        dailydialog_data.load_dialogues("local", "test", tmp_path / "bad_code")
    with pytest.raises(DataUnavailableError, match="dialogues_validation.txt"):
        dailydialog_data.load_dialogues("local", "validation", tmp_path)


def test_dailydialog_hub_schema(hub_stand_in):
    tables, requested = hub_stand_in
    tables[(dailydialog_data.HUB_DATASET, None, "train")] = {
        "dialog": [["Hi . ", " What time is it ? ", "Noon . "]],
        "act": [[1, 2, 1]],
        "emotion": [[0, 6, 0]],
    }
    loaded = dailydialog_data.load_dialogues("hub", "train")
    assert loaded.dialogues == ((("Hi .", 1, 0), ("What time is it ?", 2, 6), ("Noon .", 1, 0)),)
    assert requested == [("li2017dailydialog/daily_dialog", None, "train")]
