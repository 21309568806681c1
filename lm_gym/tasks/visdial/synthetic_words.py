"""The words of the synthetic Visual Dialogue scenes and questions (:mod:`lm_gym.tasks.visdial.synthetic`)."""

from __future__ import annotations

from dataclasses import dataclass

COLORS = ("red", "blue", "green", "yellow", "white", "black", "brown", "gray")
POSITIONS = ("left", "middle", "right")
POSITION_PHRASES = {"left": "on the left", "middle": "in the middle", "right": "on the right"}
TIMES = ("day", "night")
WEATHERS = ("clear", "cloudy", "rainy", "snowy")
NUMBER_WORDS = (
    "none",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
PERSONS = ("man", "woman", "child")


@dataclass(frozen=True)
class Setting:
    phrase: str
    outdoor: bool
    categories: tuple[str, ...]


SETTINGS = {
    "kitchen": Setting(
        "in a kitchen", False, ("cup", "plate", "bottle", "bowl", "cat", "dog", "woman", "man", "chair", "apple")
    ),
    "living room": Setting(
        "in a living room", False, ("cat", "dog", "chair", "couch", "laptop", "book", "lamp", "man", "woman", "child")
    ),
    "office": Setting("in an office", False, ("laptop", "chair", "book", "cup", "phone", "lamp", "man", "woman")),
    "bedroom": Setting("in a bedroom", False, ("bed", "cat", "dog", "lamp", "book", "pillow", "child", "woman")),
    "park": Setting(
        "in a park", True, ("dog", "bench", "kite", "bike", "man", "woman", "child", "ball", "bird", "tree")
    ),
    "street": Setting("on a street", True, ("car", "bus", "truck", "bike", "man", "woman", "dog", "umbrella", "sign")),
    "beach": Setting(
        "on a beach", True, ("umbrella", "boat", "dog", "ball", "kite", "child", "man", "woman", "bird", "surfboard")
    ),
    "field": Setting("in a field", True, ("horse", "cow", "sheep", "dog", "man", "bird", "tree", "fence")),
}
IRREGULAR_PLURALS = {
    "man": "men",
    "woman": "women",
    "child": "children",
    "sheep": "sheep",
    "bus": "buses",
    "bench": "benches",
    "couch": "couches",
}

#: Captions of a family: ``{objects}`` the main objects, ``{place}`` the setting's phrase.
CAPTION_TEMPLATES = ("{objects} {place}", "a photo of {objects} {place}", "a picture of {objects} {place}")

#: Question templates of the scripted questioners and the tokenizer corpus (``{noun}``: a category).
OPEN_QUESTIONS = ("what color is the {noun}?", "where is the {noun}?", "how many {plural} are there?")
YES_NO_QUESTIONS = (
    "is there {a_noun}?",
    "is the {noun} {color}?",
    "is the {noun} on the {side}?",
    "are there {number} {plural}?",
)
SCENE_QUESTIONS = (
    "what else is in the picture?",
    "what is the weather like?",
    "is it day or night?",
    "what is on the left?",
    "what is in the middle?",
    "what is on the right?",
)
SCENE_YES_NO_QUESTIONS = ("is it sunny?", "is it daytime?", "is it raining?", "is it outdoors?", "any people?")

# The question parser's words: the synonyms it reads as one word, weather words, auxiliaries, wh-words.
SYNONYMS = {
    "colour": "color",
    "colors": "color",
    "colours": "color",
    "colored": "color",
    "coloured": "color",
    "grey": "gray",
    "center": "middle",
    "centre": "middle",
    "outside": "outdoors",
    "outdoor": "outdoors",
    "inside": "indoors",
    "indoor": "indoors",
    "daytime": "day",
    "nighttime": "night",
    "raining": "rainy",
    "rain": "rainy",
    "snowing": "snowy",
    "snow": "snowy",
    "clouds": "cloudy",
    "overcast": "cloudy",
    "wears": "wearing",
    "wear": "wearing",
    **{str(n): word for n, word in enumerate(NUMBER_WORDS) if n},
}
WEATHER_WORDS = ("sunny", "clear", "cloudy", "rainy", "snowy")
AUXILIARIES = ("is", "are", "was", "were", "does", "do", "did", "can", "could", "has", "have", "any")
WH_WORDS = ("what", "where", "how", "which", "who")
