"""Synthetic IMDB-style movie reviews with sentiment labels, generated offline.

``generate_reviews(split)`` returns ``(review_text, label)`` pairs (label 1 = positive,
0 = negative) that stand in for the real IMDB dataset when it cannot be downloaded. The
output is deterministic per split (each split has its own fixed seed) and balanced.

Each review is 6 to 12 sentences (about 80 to 220 words) of plain printable ASCII:

* neutral sentences: an opening (who watched which film, or genre and director), a plot
  summary (a character, their occupation, what happens to them) and production facts;
* opinion sentences about aspects of the film (acting, script, pacing, ...), built from
  structurally parallel positive and negative templates with disjoint sentiment words.
  Three first impressions follow the opening, so that the first half of a review (the
  environment's prompt) already hints at its sentiment; the others are spread over the
  rest of the review;
* a closing verdict that matches the label.

A positive review draws each opinion positive with a per-review probability between 0.65
and 0.95 (negative reviews symmetrically), so some reviews are mixed and a classifier
trained on them gives graded probabilities. About one review in seven also contains a
negated phrase ("not bad at all", "not worth your time"), which only word pairs resolve.
A bag-of-n-grams classifier trained on ``train`` separates the classes well, which makes
it a usable offline reward for steering a language model towards positive text.
"""

from __future__ import annotations

import random

from lm_gym.tasks.english import with_article
from lm_gym.tasks.imdb.synthetic_words import (
    ADJECTIVE_TEMPLATES,
    ASPECTS,
    COMPANIONS,
    FACTS,
    FESTIVALS,
    FIRST_NAMES,
    GENRES,
    INTENSIFIERS,
    LAST_NAMES,
    NEGATED_TEMPLATES,
    NEGATIVE_ADJECTIVES,
    NEGATIVE_VERDICTS,
    OCCUPATIONS,
    OPENINGS,
    ORDINALS,
    PHRASE_TEMPLATES,
    PLACES,
    PLOT_EVENTS,
    PLOTS,
    POSITIVE_ADJECTIVES,
    POSITIVE_VERDICTS,
    RATINGS,
    REASONS,
    RELATIONS,
    SETTINGS,
    SOURCES,
    TITLE_ADJECTIVES,
    TITLE_NOUNS,
    WHENS,
    WHERES,
)
from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 4000, "validation": 500, "test": 1000}

MIN_WORDS, MAX_WORDS = 80, 220
MIN_SENTENCES, MAX_SENTENCES = 6, 12
OPINION_AGREEMENT = (0.65, 0.95)  # range of the per-review P(opinion matches the label)
NEGATION_RATE = 0.15  # share of reviews with one negated opinion


def generate_reviews(split: str, num_reviews: int | None = None) -> list[tuple[str, int]]:
    """(review_text, label) pairs, label 1 = positive, 0 = negative; deterministic per split.

    ``num_reviews`` defaults to ``SPLIT_SIZES[split]``; a shorter request is a prefix of the
    full split. Labels come in shuffled positive/negative pairs, so an even count is
    exactly balanced.
    """
    num_reviews, rng = split_request("imdb", split, num_reviews, SPLIT_SIZES, "num_reviews")
    reviews: list[tuple[str, int]] = []
    while len(reviews) < num_reviews:
        pair = [1, 0]
        rng.shuffle(pair)
        reviews.extend((_review(rng, label), label) for label in pair)
    return reviews[:num_reviews]


def _review(rng: random.Random, label: int) -> str:
    """One review of ``label``, redrawn until its length is within [MIN_WORDS, MAX_WORDS]."""
    while True:
        text = " ".join(_sentences(rng, label))
        if MIN_WORDS <= len(text.split()) <= MAX_WORDS:
            return text


