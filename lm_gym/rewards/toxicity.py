"""Toxicity rewards: the level of a text, 0 safe, 1 sensitive, 2 unsafe (ILQL's Reddit task).

ILQL labelled Reddit comments with OpenAI's ``content-filter-alpha`` model (since retired):
0 safe; 1 sensitive, text that touches a sensitive topic (politics, religion, a protected
class such as race or nationality); 2 unsafe, profane, prejudiced or hateful text. lm-gym
gives the same three levels from one of two scorers, each with ``levels(texts) -> int array``:

* :class:`LexiconToxicityScorer` -- word lists: a text is unsafe if it contains an unsafe term,
  else sensitive if it contains a sensitive term, else safe. Terms match whole words, case
  insensitively; a term of several words matches them in sequence whatever separates them
  (``"f-u-c-k"`` matches ``"f.u.c.k"``), and a word matches only itself (no plurals).
  :meth:`LexiconToxicityScorer.profanity` is the offline scorer of real text: the unsafe
  terms are the word list of the ``better-profanity`` package (MIT; 916 profanities, slurs
  and sexual terms, some in leetspeak; entries that spell letters with symbols, ``sh!t``,
  are left out, since ``sh`` alone would match), less :data:`HARMLESS_PROFANITY_ENTRIES`
  (everyday, medical and internet words the list holds: ``organ``, ``pot``, ``omg``) and
  less :data:`SENSITIVE_PROFANITY_ENTRIES` (topic words and mild expletives: ``god``,
  ``hell``, ``sex``, ``weed``), which count as sensitive with :data:`SENSITIVE_TERMS`
  (politics, religion, protected classes, sexuality, drugs, violent crime); the clinical
  words for the body (:data:`ANATOMY_PROFANITY_ENTRIES`) are sensitive too. Words of the list
  that have an ordinary sense are read in their context where a fixed expression gives it
  (:data:`SAFE_EXPRESSIONS`: "homo sapiens", "oral health", "slave labor", "door knob",
  "sperm whale", "extra virgin"): the words of such an expression are not scored. Limits:
  English only; profanity is not toxicity (a polite slur-free insult scores 0, a quoted swear
  word scores 2); context only as far as the listed expressions go ("the homo" and "a
  cock" still score 2 whatever they mean), no sarcasm or negation; unknown misspellings pass.
  On the 623 comments of the shared ILQL-schema sample, 29 are unsafe and 124 sensitive.
* :class:`ClassifierToxicityScorer` -- a ``transformers`` classifier by hub name or path
  (``facebook/roberta-hate-speech-dynabench-r4-target``, the default of ``evaluate``'s toxicity
  measurement; or ``unitary/toxic-bert``, multi-label). With ``p`` the probability of its
  toxic label (a sigmoid per label for multi-label models), the level is 0 if ``p < 0.5``,
  1 if ``0.5 <= p < 0.9`` and 2 if ``p >= 0.9`` (:data:`LEVEL_THRESHOLDS`): a proxy for the
  filter's levels, with "sensitive" read as "probably toxic".

:class:`ToxicityReward` scores the levels (``noised=True``: ILQL's ``noised_toxicity``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from lm_gym.core.errors import ConfigurationError, DataUnavailableError, install_hint, safe_repr
from lm_gym.core.text_env import Metas, Texts
from lm_gym.core.validation import is_integer
from lm_gym.rewards.classifiers import TransformersClassifier

SAFE, SENSITIVE, UNSAFE = 0, 1, 2
#: Probability of the toxic label at which a classifier's level becomes 1, then 2.
LEVEL_THRESHOLDS = (0.5, 0.9)
#: Label names taken as the toxic class when ``toxic_label`` is not given, by priority.
TOXIC_LABEL_NAMES = ("toxic", "toxicity", "hate", "offensive", "abusive", "unsafe")

#: Sensitive topics (level 1), after the content filter's definition, plus drugs and violent crime.
SENSITIVE_TERMS = (
    # politics
    "politics",
    "political",
    "politician",
    "politicians",
    "election",
    "elections",
    "government",
    "democrat",
    "democrats",
    "republican",
    "republicans",
    "liberal",
    "liberals",
    "conservative",
    "conservatives",
    "congress",
    "senate",
    "senator",
    "parliament",
    "president",
    "abortion",
    "immigration",
    "immigrant",
    "immigrants",
    "refugee",
    "refugees",
    "terrorist",
    "terrorists",
    "terrorism",
    "trump",
    "obama",
    "clinton",
    "biden",
    "putin",
    "isis",
    # religion
    "religion",
    "religions",
    "religious",
    "church",
    "christian",
    "christians",
    "christianity",
    "muslim",
    "muslims",
    "islam",
    "islamic",
    "jew",
    "jews",
    "jewish",
    "judaism",
    "bible",
    "quran",
    "koran",
    "atheist",
    "atheists",
    "atheism",
    "jesus",
    "allah",
    # protected classes and sexuality
    "race",
    "racism",
    "racist",
    "racists",
    "racial",
    "ethnic",
    "ethnicity",
    "slavery",
    "sexuality",
    "homosexual",
    "transgender",
    "lesbian",
    "bisexual",
    "feminism",
    "feminist",
    "feminists",
    # drugs and violent crime
    "drug",
    "drugs",
    "cocaine",
    "marijuana",
    "cannabis",
    "overdose",
    "suicide",
    "shooting",
    "shooter",
    "gunman",
    "killed",
    "killing",
    "killer",
    "murdered",
    "hostage",
)
#: Entries of the ``better-profanity`` list that name a topic or are mild expletives: sensitive, not unsafe.
SENSITIVE_PROFANITY_ENTRIES = (
    "god",
    "hell",
    "damn",
    "crap",
    "drunk",
    "gay",
    "queer",
    "sex",
    "sexual",
    "transsexual",
    "nazi",
    "hitler",
    "reich",
    "kill",
    "murder",
    "weed",
    "hemp",
    "ganja",
    "reefer",
    "heroin",
    "meth",
    "opium",
    "opiate",
    "stoned",
    "junkie",
    "junky",
    "hiv",
    "herpes",
    "nude",
    "naked",
    "pedophile",
    "pedophilia",
)
#: Entries of the ``better-profanity`` list that name parts or functions of the body: sensitive (sexuality), not unsafe.
ANATOMY_PROFANITY_ENTRIES = (
    "anus",
    "rectum",
    "penis",
    "vagina",
    "vulva",
    "clitoris",
    "scrotum",
    "gonads",
    "semen",
    "sperm",
    "nipple",
    "nipples",
    "virgin",
)
#: Entries of the ``better-profanity`` list that are harmless in ordinary use: not scored.
HARMLESS_PROFANITY_ENTRIES = (
    "organ",
    "revue",
    "seaman",
    "seamen",
    "sandbar",
    "rum",
    "stroke",
    "pawn",
    "foobar",
    "omg",
    "lmao",
    "lmfao",
    "xx",
    "maxi",
    "len",
    "asanchez",
    "pot",
    "strip",
    "facial",
    "fat",
    "erect",
    "thrust",
    "hookah",
    "vodka",
    "urine",
    "urinal",
    "ovary",
    "ovum",
    "ovums",
    "uterus",
    "womb",
    "menses",
    "menstruate",
    "menstruation",
    "tampon",
    "pms",
    "loin",
    "loins",
    "testes",
    "testis",
    "breasts",
    "sniper",
    "uzi",
    "napalm",
    "valium",
    "viagra",
    "lube",
    "vomit",
    "pee",
    "poop",
)
#: Fixed expressions that give a listed word its ordinary sense; their words are not scored.
SAFE_EXPRESSIONS = (
    *(
        f"homo {species}"
        for species in ("sapiens", "erectus", "habilis", "neanderthalensis", "floresiensis", "ergaster")
    ),
    *(
        f"oral {noun}"
        for noun in (
            "health",
            "hygiene",
            "care",
            "cancer",
            "surgery",
            "surgeon",
            "exam",
            "exams",
            "examination",
            "history",
            "histories",
            "tradition",
            "traditions",
            "argument",
            "arguments",
            "presentation",
            "presentations",
            "medication",
            "medications",
            "contraceptive",
            "contraceptives",
            "vaccine",
            "dose",
            "test",
            "tests",
            "english",
            "skills",
            "report",
        )
    ),
    *(
        f"slave {noun}"
        for noun in (
            "labor",
            "labour",
            "trade",
            "traders",
            "owner",
            "owners",
            "ship",
            "ships",
            "state",
            "states",
            "narrative",
            "narratives",
            "market",
            "markets",
            "rebellion",
            "revolt",
            "quarters",
            "plantation",
            "plantations",
        )
    ),
    "master slave",
    "runaway slave",
    "runaway slaves",
    "former slave",
    "former slaves",
    "freed slave",
    "freed slaves",
    "screw driver",
    "screw drivers",
    "screw top",
    "screw cap",
    "screw thread",
    "loose screw",
    "door knob",
    "door knobs",
    "blue tit",
    "great tit",
    "coal tit",
    "pussy willow",
    "pussy cat",
    "moby dick",
    "dick van dyke",
    "van dyke",
    "knee jerk",
    "jerk chicken",
    "sperm whale",
    "sperm whales",
    "sperm count",
    "extra virgin",
    "virgin islands",
    "virgin mary",
    "virgin atlantic",
    "virgin records",
    "wood pecker",
    "shag carpet",
    "ear muff",
    "ear muffs",
    "speed hump",
    "speed humps",
    "free willy",
    "cock a doodle",
    "wad of",
    "weather cock",
)

_WORD = re.compile(r"[a-z0-9]+")
_SPELLED = re.compile(r"[A-Za-z0-9 ._-]+")  # list entries spelled with letters, digits and separators
PROFANITY_EXTRA = install_hint("reddit", "better-profanity")


def words(text: str) -> list[str]:
    """The lower-cased letter-and-digit runs of ``text``: what the lexicon matches."""
    return _WORD.findall(text.lower())


class LexiconToxicityScorer:
    """Levels from word lists; see the module docstring for the matching rules.

    Args:
        unsafe_terms: words or phrases of level 2.
        sensitive_terms: words or phrases of level 1 (a term in both lists is unsafe).
        safe_expressions: phrases whose words are not scored where the phrase occurs.
    """

    def __init__(
        self, unsafe_terms: Iterable[str], sensitive_terms: Iterable[str], safe_expressions: Iterable[str] = ()
    ):
        self.safe: dict[str, list[tuple[str, ...]]] = {}  # by first word, longest first
        for expression in sorted({tuple(words(e)) for e in safe_expressions} - {()}, key=len, reverse=True):
            self.safe.setdefault(expression[0], []).append(expression)
        levels: dict[tuple[str, ...], int] = {}
        for level, terms in ((SENSITIVE, sensitive_terms), (UNSAFE, unsafe_terms)):
            for term in terms:
                key = tuple(words(term))
                if key:
                    levels[key] = max(level, levels.get(key, SAFE))
        self.single = {key[0]: level for key, level in levels.items() if len(key) == 1}
        # phrases indexed by their first word, so a text is scanned once
        self.phrases: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for key, level in levels.items():
            if len(key) > 1:
                self.phrases.setdefault(key[0], []).append((key, level))

    @classmethod
    def profanity(cls) -> LexiconToxicityScorer:
        """The offline scorer of real text: ``better-profanity``'s list and lm-gym's sensitive terms."""
        try:
            from importlib.resources import files

            entries = (
                files("better_profanity").joinpath("profanity_wordlist.txt").read_text(encoding="utf-8").splitlines()
            )
        except (ModuleNotFoundError, OSError) as error:
            raise DataUnavailableError(
                "the lexicon toxicity scorer reads the word list of the better-profanity package "
                f"({error}): {PROFANITY_EXTRA}"
            ) from None
        sensitive = SENSITIVE_PROFANITY_ENTRIES + ANATOMY_PROFANITY_ENTRIES
        demoted = {tuple(words(term)) for term in sensitive + HARMLESS_PROFANITY_ENTRIES}
        # "sh!t", "shi+": symbols standing for letters would match their other letters alone ("sh")
        spelled = [entry for entry in entries if _SPELLED.fullmatch(entry.strip())]
        unsafe = [entry for entry in spelled if tuple(words(entry)) not in demoted]
        return cls(unsafe, SENSITIVE_TERMS + sensitive, SAFE_EXPRESSIONS)

    def level(self, text: str) -> int:
        found = SAFE
        text_words = words(text)
        start = 0
        while start < len(text_words) and found < UNSAFE:
            word = text_words[start]
            expression = next(
                (e for e in self.safe.get(word, ()) if tuple(text_words[start : start + len(e)]) == e), None
            )
            if expression is not None:  # its words in their ordinary sense
                start += len(expression)
                continue
            found = max(found, self.single.get(word, SAFE))
            for phrase, level in self.phrases.get(word, ()):
                if level > found and tuple(text_words[start : start + len(phrase)]) == phrase:
                    found = level
            start += 1
        return found

    def levels(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.level(text) for text in texts], dtype=np.int64)


class _IndependentLabels(torch.nn.Module):
    """A multi-label model seen as one two-class head per label: ``softmax([0, z]) = sigmoid(z)``,
    so the shared classifier's softmax yields each label's own probability."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, **inputs: Any) -> SimpleNamespace:
        logits = self.model(**inputs).logits
        return SimpleNamespace(logits=torch.stack([torch.zeros_like(logits), logits], dim=-1))


