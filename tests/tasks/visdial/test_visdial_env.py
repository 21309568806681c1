"""VisDial-v0: rewards, the synthetic world, the VisDial release, pluggable and HTTP worlds (the checkers run in
tests/contract)."""

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import gymnasium
import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.tasks.visdial import HiddenImage, VisDialEnv, synthetic
from lm_gym.tasks.visdial.data import load_dialogs, release_images
from lm_gym.tasks.visdial.dialogue import parse_dialogue_text
from lm_gym.tasks.visdial.features import load_image_features
from lm_gym.tasks.visdial.policies import InformativeQuestioner, RandomQuestioner, YesNoQuestioner, caption_nouns
from lm_gym.tasks.visdial.rewards import cutoff_reached, is_yes_no
from lm_gym.tasks.visdial.synthetic import Scene, SceneObject, SceneRanker, answer_question, gallery
from lm_gym.tasks.visdial.world import rank_percentile

RELEASE = "visdial/visdial_1.0_val_vispro.json"


def play(env, questioner, seed):
    """One game; returns the final info and the percentiles after each turn."""
    questioner.seed(seed)
    observation, info = env.reset(seed=seed)
    percentiles, terminated = [info["percentile"]], False
    while not terminated:
        observation, _, terminated, _, info = env.step(questioner(observation))
        percentiles.append(info["percentile"])
    return info, percentiles


# ---- rewards --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, hard, soft, conservative",
    [
        ("yes", True, True, True),
        ("No", True, True, True),
        ("no, it is not", False, True, True),
        ("snow", False, True, True),  # ILQL's soft test is a substring test
        ("maybe", False, False, True),
        ("i can\u2019t tell", False, False, True),
        ("two", False, False, False),
        ("brown", False, False, False),
    ],
)
def test_yes_no_tests_follow_ilql(answer, hard, soft, conservative):
    assert (is_yes_no(answer, "hard"), is_yes_no(answer, "soft"), is_yes_no(answer, "conservative")) == (
        hard,
        soft,
        conservative,
    )
    assert not is_yes_no(answer, "none")


def test_cutoff_rule():
    assert cutoff_reached(0.9, 0.95, 0.5, 1.0)  # a gain of exactly one half, up to rounding
    assert not cutoff_reached(0.9, 0.94, 0.5, 1.0)
    assert cutoff_reached(0.2, 0.6, 0.5, 1.0) and not cutoff_reached(0.2, 0.59, 0.5, 1.0)
    assert cutoff_reached(1.0, 0.3, 0.5, 1.0)  # p0 at the goal: reached (no gap to close)


class ScriptedWorld:
    """Answers and percentiles by turn, for hand-computed rewards; counts ranker calls."""

    def __init__(self, answers, percentiles):
        self.answers, self.table, self.calls = answers, percentiles, []

    def answer(self, image, dialogue, question):
        return self.answers[len(dialogue)]

    def percentiles(self, images, dialogues):
        self.calls.append(len(images))
        return [self.table[len(d)] for d in dialogues]


ANSWERS = ["yes", "maybe", "snow", "two"] + ["two"] * 6
PERCENTILES = [0.2, 0.3, 0.35, 0.45, 0.7]  # p0 = 0.2; gains 0.125, 0.1875, 0.3125, 0.625: the 4th turn reaches 0.5


@pytest.mark.parametrize(
    "kind, scale, shift, expected",
    [
        ("none", 1.0, 0.0, [-1, -1, -1, 0]),
        ("hard", 1.0, 0.0, [-3, -1, -1, 0]),
        ("soft", 1.0, 0.0, [-3, -1, -3, 0]),
        ("conservative", 1.0, 0.0, [-3, -3, -3, 0]),
        ("hard", 2.0, 0.5, [-5.5, -1.5, -1.5, 0.5]),
    ],
)
def test_reward_variants_match_hand_computed_values(kind, scale, shift, expected):
    world = ScriptedWorld(ANSWERS, PERCENTILES)
    env = VisDialEnv(
        num_images=10, answerer=world, ranker=world, yn_reward_kind=kind, reward_scale=scale, reward_shift=shift
    )
    _, info = env.reset(seed=0)
    assert info["percentile"] == 0.2
    rewards, terminated = [], False
    while not terminated:
        _, reward, terminated, _, info = env.step("anything?")
        rewards.append(reward)
    assert rewards == expected
    metrics = info["metrics"]
    assert metrics["return"] == sum(expected) and metrics["turns"] == 4 and metrics["reached_cutoff"] == 1.0
    assert metrics["final_percentile"] == 0.7 and metrics["percentile_gain"] == pytest.approx(0.625)
    assert (
        metrics["yes_no_answers"] == {"none": 1, "hard": 1, "soft": 2, "conservative": 3}[kind]
    )  # "none" counts with "hard"


