"""The Reddit task's rewards on hand-checked inputs: the toxicity scorers (lexicons, a tiny
``transformers`` classifier saved here), noised toxicity, real and model upvotes."""

import sys

import numpy as np
import pytest
import torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification

from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.core.tokenizer import train_tokenizer
from lm_gym.rewards.toxicity import ClassifierToxicityScorer, LexiconToxicityScorer, ToxicityReward
from lm_gym.rewards.upvotes import UpvotesModelReward, UpvotesRealReward


def test_lexicon_levels_match_whole_words_and_phrases():
    scorer = LexiconToxicityScorer(["jerk", "blow hard", "f-u-c-k"], ["election", "jerk"])
    texts = [
        "Have a nice day.",
        "Who won the ELECTION?",
        "You JERK, who won the election?",  # unsafe wins over sensitive, in either list
        "jerky selections",  # whole words only
        "what a blow-hard",  # a phrase matches whatever separates its words
        "blow it hard",
        "f u c k.",
        "",
    ]
    assert scorer.levels(texts).tolist() == [0, 1, 2, 0, 2, 0, 2, 0]
    assert scorer.levels([]).shape == (0,)


def test_profanity_lexicon_levels():
    pytest.importorskip("better_profanity")
    scorer = LexiconToxicityScorer.profanity()
    cases = {
        "Thanks, that recipe worked great.": 0,
        "What a load of bullshit.": 2,
        "Stop being such a MORON": 2,
        "You are f.u.c.k.i.n.g kidding": 2,  # the list's "f-u-c-k", whatever separates the letters
        "fcuk": 2,  # a misspelling the list holds
        "fvkc": 0,  # one it does not
        "blow job": 2,  # a two-word entry
        "The election is next week.": 1,  # lm-gym's sensitive topics
        "Oh god, not again.": 1,  # a list entry demoted to sensitive
        "The church organ was loud.": 1,  # "organ" is harmless; "church" sensitive
        "The organ recital was loud.": 0,
        "Scunthorpe is a town; this class is hard.": 0,  # no word inside another word
        "sh happens": 0,  # "sh!t"-style entries are left out, so "sh" alone is not flagged
    }
    assert scorer.levels(list(cases)).tolist() == list(cases.values())


def test_profanity_lexicon_reads_ordinary_senses_in_their_fixed_expressions():
    pytest.importorskip("better_profanity")
    scorer = LexiconToxicityScorer.profanity()
    ordinary = [
        "Homo sapiens evolved in Africa.",
        "Good oral health starts with brushing.",
        "The oral history project recorded veterans.",
        "Cotton was picked with slave labor.",
        "The slave trade was abolished in 1807.",
        "He felt sick and started to vomit.",
        "Hand me the screw driver.",
        "A blue tit nested by the door knob.",
        "Moby Dick is a long novel about a sperm whale.",
        "Use extra virgin olive oil.",
        "The woodpecker and the wood pecker differ by a space.",
    ]
    assert scorer.levels(ordinary).tolist() == [0] * len(ordinary)
    # the same words outside those expressions keep their level; an expression does not clean its neighbours
    offensive = ["Shut up, you homo.", "Screw you.", "What a dick.", "Homo sapiens, you moron.", "oral sex"]
    assert scorer.levels(offensive).tolist() == [2, 2, 2, 2, 2]
    assert scorer.levels(["The penis and the vagina are organs.", "Clinical rectum exam"]).tolist() == [
        1,
        1,
    ]  # anatomy: sensitive


def test_safe_expressions_are_whole_phrases_at_word_boundaries():
    scorer = LexiconToxicityScorer(["homo"], [], safe_expressions=["homo sapiens"])
    assert scorer.levels(
        ["homo sapiens", "homo-sapiens!", "homo sapien", "sapiens homo", "homos sapiens"]
    ).tolist() == [0, 0, 2, 2, 0]


def test_profanity_lexicon_without_better_profanity_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "better_profanity", None)  # import better_profanity now fails
    with pytest.raises(DataUnavailableError, match=r'pip install "lm-gym\[reddit\]"'):
        LexiconToxicityScorer.profanity()


@pytest.fixture(scope="module")
def toxicity_classifier_dirs(tmp_path_factory):
    """Two tiny saved classifiers: single-label ``nothate``/``hate`` and multi-label ``toxic``/``insult``."""
    tokenizer = train_tokenizer(
        ["you are kind", "you are a jerk", "what a nice day"] * 5, "tiny-toxicity", vocab_size=300
    )
    dirs = {}
    for kind, labels, problem_type in (
        ("single", {0: "nothate", 1: "hate"}, "single_label_classification"),
        ("multi", {0: "insult", 1: "toxic", 2: "threat"}, "multi_label_classification"),
    ):
        folder = tmp_path_factory.mktemp(kind)
        tokenizer.save_pretrained(folder)
        torch.manual_seed(0)
        config = DistilBertConfig(
            vocab_size=len(tokenizer),
            dim=16,
            hidden_dim=32,
            n_layers=1,
            n_heads=2,
            pad_token_id=tokenizer.pad_token_id,
            id2label=labels,
            label2id={v: k for k, v in labels.items()},
            problem_type=problem_type,
        )
        DistilBertForSequenceClassification(config).save_pretrained(folder)
        dirs[kind] = folder
    return dirs


