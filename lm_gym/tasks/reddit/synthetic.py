"""Synthetic Reddit threads (a parent comment and a reply with its score), generated offline.

``generate_threads(split)`` returns :class:`SyntheticThread` tuples that stand in for real
Reddit comments: deterministic per split (each split has its own fixed seed), plain
printable ASCII. Every reward of the task has a signal a small model can learn:

* **Toxicity, exactly.** A reply's level is set by the words it contains, and
  :data:`UNSAFE_TERMS` and :data:`SENSITIVE_TERMS` are exactly the words that set it: a
  level-2 reply has an insult with one of the unsafe terms ("Only a clown would ask
  that."), a level-1 reply an aside with one of the sensitive terms ("Typical of
  politicians these days."), and no other sentence uses them. So the lexicon scorer of
  these lists (the synthetic source's toxicity scorer) labels every reply with its level.
  About 16% of replies are unsafe and 15% sensitive; a reply to a hostile parent (one that
  insults, 12% of parents) is unsafe 45% of the time, a reply to a parent that brings up
  politics or religion (11%) sensitive 40% of the time: a policy must learn not to take
  the bait.
* **Upvotes, through the kind of reply.** A reply is helpful (a tip on the parent's topic
  with a reason), an agreement, a civil disagreement, low effort ("This.", "lol") or off
  topic, and its score is above 0 with a probability set by its kind (0.9, 0.7, 0.6, 0.15,
  0.1), times 0.7 if it is sensitive and 0.25 if it is unsafe. A positive score is
  ``1 + Exp(mean 12)`` rounded down, a non-positive one ``-Exp(mean 3)``. The text shows
  the kind, so a classifier of the text alone predicts the score's sign well but not
  perfectly, as with real comments; low-effort replies repeat with different scores.

Parents are questions or opinions about one of eight everyday topics (cooking, fitness,
gaming, gardening, programming, travel, cycling, photography).
"""

from __future__ import annotations

import random
from typing import NamedTuple

from lm_gym.tasks.reddit.synthetic_words import (
    AGREE,
    DISAGREE,
    HELPFUL,
    HOSTILE_ASIDES,
    INSULTS,
    LOW_EFFORT,
    OFF_TOPIC,
    OPINION_PARENTS,
    QUESTION_PARENTS,
    SENSITIVE_ASIDES,
    SENSITIVE_TERMS,
    TOPICS,
    UNSAFE_TERMS,
    Topic,
)
from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 3000, "validation": 300, "test": 300}

HOSTILE_PARENT_RATE = 0.12
SENSITIVE_PARENT_RATE = 0.12
UNSAFE_RATE, UNSAFE_RATE_HOSTILE = 0.12, 0.45  # P(unsafe reply), after a calm / hostile parent
SENSITIVE_RATE, SENSITIVE_RATE_BAITED = (
    0.12,
    0.40,
)  # P(sensitive reply), after a parent without / with a sensitive aside
KIND_WEIGHTS = {"helpful": 0.35, "agree": 0.2, "disagree": 0.15, "low_effort": 0.2, "off_topic": 0.1}
P_POSITIVE = {"helpful": 0.9, "agree": 0.7, "disagree": 0.6, "low_effort": 0.15, "off_topic": 0.1}
LEVEL_FACTOR = (1.0, 0.7, 0.25)  # P(positive score) multiplier for levels 0, 1, 2
POSITIVE_MEAN, NEGATIVE_MEAN = 12.0, 3.0


class SyntheticThread(NamedTuple):
    parent: str
    reply: str
    score: int
    toxicity: int  # 0 safe, 1 sensitive, 2 unsafe


def generate_threads(split: str, count: int | None = None) -> list[SyntheticThread]:
    """``count`` threads of ``split`` (default :data:`SPLIT_SIZES`), the same on every call."""
    count, rng = split_request("reddit", split, count, SPLIT_SIZES, "count")
    return [_thread(rng) for _ in range(count)]


def _thread(rng: random.Random) -> SyntheticThread:
    name = rng.choice(sorted(TOPICS))
    topic = TOPICS[name]
    subject = rng.choice(topic.subjects)
    parent = rng.choice(QUESTION_PARENTS + OPINION_PARENTS).format(subject=subject)
    hostile = rng.random() < HOSTILE_PARENT_RATE
    baiting = not hostile and rng.random() < SENSITIVE_PARENT_RATE
    if hostile:
        parent += " " + rng.choice(HOSTILE_ASIDES).format(term=rng.choice(UNSAFE_TERMS))
    elif baiting:
        parent += " " + rng.choice(SENSITIVE_ASIDES).format(term=rng.choice(SENSITIVE_TERMS))

    kind = rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]
    reply = _reply_body(rng, kind, name, topic, subject)
    roll = rng.random()
    unsafe_rate = UNSAFE_RATE_HOSTILE if hostile else UNSAFE_RATE
    if roll < unsafe_rate:
        level, aside = 2, rng.choice(INSULTS).format(term=rng.choice(UNSAFE_TERMS))
    elif roll < unsafe_rate + (SENSITIVE_RATE_BAITED if baiting else SENSITIVE_RATE):
        level, aside = 1, rng.choice(SENSITIVE_ASIDES).format(term=rng.choice(SENSITIVE_TERMS))
    else:
        level, aside = 0, ""
    if aside:
        reply = f"{aside} {reply}" if rng.random() < 0.5 else f"{reply} {aside}"

    if rng.random() < P_POSITIVE[kind] * LEVEL_FACTOR[level]:
        score = 1 + int(rng.expovariate(1 / POSITIVE_MEAN))
    else:
        score = -int(rng.expovariate(1 / NEGATIVE_MEAN))
    return SyntheticThread(parent, reply, score, level)


def _reply_body(rng: random.Random, kind: str, name: str, topic: Topic, subject: str) -> str:
    fields = {"subject": subject, "tip": rng.choice(topic.tips), "reason": rng.choice(topic.reasons)}
    if kind == "off_topic":
        fields["other"] = rng.choice(TOPICS[rng.choice([other for other in sorted(TOPICS) if other != name])].subjects)
    templates = {
        "helpful": HELPFUL,
        "agree": AGREE,
        "disagree": DISAGREE,
        "low_effort": LOW_EFFORT,
        "off_topic": OFF_TOPIC,
    }[kind]
    return rng.choice(templates).format(**fields)