def test_unsolved_game_ends_after_max_turns_and_p0_at_goal_ends_after_one_turn():
    world = ScriptedWorld(["two"] * 10, [0.2] * 11)
    env = VisDialEnv(num_images=10, answerer=world, ranker=world, max_turns=3)
    env.reset(seed=0)
    steps = [env.step("q?") for _ in range(3)]
    assert [s[1] for s in steps] == [-1, -1, -1] and [s[2] for s in steps] == [False, False, True]
    assert steps[-1][4]["metrics"]["reached_cutoff"] == 0.0 and steps[-1][4]["metrics"]["percentile_gain"] == 0.0

    at_goal = ScriptedWorld(["yes"], [1.0, 0.4])
    env = VisDialEnv(num_images=10, answerer=at_goal, ranker=at_goal, yn_reward_kind="hard", yn_reward=-0.5)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("is it?")
    assert (reward, terminated, info["metrics"]["percentile_gain"]) == (-0.5, True, 1.0)


# ---- the synthetic world --------------------------------------------------------------------

PARK = Scene(
    "park",
    "day",
    "clear",
    (
        SceneObject("dog", "brown", 1, "left", True),
        SceneObject("cat", "black", 3, "right", True),
        SceneObject("man", "red", 1, "middle", False),
    ),
    "a dog and some cats in a park",
)


@pytest.mark.parametrize(
    "question, answer",
    [
        ("What colour is the dog?", "brown"),
        ("what color are the cats", "black"),
        ("is the dog red?", "no"),
        ("is the dog brown?", "yes"),
        ("how many cats are there?", "three"),
        ("are there 3 cats?", "yes"),
        ("where is the dog?", "on the left"),
        ("is the cat on the right?", "yes"),
        ("what is in the middle?", "a man"),
        ("what else is in the picture?", "a man"),
        ("what is the man wearing?", "a red shirt"),
        ("any people?", "yes"),
        ("how many people are there?", "one"),
        ("is there a horse?", "no"),
        ("what color is the horse?", "i don't see any horses"),
        ("how many horses?", "none"),
        ("is it day or night?", "day"),
        ("is it sunny?", "yes"),
        ("what is the weather like?", "sunny"),
        ("is it indoors?", "no"),
        ("what is the dog doing?", "i can't tell"),
        ("zxq blorp", "i can't tell"),
        ("", "i can't tell"),
    ],
)
def test_synthetic_answerer(question, answer):
    assert answer_question(PARK, question) == answer


def scene_differences(scene, other):
    """The attributes in which two scenes of a family differ (a background group counts once, by category)."""
    differences = {name for name in ("time", "weather") if getattr(scene, name) != getattr(other, name)}
    for group in scene.objects:
        match = other.find(group.category)
        if match is None:
            differences.add("background")
        else:
            differences |= {
                f"{name} of {group.category}"
                for name in ("color", "count", "position")
                if getattr(group, name) != getattr(match, name)
            }
    if len(other.objects) > len(scene.objects):
        differences.add("background")
    return differences


def test_synthetic_gallery_is_families_of_near_duplicates_that_share_a_caption():
    images = gallery("validation")
    assert len(images) == 200 and [image.index for image in images] == list(range(200))
    families = {}
    for image in images:
        families.setdefault(image.caption, []).append(image.content)
    assert sorted(len(family) for family in families.values()) == [20] * 10
    assert len({image.content for image in images}) == 200
    assert synthetic.generate_scenes("validation") == tuple(
        image.content for image in images
    )  # not the cache: regenerated
    assert gallery("train")[0].caption != images[0].caption and len(gallery("train")) == 400
    for caption, family in families.items():
        bases = [
            scene
            for scene in family
            if all(len(scene_differences(scene, other)) == 1 for other in family if other != scene)
        ]
        assert len(bases) == 1  # the base: every variant differs from it in one attribute
        named = {(group.category, group.count == 1) for scene in family for group in scene.objects if group.main}
        assert {category for category, _ in named} == set(caption_nouns(caption)) and len(named) == len(
            caption_nouns(caption)
        )
    ranker = SceneRanker(images)
    p0 = ranker.percentiles(images, [()] * 200)
    assert np.allclose(p0, 180 / 199)  # the caption alone ties the target with its nineteen family-mates


