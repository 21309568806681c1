"""Synthetic CommonGen-style concept sets with reference scenes, generated offline.

``generate_concept_sets(split)`` returns ``(concepts, scenes)`` pairs that stand in for
CommonGen v1.0 when it cannot be downloaded. The output is deterministic per split (each
split has its own fixed seed); no concept set repeats within a split, and, as in the
release, the ``validation`` and ``test`` sets are all absent from ``train``.

* ``concepts``: 3 to 5 lemmas (sizes 3, 4 and 5 about 40%, 35% and 25% of the sets),
  nouns and verbs, sorted alphabetically like the lemmas of the release's ``concept_set``
  (``field_N#look_V#stand_V`` -> ``("field", "look", "stand")``).
* ``scenes``: 1 to 5 reference sentences (on average about 3 in ``train``, 4 in
  ``validation`` and ``test``), each an everyday sentence of 8 to 20 words of printable
  ASCII, capitalized and ending with a period, that uses every concept: verbs inflected
  ("throws", "threw", "is throwing", "thrown"), nouns possibly plural.

The sets come from a small world of 85 actions (about seventy verbs) with typed
arguments: who may do them (people, a dog, a horse, ...), what they act on (throw -> ball,
frisbee, stick), with what tool (cut -> knife, paint -> brush) and where (park, kitchen,
beach, ...; things stay in places that fit them: no tree in the office). A
situation is one action, optionally with a second one: the same person's posture or
clothing ("sitting on a bench", "wearing a helmet") or a partner acting on the same
object ("a man throws a frisbee and a dog catches it"). A concept set is the action's verb
plus some of the situation's other words, so every set is a plausible combination. The
scenes of a set realize the same situation with different templates, tenses, numbers and
free choices for the words that are not concepts (another agent, another place), so
concepts appear in varied orders and several different outputs are all valid. The
vocabulary is a few hundred words, and the prompt-to-scene mapping is regular enough for a
small language model to learn.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from dataclasses import dataclass

from lm_gym.tasks.commongen.synthetic_actions import ACTIONS, BACKGROUND_FITS, PARTNERS, Action, Partner
from lm_gym.tasks.commongen.synthetic_words import (
    ADULT_ADJECTIVES,
    ANIMAL_ADJECTIVES,
    ANIMALS,
    CHILD_ADJECTIVES,
    COLLECTIVES,
    DEFINITE_NOUNS,
    DESCRIBABLE_THINGS,
    DOUBLED_FINAL_CONSONANT,
    INDOOR_PLACES,
    INDOOR_THINGS,
    IRREGULAR_PLURALS,
    IRREGULAR_VERBS,
    MASS_NOUNS,
    OUTDOOR_THINGS,
    PLACE_PREPOSITIONS,
    THING_ADJECTIVES,
    TIME_PHRASES,
)
from lm_gym.tasks.english import upper_first, with_article
from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 4000, "validation": 300, "test": 500}

MIN_WORDS, MAX_WORDS = 8, 20
SET_SIZE_WEIGHTS = {3: 0.40, 4: 0.35, 5: 0.25}
# weights of 1..5 reference scenes per set: about 3 on average in train, 4 elsewhere
TRAIN_SCENE_WEIGHTS = (0.10, 0.25, 0.30, 0.20, 0.15)
EVAL_SCENE_WEIGHTS = (0.00, 0.10, 0.20, 0.30, 0.40)
# P(no second action, a background action of the same agent, a partner) per set size:
# larger sets need more roles, which a second action provides
SECOND_ACTION_WEIGHTS = {3: (0.75, 0.10, 0.15), 4: (0.45, 0.25, 0.30), 5: (0.20, 0.35, 0.45)}
PLURAL_AGENT_RATE = 0.2
PLURAL_OBJECT_RATE = 0.25
ADJECTIVE_RATE = 0.2
OPTIONAL_PLACE_RATE = 0.5  # a place that is not a concept still appears this often
OPTIONAL_TOOL_RATE = 0.25
TIME_RATE = 0.2

BACKGROUND_ACTIONS = {action.verb: action for action in ACTIONS if action.verb in BACKGROUND_FITS}
# the action a partner's first agent does on a given object
FIRST_ACTION = {(action.verb, noun): action for action in reversed(ACTIONS) for noun in action.objects}


@dataclass(frozen=True)
class Situation:
    """The fixed content of a concept set: an action, its roles and which of them are concepts."""

    action: Action
    roles: dict[str, str]  # role -> word: agent, verb, object, tool, place, verb2, object2, agent2
    concepts: frozenset[str] = frozenset()  # the roles whose words are concepts
    background: Action | None = None
    partner: Partner | None = None


def generate_concept_sets(split: str, num_sets: int | None = None) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(concepts, scenes) pairs; concepts sorted, every scene uses every concept.

    ``num_sets`` defaults to ``SPLIT_SIZES[split]``; a shorter request is a prefix of the
    full split.
    """
    num_sets, rng = split_request("commongen", split, num_sets, SPLIT_SIZES, "num_sets")
    scene_weights = TRAIN_SCENE_WEIGHTS if split == "train" else EVAL_SCENE_WEIGHTS
    items: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    seen = set() if split == "train" else set(_train_concept_sets())
    while len(items) < num_sets:
        size = rng.choices(list(SET_SIZE_WEIGHTS), weights=list(SET_SIZE_WEIGHTS.values()))[0]
        situation = _situation(rng, size)
        while _concepts(situation) in seen:  # redrawn at the same size: keeps the size proportions
            situation = _situation(rng, size)
        concepts = _concepts(situation)
        seen.add(concepts)
        num_scenes = rng.choices(range(1, 6), weights=scene_weights)[0]
        items.append((concepts, _scenes(rng, situation, num_scenes)))
    return items


