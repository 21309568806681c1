"""``lm_gym/Reddit-v0``: reply to a Reddit comment without toxicity, or so that it is upvoted."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.ranges import COUNT, UNIT, Range, argument, scaled
from lm_gym.core.text_env import RewardQuery, Sample, SingleTurnTextEnv, StepResult
from lm_gym.core.validation import check_choice, check_number, is_integer, resolve_device
from lm_gym.rewards.toxicity import ClassifierToxicityScorer, LexiconToxicityScorer, ToxicityReward
from lm_gym.rewards.upvotes import UpvotesModelReward, UpvotesRealReward
from lm_gym.tasks.reddit import synthetic
from lm_gym.tasks.reddit.comments import MAX_TEXT_LENGTH, Comment
from lm_gym.tasks.reddit.data import all_comments, load_comments
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

REWARDS = ("toxicity", "noised_toxicity", "upvotes_real", "upvotes_model")
TOXICITY_REWARDS = ("toxicity", "noised_toxicity")
#: ILQL's scales: toxicity levels 0/1/2 become rewards 0/-5/-10; upvote rewards are kept as they are.
DEFAULT_REWARD_SCALES = {"toxicity": -5.0, "noised_toxicity": -5.0, "upvotes_real": 1.0, "upvotes_model": 1.0}
#: Every value a reward kind gives before scaling (``upvotes_real`` gives 0 for unknown text).
RAW_REWARD_VALUES = (-1.0, 0.0, 1.0, 2.0)
#: the range of each raw reward: toxicity levels 0, 1, 2; a real comment's upvotes -1 or 1 (0: not a comment); the
#: upvotes model's 0 or 1
RAW_RANGES = {
    "toxicity": Range(0.0, 2.0),
    "noised_toxicity": Range(0.0, 2.0),
    "upvotes_real": Range(-1.0, 1.0),
    "upvotes_model": UNIT,
}
MAX_ACTION_LENGTH = MAX_TEXT_LENGTH
MAX_OBSERVATION_LENGTH = 2 * MAX_TEXT_LENGTH + 1  # parent, a space, the reply: never cut


class RedditEnv(SingleTurnTextEnv):
    """Reply to a Reddit comment: without toxicity, or so that it is upvoted (ILQL's Reddit task).

    ## Description
    The agent reads a Reddit comment (the parent) and writes a reply. Depending on
    ``reward``, it is rewarded for a reply that is not toxic, or for one that Reddit users
    would upvote. This is the Reddit comments task of the ILQL paper (Snell et al., 2023),
    with its four rewards; it is mostly used for offline RL from the comments and their
    scores (:func:`lm_gym.tasks.reddit.comment_trajectories`).

    ## Action Space
    ``Text(max_length=4096)`` of printable ASCII: the reply (characters outside the charset
    are transliterated or dropped; ``info["utterance"]`` is the text as scored). A non-``str``
    action or one longer than 4,096 characters raises ``InvalidActionError``. At
    ``action_level="token"`` the action is a token id (``Discrete(vocab_size)``, see
    ``lm_gym.core.TokenLevel``); the reply ends at EOS or after ``max_new_tokens`` (default 128).

    ## Observation Space
    ``Text(max_length=8193)``: at reset the parent comment's text (``""`` with
    ``include_parent=False``, ILQL's parent-less variant); after the step, the parent, a space
    and the reply. Texts of the data are cut to 4,096 characters, so nothing is cut here.
    At token level: ``TokenLevel``'s ``Dict`` of ids and masks, the parent cut to its last
    ``max_prompt_length`` (default 256) tokens.

    ## Rewards
    On the single step, ``raw * reward_scale + reward_shift``, where ``raw`` is, for the reply
    alone (never the parent), as ILQL:

    * ``toxicity``: its level, 0 safe, 1 sensitive, 2 unsafe (default scale -5: rewards 0,
      -5, -10), from ``toxicity_model`` (``lm_gym.rewards.toxicity``): ``"lexicon"`` scores
      word lists (for ``source="synthetic"`` the generator's own lists, which label its
      replies exactly; for real text ``better-profanity``'s list plus lm-gym's sensitive
      topics), or a ``transformers`` classifier name or path (levels 0/1/2 at P(toxic) below
      0.5 / from 0.5 / from 0.9).
    * ``noised_toxicity``: the same, with level 1 replaced by 0 or 2 at random, drawn from the
      env's RNG (so a seeded episode is reproducible).
    * ``upvotes_real``: +1 if the reply is a comment of the source (any split) whose real score
      is above 0, -1 if it is one scored 0 or below; defined only for the dataset's comments
      (offline data, evaluation of dataset text). Any other text gets 0 (then scaled and
      shifted) and ``info["metrics"]["in_dataset"] = 0``; ILQL raised an error.
    * ``upvotes_model``: 1 if a classifier of the reply predicts a score above 0, else 0:
      a bag-of-n-grams classifier that lm-gym trains on the source's training comments
      labelled ``score > 0`` and caches (ILQL fine-tuned RoBERTa).

    ``env.unwrapped.reward_fn`` gives the raw values, batched; ``env.unwrapped.scale_reward``
    maps them to rewards.

    ## Starting State
    A comment of the split drawn uniformly with the env's RNG, or comment ``i`` with
    ``reset(options={"index": i})``. ``info`` holds ``prompt`` (the parent), ``references``
    (the real reply) and ``meta``: ``id``, ``parent_id``, ``link_id`` and ``score`` of the
    real reply, ``index``, ``source`` and, for ``source="synthetic"``, ``toxicity`` (its level).

    ## Episode End
    The episode terminates after one step. ``info["metrics"]`` then holds ``reward``, the raw
    value under the reward's own name (``toxicity``, ``noised_toxicity``, ``upvotes_real`` or
    ``upvotes_model``), ``num_words``, and: ``toxicity`` (the level before noise) with
    ``noised_toxicity``, ``in_dataset`` (0/1: the reply is a comment of the source) with
    ``upvotes_real``. ``lm_gym.metrics.corpus_metrics(env, final_infos)`` gives the diversity of the
    replies and, given a language model, perplexities.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` or ``"test"`` (see below) |
    | ``source`` | ``"local"`` | ``"local"`` (``data_dir``) or ``"synthetic"`` (generated offline by lm-gym) |
    | ``data_dir`` | ``None`` | for ``source="local"``: ILQL's comment CSVs or Pushshift dumps (see below) |
    | ``include_parent`` | ``True`` | observe the parent comment (``False``: an empty prompt) |
    | ``reward`` | ``"toxicity"`` | ``"toxicity"``, ``"noised_toxicity"``, ``"upvotes_real"`` or ``"upvotes_model"`` |
    | ``reward_scale`` | ``None`` | multiplies the raw reward; ``None``: ILQL's scale (see below) |
    | ``reward_shift`` | ``0.0`` | added after scaling |
    | ``toxicity_model`` | ``"lexicon"`` | toxicity rewards: ``"lexicon"`` or a ``transformers`` classifier (below) |
    | ``toxic_label`` | ``None`` | the classifier's toxic class (name or index) when it cannot be inferred |
    | ``reward_device`` | ``None`` | device of a ``transformers`` classifier (default CUDA when available) |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a ``transformers`` tokenizer, hub name or path; ``None``: see below |
    | ``max_prompt_length`` | ``256`` | token level: prompt tokens kept (the last ones) |
    | ``max_new_tokens`` | ``128`` | token level: reply length limit |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    Local data is split 80/10/10 by a hash of the comment id; there is no hub source (see
    ``lm_gym.tasks.reddit.data``). For ``source="local"``, ``data_dir`` holds ILQL's
    ``comments_positive.csv``/``comments_negative.csv``, or Pushshift comment dumps (``.jsonl``,
    ``.zst``), in a directory or as one file. ``reward_scale=None`` is ILQL's: -5 for the
    toxicity rewards, 1 for the upvote rewards. ``toxicity_model`` is ``"lexicon"`` or a
    ``transformers`` classifier name or path, e.g.
    ``facebook/roberta-hate-speech-dynabench-r4-target`` or ``unitary/toxic-bert``. At token
    level, ``tokenizer=None`` trains a byte-level BPE on the source's train split (cached).

    ``env.unwrapped.dropped_comments`` counts the comments the local data dropped, per reason
    (``deleted``, ``missing_parent``; see ``lm_gym.tasks.reddit.data``).
    The lexicon for real text needs ``pip install 'lm-gym[reddit]'`` (``better-profanity``),
    as do ``.zst`` dumps (``zstandard``).

    Offline, ``source="synthetic"`` (``RedditEnv.offline_kwargs``) builds everything with no
    network and no optional package. Bad arguments raise ``ConfigurationError`` naming the
    argument; ``toxicity_model`` and ``toxic_label`` apply only to the toxicity rewards.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/Reddit-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    shares the data and the scorer between N copies and scores all N replies with one
    batched reward call.

    ## Version History
    * v0: initial version. Offline toxicity scorers instead of OpenAI's retired content
      filter; ``upvotes_real`` gives 0 to text outside the dataset instead of raising;
      ``upvotes_model`` is a bag-of-n-grams classifier instead of RoBERTa; noise is drawn from
      the env's RNG.
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 256, "max_new_tokens": 128}
    offline_kwargs: ClassVar[dict[str, Any]] = {"source": "synthetic"}

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return and ``reward``: ``raw * reward_scale + reward_shift`` (toxicity levels 0 to 2, upvotes -1 to
        1 or 0 to 1; by default toxicity's return is in [-10, 0]); the raw value; ``in_dataset`` in [0, 1];
        ``num_words``: a count."""
        reward = argument(cls, kwargs, "reward")
        scale = argument(cls, kwargs, "reward_scale")
        scale = DEFAULT_REWARD_SCALES.get(reward, 1.0) if scale is None else float(scale)
        raw = RAW_RANGES.get(reward, Range())
        returns = scaled(raw, scale, float(argument(cls, kwargs, "reward_shift")))
        return {
            "return": returns,
            "reward": returns,
            reward: raw,
            "toxicity": RAW_RANGES["toxicity"],
            "in_dataset": UNIT,
            "num_words": COUNT,
        }

    def __init__(
        self,
        split: str = "train",
        source: str = "local",
        data_dir: str | Path | None = None,
        include_parent: bool = True,
        reward: str = "toxicity",
        reward_scale: float | None = None,
        reward_shift: float = 0.0,
        toxicity_model: str = "lexicon",
        toxic_label: str | int | None = None,
        reward_device: str | None = None,
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        self.reward = check_choice("reward", reward, REWARDS)
        if not isinstance(include_parent, (bool, np.bool_)):
            raise ConfigurationError(
                f"include_parent must be True or False, got {type(include_parent).__name__} {safe_repr(include_parent)}"
            )
        self.reward_scale = (
            DEFAULT_REWARD_SCALES[reward] if reward_scale is None else check_number("reward_scale", reward_scale)
        )
        self.reward_shift = check_number("reward_shift", reward_shift)
        if not all(math.isfinite(raw * self.reward_scale + self.reward_shift) for raw in RAW_REWARD_VALUES):
            raise ConfigurationError(
                f"reward_scale={self.reward_scale!r} and reward_shift={self.reward_shift!r} make rewards overflow; "
                "they must keep raw rewards -1..2 finite"
            )
        self._check_toxicity_arguments(toxicity_model, toxic_label)
        device = resolve_device("reward_device", reward_device)

        self.split, self.source, self.data_dir = split, source, data_dir
        self.include_parent = bool(include_parent)
        loaded = load_comments(source, split, data_dir)
        self.dropped_comments = dict(loaded.dropped)
        self.samples = [
            Sample(comment.parent_text if self.include_parent else "", (comment.text,), self._meta(comment, index))
            for index, comment in enumerate(loaded.comments)
        ]
        self.reward_fn = self._make_reward(toxicity_model, toxic_label, device)

    def _check_toxicity_arguments(self, toxicity_model: Any, toxic_label: Any) -> None:
        if not isinstance(toxicity_model, str) or not toxicity_model:
            raise ConfigurationError(
                f"toxicity_model must be 'lexicon' or a classifier name/path, got {safe_repr(toxicity_model)}"
            )
        if toxic_label is not None and not (isinstance(toxic_label, str) or is_integer(toxic_label)):
            raise ConfigurationError(
                f"toxic_label must be a label name, an int index or None, got {safe_repr(toxic_label)}"
            )
        if self.reward not in TOXICITY_REWARDS and (toxicity_model != "lexicon" or toxic_label is not None):
            raise ConfigurationError(
                f"toxicity_model and toxic_label apply to the toxicity rewards, not reward={self.reward!r}"
            )
        if toxicity_model == "lexicon" and toxic_label is not None:
            raise ConfigurationError("toxic_label applies to a classifier toxicity_model, not to 'lexicon'")

    def _meta(self, comment: Comment, index: int) -> dict[str, Any]:
        meta = {
            "id": comment.id,
            "parent_id": comment.parent_id,
            "link_id": comment.link_id,
            "score": comment.score,
            "index": index,
            "source": self.source,
        }
        if comment.toxicity is not None:
            meta["toxicity"] = comment.toxicity
        return meta

    def _make_reward(self, toxicity_model: str, toxic_label: str | int | None, device: str):
        if self.reward in TOXICITY_REWARDS:
            if toxicity_model != "lexicon":
                scorer = ClassifierToxicityScorer(toxicity_model, toxic_label, device=device)
            elif self.source == "synthetic":
                scorer = LexiconToxicityScorer(synthetic.UNSAFE_TERMS, synthetic.SENSITIVE_TERMS)
            else:
                scorer = LexiconToxicityScorer.profanity()
            return ToxicityReward(scorer, noised=self.reward == "noised_toxicity")
        if self.reward == "upvotes_real":
            comments = all_comments(self.source, self.data_dir)
            return UpvotesRealReward([c.text for c in comments], [c.score for c in comments])
        train = load_comments(self.source, "train", self.data_dir).comments
        return UpvotesModelReward.trained_on(
            [c.text for c in train], [c.score for c in train], f"reddit-upvotes-{self.source}"
        )

    def scale_reward(self, raw: float | np.ndarray) -> float | np.ndarray:
        """The env's reward of a raw reward value: ``raw * reward_scale + reward_shift``."""
        return raw * self.reward_scale + self.reward_shift

    # ---- episodes: a reward seed per episode, the reward scaled after the batched call -------
    def _new_episode(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        observation, info = super()._new_episode(options)
        self._reward_seed = int(self.np_random.integers(2**63))  # the noise and tie draws of this episode's reward
        return observation, info

    def _reward_query(self, utterance: str) -> RewardQuery:
        sample = self.current_sample
        return RewardQuery(
            sample.prompt, utterance, sample.references, {**sample.meta, "reward_seed": self._reward_seed}
        )

    def _transition(self, utterance: str, score: float | None) -> StepResult:
        observation, _, terminated, truncated, info = super()._transition(utterance, score)
        return observation, float(self.scale_reward(score)), terminated, truncated, info

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, float]:
        metrics = {
            "reward": float(self.scale_reward(score)),
            self.reward: float(score),
            "num_words": len(utterance.split()),
        }
        if self.reward == "noised_toxicity":
            metrics["toxicity"] = float(self.reward_fn.scorer.levels([utterance])[0])
        elif self.reward == "upvotes_real":
            metrics["in_dataset"] = float(self.reward_fn.known([utterance])[0])
        return metrics

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        train = load_comments(self.source, "train", self.data_dir).comments
        texts = [text for comment in train for text in (comment.parent_text, comment.text)]
        return keyed_corpus(f"reddit-{self.source}", texts)