def test_ranker_is_exactly_reproducible():
    env, other = VisDialEnv(), VisDialEnv()
    runs = [play(e, RandomQuestioner(), seed)[1] for e in (env, other, env) for seed in (3, 4)]
    assert runs[0] == runs[2] == runs[4] and runs[1] == runs[3] == runs[5] and runs[0] != runs[1]
    images = gallery("train")
    dialogues = [(("what color is the dog?", "brown"), ("is it sunny?", "no"))] * 20
    first = SceneRanker(images).percentiles(images[:20], dialogues)
    assert np.array_equal(first, SceneRanker(images).percentiles(images[:20], dialogues))


def test_rank_percentile_counts_ties_against_the_target():
    assert rank_percentile(np.array([3.0, 1.0, 2.0, 3.0]), 0) == pytest.approx(2 / 3)
    assert rank_percentile(np.array([3.0, 1.0, 2.0]), 0) == 1.0 and rank_percentile(np.array([1.0, 1.0]), 0) == 0.0


def test_informative_questions_find_the_image_faster_than_random_ones():
    env = VisDialEnv(split="validation")
    questioners = (InformativeQuestioner(), YesNoQuestioner(), RandomQuestioner())
    turns = {q.name: [play(env, q, seed)[0]["metrics"]["turns"] for seed in range(40)] for q in questioners}
    means = {name: np.mean(t) for name, t in turns.items()}
    assert means["informative"] < means["yes_no"] < means["random"], means
    assert means["random"] >= 8, means


def test_the_informative_questioner_needs_several_turns_but_reaches_the_cutoff():
    env = VisDialEnv(split="validation")
    games = [play(env, InformativeQuestioner(), seed) for seed in range(40)]
    turns = [info["metrics"]["turns"] for info, _ in games]
    assert 2.5 <= np.mean(turns) <= 5 and np.mean([t == 1 for t in turns]) <= 0.25, turns
    assert np.mean([info["metrics"]["reached_cutoff"] for info, _ in games]) >= 0.9
    for info, _ in games:  # it never repeats a question
        questions = [question for question, _ in parse_dialogue_text(info["prompt"])[1]]
        assert len(set(questions)) == len(questions) == info["metrics"]["turns"]


def test_a_repeated_question_gains_nothing():
    env = VisDialEnv(split="validation")
    repeated = 0
    for seed in range(10):
        observation, _ = env.reset(seed=seed)
        question = f"what color is the {caption_nouns(observation)[0]}?"
        _, _, terminated, _, first = env.step(question)
        if not terminated:  # a target whose own change is that colour is found at once
            assert env.step(question)[4]["percentile"] == first["percentile"]
            repeated += 1
    assert repeated >= 5


def test_open_questions_beat_yes_no_questions_and_shared_or_nonsense_ones_do_nothing():
    env = VisDialEnv(split="validation")
    gains = {"open": [], "yes_no": [], "shared": [], "nonsense": []}
    for seed in range(30):
        observation, info = env.reset(seed=seed)
        noun = caption_nouns(observation)[0]
        colour = synthetic.COLORS[seed % len(synthetic.COLORS)]
        for kind, question in (
            ("open", f"what color is the {noun}?"),
            ("yes_no", f"is the {noun} {colour}?"),
            ("shared", f"is there a {noun}?"),
            ("nonsense", "what is the meaning of it all?"),
        ):
            env.reset(seed=seed)
            gains[kind].append(env.step(question)[4]["percentile"] - info["percentile"])
    assert np.mean(gains["open"]) > np.mean(gains["yes_no"]) > 0
    assert gains["shared"] == [0.0] * 30 and gains["nonsense"] == [0.0] * 30


def test_observation_is_the_caption_then_question_and_answer_lines():
    env = VisDialEnv(num_images=10)
    caption, info = env.reset(seed=1)
    assert "\n" not in caption and info["meta"]["image_id"] == info["meta"]["index"]
    noun = caption_nouns(caption)[0]
    observation, *_, info = env.step(f"  what color\nis the {noun}?  ")
    assert (
        observation == f"{caption}\nwhat color is the {noun}?\n{info['answer']}" and info["answer"] in synthetic.COLORS
    )
    assert parse_dialogue_text(observation) == (caption, ((f"what color is the {noun}?", info["answer"]),))