def _concepts(situation: Situation) -> tuple[str, ...]:
    return tuple(sorted(situation.roles[role] for role in situation.concepts))


@functools.lru_cache(maxsize=1)
def _train_concept_sets() -> frozenset[tuple[str, ...]]:
    # evaluation splits leave these out, so scores measure generalization to new sets
    return frozenset(concepts for concepts, _ in generate_concept_sets("train"))


# --- situations ----------------------------------------------------------------------


def _situation(rng: random.Random, size: int) -> Situation:
    """A situation with ``size`` distinct concept words, redrawn until one fits."""
    while True:
        kind = rng.choices(("single", "background", "partner"), weights=SECOND_ACTION_WEIGHTS[size])[0]
        situation = _partner_situation(rng) if kind == "partner" else _single_situation(rng, kind == "background")
        if situation is None:
            continue
        forced = ["verb"] + (["verb2"] if "verb2" in situation.roles else [])
        optional = [role for role in situation.roles if role not in forced]
        if not 0 <= size - len(forced) <= len(optional):
            continue
        concepts = frozenset(forced + rng.sample(optional, size - len(forced)))
        words = [situation.roles[role] for role in concepts]
        if len(set(words)) == len(words):
            return dataclasses.replace(situation, concepts=concepts)


def _single_situation(rng: random.Random, with_background: bool) -> Situation | None:
    action = rng.choice(ACTIONS)
    roles = _main_roles(rng, action, rng.choice(action.objects) if action.objects else None)
    background = None
    if with_background:
        fitting = [
            verb for verb, motions in BACKGROUND_FITS.items() if action.motion in motions and verb != action.verb
        ]
        if roles["agent"] in ANIMALS or roles["agent"] in COLLECTIVES or not fitting:
            return None
        background = BACKGROUND_ACTIONS[rng.choice(fitting)]
        roles["verb2"] = background.verb
        roles["object2"] = rng.choice([noun for noun in background.objects if _fits(noun, roles.get("place"))])
    return Situation(action, roles, background=background)


def _partner_situation(rng: random.Random) -> Situation | None:
    partner = rng.choice(PARTNERS)
    noun = rng.choice(partner.objects)
    action = FIRST_ACTION[partner.first, noun]
    roles = _main_roles(rng, action, noun)
    others = [agent for agent in partner.second_agents if agent != roles["agent"]]
    if roles["agent"] in ANIMALS or not others:
        return None
    roles["verb2"] = partner.second
    roles["agent2"] = rng.choice(others)
    return Situation(action, roles, partner=partner)


def _main_roles(rng: random.Random, action: Action, noun: str | None) -> dict[str, str]:
    """The roles of the main action: verb, agent and, where it has them, object, tool, place."""
    agent = rng.choice([agent for agent in action.agents if agent != noun])
    roles = {"verb": action.verb, "agent": agent}
    if noun is not None:
        roles["object"] = noun
    if action.tools and agent not in ANIMALS:  # animals use no tools
        roles["tool"] = rng.choice(action.tools)
    places = [place for place in action.places if _fits(noun, place)]
    if places:
        roles["place"] = rng.choice(places)
    return roles


