"""Scripted questioners: each maps an observation (caption and dialogue so far) to a question.

They read only the observation text, so they play any VisDial env (synthetic or local, scalar
or vector) and generate the offline datasets. Their questions come from the templates of
:mod:`lm_gym.tasks.visdial.synthetic`, about the objects the caption names
(:func:`caption_nouns`).

========================  ======================================================================
questioner                question
========================  ======================================================================
``InformativeQuestioner`` the first open question not yet asked, in a fixed order
                          (:func:`informative_plan`): what else is in the picture, the colour of
                          each object the caption or that answer names, the weather, the time of
                          day, where each object is, how many there are, what is on each side.
                          Deterministic.
``RandomQuestioner``      uniform over a bank of every template about every category of the
                          synthetic world, scene questions, and questions about nothing
``YesNoQuestioner``       a yes/no question: about the caption's objects with a random colour,
                          side or number, whether a random category is there, the weather or time
``MixtureQuestioner``     per turn the informative question with probability ``prob_informative``,
                          else a random or a yes/no one (half each): people of mixed skill
========================  ======================================================================

:class:`SceneTextAnswerer` is the other side: the answering agent of the multi-agent game
(``lm_gym.multiagent.visdial_v0``) on synthetic scenes, answering from its observation text.
"""

from __future__ import annotations

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.tasks.visdial.dialogue import Dialogue, parse_dialogue_text
from lm_gym.tasks.visdial.synthetic import (
    CATEGORIES,
    COLORS,
    OPEN_QUESTIONS,
    POSITIONS,
    SCENE_QUESTIONS,
    SCENE_YES_NO_QUESTIONS,
    SETTINGS,
    YES_NO_QUESTIONS,
    answer_question,
    fill,
    parse_scene_text,
    plural,
    with_article,
)

_KNOWN_NOUNS = {form: c for c in CATEGORIES for form in (c, plural(c))}
_DETERMINERS = ("a", "an", "the", "some", "two", "three", "four", "several", "many")
#: Questions about nothing in any picture, for the random questioner.
NONSENSE_QUESTIONS = ("what is that?", "why?", "can you describe it?", "what is the name of it?", "is it good?", "hmm?")


def caption_nouns(caption: str) -> list[str]:
    """The objects a caption names, in order: categories of the synthetic world (singular), or,
    when it names none (a real caption), each word after a determiner ("a", "the", "some", ...)."""
    words = caption.lower().replace(",", " ").split()
    known = list(dict.fromkeys(_KNOWN_NOUNS[w] for w in words if w in _KNOWN_NOUNS))
    if known:
        return known
    return list(
        dict.fromkeys(
            words[i + 1] for i in range(len(words) - 1) if words[i] in _DETERMINERS and words[i + 1] not in _DETERMINERS
        )
    )


class Questioner:
    """Base class: ``questioner(observation) -> question``; randomness from ``seed``."""

    name = "questioner"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def __call__(self, observation: str) -> str:
        raise NotImplementedError

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def batch(self, observations: list[str]) -> list[str]:
        """One question per observation: the batched policy of ``lm_gym.offline.record_trajectories``."""
        return [self(observation) for observation in observations]


class InformativeQuestioner(Questioner):
    """The first question of :func:`informative_plan` not asked yet (it reads only the observation)."""

    name = "informative"

    def __call__(self, observation: str) -> str:
        caption, dialogue = parse_dialogue_text(observation)
        plan = informative_plan(caption, dialogue)
        asked = {question for question, _ in dialogue}
        return next((q for q in plan if q not in asked), plan[len(dialogue) % len(plan)])


def informative_plan(caption: str, dialogue: Dialogue) -> list[str]:
    """Open questions about what may tell the scenes that fit the caption apart, in the order of
    the synthetic world's :data:`~lm_gym.tasks.visdial.synthetic.CHANGE_WEIGHTS` (most often
    changed first).

    What else is in the picture (its answer changes with every background change, and names
    the background objects); the colour of each object the caption names, then of each
    background object that answer named; the weather (unless the caption names an indoor
    place); the time of day; where each named object is; how many there are (unless the caption
    says "a dog": then one); where each background object is; what is on each side.
    """
    nouns = caption_nouns(caption)
    colour, where, how_many = OPEN_QUESTIONS
    what_else, weather, time, *sides = SCENE_QUESTIONS
    background = [n for n in caption_nouns(dict(dialogue).get(what_else, "")) if n not in nouns]
    plan = [what_else] + [fill(colour, n) for n in nouns + background]
    plan += ([] if _names_indoor_place(caption) else [weather]) + [time] + [fill(where, n) for n in nouns]
    plan += [fill(how_many, n) for n in nouns if not _named_once(caption, n)] + [fill(where, n) for n in background]
    return plan + sides


