"""Synthetic Visual Dialogue: procedurally generated scenes, an answerer that sees them and a
ranker that finds them again from the dialogue. No data, no model, exactly reproducible.

**Scenes.** A scene has a setting (kitchen, park, beach, ...; indoor or outdoor), a time of day,
outdoors a weather, and four to seven groups of objects, each a category (dog, bus, woman, ...)
with a colour, a count and a position (left, middle, right). One or two groups are the
*main* objects the caption names, the others are background the caption leaves out.

**Families of near-duplicates.** A split's gallery is made of families of twenty scenes
(:data:`FAMILY_SIZE`) that share a caption ("a dog and some cats in a park"): a *base* scene
and nineteen variants of it, each with ONE attribute of the base changed: the colour of a
group (most often), the weather (often outdoors), the time of day, the position of a group,
the count of a group (not of one the caption calls "a dog"), or a background object (another
category in its place, or one more). A family's changes are dealt from a shuffled deck that
holds each attribute of the base :data:`CHANGE_WEIGHTS` times, so every family varies in many
attributes, each in a few of its scenes, and in nothing else. The caption holds only what the
whole family shares (the main objects, "a" versus "some" and the place): from the caption
alone the target ties with its nineteen family-mates.

**The answerer** (:class:`SceneAnswerer`) parses the kinds of questions VisDial's people ask
(:func:`parse_question`): existence ("is there a dog?", "any people?"), colours ("what color is
the car?", "is the bus red?", "what is the man wearing?"), counts ("how many dogs are
there?", "are there two cats?"), positions ("where is the kite?", "what is on the left?",
"is the dog in the middle?"), the rest of the picture ("what else is there?"), the weather,
the time of day and indoors/outdoors. Anything else is answered "i can't tell".

**The ranker** (:class:`SceneRanker`) knows how every scene of the gallery would answer each
question. A candidate's score is minus the number of pieces of evidence it contradicts (a
caption other than the revealed one; each answer it would have given differently), i.e. its
log-likelihood when every piece of evidence may be wrong with the same small probability,
and the percentile is :func:`~lm_gym.tasks.visdial.world.rank_percentile` of the target.

So a game takes several questions, and which ones matters. The game ends (at the env's
default cutoff 0.5) once the answers have ruled out ten of the target's nineteen
family-mates. An open question about one attribute rules out only the family-mates that
differ from the target there: for a target that kept that attribute of the base, the few
variants that changed it; a target that is itself such a variant is found at once. So the
cutoff takes questions about several *different* attributes: what else is in the picture
(it changes with every background change and names the background objects), the colour of
each object, the weather, ... The informative questioner of
:mod:`lm_gym.tasks.visdial.policies` needs about 3.5 to 4 turns on average; one that knew
every family's variants could do with about 2.5. A yes/no question about the same attribute
rules out fewer ("is the dog red?" - "no" rules out only the red dogs; a random yes/no
questioner seldom reaches the cutoff in ten turns); repeating a question, or asking about
what every family member shares (the objects the caption names, indoors/outdoors) or about
nothing in the picture, rules out nothing.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.tasks.english import with_article
from lm_gym.tasks.synthetic_splits import split_request
from lm_gym.tasks.visdial.dialogue import CANT_TELL, Dialogue, HiddenImage
from lm_gym.tasks.visdial.synthetic_words import (
    AUXILIARIES,
    CAPTION_TEMPLATES,
    COLORS,
    IRREGULAR_PLURALS,
    NUMBER_WORDS,
    PERSONS,
    POSITION_PHRASES,
    POSITIONS,
    SETTINGS,
    SYNONYMS,
    TIMES,
    WEATHER_WORDS,
    WEATHERS,
    WH_WORDS,
)

# the questioners and the env import the question templates from here
from lm_gym.tasks.visdial.synthetic_words import OPEN_QUESTIONS as OPEN_QUESTIONS
from lm_gym.tasks.visdial.synthetic_words import SCENE_QUESTIONS as SCENE_QUESTIONS
from lm_gym.tasks.visdial.synthetic_words import SCENE_YES_NO_QUESTIONS as SCENE_YES_NO_QUESTIONS
from lm_gym.tasks.visdial.synthetic_words import YES_NO_QUESTIONS as YES_NO_QUESTIONS
from lm_gym.tasks.visdial.world import check_ranked_image, rank_percentile

#: Gallery size of each split when ``num_images`` is not given.
SPLIT_SIZES = {"train": 400, "validation": 200, "test": 200}
#: Scenes of a family: a base scene and its variants, all with the base's caption (the last
#: family of a gallery may have fewer).
FAMILY_SIZE = 20
#: How often a family's variants change an attribute of each kind, relative to each other (per
#: attribute: each group's colour, position and count; the scene's weather, time, background).
CHANGE_WEIGHTS = {"color": 4, "weather": 3, "time": 1, "position": 1, "count": 1, "background": 1}
#: Smallest and largest gallery (a gallery smaller than a family holds part of one).
MIN_IMAGES = 10
MAX_IMAGES = 5000

#: Counts of a group the caption calls "some dogs", and of a background group.
MAIN_COUNTS = (2, 3, 4)
BACKGROUND_COUNTS = (1, 1, 2)
#: Background groups of a base scene (a variant may add one, up to ``MAX_BACKGROUND_GROUPS``).
BACKGROUND_GROUPS = (3, 4, 4, 5)
MAX_BACKGROUND_GROUPS = 5

CATEGORIES = tuple(sorted({category for setting in SETTINGS.values() for category in setting.categories}))


def plural(noun: str) -> str:
    """The irregular plural of a category, else ``noun + "s"``: no spelling rules, also for the nouns of
    a real caption that the questioners ask about ("how many glasss ...")."""
    return IRREGULAR_PLURALS.get(noun, noun + "s")


_SINGULARS = {plural(category): category for category in CATEGORIES}


@dataclass(frozen=True)
class SceneObject:
    """A group of ``count`` objects of one category, colour and position."""

    category: str
    color: str
    count: int
    position: str
    main: bool  # named by the caption

    def phrase(self) -> str:
        return with_article(self.category) if self.count == 1 else f"{NUMBER_WORDS[self.count]} {plural(self.category)}"


@dataclass(frozen=True)
class Scene:
    """A synthetic picture. ``objects`` holds at most one group per category."""

    setting: str
    time: str
    weather: str | None  # None indoors
    objects: tuple[SceneObject, ...]
    caption: str

    @property
    def outdoor(self) -> bool:
        return SETTINGS[self.setting].outdoor

    def find(self, category: str) -> SceneObject | None:
        return next((o for o in self.objects if o.category == category), None)


def scene_text(scene: Scene) -> str:
    """``scene`` in one line of the answers' own words: what an answering agent of the multi-agent
    game sees, e.g. ``park, night, snowy. main: three green women on the left. also: a gray bench
    in the middle; a dog on the right.`` (the setting, time and, outdoors, weather; then the groups
    the caption names, then the others, each as count, colour, category and position). About 50
    tokens of the task's tokenizer where the scene's JSON takes 400. The caption is left out: it
    is the first line of the dialogue that follows. :func:`parse_scene_text` reads it back."""
    place = ", ".join(part for part in (scene.setting, scene.time, scene.weather) if part)
    main = "; ".join(_group_text(o) for o in scene.objects if o.main) or "nothing"
    others = "; ".join(_group_text(o) for o in scene.objects if not o.main) or "nothing"
    return f"{place}. main: {main}. also: {others}."


def _group_text(group: SceneObject) -> str:
    if group.count == 1:
        counted = with_article(f"{group.color} {group.category}")
    else:
        counted = f"{NUMBER_WORDS[group.count]} {group.color} {plural(group.category)}"
    return f"{counted} {POSITION_PHRASES[group.position]}"


_POSITIONS = {phrase: position for position, phrase in POSITION_PHRASES.items()}
_SCENE_LINE = re.compile(r"(?P<place>[a-z ,]+)\. main: (?P<main>.+)\. also: (?P<others>.+)\.")
_GROUP = re.compile(rf"(?P<count>\w+) (?P<color>\w+) (?P<noun>[a-z ]+) (?P<position>{'|'.join(_POSITIONS)})")


def parse_scene_text(text: str, caption: str = "") -> Scene:
    """The :class:`Scene` of a :func:`scene_text` line, with ``caption`` (the line leaves it out);
    ``ValueError`` when the text is not such a line."""
    line = _SCENE_LINE.fullmatch(text)
    if line is None:
        raise ValueError(f"not a scene_text line: {text[:80]!r}")
    setting, time, *weather = line["place"].split(", ")
    groups = [(True, part) for part in line["main"].split("; ") if part != "nothing"]
    groups += [(False, part) for part in line["others"].split("; ") if part != "nothing"]
    objects = tuple(_parse_group(part, main, text) for main, part in groups)
    return Scene(setting, time, weather[0] if weather else None, objects, caption)


def _parse_group(part: str, main: bool, text: str) -> SceneObject:
    group = _GROUP.fullmatch(part)
    if group is not None:
        if group["count"] in ("a", "an"):
            count, category = 1, group["noun"]
        else:
            count = NUMBER_WORDS.index(group["count"]) if group["count"] in NUMBER_WORDS[2:] else 0
            category = _SINGULARS.get(group["noun"])
        if count and category in CATEGORIES:
            return SceneObject(category, group["color"], count, _POSITIONS[group["position"]], main)
    raise ValueError(f"not a scene_text line: {part!r} in {text[:80]!r}")


# ---- generation -----------------------------------------------------------------------------


def generate_scenes(split: str, num_images: int | None = None) -> tuple[Scene, ...]:
    """The gallery of ``split``: ``num_images`` scenes (default :data:`SPLIT_SIZES`), seeded by the split.

    Scenes come in families of :data:`FAMILY_SIZE` that share a caption (captions are unique
    across families; scenes are unique), in a shuffled order.
    """
    count, rng = split_request("visdial", split, num_images, SPLIT_SIZES, "num_images")
    scenes: list[Scene] = []
    captions: set[str] = set()
    settings = list(SETTINGS)
    while len(scenes) < count:
        name = rng.choice(settings)
        setting = SETTINGS[name]
        main = rng.sample(setting.categories, rng.choice((1, 1, 2)))
        plural_flags = [rng.random() < 0.4 for _ in main]
        named = [f"some {plural(c)}" if many else with_article(c) for c, many in zip(main, plural_flags)]
        caption = rng.choice(CAPTION_TEMPLATES).format(objects=" and ".join(named), place=setting.phrase)
        if caption in captions:
            continue
        captions.add(caption)
        base = _base_scene(rng, name, main, plural_flags, caption)
        scenes += _family(rng, base, min(FAMILY_SIZE, count - len(scenes)))
    rng.shuffle(scenes)
    return tuple(scenes)


def _base_scene(rng, name: str, main: list[str], plural_flags: list[bool], caption: str) -> Scene:
    setting = SETTINGS[name]
    objects = [
        SceneObject(category, rng.choice(COLORS), rng.choice(MAIN_COUNTS) if many else 1, rng.choice(POSITIONS), True)
        for category, many in zip(main, plural_flags)
    ]
    others = [c for c in setting.categories if c not in main]
    for category in rng.sample(others, rng.choice(BACKGROUND_GROUPS)):
        objects.append(_background_group(rng, category))
    time = "day" if rng.random() < 0.7 else "night"
    weather = rng.choice(WEATHERS) if setting.outdoor else None
    return Scene(name, time, weather, tuple(objects), caption)


def _background_group(rng, category: str) -> SceneObject:
    return SceneObject(category, rng.choice(COLORS), rng.choice(BACKGROUND_COUNTS), rng.choice(POSITIONS), False)


def _family(rng, base: Scene, size: int) -> list[Scene]:
    """``base`` and ``size - 1`` distinct variants of it, each with one attribute changed.

    The changed attributes are dealt from a shuffled deck that holds each changeable attribute
    of the base :data:`CHANGE_WEIGHTS` times (a new deck when it runs out), so that every family
    varies in its attributes about as often as the weights say and none mostly in one. A
    variant equal to an earlier one is dropped.
    """
    attributes = _changeable_attributes(base)
    family, deck = {base: None}, []  # a dict keeps the drawing order, so the gallery is reproducible
    for _ in range(50 * size):
        if len(family) >= size:
            break
        if not deck:
            deck = [attribute for attribute in attributes for _ in range(CHANGE_WEIGHTS[attribute[0]])]
            rng.shuffle(deck)
        family.setdefault(_change(rng, base, *deck.pop()))
    return list(family)


def _changeable_attributes(scene: Scene) -> list[tuple[str, int]]:
    """``(kind, group index)`` of every attribute a variant of ``scene`` may change (index -1: the scene's).

    The caption's "a dog" fixes that count; indoors there is no weather.
    """
    attributes = [("time", -1), ("background", -1)] + ([("weather", -1)] if scene.outdoor else [])
    for index, group in enumerate(scene.objects):
        attributes += [("color", index), ("position", index)]
        if not group.main or group.count > 1:
            attributes.append(("count", index))
    return attributes


def _other(rng, values: Sequence, current):
    return rng.choice([value for value in values if value != current])


def _change(rng, scene: Scene, kind: str, index: int) -> Scene:
    """``scene`` with one attribute given another value (a new or swapped background group for ``background``)."""
    if kind == "time":
        return replace(scene, time=_other(rng, TIMES, scene.time))
    if kind == "weather":
        return replace(scene, weather=_other(rng, WEATHERS, scene.weather))
    if kind == "background":
        return replace(scene, objects=_changed_background(rng, scene))
    objects = list(scene.objects)
    group = objects[index]
    if kind == "color":
        objects[index] = replace(group, color=_other(rng, COLORS, group.color))
    elif kind == "position":
        objects[index] = replace(group, position=_other(rng, POSITIONS, group.position))
    else:
        objects[index] = replace(
            group, count=_other(rng, MAIN_COUNTS if group.main else BACKGROUND_COUNTS, group.count)
        )
    return replace(scene, objects=tuple(objects))


def _changed_background(rng, scene: Scene) -> tuple[SceneObject, ...]:
    """The objects of ``scene`` with a background group added, or one's category swapped.

    A swapped group keeps its colour, count and position.
    """
    present = {group.category for group in scene.objects}
    category = rng.choice([c for c in SETTINGS[scene.setting].categories if c not in present])
    background = [i for i, group in enumerate(scene.objects) if not group.main]
    if not background or (len(background) < MAX_BACKGROUND_GROUPS and rng.random() < 0.5):
        return (*scene.objects, _background_group(rng, category))
    objects = list(scene.objects)
    index = rng.choice(background)
    objects[index] = replace(objects[index], category=category)
    return tuple(objects)


# ---- questions and answers ------------------------------------------------------------------


def fill(template: str, noun: str, color: str = "red", side: str = "left", number: int = 2) -> str:
    """A question template about ``noun`` (and a colour, side and number for yes/no templates)."""
    return template.format(
        noun=noun, plural=plural(noun), a_noun=with_article(noun), color=color, side=side, number=NUMBER_WORDS[number]
    )


_WORD = re.compile(r"[a-z]+|\d+")
_NOUNS = {form: c for c in CATEGORIES for form in (c, plural(c))} | {
    "people": "people",
    "person": "people",
    "persons": "people",
}
_NUMBERS = {word: n for n, word in enumerate(NUMBER_WORDS) if n}

#: A parsed question: its kind, then its arguments (see :func:`parse_question`).
Query = tuple


def parse_question(text: str) -> Query | None:
    """The question as ``(kind, *arguments)``, or ``None`` when the answerer cannot make it out.

    Kinds: ``exists``, ``color``, ``color_is``, ``wearing``, ``count``, ``count_is``, ``where``,
    ``position_is``, ``at_position``, ``else``, ``weather``, ``weather_is``, ``time``,
    ``time_is``, ``place``, ``outdoors_is``. A question is a yes/no question when it starts
    with an auxiliary ("is", "are", "do", "can", "any", ...), has no wh-word among its first
    three words and no "or".
    """
    words = [SYNONYMS.get(w, w) for w in _WORD.findall(text.lower())]
    if not words:
        return None
    has = set(words)
    noun = next((_NOUNS[w] for w in words if w in _NOUNS), None)
    color = next((w for w in words if w in COLORS), None)
    number = next((_NUMBERS[w] for w in words if w in _NUMBERS), None)
    position = next((w for w in words if w in POSITIONS), None)
    weather = next((w for w in words if w in WEATHER_WORDS), None)
    time = next((w for w in words if w in TIMES), None)
    wh = next((w for w in words[:3] if w in WH_WORDS), None)
    yes_no = words[0] in AUXILIARIES and wh is None and "or" not in has
    if "how" in has and "many" in has:
        return ("count", noun) if noun else None
    if noun is not None and noun != "people" and ("color" in has or "wearing" in has):
        if yes_no:
            return ("color_is", noun, color) if color else None
        return ("color", noun) if "color" in has else ("wearing", noun)
    if wh == "where":
        return ("where", noun) if noun and noun != "people" else None
    if "else" in has or ("other" in has and wh):
        return ("else",)
    if "weather" in has:
        return ("weather",)
    if time or "time" in has:
        return ("time_is", time) if yes_no and time else ("time",)
    if weather:
        return ("weather_is", weather) if yes_no else ("weather",)
    if has & {"indoors", "outdoors"}:
        return ("outdoors_is", "outdoors" in has) if yes_no else ("place",)
    if wh == "what" and position and noun is None:
        return ("at_position", position)
    if yes_no and noun:
        if number:
            return ("count_is", noun, number)
        if noun == "people":
            return ("exists", noun)
        if color:
            return ("color_is", noun, color)
        if position:
            return ("position_is", noun, position)
        return ("exists", noun)
    return None


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def answer_query(scene: Scene, query: Query | None) -> str:
    """What someone looking at ``scene`` answers to the parsed question ``query``."""
    if query is None:
        return CANT_TELL
    kind, *args = query
    if kind in ("count", "count_is", "exists") and args[0] == "people":
        total = sum(o.count for o in scene.objects if o.category in PERSONS)
        if kind == "count":
            return NUMBER_WORDS[total]
        return _yes(total == args[1]) if kind == "count_is" else _yes(total > 0)
    if kind in ("exists", "color", "color_is", "wearing", "count", "count_is", "where", "position_is"):
        found = scene.find(args[0])
        absent = f"i don't see any {plural(args[0])}"
        if kind == "exists":
            return _yes(found is not None)
        if kind == "color_is":
            return _yes(found is not None and found.color == args[1])
        if kind == "count_is":
            return _yes(found is not None and found.count == args[1])
        if kind == "position_is":
            return _yes(found is not None and found.position == args[1])
        if kind == "count":
            return NUMBER_WORDS[found.count] if found else "none"
        if found is None:
            return absent
        if kind == "color":
            return found.color
        if kind == "wearing":
            if found.category not in PERSONS:
                return CANT_TELL
            return f"a {found.color} shirt" if found.count == 1 else f"{found.color} shirts"
        return POSITION_PHRASES[found.position]
    if kind == "at_position":
        there = [o.phrase() for o in scene.objects if o.position == args[0]]
        return " and ".join(there) or "nothing"
    if kind == "else":
        return " and ".join(o.phrase() for o in scene.objects if not o.main) or "nothing else"
    if kind == "time":
        return scene.time
    if kind == "time_is":
        return _yes(scene.time == args[0])
    if kind == "place":
        return "outdoors" if scene.outdoor else "indoors"
    if kind == "outdoors_is":
        return _yes(scene.outdoor == args[0])
    if not scene.outdoor:  # weather, weather_is
        return "it's indoors"
    shown = "sunny" if scene.weather == "clear" and scene.time == "day" else scene.weather
    if kind == "weather":
        return shown
    return _yes(args[0] in (shown, scene.weather))


def answer_question(scene: Scene, question: str) -> str:
    return answer_query(scene, parse_question(question))


def normalize_answer(answer: str) -> str:
    """Lower-case words and digits only: how the ranker compares answers."""
    return " ".join(re.findall(r"[a-z0-9']+", answer.lower()))


class SceneAnswerer:
    """The :class:`~lm_gym.tasks.visdial.world.Answerer` of synthetic scenes.

    It runs :func:`answer_question` on ``image.content``.
    """

    def answer(self, image: HiddenImage, dialogue: Dialogue, question: str) -> str:
        return answer_question(image.content, question)


class SceneRanker:
    """The :class:`~lm_gym.tasks.visdial.world.Ranker` of a synthetic gallery (see the module docstring).

    Every image it ranks must be one of ``images`` (the gallery; ``image.index`` is its
    position). The answers of the whole gallery to a question are computed once and kept
    for the last 4,096 questions.
    """

    def __init__(self, images: Sequence[HiddenImage]):
        self.images = tuple(images)
        self._captions = np.array([image.caption for image in self.images])
        self._answers: OrderedDict[str, np.ndarray] = OrderedDict()

    def percentiles(self, images: Sequence[HiddenImage], dialogues: Sequence[Dialogue]) -> np.ndarray:
        result = np.empty(len(images))
        for i, (image, dialogue) in enumerate(zip(images, dialogues, strict=True)):
            check_ranked_image(self.images, image, "in this ranker's gallery")
            contradictions = (self._captions != image.caption).astype(np.int64)
            for question, answer in dialogue:
                contradictions += self.gallery_answers(question) != normalize_answer(answer)
            result[i] = rank_percentile(-contradictions, image.index)
        return result

    def gallery_answers(self, question: str) -> np.ndarray:
        """Every gallery scene's (normalised) answer to ``question``."""
        answers = self._answers.get(question)
        if answers is None:
            query = parse_question(question)
            answers = np.array([normalize_answer(answer_query(image.content, query)) for image in self.images])
            self._answers[question] = answers
            if len(self._answers) > 4096:
                self._answers.popitem(last=False)
        else:
            self._answers.move_to_end(question)
        return answers


@functools.lru_cache(maxsize=8)
def gallery(split: str, num_images: int | None = None) -> tuple[HiddenImage, ...]:
    """The split's scenes as hidden images (``image_id`` = ``index`` = position in the gallery; cached)."""
    if num_images is not None and not (MIN_IMAGES <= num_images <= MAX_IMAGES):
        raise ConfigurationError(
            f"num_images must be an int in [{MIN_IMAGES}, {MAX_IMAGES}], got {safe_repr(num_images)}"
        )
    return tuple(HiddenImage(i, i, scene.caption, scene) for i, scene in enumerate(generate_scenes(split, num_images)))