def _fits(noun: str | None, place: str | None) -> bool:
    """Whether a thing can be at a place: no trees in the office, no sofa in the park."""
    if noun is None or place is None:
        return True
    indoor = place in INDOOR_PLACES
    return not ((noun in OUTDOOR_THINGS and indoor) or (noun in INDOOR_THINGS and not indoor))


# --- scenes --------------------------------------------------------------------------


def _scenes(rng: random.Random, situation: Situation, num_scenes: int) -> tuple[str, ...]:
    """``num_scenes`` distinct sentences of MIN_WORDS to MAX_WORDS words realizing ``situation``."""
    scenes: list[str] = []
    while len(scenes) < num_scenes:
        scene = _scene(rng, situation)
        if MIN_WORDS <= len(scene.split()) <= MAX_WORDS and scene not in scenes:
            scenes.append(scene)
    return tuple(scenes)


def _scene(rng: random.Random, situation: Situation) -> str:
    words = _scene_words(rng, situation)
    tense = rng.choice(("simple", "simple", "progressive", "past"))
    time = rng.choice(TIME_PHRASES) if rng.random() < TIME_RATE else ""
    if situation.partner is not None:
        text = _partner_scene(rng, situation, words, tense)
    elif situation.background is not None:
        text = _background_scene(rng, situation, words, tense)
    else:
        text = _single_scene(rng, situation, words, tense)
    if time:
        text = f"{time.capitalize()}, {_lower_first(text)}" if rng.random() < 0.5 else f"{text} {time}"
    return f"{upper_first(text)}."


def _scene_words(rng: random.Random, situation: Situation) -> dict[str, str]:
    """The words of one scene: concepts as fixed, the other roles redrawn (or dropped)."""
    roles, concepts, action = situation.roles, situation.concepts, situation.action
    words = {role: word for role, word in roles.items() if role in concepts or role in ("verb", "verb2")}
    if "agent" not in words:
        words["agent"] = rng.choice(_agent_choices(situation))
    concept_place = words.get("place")
    if "object" in roles and "object" not in words:
        choices = situation.partner.objects if situation.partner else action.objects
        words["object"] = rng.choice(
            [
                noun
                for noun in choices
                if noun in action.objects and noun != words["agent"] and _fits(noun, concept_place)
            ]
        )
    if situation.background is not None and "object2" not in words:
        words["object2"] = rng.choice([noun for noun in situation.background.objects if _fits(noun, concept_place)])
    if "tool" in roles and "tool" not in words and rng.random() < OPTIONAL_TOOL_RATE:
        words["tool"] = rng.choice(action.tools)
    if "place" in roles and "place" not in words and rng.random() < OPTIONAL_PLACE_RATE:
        places = [
            place for place in action.places if _fits(words.get("object"), place) and _fits(words.get("object2"), place)
        ]
        if places:
            words["place"] = rng.choice(places)
    if situation.partner is not None and "agent2" not in words:
        words["agent2"] = rng.choice([a for a in situation.partner.second_agents if a != words["agent"]])
    return words


def _agent_choices(situation: Situation) -> list[str]:
    """Agents that can stand in for a situation's agent that is not a concept."""
    agent, roles = situation.roles["agent"], situation.roles
    return [
        other
        for other in situation.action.agents
        if (other in ANIMALS) == (agent in ANIMALS)  # tools and postures need a person
        and not (situation.background and other in COLLECTIVES)  # not "a crowd sitting on a bench"
        and other not in (roles.get("agent2"), roles.get("object"))
    ]


def _single_scene(rng: random.Random, situation: Situation, words: dict[str, str], tense: str) -> str:
    shape = rng.choice(("plain", "plain", "place_first", "there"))
    subject, plural = _subject(rng, words["agent"], definite_ok=shape != "there")  # not "there is the dog"
    predicate = _predicate(rng, situation.action, words, tense, plural)
    place = _place_phrase(rng, situation.action, words.get("place"))
    if shape == "place_first" and place:
        return f"{place.capitalize()}, {subject} {predicate}"
    if shape == "there":
        ing_predicate = _predicate(rng, situation.action, words, "ing", plural)
        return _join("there", "are" if plural else "is", subject, ing_predicate, place)
    return _join(subject, predicate, place)


