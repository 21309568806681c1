"""Synthetic CommonGen, CNN/DailyMail and DailyDialog generators: API, determinism, structure."""

import collections
import functools
import hashlib
import itertools
import json
import os
import random
import re
import subprocess
import sys

import pytest

from lm_gym.tasks.cnn_dailymail import synthetic as cnn_dailymail
from lm_gym.tasks.commongen import synthetic as commongen
from lm_gym.tasks.dailydialog import labels
from lm_gym.tasks.dailydialog import synthetic as dailydialog

GENERATORS = {
    "commongen": (commongen, commongen.generate_concept_sets),
    "cnn_dailymail": (cnn_dailymail, cnn_dailymail.generate_articles),
    "dailydialog": (dailydialog, dailydialog.generate_dialogues),
}


@functools.cache
def full_split(task: str, split: str):
    return GENERATORS[task][1](split)


def texts_of(task: str, item) -> list[str]:
    if task == "commongen":
        concepts, scenes = item
        return [*concepts, *scenes]
    if task == "cnn_dailymail":
        article, highlights, _ = item
        return [article, *highlights.split("\n")]
    return [utterance for utterance, _, _ in item]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


# --- all three generators ------------------------------------------------------------


@pytest.mark.parametrize("task", GENERATORS)
def test_sizes_determinism_and_prefixes(task):
    module, generate = GENERATORS[task]
    assert set(module.SPLIT_SIZES) == {"train", "validation", "test"}
    for split, size in module.SPLIT_SIZES.items():
        items = full_split(task, split)
        assert len(items) == size
        assert generate(split, 25) == items[:25]  # a shorter request is a prefix
    assert generate("validation", 40) == generate("validation", 40)
    assert generate("train", 40) != generate("test", 40)
    assert generate("test", 0) == []


@pytest.mark.parametrize("task", GENERATORS)
def test_texts_are_printable_ascii_with_single_spaces(task):
    for split in ("train", "validation"):
        for item in full_split(task, split):
            for text in texts_of(task, item):
                assert text and text.isascii() and text.isprintable(), text
                assert text == " ".join(text.split()), text


@pytest.mark.parametrize("task", GENERATORS)
@pytest.mark.parametrize(
    "split, count", [("dev", None), ("Train", 3), ("train", -1), ("train", 2.0), ("train", True), ("train", "5")]
)
def test_bad_split_or_count_raises(task, split, count):
    with pytest.raises(ValueError):
        GENERATORS[task][1](split, count)


def test_deterministic_across_processes():
    # each generator loaded afresh by path (the word tables it imports come from the package)
    code = (
        "import hashlib, importlib.util, json, sys\n"
        "def load(name, path):\n"
        "    spec = importlib.util.spec_from_file_location(name, path)\n"
        "    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look it up\n"
        "    spec.loader.exec_module(module)\n"
        "    return module\n"
        "a, b, c = (load(f'synthetic{i}', path) for i, path in enumerate(sys.argv[1:]))\n"
        "data = [a.generate_concept_sets('test', 20), b.generate_articles('test', 20), "
        "c.generate_dialogues('test', 20)]\n"
        "print(hashlib.sha256(json.dumps(data).encode()).hexdigest())\n"
    )
    paths = [module.__file__ for module in (commongen, cnn_dailymail, dailydialog)]
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    result = subprocess.run([sys.executable, "-c", code, *paths], env=env, capture_output=True, text=True, check=True)
    data = [
        commongen.generate_concept_sets("test", 20),
        cnn_dailymail.generate_articles("test", 20),
        dailydialog.generate_dialogues("test", 20),
    ]
    assert result.stdout.strip() == hashlib.sha256(json.dumps(data).encode()).hexdigest()


# --- CommonGen -----------------------------------------------------------------------

IRREGULAR_FORMS = {
    "throw": {"threw", "thrown"},
    "catch": {"caught"},
    "eat": {"ate", "eaten"},
    "drink": {"drank", "drunk"},
    "ride": {"rode", "ridden"},
    "write": {"wrote", "written"},
    "swim": {"swam", "swum"},
    "run": {"ran"},
    "dig": {"dug"},
    "feed": {"fed"},
    "sing": {"sang", "sung"},
    "sit": {"sat"},
    "stand": {"stood"},
    "hold": {"held"},
    "fly": {"flew", "flown"},
    "sell": {"sold"},
    "buy": {"bought"},
    "drive": {"drove", "driven"},
    "sweep": {"swept"},
    "sleep": {"slept"},
    "wear": {"wore", "worn"},
    "build": {"built"},
    "teach": {"taught"},
    "man": {"men"},
    "woman": {"women"},
    "child": {"children"},
}


