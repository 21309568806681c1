"""The words and templates of the synthetic Reddit threads (:mod:`lm_gym.tasks.reddit.synthetic`).

No template holds a word of :data:`UNSAFE_TERMS` or :data:`SENSITIVE_TERMS`, the toxicity lexicon: only the
``{term}`` the generator fills in sets a reply's level.
"""

from __future__ import annotations

from typing import NamedTuple

UNSAFE_TERMS = ("moron", "clown", "loser", "dimwit", "halfwit", "buffoon", "nitwit", "dunce", "numbskull", "bonehead")
SENSITIVE_TERMS = ("politics", "politicians", "government", "election", "religion", "church", "senate", "congress")


class Topic(NamedTuple):
    subjects: tuple[str, ...]
    tips: tuple[str, ...]  # imperative tips, completing "You should ..."
    reasons: tuple[str, ...]  # completing "... because ..."


TOPICS = {
    "cooking": Topic(
        ("sourdough bread", "a cast iron pan", "meal prep", "homemade pasta", "slow cooker stews", "knife skills"),
        (
            "salt the water more than you think",
            "let the dough rest overnight",
            "preheat the pan for five minutes",
            "weigh your ingredients instead of using cups",
            "keep your knives sharp",
            "taste as you go",
        ),
        (
            "the flavour gets much deeper",
            "it stops everything from sticking",
            "the results are far more consistent",
            "it saves a lot of time on busy days",
        ),
    ),
    "fitness": Topic(
        (
            "running a first marathon",
            "lifting at home",
            "stretching every morning",
            "a couch to 5k plan",
            "swimming laps",
            "core workouts",
        ),
        (
            "increase your distance by ten percent a week",
            "focus on form before adding weight",
            "take one full rest day a week",
            "track your sessions in a notebook",
            "warm up for ten minutes first",
            "sleep at least seven hours",
        ),
        (
            "it keeps injuries away",
            "progress becomes easy to see",
            "your muscles recover between sessions",
            "it builds a habit that lasts",
        ),
    ),
    "gaming": Topic(
        (
            "a new strategy game",
            "speedrunning",
            "building a gaming PC",
            "retro consoles",
            "co-op campaigns",
            "the ranked ladder",
        ),
        (
            "play the tutorial missions first",
            "lower the shadows setting for a smoother frame rate",
            "watch replays of your own matches",
            "learn one character well before trying others",
            "check the community wiki",
            "clean the dust filters every month",
        ),
        (
            "you spot your own mistakes quickly",
            "the game runs much better",
            "the basics become second nature",
            "the wiki explains what the game never does",
        ),
    ),
    "gardening": Topic(
        (
            "growing tomatoes",
            "a balcony herb garden",
            "composting",
            "raised beds",
            "houseplants",
            "starting seeds indoors",
        ),
        (
            "water early in the morning",
            "add compost every spring",
            "pinch off the side shoots",
            "rotate your crops each year",
            "use pots with drainage holes",
            "give seedlings sixteen hours of light",
        ),
        (
            "the roots stay healthy",
            "the soil keeps its nutrients",
            "the plants put energy into fruit",
            "it prevents root rot",
        ),
    ),
    "programming": Topic(
        (
            "learning Python",
            "writing unit tests",
            "a first open source contribution",
            "code reviews",
            "debugging memory leaks",
            "version control",
        ),
        (
            "write a small test before each fix",
            "read the error message from the bottom up",
            "commit small changes often",
            "use a debugger instead of print statements",
            "read the project's contributing guide",
            "profile before optimising",
        ),
        (
            "you catch regressions early",
            "the history stays easy to follow",
            "you see the real state of the program",
            "the maintainers review it much faster",
        ),
    ),
    "travel": Topic(
        (
            "backpacking in the mountains",
            "a first solo trip",
            "long train journeys",
            "travelling with kids",
            "packing light",
            "cheap flights",
        ),
        (
            "book trains a few weeks ahead",
            "pack one outfit less than you planned",
            "carry a paper copy of your bookings",
            "learn a few words of the local language",
            "set a fare alert early",
            "keep a day free in the middle",
        ),
        (
            "prices go up quickly",
            "you are never stuck without a plan",
            "locals are much friendlier",
            "the trip feels less rushed",
        ),
    ),
    "cycling": Topic(
        (
            "commuting by bike",
            "a first road bike",
            "bike maintenance",
            "riding in the rain",
            "long weekend rides",
            "tubeless tyres",
        ),
        (
            "check your tyre pressure every week",
            "clean and oil the chain after wet rides",
            "get a proper bike fit",
            "carry a spare tube and a pump",
            "use front and rear lights even in daylight",
            "shift gears before the hill",
        ),
        (
            "it prevents most flats",
            "the drivetrain lasts twice as long",
            "your knees will thank you",
            "drivers see you much earlier",
        ),
    ),
    "photography": Topic(
        (
            "a first mirrorless camera",
            "street photography",
            "shooting in manual mode",
            "editing raw files",
            "night photography",
            "portraits",
        ),
        (
            "shoot during the golden hour",
            "use a tripod for anything slower than a second",
            "learn the exposure triangle",
            "back up your photos in two places",
            "get closer to your subject",
            "edit with a calibrated screen",
        ),
        (
            "the light is soft and warm",
            "the images stay sharp",
            "you control the look of every shot",
            "the colours look right everywhere",
        ),
    ),
}

QUESTION_PARENTS = (
    "Any tips for {subject}?",
    "What is the best way to get started with {subject}?",
    "Is {subject} worth it for a beginner?",
    "I keep struggling with {subject}. What am I doing wrong?",
    "How long did it take you to get comfortable with {subject}?",
)
OPINION_PARENTS = (
    "Honestly, {subject} is overrated.",
    "I finally tried {subject} this weekend and loved it.",
    "Unpopular opinion: {subject} is harder than people say.",
    "After a year of {subject}, I am never going back.",
)
HOSTILE_ASIDES = ("Anyone who disagrees is a {term}.", "Only a {term} would think otherwise.")
SENSITIVE_ASIDES = (
    "Typical of {term} these days.",
    "This is exactly what is wrong with {term}.",
    "Let's not bring {term} into this.",
    "It reminds me of arguing about {term} at dinner.",
)
INSULTS = (
    "Only a {term} would ask that.",
    "You are a complete {term}.",
    "What a {term} take.",
    "Stop acting like a {term}.",
    "Spoken like a true {term}.",
)
HELPFUL = (
    "You should {tip}, because {reason}.",
    "In my experience it helps to {tip}; {reason}.",
    "Try to {tip}. It worked for me because {reason}.",
    "A trick that helped me with {subject}: {tip}, since {reason}.",
)
AGREE = (
    "Agreed, {subject} really is like that.",
    "Same experience here with {subject}.",
    "Yes, this matches what I saw with {subject}.",
)
DISAGREE = (
    "I see it differently, {subject} is fine once you {tip}.",
    "Not sure about that. With {subject} it is easier if you {tip}.",
)
LOW_EFFORT = ("This.", "lol", "Same.", "First!", "Nice.", "ok", "Cool story.", "+1", "Came here to say this.")
OFF_TOPIC = ("Anyway, does anyone here know a good guide to {other}?", "Unrelated, but I just got into {other}.")