def _background_scene(rng: random.Random, situation: Situation, words: dict[str, str], tense: str) -> str:
    """The agent does the main action while in a posture ("sitting on a bench", "wearing a hat")."""
    background = situation.background
    subject, plural = _subject(rng, words["agent"])
    main = _predicate(rng, situation.action, words, tense, plural)
    background_words = {"verb": background.verb, "object": words["object2"]}
    # a plural agent wears hats, a single one a hat
    posture = _predicate(rng, background, background_words, "ing", plural, plural_ok=plural)
    place = _place_phrase(rng, situation.action, words.get("place"))
    shape = rng.choice(("and", "while", "fronted", "modifier"))
    if shape == "and":
        finite_posture = _predicate(rng, background, background_words, tense, plural, plural_ok=plural)
        # progressive coordination shares the auxiliary: "is sitting on a bench and reading"
        second = _predicate(rng, situation.action, words, "ing" if tense == "progressive" else tense, plural)
        return _join(subject, finite_posture, "and", second, place)
    if shape == "while":
        return _join(subject, main, place, "while", posture)
    if shape == "fronted":
        return f"{posture.capitalize()}, {_join(subject, main, place)}"
    return _join(subject, posture, main, place)


def _partner_scene(rng: random.Random, situation: Situation, words: dict[str, str], tense: str) -> str:
    """One agent acts on an object, a second agent then acts on the same object."""
    action, partner = situation.action, situation.partner
    subject, plural = _subject(rng, words["agent"])
    subject2, plural2 = _subject(rng, words["agent2"])
    noun = words["object"]
    object_plural = _pluralizable(noun) and rng.random() < PLURAL_OBJECT_RATE
    pronoun = "them" if object_plural else "it"
    first_verb = _verb_form(action.verb, tense, plural)
    second_verb = _verb_form(partner.second, tense, plural2)
    place = _place_phrase(rng, action, words.get("place"))
    tool = _tool_phrase(rng, action, words.get("tool"))
    shape = rng.choice(("and", "and", "that", "by", "after"))
    if shape == "and":
        first = _join(subject, first_verb, _object_phrase(rng, noun, object_plural), tool)
        if place and rng.random() < 0.5:
            return f"{place.capitalize()}, {first} and {subject2} {second_verb} {pronoun}"
        return _join(first, place, "and", subject2, second_verb, pronoun)
    the_object = _join("the", _plural(noun) if object_plural else noun)
    if shape == "that":
        return _join(subject2, second_verb, the_object, "that", subject, first_verb, tool, place)
    if shape == "by":
        participle = _verb_forms(action.verb)["pp"]
        return _join(
            subject2, second_verb, _object_phrase(rng, noun, object_plural), participle, "by", subject, tool, place
        )
    # "after" clauses read best in the simple tenses
    tense = "past" if tense == "past" else "simple"
    first = _join(
        "after", subject, _verb_form(action.verb, tense, plural), _object_phrase(rng, noun, object_plural), tool
    )
    return _join(f"{first},", subject2, _verb_form(partner.second, tense, plural2), pronoun, place)


def _predicate(
    rng: random.Random, action: Action, words: dict[str, str], tense: str, plural: bool, plural_ok: bool = True
) -> str:
    """Verb, object and tool: "throws a red ball", "is cutting bread with a knife".

    ``plural_ok=False`` keeps the object singular (a single agent is not "wearing hats").
    """
    parts = [_verb_form(action.verb, tense, plural)]
    if "object" in words:
        noun = words["object"]
        object_plural = plural_ok and _pluralizable(noun) and rng.random() < PLURAL_OBJECT_RATE
        parts += [action.prep, _object_phrase(rng, noun, object_plural)]
    parts.append(_tool_phrase(rng, action, words.get("tool")))
    return _join(*parts)


# --- phrases -------------------------------------------------------------------------


def _subject(rng: random.Random, noun: str, definite_ok: bool = True) -> tuple[str, bool]:
    """A subject noun phrase and whether it is plural: "a young man", "two dogs", "the crowd"."""
    plural = noun not in COLLECTIVES and rng.random() < PLURAL_AGENT_RATE
    adjective = _adjective(rng, noun)
    if plural:
        determiners = ("two", "three", "some", "the") if definite_ok else ("two", "three", "some")
        return _join(rng.choice(determiners), adjective, _plural(noun)), True
    if definite_ok and rng.random() < 0.25:
        return _join("the", adjective, noun), False
    return with_article(_join(adjective, noun)), False