def _named_once(caption: str, noun: str) -> bool:
    """Whether the caption says "a dog" (so there is one dog) rather than "some dogs"."""
    words = caption.lower().replace(",", " ").split()
    return with_article(noun).split() in [words[i : i + 2] for i in range(len(words) - 1)]


def _names_indoor_place(caption: str) -> bool:
    """Whether the caption ends with an indoor place of the synthetic world ("in a kitchen"): no weather there."""
    return any(caption.lower().endswith(setting.phrase) for setting in SETTINGS.values() if not setting.outdoor)


class RandomQuestioner(Questioner):
    name = "random"

    def __init__(self, seed: int | None = None):
        super().__init__(seed)
        about_objects = [
            fill(t, c, color=COLORS[i % len(COLORS)], side=POSITIONS[i % 2 * 2], number=2 + i % 3)
            for i, c in enumerate(CATEGORIES)
            for t in OPEN_QUESTIONS + YES_NO_QUESTIONS
        ]
        self.bank = about_objects + list(SCENE_QUESTIONS + SCENE_YES_NO_QUESTIONS + NONSENSE_QUESTIONS)

    def __call__(self, observation: str) -> str:
        return self.bank[int(self.rng.integers(len(self.bank)))]


class YesNoQuestioner(Questioner):
    name = "yes_no"

    def __call__(self, observation: str) -> str:
        caption, dialogue = parse_dialogue_text(observation)
        nouns = caption_nouns(caption) or ["thing"]
        asked = {question for question, _ in dialogue}
        question = ""
        for _ in range(8):  # a few tries for a question not asked yet
            roll = self.rng.random()
            noun = nouns[int(self.rng.integers(len(nouns)))]
            if roll < 0.15:
                question = SCENE_YES_NO_QUESTIONS[int(self.rng.integers(len(SCENE_YES_NO_QUESTIONS)))]
            elif roll < 0.3:
                question = fill(YES_NO_QUESTIONS[0], CATEGORIES[int(self.rng.integers(len(CATEGORIES)))])
            else:
                question = fill(
                    YES_NO_QUESTIONS[1 + int(self.rng.integers(3))],
                    noun,
                    color=COLORS[int(self.rng.integers(len(COLORS)))],
                    side=POSITIONS[int(self.rng.integers(len(POSITIONS)))],
                    number=int(self.rng.integers(2, 5)),
                )
            if question not in asked:
                break
        return question


class MixtureQuestioner(Questioner):
    """Informative with probability ``prob_informative`` per turn, else random or yes/no."""

    name = "mixture"

    def __init__(self, prob_informative: float, seed: int | None = None):
        if not (isinstance(prob_informative, (int, float)) and 0.0 <= prob_informative <= 1.0):
            raise ConfigurationError(f"prob_informative must be a number in [0, 1], got {safe_repr(prob_informative)}")
        self.prob_informative = float(prob_informative)
        self.informative, self.random, self.yes_no = InformativeQuestioner(), RandomQuestioner(), YesNoQuestioner()
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        sequence = np.random.SeedSequence(seed)
        own, random_child, yes_no_child = sequence.spawn(3)
        self.rng = np.random.default_rng(own)
        self.random.seed(int(random_child.generate_state(1)[0]))
        self.yes_no.seed(int(yes_no_child.generate_state(1)[0]))

    def __call__(self, observation: str) -> str:
        if self.rng.random() < self.prob_informative:
            return self.informative(observation)
        return (self.random if self.rng.random() < 0.5 else self.yes_no)(observation)


class SceneTextAnswerer:
    """Answers as the synthetic world's answerer does, from the answerer's observation of
    ``lm_gym.multiagent.visdial_v0``: the scene on its first line (``synthetic.scene_text``), the
    question on its last. Deterministic; only for ``source="synthetic"``."""

    name = "scene"

    def __call__(self, observation: str) -> str:
        lines = observation.split("\n")
        return answer_question(parse_scene_text(lines[0], caption=lines[2]), lines[-1])


QUESTIONERS = {"informative": InformativeQuestioner, "random": RandomQuestioner, "yes_no": YesNoQuestioner}
