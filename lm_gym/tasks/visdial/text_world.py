"""A text-only world for the VisDial release, used when no image model is at hand.

The hidden "image" is what people wrote about it: the target dialog's caption and its ten
human rounds. Both components are a documented proxy for visdial-rl's A-bot and image
ranker, built from word overlap only:

* :class:`HumanAnswerer` answers with the human answer of the target dialog's round whose
  question is most like the one asked (TF-IDF cosine over content words, IDF from all human
  questions of the split; ties go to the earlier round). A question that shares no content
  word with any of them gets "i can't tell".
* :class:`DialogRanker` ranks every dialog of the split as a candidate for the revealed
  dialogue. A candidate is the set of content words of its caption and human rounds; the
  evidence is the content words of the revealed *answers*; a candidate's score is the summed
  IDF of the evidence words it contains (rare words count more, words every dialog has
  separate nothing) and the percentile is :func:`~lm_gym.tasks.visdial.world.rank_percentile`
  of the target. The questions are left out of the evidence because the questioner writes
  them: echoing the caption in a question would otherwise find the target without asking
  anything. With no answer yet every candidate ties, so the caption-only percentile is 0
  and the default cutoff asks for the target to beat half of the split on the answers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from lm_gym.tasks.visdial.dialogue import CANT_TELL, Dialogue, HiddenImage
from lm_gym.tasks.visdial.world import check_ranked_image, rank_percentile

#: Words too common in VisDial questions to say what a question is about.
STOP_WORDS = frozenset(
    "a an the is are was were be do does did can could you see any there it its it's this that of in on at to and or "
    "what where how which who whose picture photo image i they he she his her their them some can't cannot tell".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class _TfIdf:
    """TF-IDF vectors (log IDF, raw counts, L2-normalised) as ``{word: weight}`` dicts."""

    def __init__(self, documents: Sequence[list[str]]):
        frequency = Counter(w for doc in documents for w in set(doc))
        self.idf = {w: math.log((1 + len(documents)) / (1 + n)) + 1 for w, n in frequency.items()}
        self.unseen_idf = math.log(1 + len(documents)) + 1

    def vector(self, words: list[str]) -> dict[str, float]:
        weights = {w: n * self.idf.get(w, self.unseen_idf) for w, n in Counter(words).items()}
        norm = math.sqrt(sum(v * v for v in weights.values()))
        return {w: v / norm for w, v in weights.items()} if norm else {}


class HumanAnswerer:
    """The :class:`~lm_gym.tasks.visdial.world.Answerer` of the text-only world: see the module docstring."""

    def __init__(self, images: Sequence[HiddenImage]):
        self._tfidf = _TfIdf([content_words(q) for image in images for q, _ in image.content.rounds])

    def answer(self, image: HiddenImage, dialogue: Dialogue, question: str) -> str:
        asked = self._tfidf.vector(content_words(question))
        best, best_score = None, 0.0
        for human_question, human_answer in image.content.rounds:
            candidate = self._tfidf.vector(content_words(human_question))
            score = sum(weight * candidate.get(word, 0.0) for word, weight in asked.items())
            if score > best_score + 1e-12:
                best, best_score = human_answer, score
        return CANT_TELL if best is None else best


class DialogRanker:
    """The :class:`~lm_gym.tasks.visdial.world.Ranker` of the text-only world: see the module docstring.

    Scores come from an inverted index (word -> candidates), so a step costs time in the
    number of the evidence words' postings, not in the size of the split.
    """

    def __init__(self, images: Sequence[HiddenImage]):
        self.images = tuple(images)
        documents = [
            set(content_words(" ".join([image.caption, *(f"{q} {a}" for q, a in image.content.rounds)])))
            for image in self.images
        ]
        self._idf = _TfIdf([list(document) for document in documents]).idf
        postings: dict[str, list[int]] = {}
        for index, document in enumerate(documents):
            for word in sorted(document):
                postings.setdefault(word, []).append(index)
        self._postings = {word: np.array(rows) for word, rows in postings.items()}

    def percentiles(self, images: Sequence[HiddenImage], dialogues: Sequence[Dialogue]) -> np.ndarray:
        result = np.empty(len(images))
        for i, (image, dialogue) in enumerate(zip(images, dialogues, strict=True)):
            check_ranked_image(self.images, image, "among this ranker's dialogs")
            result[i] = rank_percentile(self.scores(dialogue), image.index)
        return result

    def scores(self, dialogue: Dialogue) -> np.ndarray:
        """Every candidate's summed IDF of the revealed answers' content words it contains."""
        scores = np.zeros(len(self.images))
        for word in sorted(set(content_words(" ".join(answer for _, answer in dialogue)))):  # a fixed order: exact sums
            if word in self._postings:
                scores[self._postings[word]] += self._idf[word]
        return scores
