"""``lm_gym/VisDial-v0``: ask questions that help find a hidden image (the ILQL code base's Visual Dialogue)."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lm_gym.core.errors import ConfigurationError, DataUnavailableError, safe_repr
from lm_gym.core.ranges import UNIT, Range, argument, sum_of_turns
from lm_gym.core.text_env import Metas, ReferenceLists, RewardQuery, StepResult, TextEnv, Texts, play_policy
from lm_gym.core.validation import check_choice, check_int, check_number, check_path
from lm_gym.data.sources import SPLITS
from lm_gym.tasks.tokenizer_corpus import keyed_corpus
from lm_gym.tasks.visdial import synthetic
from lm_gym.tasks.visdial.data import release_images
from lm_gym.tasks.visdial.dialogue import (
    MAX_QUESTION_LENGTH,
    Dialogue,
    HiddenImage,
    clean_question,
    dialogue_text,
    max_dialogue_text_length,
)
from lm_gym.tasks.visdial.features import load_image_features
from lm_gym.tasks.visdial.rewards import YES_NO_KINDS, cutoff_reached, is_yes_no, percentile_gain, turn_reward
from lm_gym.tasks.visdial.text_world import DialogRanker, HumanAnswerer
from lm_gym.tasks.visdial.world import Answerer, HttpWorld, Ranker, as_answerer, as_ranker, ask, check_server_url, rank

SOURCES = ("synthetic", "local")
MAX_TURNS = 20


class PercentileReward:
    """The env's batched reward function: the ranker's percentile of each game after its new round.

    ``meta`` of each query holds the ``image`` and the ``dialogue`` with the new round; the env
    turns the percentile into the turn's reward (``lm_gym.tasks.visdial.rewards``).
    """

    def __init__(self, ranker: Ranker):
        self.ranker = ranker

    def __call__(self, prompts: Texts, utterances: Texts, references: ReferenceLists, meta: Metas) -> np.ndarray:
        return rank(self.ranker, [m["image"] for m in meta], [m["dialogue"] for m in meta])


@functools.lru_cache(maxsize=8)
def _source_images(source: str, split: str, num_images: int | None, data_dir: str | None) -> tuple[HiddenImage, ...]:
    if source == "synthetic":
        return synthetic.gallery(split, num_images)
    return release_images(data_dir, split)


@functools.lru_cache(maxsize=8)
def _built_in_world(source: str, split: str, num_images: int | None, data_dir: str | None) -> tuple[Answerer, Ranker]:
    """The source's answerer and ranker (cached: the synthetic ranker keeps the answers it computed)."""
    images = _source_images(source, split, num_images, data_dir)
    if source == "synthetic":
        return synthetic.SceneAnswerer(), synthetic.SceneRanker(images)
    return HumanAnswerer(images), DialogRanker(images)


