"""VisDial-v0's synthetic world: the answerer, the gallery of near-duplicates, the ranker, and games in it
(informative questions find the image, repeated or yes/no ones gain less)."""

import gymnasium
import numpy as np
import pytest

from lm_gym.tasks.visdial import VisDialEnv, synthetic
from lm_gym.tasks.visdial.dialogue import parse_dialogue_text
from lm_gym.tasks.visdial.policies import InformativeQuestioner, RandomQuestioner, YesNoQuestioner, caption_nouns
from lm_gym.tasks.visdial.synthetic import Scene, SceneObject, SceneRanker, answer_question, gallery
from lm_gym.tasks.visdial.world import rank_percentile


def play(env, questioner, seed):
    """One game; returns the final info and the percentiles after each turn."""
    questioner.seed(seed)
    observation, info = env.reset(seed=seed)
    percentiles, terminated = [info["percentile"]], False
    while not terminated:
        observation, _, terminated, _, info = env.step(questioner(observation))
        percentiles.append(info["percentile"])
    return info, percentiles


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