def _sentences(rng: random.Random, label: int) -> list[str]:
    fields = _review_fields(rng, label)
    num_sentences = rng.randint(MIN_SENTENCES, MAX_SENTENCES)
    body_size = num_sentences - 3  # all but the opening, the plot and the verdict
    num_opinions = max(3, round(body_size * rng.uniform(0.6, 0.9)))
    agreement = rng.uniform(*OPINION_AGREEMENT)
    polarities = [label if rng.random() < agreement else 1 - label for _ in range(num_opinions)]
    opinions = _opinions(rng, polarities, fields)
    if rng.random() < NEGATION_RATE:
        opinions[-1] = _negated_opinion(rng, polarities[-1], fields)
    facts = [template.format(**fields) for template in rng.sample(FACTS, body_size - num_opinions)]

    # First impressions (three opinions) follow the opening, so the first half of the review
    # hints at its sentiment; the rest of the body is shuffled to spread opinions out.
    rest = opinions[3:] + facts
    rng.shuffle(rest)
    opening = rng.choice(OPENINGS).format(**fields)
    plot = rng.choice(PLOTS).format(**fields)
    start = [opening, *opinions[:3], plot]
    verdicts = POSITIVE_VERDICTS if label == 1 else NEGATIVE_VERDICTS
    return start + rest + [rng.choice(verdicts).format(**fields)]


def _review_fields(rng: random.Random, label: int) -> dict[str, str]:
    """The neutral facts of one review, shared by all its sentences."""
    # distinct first names, so that no two people of one review share one
    first_name, *other_first_names = rng.sample(FIRST_NAMES, 5)
    director, name, name2, author = (f"{first} {rng.choice(LAST_NAMES)}" for first in other_first_names)
    genre = rng.choice(GENRES)
    return {
        "title": _title(rng),
        "genre": genre,
        "a_genre": with_article(genre),
        "director": director,
        "character": first_name,
        "character_full": f"{first_name} {rng.choice(LAST_NAMES)}",
        "a_occupation": with_article(rng.choice(OCCUPATIONS)),
        "event": rng.choice(PLOT_EVENTS),
        "companion": rng.choice(COMPANIONS),
        "when": rng.choice(WHENS),
        "where": rng.choice(WHERES),
        "reason": rng.choice(REASONS).format(name=name),
        "name": name,
        "name2": name2,
        "year": str(rng.randint(1985, 2023)),
        "minutes": str(rng.randint(85, 165)),
        "weeks": str(rng.randint(5, 14)),
        "budget": str(rng.randint(2, 90)),
        "place": rng.choice(PLACES),
        "setting": rng.choice(SETTINGS),
        "source": rng.choice(SOURCES).format(name=author),
        "festival": rng.choice(FESTIVALS),
        "relation": rng.choice(RELATIONS),
        "ordinal": rng.choice(ORDINALS),
        "rating": rng.choice(RATINGS[label]),
    }


def _opinions(rng: random.Random, polarities: list[int], fields: dict[str, str]) -> list[str]:
    """One opinion sentence per polarity, each about a different aspect and template."""
    aspects = rng.sample(ASPECTS, len(polarities))
    num_templates = len(ADJECTIVE_TEMPLATES) + len(PHRASE_TEMPLATES)
    template_ids = rng.sample(range(num_templates), len(polarities))
    sentences = []
    for polarity, aspect, template_id in zip(polarities, aspects, template_ids):
        if template_id < len(ADJECTIVE_TEMPLATES):
            template = ADJECTIVE_TEMPLATES[template_id]
        else:
            positive, negative = PHRASE_TEMPLATES[template_id - len(ADJECTIVE_TEMPLATES)]
            template = positive if polarity == 1 else negative
        sentences.append(template.format(**fields, **_aspect_fields(rng, polarity, aspect)))
    return sentences


def _negated_opinion(rng: random.Random, polarity: int, fields: dict[str, str]) -> str:
    positive, negative = rng.choice(NEGATED_TEMPLATES)
    template = positive if polarity == 1 else negative
    return template.format(**fields, **_aspect_fields(rng, polarity, rng.choice(ASPECTS)))


def _aspect_fields(rng: random.Random, polarity: int, aspect: tuple[str, bool]) -> dict[str, str]:
    noun, plural = aspect
    adjectives = POSITIVE_ADJECTIVES if polarity == 1 else NEGATIVE_ADJECTIVES
    return {
        "aspect": noun,
        "was": "were" if plural else "was",
        "is": "are" if plural else "is",
        "adj": rng.choice(adjectives),
        "int": rng.choice(INTENSIFIERS),
    }


def _title(rng: random.Random) -> str:
    if rng.random() < 0.6:
        return f"The {rng.choice(TITLE_ADJECTIVES)} {rng.choice(TITLE_NOUNS)}"
    first, second = rng.sample(TITLE_NOUNS, 2)
    return f"{first} of the {second}"