class VisDialEnv(TextEnv):
    """Visual Dialogue as a text game: the questioner of a guessing game about a hidden image
    (the ILQL code base's Visual Dialogue task, after Das et al.'s VisDial RL).

    ## Description
    An answerer looks at an image the agent cannot see; the agent reads its caption and asks
    questions, one per turn, at most ten. After each answer a ranker scores how well the
    caption and dialogue so far pick the image out of a pool of candidates, as a retrieval
    percentile (1.0: the target ranks first). The game ends as soon as the dialogue has closed
    half the gap between the caption-only percentile and a perfect rank, so the agent is
    rewarded for informative questions that find the image in few turns.

    The world (the answerer and the ranker, see ``lm_gym.tasks.visdial.world``) comes from
    ``source`` or is plugged in:

    * ``"synthetic"`` (default): generated scenes (objects with colours, counts and positions,
      background objects, weather, time of day) in families of twenty near-duplicates that
      share a caption naming only the main objects, each variant differing from its family's
      base scene in one attribute; an answerer that parses the questions people ask, and a
      ranker that knows how every candidate would have answered
      (``lm_gym.tasks.visdial.synthetic``). An open question ("what color is the dog?") rules
      out only the family-mates that differ there, so a game takes several questions about
      different attributes (a scripted informative questioner: about 3.5 to 4); yes/no
      questions rule out fewer; repeated questions, questions about what every candidate
      shares, or about nothing in the picture ("i can't tell"), none.
    * ``"local"``: the VisDial v1.0 release (``data_dir``). Without an image model the world is
      text-only, a documented proxy (``lm_gym.tasks.visdial.text_world``): the answerer gives
      the human answer of the target dialog's most similar human question, and the ranker
      ranks all dialogs of the split by the revealed answers' words.
    * ``answerer`` / ``ranker``: your own components (an ``answer(image, dialogue, question)``
      method or function; a batched ``percentiles(images, dialogues)``), e.g. a neural A-bot.
    * ``server_url``: a visdial-rl server as the ILQL code base used it (``/step_rank``,
      ``/fetch_reward_rank``; ``HttpWorld``), sent the target's ``image_features``.

    There is no ``hub`` source: no VisDial dataset on the Hugging Face hub could be verified
    to load with current ``datasets``.

    ## Action Space
    ``Text(max_length=256)``: the question. Whitespace runs (newlines too) become one space and
    surrounding space is dropped, so the question is one line of the observation. Nothing is
    appended: write the "?" yourself. Any text is a question: one the answerer cannot make out
    is answered "i can't tell" (synthetic and local worlds). A non-``str`` action or one over
    256 characters raises ``InvalidActionError``. At ``action_level="token"``: token ids
    (``TokenLevel``); a question ends at EOS or after ``max_new_tokens`` (default 24). As a tool
    of a tool-calling trainer (``lm_gym.integrations.trl_environment``): ``ask(question)``.

    ## Observation Space
    ``Text(max_length=512 + 514 * max_turns)``: the ILQL text form, the caption on the first
    line, then the question and the answer of each round on a line each::

        a dog and some cats in a park
        what color is the dog?
        brown

    Captions are cut to 512 characters, answers to 256. At token level: the last
    ``max_prompt_length`` (default 256) tokens of it.

    ## Rewards
    ILQL's "standard" reward (``env_stops`` with its percentile cutoff rule; see
    ``lm_gym.tasks.visdial.rewards``). With ``p0`` the caption-only percentile and ``p_t`` the
    percentile after turn ``t``, the turn that first reaches
    ``(p_t - p0) / (goal_value - p0) >= cutoff`` (default 0.5, ``goal_value`` 1.0) gets 0 and
    every other turn -1. If the answer passes the yes/no test ``yn_reward_kind``, the turn also
    gets ``yn_reward``: ``hard`` (the answer is "yes" or "no"), ``soft`` (it contains "yes" or
    "no", as a substring: "not", "know" count), ``conservative`` (it contains any of ILQL's hedges:
    "not", "can't", "maybe", "tell", ...) or ``none`` (default). The test is on the answer, as
    in ILQL. Then ``reward = (base + yn) * reward_scale + reward_shift``. Without yes/no
    penalties a game solved at turn ``k`` returns ``-(k - 1)``, an unsolved one ``-max_turns``.
    When ``p0 >= goal_value`` (the caption alone ranks the target at the goal; ILQL divides by
    zero there) the first turn counts as reaching the cutoff.

    Built-in percentiles are the share of the other candidates that rank strictly below the
    target (ties count against it): 0 to 1, 1 when it ranks first. visdial-rl's server
    reports ``1 - rank / pool_size`` instead.

    ## Starting State
    A target image drawn uniformly from the source's images with the env's RNG, or image ``i``
    with ``reset(options={"index": i})``. The observation is its caption. ``info``: ``prompt``
    (the observation), ``references`` (empty), ``meta`` (``image_id``, ``index``, ``source``,
    ``initial_percentile``), ``percentile`` (the caption-only ``p0``), ``percentile_gain`` (0.0).

    ## Episode End
    Terminates at the turn that reaches the cutoff or after ``max_turns`` (10) turns. Every
    step's ``info`` holds ``answer``, ``percentile``, ``percentile_gain`` (so far: a dense
    progress signal, as Das et al. (2017) rewarded each round's change) and ``turn``; the last one also
    ``metrics``: ``return``, ``turns``, ``reached_cutoff`` (0/1), ``final_percentile``,
    ``percentile_gain`` (``(p_t - p0) / (goal_value - p0)``, 1.0 when ``p0 >= goal_value``)
    and ``yes_no_answers``: the answers that passed the yes/no test of ``yn_reward_kind``
    (ILQL's activation count), with the ``hard`` test when the kind is ``none``.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` or ``"test"`` |
    | ``source`` | ``"synthetic"`` | ``"synthetic"`` (generated offline) or ``"local"`` (``data_dir``) |
    | ``data_dir`` | ``None`` | for ``source="local"``: a VisDial json file or a release folder (see below) |
    | ``num_images`` | ``None`` | synthetic gallery size, 10 to 5,000 (default: 400 train, 200 validation/test) |
    | ``answerer`` | ``None`` | your own answerer (``lm_gym.tasks.visdial.world``); ``None``: the source's |
    | ``ranker`` | ``None`` | your own ranker (``lm_gym.tasks.visdial.world``); ``None``: the source's |
    | ``server_url`` | ``None`` | a visdial-rl server (e.g. ``"http://localhost:5000"``) as answerer and ranker |
    | ``image_features`` | ``None`` | with ``server_url``: an HDF5 file (see below) or ``{image_id: vector}`` |
    | ``server_timeout`` | ``30.0`` | seconds per server request |
    | ``cutoff`` | ``0.5`` | share of the gap to ``goal_value`` that ends the game, in (0, 1] |
    | ``goal_value`` | ``1.0`` | the percentile of a perfect rank |
    | ``yn_reward`` | ``-2.0`` | added to a turn whose answer passes the yes/no test (ILQL's paper: -2 with ``hard``) |
    | ``yn_reward_kind`` | ``"none"`` | ``"none"``, ``"soft"``, ``"hard"`` or ``"conservative"`` |
    | ``reward_scale``, ``reward_shift`` | ``1.0``, ``0.0`` | ``reward = (base + yn) * reward_scale + reward_shift`` |
    | ``max_turns`` | ``10`` | questions per game, 1 to 20 |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a tokenizer, name or path; ``None``: see below |
    | ``max_prompt_length`` | ``256`` | token level: observation tokens kept (the last) |
    | ``max_new_tokens`` | ``24`` | token level: tokens per question |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the observation |

    For ``source="local"``, ``data_dir`` is a VisDial json file, the unpacked v1.0 release's
    folder (``visdial_1.0_<train/val/test>.json``, dense annotations and features beside) or the
    ILQL code base's ``data/vis_dialogue`` (v0.5 files). The ``image_features`` HDF5 file is
    one of the v1.0 starter code (needs ``h5py``). At token level, ``tokenizer=None`` trains a
    BPE on the source's dialogues (cached).

    Offline by default (``source="synthetic"``, also ``VisDialEnv.offline_kwargs``). Bad
    arguments raise ``ConfigurationError`` naming the argument; an unreachable server raises
    ``DataUnavailableError`` naming its URL. ``env.unwrapped.demonstrations()`` gives
    ``(observation, question)`` pairs (the informative questioner's games; the human rounds for
    ``local``); ``lm_gym.tasks.visdial.offline_data`` builds offline RL datasets.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/VisDial-v0", num_envs=N, vectorization_mode="vector_entry_point")``:
    N games sharing the images and the world; each step ranks all N dialogues with one call of
    the ranker. (Answers are asked per game, before the ranking.)

    ## Version History
    * v0: initial version. ILQL's reward with a guard for ``p0 >= goal_value``; percentiles of
      the built-in rankers reach 1.0; synthetic and text-only worlds; no ``hub`` source. Before
      the first release, ``percentile_gain`` was added to every ``info`` (it was in the last one's
      ``metrics`` only).
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 256, "max_new_tokens": 24}
    offline_kwargs: ClassVar[dict[str, Any]] = {"source": "synthetic"}
    reset_options: ClassVar[tuple[str, ...]] = ("index",)
    success_metric: ClassVar[str | None] = "reached_cutoff"
    tool_name: ClassVar[str | None] = "ask"
    tool_argument: ClassVar[str | None] = "question"
    tool_argument_description: ClassVar[str | None] = (
        "your question about the hidden image, one line ending with ?, e.g. what color is the dog?"
    )

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return: a sum of 1 to ``max_turns`` turn rewards ``((0 or -1) + (yn_reward or 0)) * reward_scale +
        reward_shift`` (in [-10, 0] by default); percentiles and ``reached_cutoff`` in [0, 1], ``percentile_gain`` at
        most 1 (``goal_value`` 1); ``turns`` and ``yes_no_answers``: counts up to ``max_turns``."""
        max_turns = int(argument(cls, kwargs, "max_turns"))
        yn_reward = float(argument(cls, kwargs, "yn_reward"))
        scale, shift = float(argument(cls, kwargs, "reward_scale")), float(argument(cls, kwargs, "reward_shift"))
        penalties = (0.0,) if argument(cls, kwargs, "yn_reward_kind") == "none" else (0.0, yn_reward)
        turn_values = [((base + yn) * scale + shift) for base in (0.0, -1.0) for yn in penalties]
        returns = sum_of_turns(Range(min(turn_values), max(turn_values)), max_turns)
        ranges = {
            "return": returns,
            "turns": Range(1, max_turns, integer=True),
            "reached_cutoff": UNIT,
            "final_percentile": UNIT,
            "yes_no_answers": Range(0, max_turns, integer=True),
        }
        if float(argument(cls, kwargs, "goal_value")) >= 1.0:  # (p_t - p0) / (goal - p0) <= 1 for percentiles <= 1
            ranges["percentile_gain"] = Range(-math.inf, 1.0)
        return ranges

    def __init__(
        self,
        split: str = "train",
        source: str = "synthetic",
        data_dir: str | Path | None = None,
        num_images: int | None = None,
        answerer: Any = None,
        ranker: Any = None,
        server_url: str | None = None,
        image_features: str | Path | Mapping[int, Any] | None = None,
        server_timeout: float = 30.0,
        cutoff: float = 0.5,
        goal_value: float = 1.0,
        yn_reward: float = -2.0,
        yn_reward_kind: str = "none",
        reward_scale: float = 1.0,
        reward_shift: float = 0.0,
        max_turns: int = 10,
        render_mode: str | None = None,
    ):
        self.max_turns = check_int("max_turns", max_turns, 1, MAX_TURNS)
        super().__init__(
            max_observation_length=max_dialogue_text_length(self.max_turns),
            max_action_length=MAX_QUESTION_LENGTH,
            render_mode=render_mode,
        )
        if isinstance(source, str) and source == "hub":
            raise ConfigurationError(
                "source='hub' is not available for VisDial: "
                "no VisDial dataset on the Hugging Face hub could be verified; "
                "use source='synthetic' or source='local' with data_dir=<the VisDial v1.0 json>"
            )
        self.source = check_choice("source", source, SOURCES)
        self.split = check_choice("split", split, SPLITS)
        self.cutoff = check_number("cutoff", cutoff)
        if not 0.0 < self.cutoff <= 1.0:
            raise ConfigurationError(f"cutoff must be a number in (0, 1], got {safe_repr(cutoff)}")
        self.goal_value = check_number("goal_value", goal_value)
        self.yn_reward = check_number("yn_reward", yn_reward)
        self.yn_reward_kind = check_choice("yn_reward_kind", yn_reward_kind, YES_NO_KINDS)
        self.reward_scale = check_number("reward_scale", reward_scale)
        self.reward_shift = check_number("reward_shift", reward_shift)
        server_timeout = check_number("server_timeout", server_timeout, minimum=0.001)
        if source == "local":
            if data_dir is None:
                raise ConfigurationError("source='local' needs data_dir=<a VisDial v1.0 json file or its folder>")
            data_dir = str(check_path("data_dir", data_dir).resolve())
            if num_images is not None:
                raise ConfigurationError(
                    "num_images sets the synthetic gallery size; source='local' uses every dialog of the split"
                )
        else:
            if data_dir is not None:
                raise ConfigurationError(f"data_dir is only used with source='local', not source={source!r}")
            if num_images is not None:
                num_images = check_int("num_images", num_images, synthetic.MIN_IMAGES, synthetic.MAX_IMAGES)
        self.data_dir, self.num_images = data_dir, num_images
        self.images = _source_images(self.source, self.split, num_images, data_dir)
        if server_url is not None:
            server_url = check_server_url(server_url)
            if answerer is not None or ranker is not None:
                raise ConfigurationError(
                    "server_url answers and ranks: pass either server_url or answerer/ranker, not both"
                )
            world = HttpWorld(server_url, self._features(image_features), server_timeout)
            self.answerer, self.ranker = world, world
        else:
            if image_features is not None:
                raise ConfigurationError("image_features are sent to the server of server_url; pass server_url too")
            answerer = None if answerer is None else as_answerer(answerer)
            ranker = None if ranker is None else as_ranker(ranker)
            if answerer is None or ranker is None:
                built_in_answerer, built_in_ranker = _built_in_world(self.source, self.split, num_images, data_dir)
            self.answerer = built_in_answerer if answerer is None else answerer
            self.ranker = built_in_ranker if ranker is None else ranker
        self.reward_fn = PercentileReward(self.ranker)

    def _features(self, image_features: Any) -> Mapping[int, Any]:
        """``{image_id: vector}`` for every image of the split, from a file or a mapping."""
        if image_features is None:
            raise ConfigurationError(
                "server_url needs image_features (an HDF5 file or {image_id: vector}): the server ranks by them"
            )
        if isinstance(image_features, (str, os.PathLike)):
            return load_image_features(
                check_path("image_features", image_features), [image.image_id for image in self.images]
            )
        if not isinstance(image_features, Mapping):
            raise ConfigurationError(
                f"image_features must be a path or {{image_id: vector}}, got {type(image_features).__name__}"
            )
        missing = [image.image_id for image in self.images if image.image_id not in image_features]
        if missing:
            raise ConfigurationError(f"image_features lacks {len(missing)} image ids of the split, e.g. {missing[:5]}")
        return image_features

    # ---- the game -----------------------------------------------------------------------
    def num_episodes(self) -> int:
        return len(self.images)

    def _new_episode(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        index = self.episode_index(options, len(self.images))
        image = self.images[index]
        initial = float(rank(self.ranker, [image], [()])[0])  # may fail (a server): nothing is changed yet
        self._image, self._dialogue, self._pending = image, (), None
        self._initial = self._percentile = initial
        self._return, self._yes_no_answers = 0.0, 0
        return self._text(), self._info()

    def _reward_query(self, utterance: str) -> RewardQuery:
        question = clean_question(utterance)
        answer = ask(self.answerer, self._image, self._dialogue, question)
        self._pending = (self._dialogue, question, answer)  # so the transition need not ask again
        meta = {"image": self._image, "dialogue": (*self._dialogue, (question, answer))}
        return RewardQuery(self._text(), question, (), meta)

    def _transition(self, utterance: str, score: float | None) -> StepResult:
        question = clean_question(utterance)
        pending, self._pending = self._pending, None
        if pending is not None and pending[:2] == (self._dialogue, question):
            answer = pending[2]
        else:
            answer = ask(self.answerer, self._image, self._dialogue, question)
        self._dialogue = (*self._dialogue, (question, answer))
        self._percentile = float(score)
        reached = cutoff_reached(self._initial, self._percentile, self.cutoff, self.goal_value)
        yes_no = is_yes_no(answer, self.yn_reward_kind)
        reward = turn_reward(reached, yes_no, self.yn_reward, self.reward_scale, self.reward_shift)
        self._return += reward
        self._yes_no_answers += int(is_yes_no(answer, "hard" if self.yn_reward_kind == "none" else self.yn_reward_kind))
        terminated = reached or len(self._dialogue) >= self.max_turns
        info = self._info()
        info.update(answer=answer, turn=len(self._dialogue))
        if terminated:
            info["metrics"] = {
                "return": self._return,
                "turns": len(self._dialogue),
                "reached_cutoff": float(reached),
                "final_percentile": self._percentile,
                "percentile_gain": info["percentile_gain"],
                "yes_no_answers": self._yes_no_answers,
            }
        return self._text(), reward, terminated, False, info

    def _text(self) -> str:
        return dialogue_text(self._image.caption, self._dialogue)

    def _info(self) -> dict[str, Any]:
        image = self._image
        meta = {
            "image_id": image.image_id,
            "index": image.index,
            "source": self.source,
            "initial_percentile": self._initial,
        }
        gain = percentile_gain(self._initial, self._percentile, self.goal_value)
        return {
            "prompt": self._text(),
            "references": [],
            "meta": meta,
            "percentile": self._percentile,
            "percentile_gain": gain,
        }

    # ---- data for learning ------------------------------------------------------------------
    def demonstrations(self, num_games: int = 500, seed: int = 0) -> list[tuple[str, str]]:
        """``(observation, question)`` pairs of good play: ``num_games`` seeded games of the
        informative questioner (synthetic), or every round of the human dialogs (local)."""
        if self.source == "local":
            return [
                (dialogue_text(image.caption, image.content.rounds[:turn]), question)
                for image in self.images
                for turn, (question, _) in enumerate(image.content.rounds)
            ]
        from lm_gym.tasks.visdial.policies import InformativeQuestioner

        return play_policy(self.replicate(), InformativeQuestioner(), num_games, seed)

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        """The train split's captions with a dialogue each, whatever the env's split, so every
        split gets the same tokenizer: the human rounds (local; the env's own split when
        ``data_dir`` holds no train file), or each template question about the scene's objects
        with the scene's answers (synthetic, the default train gallery)."""
        if self.source == "local":
            try:
                images = release_images(self.data_dir, "train")
            except (ConfigurationError, DataUnavailableError):  # e.g. only the val json at hand
                images = self.images
            texts = [dialogue_text(image.caption, image.content.rounds) for image in images]
        else:
            texts = [
                dialogue_text(image.caption, _template_dialogue(image.content)) for image in synthetic.gallery("train")
            ]
        return keyed_corpus(f"visdial-{self.source}", texts)


def _template_dialogue(scene: synthetic.Scene) -> Dialogue:
    templates = synthetic.OPEN_QUESTIONS + synthetic.YES_NO_QUESTIONS
    questions = [
        synthetic.fill(t, o.category, color=o.color, side=o.position) for o in scene.objects for t in templates
    ]
    questions += list(synthetic.SCENE_QUESTIONS + synthetic.SCENE_YES_NO_QUESTIONS)
    return tuple((q, synthetic.answer_question(scene, q)) for q in questions)
