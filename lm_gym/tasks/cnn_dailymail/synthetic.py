"""Synthetic CNN/DailyMail-style news articles with highlights, generated offline.

``generate_articles(split)`` returns ``(article, highlights, id)`` triples shaped like the
hub release (``abisee/cnn_dailymail``) for when it cannot be downloaded: ``highlights`` is
2 to 4 sentences joined by ``"\\n"`` and ``id`` 40 hexadecimal characters (the SHA-1 of
the split and index). The output is deterministic per split (each split has its own fixed
seed).

Each article is a news story of 8 to 16 sentences (120 to 260 words) of plain printable
ASCII in one of six genres: crime, sports, business, weather, science and politics. A
story has four key sentences, which carry its facts (who, what, where, numbers):

* the lead, always the first sentence (after an optional "(CNN) -- " dateline);
* a detail, the second to fifth sentence;
* an extra fact, the third to seventh sentence;
* a late fact (a court date, the next match, a future plan) in the second half.

The other sentences are filler: background, quotes, colour. The highlights restate the
lead and the key sentences that the genre's desk highlights (``Genre.highlighted``: crime
and weather stories all four, sports and science the detail and the late fact, business
the detail and the extra fact, politics the extra and the late fact), in article order,
each lightly compressed: the key sentence without its droppable parts (an attribution such
as "police said", a date, a subordinate clause), 8 to 18 words. So every highlight word is
in the article, the first sentences hold most of the highlights (a lead-3 summary gets a
decent ROUGE score) and a summarizer that recognises the genre, finds its late fact and
compresses the sentences does better. Which sentences are highlighted follows from the
article alone, so each article has one best summary: RL on ROUGE gets a consistent target,
not a coin flip per sentence.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from lm_gym.tasks.cnn_dailymail.synthetic_words import (
    BUSINESS_DETAILS,
    BUSINESS_EXTRAS,
    BUSINESS_FILLERS,
    BUSINESS_LATES,
    BUSINESS_LEADS,
    CHARGES,
    CITIES,
    COMPANY_PREFIXES,
    CRIME_DETAILS,
    CRIME_EXTRAS,
    CRIME_FILLERS,
    CRIME_LATES,
    CRIME_LEADS,
    CRIMES,
    DAYS,
    FINDINGS,
    FIRST_NAMES,
    FUNDING,
    GENERIC_FILLERS,
    JOURNALS,
    LAST_NAMES,
    MATCH_QUOTES,
    MONTHS,
    OFFICER_RANKS,
    ORDINALS,
    POLICIES,
    POLITICS_DETAILS,
    POLITICS_EXTRAS,
    POLITICS_FILLERS,
    POLITICS_LATES,
    POLITICS_LEADS,
    QUARTERS,
    REGIONS,
    SCIENCE_DETAILS,
    SCIENCE_EXTRAS,
    SCIENCE_FILLERS,
    SCIENCE_LATES,
    SCIENCE_LEADS,
    SECTORS,
    SPORTS_DETAILS,
    SPORTS_EXTRAS,
    SPORTS_FILLERS,
    SPORTS_LATES,
    SPORTS_LEADS,
    STANDINGS,
    STORM_NAMES,
    SUBJECTS,
    TEAM_NICKNAMES,
    WEATHER_DETAILS,
    WEATHER_EXTRAS,
    WEATHER_FILLERS,
    WEATHER_LATES,
    WEATHER_LEADS,
)
from lm_gym.tasks.english import upper_first, with_article
from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 3000, "validation": 200, "test": 300}

MIN_WORDS, MAX_WORDS = 120, 260
MIN_SENTENCES, MAX_SENTENCES = 8, 16
MIN_HIGHLIGHT_WORDS, MAX_HIGHLIGHT_WORDS = 8, 18
DATELINE_RATE = 0.3
DETAIL_POSITIONS = (1, 2, 3, 4)  # the second to fifth sentence
EXTRA_POSITIONS = (2, 3, 4, 5, 6)  # the late fact comes after these

# Droppable parts of a key sentence are in [brackets]: kept in the article, dropped from
# the highlight.
_DROPPABLE = re.compile(r"\[([^\[\]]*)\]")

# --- each genre's facts, which fill its templates ------------------------------------


def _crime_fields(rng: random.Random) -> dict[str, str]:
    sex = rng.choice(("man", "woman"))
    crime, target, loot = rng.choice(CRIMES)
    last = rng.choice(LAST_NAMES)
    officer_sex = rng.choice(("man", "woman"))
    return {
        "sex": sex,
        "pronoun": "him" if sex == "man" else "her",
        "age": str(rng.randint(19, 67)),
        "crime": crime,
        "a_crime": with_article(crime),
        "target": target,
        "a_target": with_article(target),
        "loot": loot,
        "amount": f"${rng.randint(8, 95) * 1000:,}",
        "minutes": str(rng.randint(3, 15)),
        "staff": rng.choice(("Two", "Three", "Four", "Five", "Six")),
        "suspect": f"{rng.choice(FIRST_NAMES[sex])} {last}",
        "last": last,
        "charges": rng.choice(CHARGES),
        "officer": f"{rng.choice(OFFICER_RANKS)} {rng.choice(FIRST_NAMES[officer_sex])} {rng.choice(LAST_NAMES)}",
        "hours": str(rng.randint(2, 20)),
        "years": str(rng.randint(5, 20)),
    }


def _sports_fields(rng: random.Random) -> dict[str, str]:
    home_city, away_city, next_city = rng.sample(CITIES, 3)
    winner = f"{home_city} {rng.choice(TEAM_NICKNAMES)}"
    loser = f"{away_city} {rng.choice(TEAM_NICKNAMES)}"
    winner_goals = rng.randint(2, 5)
    goals = rng.randint(2, min(3, winner_goals))
    return {
        "winner": winner,
        "loser": loser,
        "city": home_city,
        "score": f"{winner_goals}-{rng.randint(0, winner_goals - 1)}",
        "standing": rng.choice(STANDINGS),
        "scorer": _person(rng, "man"),
        "his": "his",
        "goals_phrase": "twice" if goals == 2 else "a hat-trick",
        "minute": _ordinal(rng.randint(4, 89)),
        "tally": str(rng.randint(8, 25)),
        "points": str(rng.randint(2, 9)),
        "games": str(rng.randint(3, 12)),
        "player2": _person(rng, "man"),
        "keeper": _person(rng, "man"),
        "losses": str(rng.randint(4, 6)),
        "recent": str(rng.randint(7, 9)),
        "bottom": rng.choice(("bottom", "second from bottom", "third from bottom")),
        "next_team": f"{next_city} {rng.choice(TEAM_NICKNAMES)}",
        "manager": _person(rng, "man"),
        "manager2": _person(rng, "man"),
        "quote": rng.choice(MATCH_QUOTES),
        "crowd": f"{rng.randint(8, 60) * 1000:,}",
    }


def _business_fields(rng: random.Random) -> dict[str, str]:
    noun, product = rng.choice(SECTORS)
    hq, city2 = rng.sample(CITIES, 2)
    profits_up = rng.random() < 0.6
    return {
        "company": f"{rng.choice(COMPANY_PREFIXES)} {noun}",
        "product": product,
        "rose": "rose" if profits_up else "fell",
        "pct": str(rng.randint(3, 40)),
        "profit": str(rng.randint(20, 900)),
        "quarter": rng.choice(QUARTERS),
        "jobs": f"{rng.randint(2, 40) * 50:,}",
        "sales": f"{rng.randint(11, 99) / 10:.1f}",
        "demand": "strong" if profits_up else "weak",
        "hq": hq,
        "city2": city2,
        "moved": "rose" if profits_up else "fell",
        "share_pct": str(rng.randint(2, 15)),
        "new_jobs": str(rng.randint(2, 30) * 50),
        "ceo": _person(rng, rng.choice(("man", "woman"))),
        "price_pct": str(rng.randint(2, 12)),
        "share": str(rng.randint(10, 45)),
        "cents": str(rng.randint(5, 60)),
        "tenure": str(rng.randint(4, 15)),
    }


def _weather_fields(rng: random.Random) -> dict[str, str]:
    region = rng.choice(list(REGIONS))
    return {
        "region": region,
        "city": rng.choice(REGIONS[region]),
        "storm": rng.choice(STORM_NAMES),
        "mph": str(rng.randint(55, 110)),
        "homes": f"{rng.randint(5, 250) * 1000:,}",
        "evacuated": f"{rng.randint(2, 40) * 100:,}",
        "rain": str(rng.randint(3, 14)),
        "hours": str(rng.randint(6, 48)),
        "deaths": rng.choice(("Two", "Three", "Four", "Five", "Seven")),
        "flights": str(rng.randint(40, 600)),
        "counties": str(rng.randint(3, 30)),
        "rescued": str(rng.randint(12, 200)),
        "repair": str(rng.randint(5, 150)),
        "aid": str(rng.randint(10, 300)),
        "feet": str(rng.randint(4, 15)),
    }


def _science_fields(rng: random.Random) -> dict[str, str]:
    habit, outcome = rng.choice(FINDINGS)
    return {
        "habit": habit,
        "outcome": outcome,
        "pct": str(rng.randint(12, 45)),
        "sample": f"{rng.randint(12, 300) * 100:,}",
        "sample2": f"{rng.randint(10, 50) * 1000:,}",
        "subjects": rng.choice(SUBJECTS),
        "years": str(rng.randint(3, 20)),
        "journal": rng.choice(JOURNALS),
        "author": _person(rng, rng.choice(("man", "woman"))),
        "age": str(rng.choice((50, 60, 65, 70))),
        "months": str(rng.randint(2, 11)),
        "ratio": rng.choice(("two", "three")),
        "condition": rng.choice(("diabetes", "asthma", "high blood pressure", "arthritis")),
    }


def _politics_fields(rng: random.Random) -> dict[str, str]:
    policy, things, built, (low, high) = rng.choice(POLICIES)
    yes = rng.randint(26, 45)
    return {
        "yes": str(yes),
        "no": str(rng.randint(5, yes - 2)),
        "cost": str(rng.randint(15, 900)),
        "policy": policy,
        "things": things,
        "built": built,
        "units": f"{rng.randint(low, high):,}",
        "year_done": str(rng.randint(2026, 2035)),
        "funding": rng.choice(FUNDING),
        "raised": str(rng.randint(5, 90)),
        "mayor": _person(rng, rng.choice(("man", "woman"))),
        "opponent": _person(rng, rng.choice(("man", "woman"))),
        "support": str(rng.randint(51, 78)),
        "jobs": f"{rng.randint(2, 40) * 100:,}",
    }


@dataclass(frozen=True)
class Genre:
    """Templates of one kind of story, with a function drawing the story's own facts."""

    fields: Callable[[random.Random], dict[str, str]]
    leads: tuple[str, ...]
    details: tuple[str, ...]
    extras: tuple[str, ...]
    lates: tuple[str, ...]
    fillers: tuple[str, ...]
    highlighted: tuple[str, ...]  # key sentence kinds restated in the highlights, the lead first