def test_vector_env_ranks_all_games_with_one_call():
    world = ScriptedWorld(ANSWERS, PERCENTILES)
    venv = gymnasium.make_vec(
        "lm_gym/VisDial-v0",
        num_envs=3,
        vectorization_mode="vector_entry_point",
        num_images=10,
        answerer=world,
        ranker=world,
    )
    venv.reset(seed=0)
    world.calls.clear()
    _, rewards, _, _, infos = venv.step(["a?", "b?", "c?"])
    assert world.calls == [3] and rewards.tolist() == [-1.0] * 3 and infos["answer"].tolist() == ["yes"] * 3
    venv.close()


def test_token_level_defaults_and_a_question_in_tokens():
    env = gymnasium.make("lm_gym/VisDial-v0", action_level="token", num_images=10)
    token_env = env.unwrapped
    assert (token_env.max_prompt_length, token_env.max_new_tokens) == (256, 24)
    observation, _ = env.reset(seed=0)
    caption = token_env.tokenizer.decode(observation["prompt_ids"][observation["prompt_mask"] == 1])
    question = f"what color is the {caption_nouns(caption)[0]}?"
    for token in [*token_env.tokenizer(question, add_special_tokens=False)["input_ids"], token_env.eos_token_id]:
        observation, reward, terminated, _, info = env.step(token)
    assert info["answer"] in synthetic.COLORS and info["turn"] == 1 and reward == (0.0 if terminated else -1.0)


def test_demonstrations_are_informative_games():
    pairs = VisDialEnv(num_images=10).demonstrations(num_games=5)
    openings = [question for observation, question in pairs if "\n" not in observation]  # asked on the caption alone
    assert openings == ["what else is in the picture?"] * 5 and len(pairs) > 5
    assert all(question == InformativeQuestioner()(observation) for observation, question in pairs)


# ---- bad arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"source": "hub"}, "source='hub' is not available"),
        ({"source": "web"}, "source must be one of"),
        ({"split": "dev"}, "split must be one of"),
        ({"cutoff": 0.0}, r"cutoff must be a number in \(0, 1\]"),
        ({"cutoff": 1.5}, r"cutoff must be a number in \(0, 1\]"),
        ({"goal_value": float("nan")}, "goal_value must be a finite number"),
        ({"yn_reward_kind": "maybe"}, "yn_reward_kind must be one of"),
        ({"yn_reward": "-2"}, "yn_reward must be a finite number"),
        ({"max_turns": 0}, r"max_turns must be an int in \[1, 20\]"),
        ({"num_images": 5}, r"num_images must be an int in \[10, 5000\]"),
        ({"data_dir": "/tmp"}, "data_dir is only used with source='local'"),
        ({"source": "local"}, "source='local' needs data_dir"),
        ({"answerer": 42}, "answerer must be an object with answer"),
        ({"ranker": "best"}, "ranker must be an object with percentiles"),
        ({"image_features": {0: [1.0]}}, "image_features are sent to the server"),
        ({"server_url": "ftp://example.org"}, "server_url must be an http"),
        ({"server_url": "http://127.0.0.1:9"}, "server_url needs image_features"),
        (
            {"server_url": "http://127.0.0.1:9", "ranker": len, "image_features": {}},
            "either server_url or answerer/ranker",
        ),
        (
            {"server_url": "http://127.0.0.1:9", "num_images": 10, "image_features": {0: [1.0]}},
            "image_features lacks 9 image ids",
        ),
        ({"server_timeout": 0}, "server_timeout must be a finite number"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ConfigurationError, match=match):
        VisDialEnv(**kwargs)


def test_bad_reset_index_and_bad_components_outputs():
    env = VisDialEnv(num_images=10)
    with pytest.raises(ConfigurationError, match=r"options\['index'\] must be an int in \[0, 9\]"):
        env.reset(options={"index": 10})
    env = VisDialEnv(num_images=10, answerer=lambda image, dialogue, question: 3)
    env.reset(seed=0)
    with pytest.raises(ConfigurationError, match="answerer must return a str"):
        env.step("q?")
    with pytest.raises(ConfigurationError, match="ranker must return 1 finite percentiles"):
        VisDialEnv(num_images=10, ranker=lambda images, dialogues: [float("nan")]).reset(seed=0)


# ---- the VisDial release --------------------------------------------------------------------


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


