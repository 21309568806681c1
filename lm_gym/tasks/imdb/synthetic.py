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

from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 4000, "validation": 500, "test": 1000}

MIN_WORDS, MAX_WORDS = 80, 220
MIN_SENTENCES, MAX_SENTENCES = 6, 12
OPINION_AGREEMENT = (0.65, 0.95)  # range of the per-review P(opinion matches the label)
NEGATION_RATE = 0.15  # share of reviews with one negated opinion

# --- neutral vocabulary --------------------------------------------------------------

TITLE_ADJECTIVES = (
    "Silent",
    "Last",
    "Crimson",
    "Hidden",
    "Distant",
    "Frozen",
    "Scarlet",
    "Midnight",
    "Northern",
    "Secret",
    "Wandering",
    "Iron",
    "Paper",
    "Electric",
    "Quiet",
    "Seventh",
)
TITLE_NOUNS = (
    "Harbor",
    "Garden",
    "Mirror",
    "Winter",
    "Signal",
    "Orchard",
    "Frontier",
    "Lantern",
    "Tide",
    "Archive",
    "Compass",
    "Station",
    "Valley",
    "Crown",
    "Letter",
    "Engine",
)
FIRST_NAMES = (
    "Anna",
    "Marcus",
    "Lena",
    "David",
    "Sofia",
    "Thomas",
    "Maya",
    "Daniel",
    "Clara",
    "Victor",
    "Nora",
    "Samuel",
    "Iris",
    "Oscar",
    "Ruth",
    "Felix",
    "Alice",
    "Henry",
    "Julia",
    "Leo",
)
LAST_NAMES = (
    "Becker",
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Alvarez",
    "Novak",
    "Brennan",
    "Castillo",
    "Hughes",
    "Kowalski",
    "Patel",
    "Russo",
    "Whitfield",
    "Ibsen",
    "Sato",
    "Drummond",
    "Fischer",
    "Mendes",
    "Quinn",
)
GENRES = (
    "drama",
    "thriller",
    "comedy",
    "horror",
    "science fiction",
    "western",
    "mystery",
    "romance",
    "war",
    "crime",
    "fantasy",
    "musical",
    "action",
    "adventure",
    "animated",
    "period",
    "sports",
)
OCCUPATIONS = (
    "retired detective",
    "night-shift nurse",
    "struggling musician",
    "small-town lawyer",
    "marine biologist",
    "school teacher",
    "taxi driver",
    "young architect",
    "former boxer",
    "lighthouse keeper",
    "journalist",
    "chef",
    "pilot",
    "farmer",
    "librarian",
    "mechanic",
    "photographer",
    "stage actor",
    "bank clerk",
    "archaeologist",
    "software engineer",
)
PLOT_EVENTS = (
    "inherits a house full of secrets",
    "is drawn into a bank robbery",
    "tries to reunite with an estranged brother",
    "discovers a letter hidden for forty years",
    "agrees to take on one last job",
    "takes in a runaway teenager",
    "investigates a string of disappearances",
    "falls for a rival from the next town",
    "loses everything in a single night",
    "returns home for a funeral",
    "witnesses a crime that nobody else believes happened",
    "signs up for a cross-country race",
    "is stranded on a remote island",
    "starts receiving messages from the future",
    "has to protect a key witness",
    "trains a team of misfits for a championship",
    "searches for a missing daughter",
    "uncovers a conspiracy at work",
    "swaps lives with a stranger",
    "tries to save the family farm",
    "hears a mysterious voice on the radio every night",
)
COMPANIONS = (
    "a friend",
    "my sister",
    "my brother",
    "my partner",
    "my parents",
    "a couple of friends",
    "my roommate",
    "my dad",
    "my mom",
    "some coworkers",
)
WHENS = ("last weekend", "on Friday night", "yesterday", "over the holidays", "on a rainy Sunday", "last night")
WHERES = (
    "at the cinema",
    "on a streaming service",
    "at a film festival",
    "on a long flight",
    "at home",
    "on DVD",
    "at a local theater",
)
REASONS = (
    "mostly because of the trailer",
    "on the recommendation of a coworker",
    "knowing almost nothing about it",
    "after reading about it in a magazine",
    "since it was the only thing showing",
    "because {name} is in it",
)
PLACES = (
    "Iceland",
    "Morocco",
    "Vancouver",
    "rural Ireland",
    "New Mexico",
    "Lisbon",
    "Scotland",
    "Budapest",
    "northern Japan",
    "Chile",
)
SETTINGS = (
    "a small fishing town",
    "a crowded city apartment block",
    "a remote research station",
    "a run-down hotel",
    "a mountain village",
    "a suburb in the seventies",
    "a cargo ship",
    "a boarding school",
)
SOURCES = (
    "a novel by {name}",
    "a true story",
    "a short story",
    "a stage play",
    "a comic book series",
    "the director's own childhood",
)
FESTIVALS = ("Cannes", "Sundance", "Toronto", "Berlin", "Venice", "a small regional festival")
RELATIONS = ("brother", "sister", "mother", "father", "neighbor", "business partner", "old friend", "boss")
ORDINALS = ("first", "second", "third", "fourth", "fifth")