def _object_phrase(rng: random.Random, noun: str, plural: bool) -> str:
    if noun in DEFINITE_NOUNS:
        return f"the {noun}"
    if noun in MASS_NOUNS:
        return _join(rng.choice(("", "some", "the")), noun)
    adjective = _adjective(rng, noun)
    if plural:
        return _join(rng.choice(("", "two", "some", "the")), adjective, _plural(noun))
    if rng.random() < 0.25:
        return _join("the", adjective, noun)
    return with_article(_join(adjective, noun))


def _tool_phrase(rng: random.Random, action: Action, tool: str | None) -> str:
    if tool is None:
        return ""
    if tool in DEFINITE_NOUNS or tool in MASS_NOUNS:
        return f"{action.tool_prep} {_object_phrase(rng, tool, False)}"
    return f"{action.tool_prep} {f'the {tool}' if rng.random() < 0.5 else with_article(tool)}"


def _place_phrase(rng: random.Random, action: Action, place: str | None) -> str:
    if place is None:
        return ""
    preposition = action.place_prep or rng.choice(PLACE_PREPOSITIONS[place])
    if place in DEFINITE_NOUNS or rng.random() < 0.75:
        return f"{preposition} the {place}"
    return f"{preposition} {with_article(place)}"


def _adjective(rng: random.Random, noun: str) -> str:
    if rng.random() >= ADJECTIVE_RATE:
        return ""
    if noun in ANIMALS:
        return rng.choice(ANIMAL_ADJECTIVES)
    if noun in DESCRIBABLE_THINGS:
        return rng.choice(THING_ADJECTIVES)
    if noun in ("man", "woman", "student"):
        return rng.choice(ADULT_ADJECTIVES)
    if noun in ("boy", "girl", "child"):
        return rng.choice(CHILD_ADJECTIVES)
    return ""


def _pluralizable(noun: str) -> bool:
    return noun not in MASS_NOUNS and noun not in DEFINITE_NOUNS and noun not in COLLECTIVES


# --- inflection ----------------------------------------------------------------------


def _verb_form(lemma: str, tense: str, plural: bool) -> str:
    """The finite verb ("throws", "throw", "is throwing", "threw") or a bare "ing" form."""
    forms = _verb_forms(lemma)
    if tense == "simple":
        return lemma if plural else forms["3sg"]
    if tense == "progressive":
        return f"{'are' if plural else 'is'} {forms['ing']}"
    return forms[tense]  # "past", "ing" or "pp"


def _verb_forms(lemma: str) -> dict[str, str]:
    past, participle = IRREGULAR_VERBS.get(lemma, (_regular_past(lemma),) * 2)
    return {"3sg": _s_form(lemma), "past": past, "pp": participle, "ing": _present_participle(lemma)}


def _s_form(word: str) -> str:
    """A verb's third person or a regular noun's plural: "throws", "catches", "flies", "boxes"."""
    if word.endswith(("s", "sh", "ch", "x", "z")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _regular_past(lemma: str) -> str:
    if lemma.endswith("e"):
        return lemma + "d"
    if lemma.endswith("y") and lemma[-2] not in "aeiou":
        return lemma[:-1] + "ied"
    if lemma in DOUBLED_FINAL_CONSONANT:
        return lemma + lemma[-1] + "ed"
    return lemma + "ed"


def _present_participle(lemma: str) -> str:
    if lemma.endswith("e") and not lemma.endswith("ee"):
        return lemma[:-1] + "ing"
    if lemma in DOUBLED_FINAL_CONSONANT:
        return lemma + lemma[-1] + "ing"
    return lemma + "ing"


def _plural(noun: str) -> str:
    return IRREGULAR_PLURALS[noun] if noun in IRREGULAR_PLURALS else _s_form(noun)


# --- text helpers --------------------------------------------------------------------


def _join(*parts: str) -> str:
    """The non-empty parts joined by single spaces."""
    return " ".join(part for part in parts if part)


def _lower_first(text: str) -> str:
    # sentences start with a determiner, "there" or a preposition, never with a name
    return text[0].lower() + text[1:]
