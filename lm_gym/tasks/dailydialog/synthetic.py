"""Synthetic DailyDialog-style dialogues with act and emotion labels, generated offline.

``generate_dialogues(split)`` returns dialogues that stand in for DailyDialog when it
cannot be downloaded: each dialogue is a list of ``(utterance, act, emotion)`` turns, the
speakers alternating, with DailyDialog's label codes (:mod:`lm_gym.tasks.dailydialog.labels`). The
output is deterministic per split (each split has its own fixed seed).

A dialogue has 4 to 10 turns about one everyday topic (shopping, travel, restaurant, work,
health, weather, school, home), each utterance 3 to 20 words of plain printable ASCII
(without DailyDialog's ``__eou__`` separators). The act of a turn shows in its text:

* question: ends with "?", and nothing else does;
* directive: an imperative, "please", "let's", "don't", "you should";
* commissive: a promise or an offer with "I'll", "I will" or "I promise";
* inform: any other statement (answers, news, reactions, thanks, refusals).

The act of each turn follows the previous one through a fixed transition table, like the
regularities of the real data: a question is answered (inform) 86% of the time, a
directive accepted (commissive) 76% of the time, an inform is followed by a question or
another inform, a commissive mostly by thanks (inform) or a question. Replies match what
they answer: a question carries its own answers, a directive its acceptances and refusals,
and reactions follow the emotion of the statement they react to. About 83% of the turns
carry no emotion and 12% happiness; anger, disgust, fear, sadness and surprise are rare
(1 to 2% each), as in DailyDialog.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lm_gym.tasks.dailydialog.synthetic_words import (
    ANGER,
    CHECKS,
    CLARIFICATIONS,
    DEFERRALS,
    DISGUST,
    FEAR,
    FOLLOW_UPS,
    GENERIC_OFFERS,
    GENERIC_QUESTIONS,
    GENERIC_REQUESTS,
    GREETINGS,
    HAPPINESS,
    HAPPY_REACTIONS,
    LEAD_INS,
    NAMES,
    NEUTRAL_REACTIONS,
    NEWS,
    REDIRECTS,
    REFUSALS,
    SADNESS,
    SYMPATHETIC_REACTIONS,
    THANKS,
    TOPICS,
    Topic,
)
from lm_gym.tasks.english import upper_first
from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 3000, "validation": 300, "test": 300}

INFORM, QUESTION, DIRECTIVE, COMMISSIVE = 1, 2, 3, 4

MIN_TURNS, MAX_TURNS = 4, 10
TURN_WEIGHTS = (0.12, 0.14, 0.17, 0.17, 0.15, 0.13, 0.12)  # of 4..10 turns
# P(act | previous act); None: the first turn
TRANSITIONS = {
    None: {INFORM: 0.30, QUESTION: 0.45, DIRECTIVE: 0.17, COMMISSIVE: 0.08},
    QUESTION: {INFORM: 0.86, QUESTION: 0.06, DIRECTIVE: 0.04, COMMISSIVE: 0.04},
    DIRECTIVE: {COMMISSIVE: 0.76, INFORM: 0.12, QUESTION: 0.10, DIRECTIVE: 0.02},
    INFORM: {QUESTION: 0.45, INFORM: 0.35, DIRECTIVE: 0.15, COMMISSIVE: 0.05},
    COMMISSIVE: {INFORM: 0.55, QUESTION: 0.35, DIRECTIVE: 0.10},
}
GREETING_RATE = 0.35  # first turns that start with a greeting
LEAD_IN_RATE = 0.3  # topic questions and requests after news or an answer that first acknowledge it
FOLLOW_UP_RATE = 0.25  # questions after news that ask about it ("Really? Why is that?")
REACTION_RATE = 0.5  # informs after a statement that react to it rather than add news


@dataclass(frozen=True)
class Line:
    """One utterance template with its labels and the lines that can answer it."""

    text: str
    act: int
    emotion: int = 0
    answers: tuple = ()  # of a question: informs
    acceptances: tuple = ()  # of a directive: commissives
    refusals: tuple = ()  # of a directive: informs
    kind: str = ""  # "news", "reaction" (to news or an answer), "reply" or "topic" (a topic question or request)


def generate_dialogues(split: str, num_dialogues: int | None = None) -> list[list[tuple[str, int, int]]]:
    """Dialogues as lists of (utterance, act, emotion) turns; deterministic per split.

    ``num_dialogues`` defaults to ``SPLIT_SIZES[split]``; a shorter request is a prefix of
    the full split.
    """
    num_dialogues, rng = split_request("dailydialog", split, num_dialogues, SPLIT_SIZES, "num_dialogues")
    return [_dialogue(rng) for _ in range(num_dialogues)]


def _dialogue(rng: random.Random) -> list[tuple[str, int, int]]:
    topic = TOPICS[rng.choice(list(TOPICS))]
    name, name2 = rng.sample(NAMES, 2)
    slots = {slot: rng.choice(choices) for slot, choices in topic.slots.items()} | {"name": name, "name2": name2}
    num_turns = rng.choices(range(MIN_TURNS, MAX_TURNS + 1), weights=TURN_WEIGHTS)[0]
    used: set[str] = set()  # templates already said, so that nothing is said twice
    turns = []
    previous = None
    for _ in range(num_turns):
        transitions = TRANSITIONS[previous.act if previous else None]
        act = rng.choices(list(transitions), weights=list(transitions.values()))[0]
        line = _reply(rng, topic, act, previous, used)
        used.add(line.text)
        text = _fill(line.text, slots)
        if previous is None and rng.random() < GREETING_RATE:
            text = f"{_fill(rng.choice(GREETINGS), slots)} {text}"
        elif previous and previous.kind in ("news", "reply") and line.kind == "topic" and rng.random() < LEAD_IN_RATE:
            text = f"{rng.choice(LEAD_INS)} {text}"
        turns.append((text, line.act, line.emotion))
        previous = line
    return turns


def _reply(rng: random.Random, topic: Topic, act: int, previous: Line | None, used: set[str]) -> Line:
    """A line of ``act`` that fits after ``previous`` (None: the dialogue's first line)."""
    if act == INFORM:
        return _inform(rng, topic, previous, used)
    if act == QUESTION:
        return _question(rng, topic, previous, used)
    if act == DIRECTIVE:
        return _directive(rng, topic, previous, used)
    return _commissive(rng, topic, previous, used)


def _inform(rng: random.Random, topic: Topic, previous: Line | None, used: set[str]) -> Line:
    if previous is not None and previous.act == QUESTION:
        return _line(rng.choice(previous.answers), INFORM, kind="reply")
    if previous is not None and previous.act == DIRECTIVE:
        return _line(rng.choice(previous.refusals + REFUSALS), INFORM, kind="reply")
    if previous is not None and previous.act == COMMISSIVE:
        return _line(rng.choice(THANKS), INFORM, kind="reaction")
    if previous is not None and previous.kind != "reaction" and rng.random() < REACTION_RATE:
        return _reaction(rng, previous.emotion)
    news = _unused(topic.statements, used) or _unused(NEWS, used)
    if news:
        return _line(rng.choice(news), INFORM, kind="news")
    return _reaction(rng, previous.emotion if previous else 0)


def _question(rng: random.Random, topic: Topic, previous: Line | None, used: set[str]) -> Line:
    if previous is not None and previous.act == QUESTION:
        candidates = CLARIFICATIONS
    elif previous is not None and previous.act == DIRECTIVE:
        candidates = CHECKS
    elif previous is not None and previous.kind == "news" and rng.random() < FOLLOW_UP_RATE:
        candidates = FOLLOW_UPS
    else:
        candidates = topic.questions
    exchanges = _unused_exchanges(candidates, used)
    if not exchanges:  # the topic's questions are used up
        candidates, exchanges = GENERIC_QUESTIONS, list(GENERIC_QUESTIONS)
    question, answers = rng.choice(exchanges)
    return _line(question, QUESTION, answers=answers, kind="topic" if candidates is topic.questions else "")


def _directive(rng: random.Random, topic: Topic, previous: Line | None, used: set[str]) -> Line:
    candidates = (
        REDIRECTS if previous is not None and previous.act == QUESTION and rng.random() < 0.5 else topic.requests
    )
    exchanges = _unused_exchanges(candidates, used)
    if not exchanges:  # the topic's requests are used up
        candidates, exchanges = GENERIC_REQUESTS, list(GENERIC_REQUESTS)
    directive, acceptances, refusals = rng.choice(exchanges)
    kind = "topic" if candidates is topic.requests else ""
    return _line(directive, DIRECTIVE, acceptances=acceptances, refusals=refusals, kind=kind)


def _commissive(rng: random.Random, topic: Topic, previous: Line | None, used: set[str]) -> Line:
    if previous is not None and previous.act == DIRECTIVE:
        entry = rng.choice(previous.acceptances)
    elif previous is not None and previous.act == QUESTION:
        entry = rng.choice(DEFERRALS)
    else:
        entry = rng.choice(_unused(topic.offers, used) or GENERIC_OFFERS)
    return _line(entry, COMMISSIVE)


def _reaction(rng: random.Random, emotion: int) -> Line:
    """A reaction to a statement of ``emotion``: glad news, bad news or plain news."""
    if emotion == HAPPINESS:
        reactions = HAPPY_REACTIONS
    elif emotion in (ANGER, DISGUST, FEAR, SADNESS):
        reactions = SYMPATHETIC_REACTIONS
    else:
        reactions = NEUTRAL_REACTIONS
    return _line(rng.choice(reactions), INFORM, kind="reaction")


def _line(entry, act: int, **fields) -> Line:
    """The Line of a data entry: a text, or (text, emotion)."""
    text, emotion = (entry, 0) if isinstance(entry, str) else entry
    return Line(text, act, emotion, **fields)


def _text(entry) -> str:
    return entry if isinstance(entry, str) else entry[0]


def _unused(entries: tuple, used: set[str]) -> list:
    """The lines not said yet in this dialogue."""
    return [entry for entry in entries if _text(entry) not in used]


def _unused_exchanges(exchanges: tuple, used: set[str]) -> list:
    """The (line, replies...) exchanges whose line was not said yet in this dialogue."""
    return [exchange for exchange in exchanges if _text(exchange[0]) not in used]


def _fill(template: str, slots: dict[str, str]) -> str:
    return upper_first(template.format(**slots))  # a slot may open the line ("{times} a day ...")