# (aspect, is_plural): the thing an opinion sentence is about
ASPECTS = (
    ("acting", False),
    ("script", False),
    ("soundtrack", False),
    ("cinematography", False),
    ("pacing", False),
    ("dialogue", False),
    ("ending", False),
    ("special effects", True),
    ("cast", False),
    ("direction", False),
    ("characters", True),
    ("humor", False),
    ("editing", False),
    ("lead performance", False),
    ("supporting cast", False),
    ("camera work", False),
    ("action scenes", True),
    ("final act", False),
    ("villain", False),
    ("romance", False),
    ("plot twists", True),
    ("set design", False),
    ("score", False),
)
INTENSIFIERS = ("", "", "", "very ", "really ", "truly ", "quite ", "simply ", "genuinely ", "remarkably ")

# --- neutral sentence templates ------------------------------------------------------

OPENINGS = (
    "I watched {title} {where} with {companion} {when}, {reason}.",
    "{title} is {a_genre} film directed by {director}, and it came out in {year}.",
    "I finally got around to seeing {title} {when}, {reason}.",
    "On a quiet evening I sat down with {companion} to watch {title}, {reason}.",
    "{title} is the {year} {genre} film from director {director}, and I saw it {where}.",
    "I caught {title} {where} {when} with {companion}, {reason}.",
)
PLOTS = (
    "The story follows {character_full}, {a_occupation} who {event}.",
    "It centers on {character_full}, {a_occupation} who {event}, and on the people around {character}.",
    "{character_full} is {a_occupation} who {event}, and the film follows what happens next.",
    "The plot is simple enough: {character_full}, {a_occupation}, {event} and has to deal with the consequences.",
    "We meet {character_full}, {a_occupation} who {event} early in the first act.",
)
FACTS = (
    "It was shot in {place} over about {weeks} weeks.",
    "The film runs about {minutes} minutes and was released in {year}.",
    "{name} wrote the screenplay, based on {source}.",
    "The music is by {name2}, who has worked with {director} before.",
    "It premiered at {festival} in {year} before a wider release.",
    "Most of the story takes place in {setting}, with a few scenes elsewhere.",
    "The cast also includes {name} and {name2} in supporting roles.",
    "{name} plays {character}'s {relation}, who turns up halfway through.",
    "This is the {ordinal} feature from {director}, after a few short films.",
    "It was made on a budget of around {budget} million dollars.",
    "The story is told partly in flashbacks and partly in the present day.",
    "There is also a subplot about {character}'s {relation} and a family secret.",
)

# --- opinion vocabulary and templates (positive and negative kept parallel) ----------

POSITIVE_ADJECTIVES = (
    "wonderful",
    "brilliant",
    "superb",
    "excellent",
    "outstanding",
    "gorgeous",
    "captivating",
    "compelling",
    "charming",
    "delightful",
    "moving",
    "stunning",
    "terrific",
    "masterful",
    "engaging",
    "fantastic",
    "memorable",
    "beautiful",
    "clever",
    "gripping",
    "heartfelt",
    "inventive",
    "magnificent",
    "powerful",
    "refreshing",
    "touching",
    "impressive",
    "marvelous",
)
NEGATIVE_ADJECTIVES = (
    "awful",
    "terrible",
    "dreadful",
    "boring",
    "tedious",
    "clumsy",
    "lifeless",
    "forgettable",
    "ridiculous",
    "painful",
    "dull",
    "bland",
    "incoherent",
    "laughable",
    "sloppy",
    "wooden",
    "pointless",
    "lazy",
    "annoying",
    "dreary",
    "mediocre",
    "tiresome",
    "confusing",
    "uninspired",
    "horrible",
    "weak",
    "messy",
    "unbearable",
)