GENRES = {
    "crime": Genre(
        _crime_fields,
        CRIME_LEADS,
        CRIME_DETAILS,
        CRIME_EXTRAS,
        CRIME_LATES,
        CRIME_FILLERS,
        ("lead", "detail", "extra", "late"),
    ),
    "sports": Genre(
        _sports_fields,
        SPORTS_LEADS,
        SPORTS_DETAILS,
        SPORTS_EXTRAS,
        SPORTS_LATES,
        SPORTS_FILLERS,
        ("lead", "detail", "late"),
    ),
    "business": Genre(
        _business_fields,
        BUSINESS_LEADS,
        BUSINESS_DETAILS,
        BUSINESS_EXTRAS,
        BUSINESS_LATES,
        BUSINESS_FILLERS,
        ("lead", "detail", "extra"),
    ),
    "weather": Genre(
        _weather_fields,
        WEATHER_LEADS,
        WEATHER_DETAILS,
        WEATHER_EXTRAS,
        WEATHER_LATES,
        WEATHER_FILLERS,
        ("lead", "detail", "extra", "late"),
    ),
    "science": Genre(
        _science_fields,
        SCIENCE_LEADS,
        SCIENCE_DETAILS,
        SCIENCE_EXTRAS,
        SCIENCE_LATES,
        SCIENCE_FILLERS,
        ("lead", "detail", "late"),
    ),
    "politics": Genre(
        _politics_fields,
        POLITICS_LEADS,
        POLITICS_DETAILS,
        POLITICS_EXTRAS,
        POLITICS_LATES,
        POLITICS_FILLERS,
        ("lead", "extra", "late"),
    ),
}