def test_classifier_toxic_label_and_probabilities(toxicity_classifier_dirs):
    texts = ["you are a jerk", "what a nice day"]
    single = ClassifierToxicityScorer(str(toxicity_classifier_dirs["single"]), device="cpu")
    assert single.toxic_index == 1 and not single.multi_label  # the label named "hate"
    probabilities = single.classifier.probabilities(texts)
    assert np.allclose(single.probabilities(texts), probabilities[:, 1]) and np.allclose(probabilities.sum(-1), 1)

    multi = ClassifierToxicityScorer(str(toxicity_classifier_dirs["multi"]), device="cpu")
    assert multi.toxic_index == 1 and multi.multi_label  # "toxic", not the first label
    model = DistilBertForSequenceClassification.from_pretrained(toxicity_classifier_dirs["multi"]).eval()
    with torch.inference_mode():
        logits = model(**multi.classifier.tokenizer(texts, return_tensors="pt", padding=True)).logits
    assert np.allclose(
        multi.probabilities(texts), torch.sigmoid(logits[:, 1]).numpy(), atol=1e-6
    )  # a sigmoid per label
    assert (
        ClassifierToxicityScorer(str(toxicity_classifier_dirs["multi"]), toxic_label="THREAT", device="cpu").toxic_index
        == 2
    )
    assert (
        ClassifierToxicityScorer(str(toxicity_classifier_dirs["multi"]), toxic_label=0, device="cpu").toxic_index == 0
    )
    with pytest.raises(ConfigurationError, match="toxic_label='spam' matches none of the toxicity classifier's labels"):
        ClassifierToxicityScorer(str(toxicity_classifier_dirs["multi"]), toxic_label="spam", device="cpu")


def test_classifier_levels_follow_the_thresholds(toxicity_classifier_dirs, monkeypatch):
    scorer = ClassifierToxicityScorer(str(toxicity_classifier_dirs["single"]), device="cpu")
    monkeypatch.setattr(scorer, "probabilities", lambda texts: np.array([0.0, 0.49, 0.5, 0.89, 0.9, 1.0]))
    assert scorer.levels(["t"] * 6).tolist() == [0, 0, 1, 1, 2, 2]


class FixedLevels:
    def __init__(self, levels):
        self.values = np.array(levels)

    def levels(self, texts):
        return self.values[: len(texts)]


def test_noised_toxicity_redraws_level_one_from_the_seed():
    plain = ToxicityReward(FixedLevels([0, 1, 2]))
    assert plain([""] * 3, ["a", "b", "c"], None, None).tolist() == [0.0, 1.0, 2.0]
    noised = ToxicityReward(FixedLevels([1] * 400), noised=True)
    meta = [{"reward_seed": seed} for seed in range(400)]
    first = noised([""] * 400, ["t"] * 400, None, meta)
    assert set(first.tolist()) == {0.0, 2.0} and 0.4 < np.mean(first == 2.0) < 0.6
    assert np.array_equal(noised([""] * 400, ["t"] * 400, None, meta), first)  # the same seeds, the same draws
    assert ToxicityReward(FixedLevels([0, 2]), noised=True)(["", ""], ["a", "b"], None, [{}, {}]).tolist() == [0.0, 2.0]
    with pytest.raises(ConfigurationError, match=r"noised toxicity needs meta\[0\]\['reward_seed'\]"):
        noised([""], ["t"], None, [{}])


def test_upvotes_real_scores_dataset_comments_and_flags_other_text():
    reward = UpvotesRealReward(["Great tip!", "Meh.", "Wrong.", "lol", "lol"], [12, 0, -3, 5, -1])
    texts = ["Great tip!", "Meh.", "Wrong.", "Something new", "great tip!"]
    assert reward([""] * 5, texts, None, [{}] * 5).tolist() == [1.0, -1.0, -1.0, 0.0, 0.0]  # exact text only
    assert reward.known(texts).tolist() == [True, True, True, False, False]
    assert UpvotesRealReward(["a"], [1], unknown_reward=-1.0)([""], ["b"]).tolist() == [-1.0]
    # a text with several scores takes one of them, drawn from the episode's seed
    draws = reward([""] * 200, ["lol"] * 200, None, [{"reward_seed": seed} for seed in range(200)])
    assert set(draws.tolist()) == {1.0, -1.0}
    assert reward([""], ["lol"], None, [{"reward_seed": 7}])[0] == draws[7]
    with pytest.raises(ConfigurationError, match="several real scores needs"):
        reward([""], ["lol"], None, [{}])
    with pytest.raises(ConfigurationError, match="one score per text"):
        UpvotesRealReward(["a", "b"], [1])


def test_upvotes_model_is_a_cached_classifier_of_score_above_zero():
    texts = [f"you should try the {thing}, it works" for thing in ("pan", "oven", "grill", "wok")] * 10 + [
        "lol",
        "first!",
        "this",
        "ok",
    ] * 10
    scores = [8] * 40 + [-2] * 40
    reward = UpvotesModelReward.trained_on(texts, scores, "test-upvotes")
    assert reward(["", ""], ["you should try the kettle, it works", "lol"]).tolist() == [1.0, 0.0]
    assert reward.probabilities(["first!"])[0] < 0.5
    again = UpvotesModelReward.trained_on(texts, scores, "test-upvotes")  # loaded from the cache
    assert np.allclose(again.probabilities(texts), reward.probabilities(texts))