def inflections(lemma: str) -> set[str]:
    """The lemma and its plausible regular and irregular English inflections."""
    forms = {lemma, lemma + "s", lemma + "es", lemma + "d", lemma + "ed", lemma + "ing"}
    forms |= {lemma + lemma[-1] + "ed", lemma + lemma[-1] + "ing"}  # cut -> cutting
    if lemma.endswith("e"):
        forms.add(lemma[:-1] + "ing")
    if lemma.endswith("y"):
        forms |= {lemma[:-1] + "ies", lemma[:-1] + "ied"}
    if lemma.endswith(("f", "fe")):
        forms.add(lemma.rstrip("e")[:-1] + "ves")  # knife -> knives, scarf -> scarves
    return forms | IRREGULAR_FORMS.get(lemma, set())


def concept_order(concepts, scene: str) -> tuple[str, ...]:
    tokens = words(scene)
    first = {c: min(i for i, token in enumerate(tokens) if token in inflections(c)) for c in concepts}
    return tuple(sorted(concepts, key=first.get))


def test_commongen_every_scene_uses_every_concept():
    for split in commongen.SPLIT_SIZES:
        for concepts, scenes in full_split("commongen", split):
            assert 3 <= len(concepts) <= 5 and concepts == tuple(sorted(set(concepts)))
            assert all(re.fullmatch(r"[a-z]+", concept) for concept in concepts)
            assert 1 <= len(scenes) <= 5 and len(set(scenes)) == len(scenes)
            for scene in scenes:
                assert 8 <= len(scene.split()) <= 20 and scene[0].isupper() and scene.endswith("."), scene
                tokens = set(words(scene))
                assert all(tokens & inflections(concept) for concept in concepts), (concepts, scene)


def test_commongen_statistics():
    train = full_split("commongen", "train")
    sizes = collections.Counter(len(concepts) for concepts, _ in train)
    assert (
        0.33 < sizes[3] / len(train) < 0.47
        and 0.28 < sizes[4] / len(train) < 0.42
        and 0.18 < sizes[5] / len(train) < 0.32
    )
    assert len({concepts for concepts, _ in train}) == len(train)
    assert 2.7 < sum(len(scenes) for _, scenes in train) / len(train) < 3.3
    train_sets = {concepts for concepts, _ in train}
    for split in ("validation", "test"):
        items = full_split("commongen", split)
        assert 3.7 < sum(len(scenes) for _, scenes in items) / len(items) < 4.3
        assert not train_sets & {concepts for concepts, _ in items}  # unseen sets, as in the release
    # the concepts come in varied orders across the scenes of a set
    multi = [(concepts, scenes) for concepts, scenes in train if len(scenes) > 1]
    varied = sum(len({concept_order(concepts, scene) for scene in scenes}) > 1 for concepts, scenes in multi)
    assert varied / len(multi) > 0.4
    # a small world: a few hundred words
    vocabulary = {word for _, scenes in train for scene in scenes for word in words(scene)}
    assert 300 < len(vocabulary) < 1200


# --- CNN/DailyMail -------------------------------------------------------------------

SENTENCE_END = re.compile(r'(?:(?<=[.!?])|(?<=[.!?]"))\s+(?=[A-Z"(0-9])')  # not after ',"'


def test_cnn_dailymail_articles_and_highlights():
    ids = set()
    for split in cnn_dailymail.SPLIT_SIZES:
        for article, highlights, article_id in full_split("cnn_dailymail", split):
            assert re.fullmatch(r"[0-9a-f]{40}", article_id)
            ids.add(article_id)
            assert "\n" not in article and 120 <= len(article.split()) <= 260
            assert 8 <= len(SENTENCE_END.split(article)) <= 16
            lines = highlights.split("\n")
            assert 2 <= len(lines) <= 4
            article_words = set(words(article))
            for line in lines:
                assert 8 <= len(line.split()) <= 18 and not line[0].islower() and line.endswith("."), line
                line_words = words(line)
                assert sum(word in article_words for word in line_words) / len(line_words) >= 0.9, line
    assert len(ids) == sum(cnn_dailymail.SPLIT_SIZES.values())


def test_cnn_dailymail_key_facts_lead_but_not_only():
    articles = full_split("cnn_dailymail", "train")
    late = total = 0
    for article, highlights, _ in articles:
        lead3_words = set(words(" ".join(SENTENCE_END.split(article)[:3])))
        lines = highlights.split("\n")
        coverage = [sum(word in lead3_words for word in words(line)) / len(words(line)) for line in lines]
        assert coverage[0] > 0.9  # the first highlight restates the lead
        late += sum(c < 0.6 for c in coverage)
        total += len(lines)
    assert 0.2 < late / total < 0.6


