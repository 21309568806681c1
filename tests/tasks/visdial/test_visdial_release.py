"""VisDial-v0 on the VisDial release: the loaders of its layouts and the text-only world."""

import json

import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.tasks.visdial import VisDialEnv
from lm_gym.tasks.visdial.data import load_dialogs, release_images

RELEASE = "visdial/visdial_1.0_val_vispro.json"


def test_release_loader_reads_the_shared_slice_with_exact_counts(shared_data, tmp_path):
    images = release_images(shared_data / RELEASE, "validation")
    assert len(images) == 76 and all(len(image.content.rounds) == 10 for image in images)
    assert sum(len(image.content.rounds) for image in images) == 760
    first = images[0]
    assert first.image_id == 97915 and first.caption.startswith("a woman sitting at a table with a glass of wine")
    assert first.content.rounds[0] == ("is it a smartphone?", "yes")  # ILQL appends the "?"
    assert all(q.endswith("?") for image in images for q, _ in image.content.rounds)
    assert release_images(shared_data / "visdial", "validation") == images  # the folder, found by name
    with pytest.raises(ConfigurationError, match="split='train' but .* holds the 'val2018' split"):
        load_dialogs((shared_data / RELEASE).resolve(), "train")
    with pytest.raises(DataUnavailableError, match="visdial_1.0_test"):
        release_images(shared_data / "visdial", "test")
    test_file = tmp_path / "visdial_1.0_test.json"
    rounds = [
        {"question": 0, "answer": 0, "answer_options": [0], "gt_index": 0},
        {"question": 1, "answer_options": [0]},
    ]
    test_file.write_text(
        json.dumps(
            {
                "version": "1.0",
                "split": "test2018",
                "data": {
                    "questions": ["is it red", "why"],
                    "answers": ["no"],
                    "dialogs": [{"image_id": 7, "caption": "a cup", "dialog": rounds}],
                },
            }
        )
    )
    assert release_images(tmp_path, "test")[0].content.rounds == (
        ("is it red?", "no"),
    )  # the unanswered last round is left out


def v1_release(split: str, caption: str) -> dict:
    rounds = [{"question": 0, "answer": 0, "answer_options": [0], "gt_index": 0}] * 3
    return {
        "version": "1.0",
        "split": split,
        "data": {
            "questions": [f"is the {caption} red"],
            "answers": ["no"],
            "dialogs": [
                {"image_id": 11, "caption": f"a {caption} on a table", "dialog": rounds},
                {"image_id": 12, "caption": f"two {caption}s", "dialog": rounds},
            ],
        },
    }


def test_the_v1_release_folder_with_dense_annotations_and_features_beside_the_dialogs(tmp_path):
    for name, split, caption in (("train", "train", "cup"), ("val", "val2018", "plate"), ("test", "test2018", "fork")):
        (tmp_path / f"visdial_1.0_{name}.json").write_text(json.dumps(v1_release(split, caption)))
        (tmp_path / f"features_faster_rcnn_x101_{name}.h5").write_bytes(b"")
    (tmp_path / "visdial_1.0_val_dense_annotations.json").write_text(
        json.dumps([{"image_id": 11, "round_id": 1, "gt_relevance": [1.0]}])
    )
    (tmp_path / "visdial_1.0_train_dense_sample.json").write_text(
        json.dumps([{"image_id": 11, "round_id": 1, "gt_relevance": [1.0]}])
    )
    for split, caption in (("train", "cup"), ("validation", "plate"), ("test", "fork")):
        images = release_images(tmp_path, split)
        assert [image.caption for image in images] == [f"a {caption} on a table", f"two {caption}s"]
        assert images[0].content.rounds[0] == (f"is the {caption} red?", "no")
    env = VisDialEnv(source="local", split="validation", data_dir=tmp_path)
    observation, _ = env.reset(options={"index": 1})
    assert observation == "two plates"
    # a second dialog file of a split is ambiguous: the error names both
    (tmp_path / "visdial_1.0_val_vispro.json").write_text(json.dumps(v1_release("val2018", "bowl")))
    assert release_images(tmp_path, "validation")[0].caption == "a plate on a table"  # the release's own name wins
    (tmp_path / "visdial_1.0_val.json").unlink()
    assert release_images(tmp_path, "validation")[0].caption == "a bowl on a table"  # a suffixed file alone is found
    (tmp_path / "visdial_1.0_val_other.json").write_text(json.dumps(v1_release("val2018", "mug")))
    with pytest.raises(
        DataUnavailableError,
        match="several dialog files for split 'validation' .*visdial_1.0_val_other.json, visdial_1.0_val_vispro.json",
    ):
        release_images(tmp_path, "validation")


def test_the_ilql_code_bases_layout_and_its_v05_files(tmp_path):
    raw = tmp_path / "vis_dialogue" / "raw" / "visdial_0.5"
    processed = tmp_path / "vis_dialogue" / "processed" / "visdial_0.5"
    raw.mkdir(parents=True)
    processed.mkdir(parents=True)
    for name in ("train", "val", "test"):  # a list of dialogs, the texts in the rounds
        dialogs = [
            {
                "image_id": 5,
                "caption": f"a {name} bus",
                "dialog": [{"question": "is it red", "answer": "yes", "answer_options": ["yes", "no"]}] * 10,
            },
            {"caption": "a dog", "dialog": [{"question": "how old is it", "answer": "young"}] * 10},
        ]
        (raw / f"visdial_0.5_{name}.json").write_text(json.dumps(dialogs))
        (processed / f"{name}_rank_reward_cache1.json").write_text(json.dumps([[0.5] * 11, [0.5] * 11]))
    (processed / "data_img.h5").write_bytes(b"")
    for data_dir in (tmp_path / "vis_dialogue", raw, raw / "visdial_0.5_val.json"):
        images = release_images(data_dir, "validation")
        assert [(image.image_id, image.caption) for image in images] == [
            (5, "a val bus"),
            (1, "a dog"),
        ]  # no image_id: the index
        assert images[0].content.rounds == (("is it red?", "yes"),) * 10
    env = VisDialEnv(source="local", split="train", data_dir=tmp_path / "vis_dialogue")
    assert env.reset(options={"index": 0})[0] == "a train bus"
    _, reward, _, _, info = env.step("is it red?")
    assert info["answer"] == "yes" and reward in (-1.0, 0.0)
    (raw / "visdial_0.5_val.json").write_text(
        json.dumps([{"caption": "a cat", "dialog": [{"question": 3, "answer": "no"}]}])
    )
    load_dialogs.cache_clear()
    with pytest.raises(DataUnavailableError, match="dialog 0 does not follow the VisDial format"):
        release_images(raw, "validation")
    with pytest.raises(
        DataUnavailableError, match="visdial_1.0_val.json \\(the v1.0 release\\) or visdial_0.5_val.json"
    ):
        release_images(tmp_path, "validation")


def test_text_only_world_answers_from_the_human_dialog(shared_data):
    env = VisDialEnv(source="local", split="validation", data_dir=shared_data / RELEASE)
    observation, info = env.reset(options={"index": 2})
    assert observation == "a man slides down a snowy slope on a snowboard" and info["percentile"] == 0.0
    _, reward, _, _, info = env.step("zxq?")
    assert (info["answer"], info["percentile"], reward) == ("i can't tell", 0.0, -1.0)
    _, reward, terminated, _, info = env.step("what colour is the snowboard?")
    assert (
        info["answer"] == "the snowboard is grey in color"
        and info["percentile"] > 0.5
        and (reward, terminated) == (0.0, True)
    )
    assert len(env.demonstrations()) == 760