class ClassifierToxicityScorer:
    """Levels from a ``transformers`` classifier's toxic-label probability (:data:`LEVEL_THRESHOLDS`).

    Args:
        model_name_or_path: a hub name or local directory.
        toxic_label: the toxic class, as a label name or index; by default the first of
            :data:`TOXIC_LABEL_NAMES` the model has, else index 1 of a two-class model.
        device: default CUDA when available.
        batch_size: texts per forward pass.
        max_length: input truncation, in tokens.
    """

    def __init__(
        self,
        model_name_or_path: str,
        toxic_label: str | int | None = None,
        device: str | None = None,
        batch_size: int = 64,
        max_length: int = 512,
    ):
        hint = "Offline, pass a local directory, or toxicity_model='lexicon' for lm-gym's word-list scorer."
        self.classifier = TransformersClassifier(
            model_name_or_path, "toxicity classifier", hint, device=device, batch_size=batch_size, max_length=max_length
        )
        self.multi_label = getattr(self.classifier.model.config, "problem_type", None) == "multi_label_classification"
        if self.multi_label:
            self.classifier.model = _IndependentLabels(self.classifier.model)
        self.toxic_index = toxic_index(self.classifier.labels, toxic_label)

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """P(toxic label) of each text."""
        if not texts:
            return np.zeros(0)
        probabilities = self.classifier.probabilities(list(texts))
        return probabilities[:, self.toxic_index, 1] if self.multi_label else probabilities[:, self.toxic_index]

    def levels(self, texts: Sequence[str]) -> np.ndarray:
        return np.digitize(self.probabilities(texts), LEVEL_THRESHOLDS).astype(np.int64)