def generate_articles(split: str, num_articles: int | None = None) -> list[tuple[str, str, str]]:
    """(article, highlights, id) triples, highlights joined by "\\n"; deterministic per split.

    ``num_articles`` defaults to ``SPLIT_SIZES[split]``; a shorter request is a prefix of
    the full split.
    """
    num_articles, rng = split_request("cnn_dailymail", split, num_articles, SPLIT_SIZES, "num_articles")
    articles = []
    for index in range(num_articles):
        article, highlights = _story(rng, GENRES[rng.choice(list(GENRES))])
        articles.append((article, "\n".join(highlights), _article_id(split, index)))
    return articles


def _article_id(split: str, index: int) -> str:
    return hashlib.sha1(f"lm_gym.cnn_dailymail.synthetic/{split}/{index}".encode("ascii")).hexdigest()


def _story(rng: random.Random, genre: Genre) -> tuple[str, list[str]]:
    """An article and its highlights, redrawn until every length is within bounds."""
    while True:
        article, highlights = _draft(rng, genre)
        if MIN_WORDS <= len(article.split()) <= MAX_WORDS and all(
            MIN_HIGHLIGHT_WORDS <= len(highlight.split()) <= MAX_HIGHLIGHT_WORDS for highlight in highlights
        ):
            return article, highlights