# ---- HTTP world -----------------------------------------------------------------------------


class FakeVisDialServer(BaseHTTPRequestHandler):
    """The visdial-rl protocol: /step_rank -> [answer, delta], /fetch_reward_rank -> p0 or the last delta."""

    requests: ClassVar[list] = []

    def do_POST(self):
        form = urllib.parse.parse_qs(
            self.rfile.read(int(self.headers["Content-Length"])).decode(), keep_blank_values=True
        )
        fields = {key: values[0] for key, values in form.items()}
        self.requests.append((self.path, fields))
        history = json.loads(fields["history"])
        if self.path == "/step_rank":
            reply = [f"answer {len(history)}", 0.125]
        elif self.path == "/fetch_reward_rank":
            reply = 0.5 if not history else 0.125
        else:
            self.send_error(404)
            return
        body = json.dumps(reply).encode() if "broken" not in fields["caption"] else b"<html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    FakeVisDialServer.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeVisDialServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeVisDialServer.requests
    server.shutdown()
    server.server_close()


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_http_world_speaks_the_visdial_rl_protocol(fake_server):
    url, requests = fake_server
    features = {i: [float(i), 1.0] for i in range(10)}
    env = VisDialEnv(num_images=10, server_url=url + "/step_rank", image_features=features)
    observation, info = env.reset(seed=0)
    assert info["percentile"] == 0.5
    path, fields = requests[-1]
    assert path == "/fetch_reward_rank" and json.loads(fields["history"]) == [] and fields["caption"] == observation
    assert json.loads(fields["img_features"]) == features[info["meta"]["image_id"]]
    rewards, percentiles = [], []
    for turn in range(2):
        _, reward, terminated, _, info = env.step(f"question {turn}?")
        rewards.append(reward)
        percentiles.append(info["percentile"])
    assert info["answer"] == "answer 3" and percentiles == [0.625, 0.75] and rewards == [-1.0, 0.0] and terminated
    path, fields = requests[-1]
    assert path == "/step_rank" and json.loads(fields["generation_kwargs"]) == {"inference": "greedy", "beamSize": 1}
    assert json.loads(fields["history"]) == [
        {"speaker": "question", "text": "question 0?"},
        {"speaker": "answer", "text": "answer 1"},
        {"speaker": "question", "text": "question 1?"},
    ]
    assert [p for p, _ in requests] == ["/fetch_reward_rank", "/step_rank", "/step_rank"]  # deltas are remembered


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_http_world_errors_name_the_url(fake_server):
    url, _ = fake_server
    env = VisDialEnv(num_images=10, server_url=url, image_features={i: [0.0] for i in range(10)})
    env.images = (HiddenImage(0, 0, "broken caption"),)  # the fake server answers it with HTML
    with pytest.raises(DataUnavailableError, match=f"{url}/fetch_reward_rank failed"):
        env.reset(seed=0)
    closed = VisDialEnv(
        num_images=10, server_url="http://127.0.0.1:9", image_features={i: [0.0] for i in range(10)}, server_timeout=2
    )
    with pytest.raises(DataUnavailableError, match=r"http://127.0.0.1:9/fetch_reward_rank failed"):
        closed.reset(seed=0)


def test_image_features_from_hdf5(tmp_path):
    path = tmp_path / "features_val.h5"
    try:
        import h5py
    except ImportError:
        with pytest.raises(DataUnavailableError, match=r'needs h5py: pip install "lm-gym\[visdial\]"'):
            load_image_features(path)
        return
    with h5py.File(path, "w") as handle:
        handle["image_id"] = np.array([5, 3])
        handle["features"] = np.array([[[3.0, 0.0], [3.0, 8.0]], [[1.0, 1.0], [1.0, 1.0]]])  # (N, boxes, dim)
    features = load_image_features(path, [3, 5])
    assert np.allclose(features[5], [0.6, 0.8]) and np.allclose(features[3], [2**-0.5, 2**-0.5])
    with pytest.raises(DataUnavailableError, match="no features for 1 image ids"):
        load_image_features(path, [4])


def test_every_split_gets_the_train_splits_tokenizer():
    corpora = [VisDialEnv(split=split).tokenizer_corpus() for split in ("train", "validation", "test")]
    assert len({key for key, _ in corpora}) == 1
    train_captions = {image.caption for image in VisDialEnv(split="train").images}
    assert {text.splitlines()[0] for text in corpora[1][1]} == train_captions