def test_cnn_dailymail_highlights_follow_from_the_genre():
    # the same genre always highlights the same key sentences: the target is a function of the article
    rng = random.Random(0)
    for name, genre in cnn_dailymail.GENRES.items():
        assert genre.highlighted[0] == "lead" and set(genre.highlighted) <= {"lead", "detail", "extra", "late"}
        for _ in range(30):
            article, highlights = cnn_dailymail._story(rng, genre)
            assert len(highlights) == len(genre.highlighted), name
            sentences = SENTENCE_END.split(article.removeprefix("(CNN) -- "))
            late_words = set(
                words(" ".join(sentences[cnn_dailymail.EXTRA_POSITIONS[-1] + 1 :]))
            )  # the late fact's part
            restates_late = any(set(words(line)) <= late_words for line in highlights)
            assert restates_late == ("late" in genre.highlighted), (name, article, highlights)


def test_cnn_dailymail_lead3_rouge():
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    scores = [
        scorer.score(highlights, "\n".join(SENTENCE_END.split(article)[:3]))["rouge1"].fmeasure
        for article, highlights, _ in full_split("cnn_dailymail", "validation")
    ]
    assert 0.35 < sum(scores) / len(scores) < 0.65


# --- DailyDialog ---------------------------------------------------------------------

COMMISSIVE_MARKERS = re.compile(r"\bi(?:'ll| will)\b|\bi promise\b")
DIRECTIVE_STARTS = {
    "please",
    "let's",
    "don't",
    "take",
    "bring",
    "show",
    "turn",
    "drink",
    "come",
    "ask",
    "tell",
    "call",
    "try",
    "give",
    "go",
    "wait",
    "remember",
    "keep",
    "send",
}


def guessed_act(utterance: str) -> int:
    """A rule-based act classifier: the acts must be recognizable from the text alone."""
    text = utterance.lower()
    if text.endswith("?"):
        return 2
    if COMMISSIVE_MARKERS.search(text):
        return 4
    sentence_starts = {part.split()[0].strip(",.!") for part in re.split(r"(?<=[.!,])\s+", text)}
    if sentence_starts & DIRECTIVE_STARTS or "please" in text or "you should" in text:
        return 3
    return 1


def test_dailydialog_labels_and_utterances():
    assert labels.ACTS == {1: "inform", 2: "question", 3: "directive", 4: "commissive"}
    assert labels.EMOTIONS == {
        0: "no emotion",
        1: "anger",
        2: "disgust",
        3: "fear",
        4: "happiness",
        5: "sadness",
        6: "surprise",
    }
    for split in dailydialog.SPLIT_SIZES:
        for dialogue in full_split("dailydialog", split):
            assert 4 <= len(dialogue) <= 10
            utterances, acts, emotions = zip(*dialogue)  # one act and one emotion per utterance
            assert len(utterances) == len(acts) == len(emotions) == len(dialogue)
            for utterance, act, emotion in dialogue:
                assert isinstance(utterance, str) and act in labels.ACTS and emotion in labels.EMOTIONS
                assert 3 <= len(utterance.split()) <= 20
                assert "<EOU>" not in utterance and "__eou__" not in utterance
                assert utterance.endswith("?") == (act == 2), utterance


def test_dailydialog_acts_are_recognizable_and_predictable():
    turns = [turn for dialogue in full_split("dailydialog", "train") for turn in dialogue]
    correct = sum(guessed_act(utterance) == act for utterance, act, _ in turns)
    assert correct / len(turns) > 0.95

    transitions = collections.defaultdict(collections.Counter)
    for dialogue in full_split("dailydialog", "train"):
        for (_, act, _), (_, next_act, _) in itertools.pairwise(dialogue):
            transitions[act][next_act] += 1

    def p(next_act, act):
        return transitions[act][next_act] / sum(transitions[act].values())

    assert p(1, 2) > 0.75  # a question is answered
    assert p(4, 3) > 0.65  # a directive is accepted
    assert p(2, 1) + p(1, 1) > 0.7  # an inform is followed by a question or an inform
    assert p(1, 4) + p(2, 4) > 0.75  # a commissive by thanks or a question


def test_dailydialog_emotions_are_mostly_neutral():
    emotions = collections.Counter(
        emotion for dialogue in full_split("dailydialog", "train") for _, _, emotion in dialogue
    )
    total = sum(emotions.values())
    assert 0.7 < emotions[0] / total < 0.92
    assert 0.08 < emotions[4] / total < 0.22
    assert set(emotions) == set(labels.EMOTIONS)  # every emotion occurs, the rare ones rarely
    assert all(emotions[emotion] / total < 0.05 for emotion in (1, 2, 3, 5, 6))
