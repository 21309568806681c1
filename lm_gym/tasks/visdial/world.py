"""The world of a Visual Dialogue game: who answers the questions and how the image is ranked.

Two components with small interfaces, so either can be replaced (a neural A-bot, a trained
image ranker, or, in a multi-agent version, an answering agent):

* an :class:`Answerer` sees the hidden image and answers one question: ``answer(image,
  dialogue, question) -> str``;
* a :class:`Ranker` scores how well the revealed dialogue picks out the target image among a
  candidate pool, batched over games: ``percentiles(images, dialogues) -> array``, one
  retrieval percentile per game (1.0: the target ranks first; built-in rankers use
  :func:`rank_percentile`).

Plain functions with those signatures are accepted too (:func:`as_answerer`,
:func:`as_ranker`). Built in: the synthetic scenes' world (``lm_gym.tasks.visdial.synthetic``),
the text-only world of the VisDial release (``lm_gym.tasks.visdial.text_world``) and
:class:`HttpWorld`, a client of the visdial-rl server that the ILQL code base queried.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from lm_gym.core.errors import ConfigurationError, DataUnavailableError, safe_repr
from lm_gym.core.validation import check_number
from lm_gym.tasks.visdial.dialogue import Dialogue, HiddenImage, clean_answer


@runtime_checkable
class Answerer(Protocol):
    """Answers a question about the hidden image, given the dialogue so far."""

    def answer(self, image: HiddenImage, dialogue: Dialogue, question: str) -> str: ...


@runtime_checkable
class Ranker(Protocol):
    """The target image's retrieval percentile after each game's dialogue (caption included via ``image.caption``)."""

    def percentiles(self, images: Sequence[HiddenImage], dialogues: Sequence[Dialogue]) -> np.ndarray: ...


class _FunctionAnswerer:
    def __init__(self, function: Callable[[HiddenImage, Dialogue, str], str]):
        self.answer = function


class _FunctionRanker:
    def __init__(self, function: Callable[[Sequence[HiddenImage], Sequence[Dialogue]], Any]):
        self.percentiles = function


def as_answerer(value: Any, name: str = "answerer") -> Answerer:
    """``value`` if it has an ``answer`` method, a plain function wrapped as one, else ``ConfigurationError``."""
    return _as_component(value, Answerer, _FunctionAnswerer, name, "answer(image, dialogue, question) -> str")


def as_ranker(value: Any, name: str = "ranker") -> Ranker:
    """``value`` if it has a ``percentiles`` method, a plain function wrapped as one, else ``ConfigurationError``."""
    return _as_component(value, Ranker, _FunctionRanker, name, "percentiles(images, dialogues) -> array")


def _as_component(value: Any, protocol: type, wrapper: Callable[[Any], Any], name: str, signature: str) -> Any:
    if isinstance(value, protocol):
        return value
    if callable(value) and not isinstance(value, type):
        return wrapper(value)
    raise ConfigurationError(
        f"{name} must be an object with {signature} or such a function, got {type(value).__name__}: {safe_repr(value)}"
    )


def ask(answerer: Answerer, image: HiddenImage, dialogue: Dialogue, question: str) -> str:
    """The answerer's reply as one clean observation line; ``ConfigurationError`` unless it is a ``str``."""
    answer = answerer.answer(image, dialogue, question)
    if not isinstance(answer, str):
        raise ConfigurationError(f"the answerer must return a str, got {type(answer).__name__}: {safe_repr(answer)}")
    return clean_answer(answer)


def rank(ranker: Ranker, images: Sequence[HiddenImage], dialogues: Sequence[Dialogue]) -> np.ndarray:
    """The ranker's percentiles as float64; ``ConfigurationError`` unless one finite number per game."""
    values = ranker.percentiles(images, dialogues)
    try:
        percentiles = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        percentiles = None
    if percentiles is None or percentiles.shape != (len(images),) or not np.isfinite(percentiles).all():
        raise ConfigurationError(
            f"the ranker must return {len(images)} finite percentiles (one per game), got {safe_repr(values)}"
        )
    return percentiles


def check_ranked_image(images: Sequence[HiddenImage], image: HiddenImage, among: str) -> None:
    """Refuse ``image`` unless it is ``images[image.index]``: a ranker ranks only its own candidates
    (``among`` says which, for the error: ``"in this ranker's gallery"``)."""
    if not (0 <= image.index < len(images) and images[image.index] == image):
        raise ConfigurationError(f"image {image.image_id} (index {image.index}) is not {among}")


def rank_percentile(scores: np.ndarray, target: int) -> float:
    """The retrieval percentile of candidate ``target`` under ``scores`` (higher = better match).

    The share of the *other* candidates that score strictly lower: 1.0 when the target beats
    every other candidate, 0.0 when none scores lower. A tie counts against the target (it
    is ranked after the candidates it ties with), so a percentile rises only with evidence
    that separates the target from the others, and ties need no arbitrary order.
    (visdial-rl's ``1 - rank / pool_size`` never reaches 1.)
    """
    others = len(scores) - 1
    if others <= 0:
        return 1.0
    return float(np.count_nonzero(scores < scores[target]) / others)