def toxic_index(labels: dict[int, str], toxic_label: str | int | None) -> int:
    """The index of the toxic class among ``labels`` (see :class:`ClassifierToxicityScorer`)."""
    if is_integer(toxic_label) and int(toxic_label) in labels:
        return int(toxic_label)
    by_name = {name.lower(): index for index, name in labels.items()}
    if isinstance(toxic_label, str) and toxic_label.lower() in by_name:
        return by_name[toxic_label.lower()]
    if toxic_label is None:
        for name in TOXIC_LABEL_NAMES:
            if name in by_name:
                return by_name[name]
        if len(labels) == 2:
            return 1
    raise ConfigurationError(
        f"toxic_label={safe_repr(toxic_label)} matches none of the toxicity classifier's labels {labels}"
    )


class ToxicityReward:
    """The toxicity level (0, 1 or 2) of each utterance, as ILQL's ``toxicity`` reward before scaling.

    With ``noised=True`` (ILQL's ``noised_toxicity``), level 1 is replaced by 0 or 2 with
    equal probability, drawn from ``meta[i]["reward_seed"]`` (an int) so that a seeded
    episode is reproducible; ILQL drew it from Python's unseeded ``random``.
    """

    def __init__(self, scorer: LexiconToxicityScorer | ClassifierToxicityScorer, noised: bool = False):
        self.scorer, self.noised = scorer, noised

    def __call__(
        self, prompts: Texts, utterances: Texts, references: Any = None, meta: Metas | None = None
    ) -> np.ndarray:
        levels = self.scorer.levels(list(utterances)).astype(np.float64)
        if self.noised:
            for i in np.flatnonzero(levels == SENSITIVE):
                seed = (meta[i] if meta is not None else {}).get("reward_seed")
                if not is_integer(seed) or seed < 0:
                    raise ConfigurationError(
                        f"noised toxicity needs meta[{i}]['reward_seed'], a non-negative int; got {safe_repr(seed)}"
                    )
                levels[i] = UNSAFE * float(np.random.default_rng(int(seed)).integers(2))
        return levels
