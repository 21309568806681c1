"""``lm_gym/IMDB-v0``: continue a movie review so that it turns positive."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.ranges import COUNT, UNIT, Range
from lm_gym.core.text_env import Sample, SingleTurnTextEnv
from lm_gym.core.validation import is_integer, resolve_device
from lm_gym.rewards.sentiment import ClassifierSentimentReward, NgramSentimentReward
from lm_gym.tasks.imdb.data import load_reviews
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

HUB_CLASSIFIER = "lvwerra/distilbert-imdb"
MAX_OBSERVATION_LENGTH = 16384
MAX_ACTION_LENGTH = 2048


def split_review(text: str) -> tuple[str, str]:
    """The first half of a review's words (the prompt) and the rest (the reference)."""
    words = text.split()
    half = max(1, len(words) // 2)
    return " ".join(words[:half]), " ".join(words[half:])


class IMDBEnv(SingleTurnTextEnv):
    """Positive sentiment continuation of IMDB movie reviews (RL4LMs' IMDB task).

    ## Description
    The agent reads the first half of a movie review and writes a continuation. It is
    rewarded for continuations that a sentiment classifier judges positive, whatever the
    review's own sentiment. This is the IMDB task of RL4LMs / GRUE (Ramamurthy et al., 2023).

    ## Action Space
    ``Text(max_length=2048)`` of printable ASCII: the continuation. Characters outside the
    charset are transliterated or dropped (``info["utterance"]`` is the text as scored).
    A non-``str`` action or one longer than 2,048 characters raises
    ``lm_gym.core.errors.InvalidActionError``. An empty continuation is allowed and scored
    like any other text. At ``action_level="token"`` the action is a token id
    (``Discrete(vocab_size)``), see ``lm_gym.core.TokenLevel``; the continuation ends at EOS,
    after ``max_new_tokens`` (default 48) tokens, or at 2,048 characters. RL4LMs' protocol
    generates exactly 48 tokens (EOS suppressed before then): ``generation_defaults =
    {"min_new_tokens": 48}`` tells generating policies (lm-gym's baselines follow it), and the
    token-level MDP enforces it: before 48 tokens EOS is masked in ``info["action_mask"]``
    (and ``env.unwrapped.action_masks()``) and, if played anyway, ends the continuation with
    the reward minus ``early_eos_penalty`` (default 1). So the reward cannot be won by ending
    the continuation after one positive word.

    ## Observation Space
    ``Text(max_length=16384)``: at reset, the first half of the review's words; after the
    step, that prompt followed by the continuation. At token level: the ``Dict`` of token
    ids and masks of ``TokenLevel``, the prompt cut to its last ``max_prompt_length``
    (default 64) tokens.

    ## Rewards
    P(positive) of the continuation alone (not the prompt) under the sentiment classifier,
    in [0, 1], given on the single step.

    ## Starting State
    A review of the split drawn uniformly with the env's RNG, or review ``i`` with
    ``reset(options={"index": i})``. ``info`` holds ``prompt``, ``references`` (the
    review's true second half) and ``meta`` (``label``: the review's own sentiment,
    ``index``, ``source``).

    ## Episode End
    The episode terminates after one step. ``info["metrics"]`` then holds ``sentiment``
    (the reward) and ``num_words`` of the continuation.
    ``lm_gym.metrics.corpus_metrics(env, final_infos)`` gives the corpus metrics of an
    evaluation: the diversity of the continuations
    (``distinct_1``, ``distinct_2``, ``msttr``, ``unigram_entropy``, ``vocab_size``,
    ``mean_length``) and, with ``language_model=(model, tokenizer)`` or a causal LM's name/path
    (a fixed LM; the baselines' ``--perplexity-model``), ``perplexity_generations`` and
    ``perplexity_references``: the perplexity of the continuations and of the reviews' true
    second halves, each given its prompt (RL4LMs reported only the latter).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` (20% held out of the original train set) or ``"test"`` |
    | ``source`` | ``"hub"`` | ``"hub"``, ``"local"`` (``data_dir``) or ``"synthetic"`` (generated offline by lm-gym) |
    | ``data_dir`` | ``None`` | for ``source="local"``: an ``aclImdb/`` directory (or its parent) or a CSV (see below) |
    | ``reward_model`` | ``"auto"`` | a ``transformers`` classifier name or path, or ``"trained"`` (see below) |
    | ``positive_label`` | ``None`` | the classifier's positive class (name or index) when it cannot be inferred |
    | ``reward_device`` | ``None`` | device of a ``transformers`` classifier (default CUDA when available) |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a ``transformers`` tokenizer, hub name or path; ``None``: see below |
    | ``max_prompt_length`` | ``64`` | token level: prompt tokens kept (the last ones) |
    | ``max_new_tokens`` | ``48`` | token level: continuation length limit |
    | ``min_new_tokens`` | ``48`` | token level: EOS masked before this many tokens (see below) |
    | ``early_eos_penalty`` | ``1.0`` | token level: the penalty for playing EOS before ``min_new_tokens`` anyway |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    ``source="hub"`` reads ``stanfordnlp/imdb`` via ``datasets``; a ``data_dir`` CSV has the
    columns ``review,sentiment``. ``reward_model="trained"`` is a bag-of-n-grams classifier
    trained and cached on the source's train split (first use: under a second on
    ``synthetic``, about 10 s on the 20,000 real training reviews, with a progress bar in a
    terminal, log lines otherwise); ``"auto"`` means ``lvwerra/distilbert-imdb`` for
    ``source="hub"``, ``"trained"`` otherwise. At token level, ``tokenizer=None`` trains a
    byte-level BPE on the source's train split (cached), and ``min_new_tokens`` is lowered to
    ``max_new_tokens`` if that is smaller.

    Offline, ``source="synthetic"`` (``IMDBEnv.offline_kwargs``) builds everything with no
    network; the default ``source="hub"`` fails at once with ``DataUnavailableError`` naming
    that switch when the hub is unreachable. Bad arguments raise ``ConfigurationError``
    naming the argument.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/IMDB-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    returns a ``TextVectorEnv`` that shares the data and classifier between its N copies
    and scores all N continuations with one batched classifier call; with
    ``action_level="token"``, a ``TokenVectorEnv``: N token-level MDPs stepped with arrays,
    the continuations that end in a step scored with one classifier call.

    ## Version History
    * v0: initial version. Token level: the continuation also ends at the 2,048-character
      limit; EOS before ``min_new_tokens`` is masked and penalised; real review text keeps its
      punctuation (transliterated to ASCII) and loses leftover HTML markup.
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 64, "max_new_tokens": 48}
    generation_defaults: ClassVar[dict[str, int]] = {"min_new_tokens": 48}
    offline_kwargs: ClassVar[dict[str, Any]] = {"source": "synthetic"}

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return and ``sentiment``: P(positive), in [0, 1]; ``num_words``: a count."""
        return {"return": UNIT, "sentiment": UNIT, "num_words": COUNT}

    def __init__(
        self,
        split: str = "train",
        source: str = "hub",
        data_dir: str | Path | None = None,
        reward_model: str = "auto",
        positive_label: str | int | None = None,
        reward_device: str | None = None,
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        self.split, self.source, self.data_dir = split, source, data_dir
        reviews = load_reviews(source, split, data_dir)
        if not reviews:
            raise ConfigurationError(f"the {split!r} split of source={source!r} holds no reviews")
        self.samples = []
        for index, (text, label) in enumerate(reviews):
            prompt, reference = split_review(text)
            meta = {"label": "positive" if label else "negative", "index": index, "source": source}
            self.samples.append(Sample(prompt, (reference,), meta))
        self.reward_fn = self._make_reward(reward_model, positive_label, reward_device)

    def _make_reward(self, reward_model: str, positive_label: str | int | None, device: str | None):
        if not isinstance(reward_model, str) or not reward_model:
            raise ConfigurationError(
                f"reward_model must be 'auto', 'trained' or a classifier name/path, got {safe_repr(reward_model)}"
            )
        if positive_label is not None and not (isinstance(positive_label, str) or is_integer(positive_label)):
            raise ConfigurationError(
                f"positive_label must be a label name, an int index or None, got {safe_repr(positive_label)}"
            )
        device = resolve_device("reward_device", device)
        if reward_model == "auto":
            reward_model = HUB_CLASSIFIER if self.source == "hub" else "trained"
        if reward_model == "trained":
            train = load_reviews(self.source, "train", self.data_dir)
            return NgramSentimentReward.trained_on([t for t, _ in train], [y for _, y in train], f"imdb-{self.source}")
        return ClassifierSentimentReward(reward_model, positive_label=positive_label, device=device)

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        texts = [text for text, _ in load_reviews(self.source, "train", self.data_dir)]
        return keyed_corpus(f"imdb-{self.source}", texts)

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, Any]:
        return {"sentiment": float(score), "num_words": len(utterance.split())}