def _draft(rng: random.Random, genre: Genre) -> tuple[str, list[str]]:
    fields = _common_fields(rng) | genre.fields(rng)
    num_sentences = rng.randint(MIN_SENTENCES, MAX_SENTENCES)
    # key sentence kind -> position; the lead opens, the late fact is in the second half
    positions = {"lead": 0, "detail": rng.choice(DETAIL_POSITIONS)}
    positions["extra"] = rng.choice([p for p in EXTRA_POSITIONS if p != positions["detail"]])
    positions["late"] = rng.randint(max(EXTRA_POSITIONS[-1] + 1, num_sentences // 2), num_sentences - 1)
    keys = {
        kind: rng.choice(templates).format(**fields)
        for kind, templates in (
            ("lead", genre.leads),
            ("detail", genre.details),
            ("extra", genre.extras),
            ("late", genre.lates),
        )
    }
    fillers = [template.format(**fields) for template in rng.sample(genre.fillers + GENERIC_FILLERS, num_sentences - 4)]
    by_position = {position: keys[kind] for kind, position in positions.items()}
    sentences = [by_position[i] if i in by_position else fillers.pop() for i in range(num_sentences)]

    highlights = [_compressed(keys[kind]) for kind in sorted(genre.highlighted, key=positions.get)]

    article = " ".join(_expanded(sentence) for sentence in sentences)
    if rng.random() < DATELINE_RATE:
        article = f"(CNN) -- {article}"
    return article, highlights


def _common_fields(rng: random.Random) -> dict[str, str]:
    day, next_day = rng.sample(DAYS, 2)
    return {
        "city": rng.choice(CITIES),
        "day": day,
        "next_day": next_day,
        "month": rng.choice(MONTHS),
        "year": str(rng.randint(1950, 2015)),
        "ordinal": rng.choice(ORDINALS),
    }


def _expanded(sentence: str) -> str:
    """The article form of a sentence: its droppable parts kept."""
    return _DROPPABLE.sub(r"\1", sentence)


def _compressed(sentence: str) -> str:
    """The highlight form of a key sentence: its droppable parts removed."""
    return upper_first(" ".join(_DROPPABLE.sub("", sentence).split()))


def _person(rng: random.Random, sex: str) -> str:
    return f"{rng.choice(FIRST_NAMES[sex])} {rng.choice(LAST_NAMES)}"


def _ordinal(number: int) -> str:
    suffix = "th" if 11 <= number % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"