# ---- the visdial-rl server -------------------------------------------------------------------
GENERATION_KWARGS = {"inference": "greedy", "beamSize": 1}
_MEMO_SIZE = 4096


def check_server_url(url: Any, name: str = "server_url") -> str:
    """``url`` without a trailing ``/`` or ``/step_rank`` if it is an ``http(s)://host[:port][/path]`` URL."""
    try:
        parsed = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # e.g. an unclosed "[" of an IPv6 host
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.query or parsed.fragment:
        raise ConfigurationError(
            f"{name} must be an http(s) URL such as 'http://localhost:5000', got {type(url).__name__}: {safe_repr(url)}"
        )
    return url.rstrip("/").removesuffix("/step_rank")


class HttpWorld:
    """Answerer and ranker of a visdial-rl server (``serve_model.py`` of the ILQL code base's fork).

    The server holds the A-bot (answers) and a Q-bot that regresses the image feature from the
    caption and dialogue; the percentile is the target feature's rank among the server's
    gallery by distance to the prediction, ``1 - rank / pool_size``. Requests are
    ``POST``s with a form-encoded body whose fields are JSON strings, as ILQL sends them:

    * ``/step_rank``: ``history`` (``[{"speaker": "question"|"answer", "text": ...}, ...]``,
      ending with the new question), ``caption``, ``img_features`` (the target's feature
      vector) and ``generation_kwargs`` (``{"inference": "greedy", "beamSize": 1}``);
      answers ``[answer, percentile_delta]``.
    * ``/fetch_reward_rank``: ``history``, ``caption``, ``img_features``; answers the
      caption-only percentile for an empty history, else the change of the last round.

    The percentile after a dialogue is the caption-only one plus the deltas of its rounds;
    the values already fetched are kept (the last 4,096), so a game costs one ``/step_rank``
    per turn and one ``/fetch_reward_rank`` per reset. ``features`` maps each image id to its
    feature vector (see :func:`lm_gym.tasks.visdial.features.load_image_features`). Failures
    (unreachable server, HTTP errors, timeouts, malformed replies) raise
    ``DataUnavailableError`` naming the URL.
    """

    def __init__(self, url: str, features: Mapping[int, Any], timeout: float = 30.0):
        self.url = check_server_url(url)
        self.timeout = check_number("server_timeout", timeout, minimum=0.001)
        self.features = features
        self._percentiles: OrderedDict[tuple, float] = OrderedDict()

    def answer(self, image: HiddenImage, dialogue: Dialogue, question: str) -> str:
        reply = self._post("step_rank", image, dialogue, question, generation_kwargs=json.dumps(GENERATION_KWARGS))
        if not (isinstance(reply, list) and len(reply) == 2 and isinstance(reply[0], str) and _is_number(reply[1])):
            raise DataUnavailableError(
                f"{self.url}/step_rank must answer [answer, percentile_delta], got {reply!r:.200}"
            )
        answer = clean_answer(reply[0])
        percentile = self._percentile(image, dialogue) + float(reply[1])
        self._remember((image.image_id, image.caption, (*dialogue, (question, answer))), percentile)
        return answer

    def percentiles(self, images: Sequence[HiddenImage], dialogues: Sequence[Dialogue]) -> np.ndarray:
        return np.array([self._percentile(image, dialogue) for image, dialogue in zip(images, dialogues, strict=True)])

    def _percentile(self, image: HiddenImage, dialogue: Dialogue) -> float:
        key = (image.image_id, image.caption, tuple(dialogue))
        if key in self._percentiles:
            self._percentiles.move_to_end(key)
            return self._percentiles[key]
        reply = self._post("fetch_reward_rank", image, dialogue)
        if not _is_number(reply):
            raise DataUnavailableError(f"{self.url}/fetch_reward_rank must answer a number, got {reply!r:.200}")
        value = float(reply) if not dialogue else self._percentile(image, dialogue[:-1]) + float(reply)
        self._remember(key, value)
        return value

    def _remember(self, key: tuple, value: float) -> None:
        self._percentiles[key] = value
        if len(self._percentiles) > _MEMO_SIZE:
            self._percentiles.popitem(last=False)

    def _post(
        self, endpoint: str, image: HiddenImage, dialogue: Dialogue, question: str | None = None, **fields: str
    ) -> Any:
        history = [
            turn for q, a in dialogue for turn in ({"speaker": "question", "text": q}, {"speaker": "answer", "text": a})
        ]
        if question is not None:
            history.append({"speaker": "question", "text": question})
        if image.image_id not in self.features:
            raise DataUnavailableError(
                f"no image features for image_id {image.image_id}; the server at {self.url} needs them"
            )
        features = np.asarray(self.features[image.image_id], dtype=np.float64).ravel().tolist()
        form = {
            "history": json.dumps(history),
            "caption": image.caption,
            "img_features": json.dumps(features),
            **fields,
        }
        url = f"{self.url}/{endpoint}"
        request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except (OSError, ValueError) as error:  # URLError, HTTPError, timeouts, refused connections; bad JSON
            raise DataUnavailableError(
                f"the VisDial server at {url} failed: {type(error).__name__}: {error}"
            ) from error


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