# Shared by both polarities: the adjective carries the sentiment.
ADJECTIVE_TEMPLATES = (
    "The {aspect} {was} {int}{adj}, and that shaped how I felt about the whole film.",
    "I thought the {aspect} {was} {int}{adj} from start to finish.",
    "Honestly, the {aspect} {is} {int}{adj}, especially in the second half.",
    "What stood out most for me {was} the {aspect}, which {was} {int}{adj}.",
    "Even the {aspect} felt {int}{adj} to me, scene after scene.",
    "From the opening minutes, the {aspect} {is} {int}{adj}.",
    "The {aspect} in the scenes with {character} {was} {int}{adj}.",
    "I have to say that the {aspect} {was} {int}{adj} most of the time.",
    "In my opinion the {aspect} {was} {int}{adj}, and {character}'s storyline shows it best.",
    "{director} took charge of the {aspect} personally, and the result is {int}{adj}.",
)
# (positive, negative) pairs of the same shape: the phrases carry the sentiment.
PHRASE_TEMPLATES = (
    ("I was deeply impressed by the {aspect}.", "I was deeply disappointed by the {aspect}."),
    (
        "The {aspect} kept me glued to the screen the whole time.",
        "The {aspect} kept me checking my watch the whole time.",
    ),
    (
        "I loved the {aspect}, and I would happily sit through it again.",
        "I hated the {aspect}, and I would never sit through it again.",
    ),
    (
        "The {aspect} {is} easily the best thing about {title}.",
        "The {aspect} {is} easily the worst thing about {title}.",
    ),
    (
        "Every scene with {character} works, thanks to the {aspect}.",
        "Every scene with {character} falls flat, thanks to the {aspect}.",
    ),
    (
        "The {aspect} made me laugh and cry in all the right places.",
        "The {aspect} made me groan and sigh in all the wrong places.",
    ),
    (
        "Whoever was in charge of the {aspect} deserves an award.",
        "Whoever was in charge of the {aspect} should find another job.",
    ),
    (
        "The {aspect} {was} a real highlight of the film for me.",
        "The {aspect} {was} a real low point of the film for me.",
    ),
    ("I admired the {aspect} far more than I expected to.", "I disliked the {aspect} far more than I expected to."),
    ("The {aspect} lifts the whole film up to another level.", "The {aspect} drags the whole film down with it."),
    ("The {aspect} {was} handled with real care and skill.", "The {aspect} {was} handled with no care and no skill."),
    (
        "Credit goes to {director} for the {aspect}, which {was} a joy to watch.",
        "Blame goes to {director} for the {aspect}, which {was} a chore to watch.",
    ),
    ("The {aspect} surprised me in the best possible way.", "The {aspect} let me down in the worst possible way."),
    ("I enjoyed every minute of the {aspect}.", "I regretted every minute of the {aspect}."),
)
# (positive, negative) pairs whose sentiment is a negated phrase.
NEGATED_TEMPLATES = (
    ("Honestly, the {aspect} {was} not bad at all.", "Honestly, the {aspect} {was} not good at all."),
    ("I was not bored for a single minute.", "I was not entertained for a single minute."),
    (
        "The {aspect} {is} nowhere near as dull as the trailer suggested.",
        "The {aspect} {is} nowhere near as clever as the trailer suggested.",
    ),
    (
        "Do not skip this one, because it is worth every minute of your time.",
        "Do not bother with this one, because it is not worth your time.",
    ),
    ("I could not find a single fault with the {aspect}.", "I could not find a single strength in the {aspect}."),
)
# Closing verdicts, always of the review's own label.
POSITIVE_VERDICTS = (
    "Overall, a wonderful film that I would happily watch again.",
    "In the end, {title} is a delight, and I recommend it to everyone.",
    "Highly recommended, and this one is going straight onto my list of favorites.",
    "All in all, a brilliant piece of work and well worth the ticket price.",
    "My rating is {rating} out of ten, and I am already planning a second viewing.",
    "Do yourself a favor and see {title} as soon as you can.",
    "Easily one of the best films I have seen this year.",
    "I left the theater smiling, and I think you will too.",
    "A beautiful, moving film that deserves a much bigger audience.",
    "Bottom line, {title} is a triumph and a must-see for fans of the genre.",
)
NEGATIVE_VERDICTS = (
    "Overall, a tedious mess that I cannot recommend.",
    "In the end, {title} is a chore, and I recommend it to no one.",
    "Not recommended, and this one is going straight onto my list of regrets.",
    "All in all, a lazy piece of work and not worth the ticket price.",
    "My rating is {rating} out of ten, and I am not planning a second viewing.",
    "Do yourself a favor and skip {title} entirely.",
    "Easily one of the worst films I have seen this year.",
    "I left the theater frowning, and I think you will too.",
    "A dreary, lifeless film that deserves to be forgotten.",
    "Bottom line, {title} is a disaster and a must-miss even for fans of the genre.",
)
RATINGS = {1: ("seven", "eight", "nine", "ten"), 0: ("one", "two", "three", "four")}


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
        "a_genre": _with_article(genre),
        "director": director,
        "character": first_name,
        "character_full": f"{first_name} {rng.choice(LAST_NAMES)}",
        "a_occupation": _with_article(rng.choice(OCCUPATIONS)),
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


def _with_article(phrase: str) -> str:
    return f"{'an' if phrase[0] in 'aeiou' else 'a'} {phrase}"
