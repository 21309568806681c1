"""``lm_gym/CNNDailyMail-v0``: summarize a news article."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lm_gym.core.errors import require_extra
from lm_gym.core.ranges import COUNT, UNIT, Range
from lm_gym.core.text_env import Sample, SingleTurnTextEnv, episode_texts
from lm_gym.core.validation import check_choice
from lm_gym.rewards.reference import ReferenceReward
from lm_gym.tasks.cnn_dailymail.data import load_articles
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

PROMPT_PREFIX = "Summarize: "
REWARDS = ("rouge1", "rouge2", "rougeL", "rougeLsum", "meteor")
MAX_ACTION_LENGTH = 2048
MAX_OBSERVATION_LENGTH = 2**17
#: Longest article kept whole: the prompt and a full-length summary fit the observation space.
MAX_ARTICLE_LENGTH = MAX_OBSERVATION_LENGTH - MAX_ACTION_LENGTH - len(PROMPT_PREFIX) - 1


class CNNDailyMailEnv(SingleTurnTextEnv):
    """Abstractive news summarization of CNN/DailyMail (RL4LMs' summarization task).

    ## Description
    The agent reads a news article and writes its summary, scored against the article's
    highlights (the bullet points written by the journalists). This is CNN/DailyMail 3.0.0
    (See et al., 2017) as RL4LMs / GRUE (Ramamurthy et al., 2023) poses it.

    ## Action Space
    ``Text(max_length=2048)`` of printable ASCII: the summary (characters outside the charset
    are transliterated or dropped; ``info["utterance"]`` is the text as scored). A non-``str``
    action or one longer than 2,048 characters raises ``InvalidActionError``. At
    ``action_level="token"`` the action is a token id (``Discrete(vocab_size)``, see
    ``lm_gym.core.TokenLevel``); the summary ends at EOS or after ``max_new_tokens``
    (default 100). EOS is masked before ``min_new_tokens`` (default 50, RL4LMs' setting) and
    penalised by ``early_eos_penalty`` when played anyway.

    ## Observation Space
    ``Text(max_length=131072)``: at reset ``Summarize: <article>``; after the step, that prompt
    followed by the summary. Articles longer than 129,012 characters are cut to that length
    (none of the release's are). At token level: ``TokenLevel``'s ``Dict`` of ids and masks, the
    prompt cut to ``max_prompt_length`` (default 512) tokens on ``prompt_truncation_side``
    (default ``"right"``, RL4LMs': the article's beginning is kept).

    ## Rewards
    On the single step: ``reward`` of the summary against the highlights (default ROUGE-1
    F-measure with rouge-score's Porter stemmer; ``rouge2``, ``rougeL``, ``rougeLsum`` and
    ``meteor`` by argument). ``rougeLsum`` puts each sentence of the summary on its own line,
    as the highlights are, and scores the union LCS over those lines, as the field computes it.

    ## Starting State
    An article of the split drawn uniformly with the env's RNG, or article ``i`` with
    ``reset(options={"index": i})``. ``info`` holds ``prompt``, ``references`` (the
    highlights, one sentence per line) and ``meta`` (``id``, ``index``, ``source``).

    ## Episode End
    The episode terminates after one step. ``info["metrics"]`` then holds ``rouge1``,
    ``rouge2``, ``rougeL``, ``rougeLsum``, ``meteor`` and ``num_words``.
    ``lm_gym.metrics.corpus_metrics(env, final_infos)`` adds ``bleu`` (nltk), ``sacrebleu``, the
    diversity metrics (``distinct_1``, ``distinct_2``, ``msttr``, ``unigram_entropy``,
    ``vocab_size``, ``mean_length``) and, given a language model, perplexities; ``sacrebleu``
    needs the ``nlg`` extra (``pip install "lm-gym[nlg]"``; without it ``corpus_metrics`` raises
    ``DataUnavailableError`` naming it). BERTScore is available as ``lm_gym.metrics.bertscore``
    with a model of your choice (the ``bertscore`` extra).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` or ``"test"`` |
    | ``source`` | ``"hub"`` | ``"hub"``, ``"local"`` (``data_dir``) or ``"synthetic"`` (generated offline by lm-gym) |
    | ``data_dir`` | ``None`` | for ``source="local"``: a directory of split files, or one such file (see below) |
    | ``reward`` | ``"rouge1"`` | ``"rouge1"``, ``"rouge2"``, ``"rougeL"``, ``"rougeLsum"`` or ``"meteor"`` |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a ``transformers`` tokenizer, hub name or path; ``None``: see below |
    | ``max_prompt_length`` | ``512`` | token level: prompt tokens kept |
    | ``max_new_tokens`` | ``100`` | token level: summary length limit |
    | ``prompt_truncation_side`` | ``"right"`` | token level: ``"right"`` keeps an article's start, ``"left"`` its end |
    | ``min_new_tokens`` | ``50`` | token level: EOS masked before this many tokens |
    | ``early_eos_penalty`` | ``1.0`` | token level: the penalty for playing EOS before ``min_new_tokens`` anyway |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    ``source="hub"`` reads ``abisee/cnn_dailymail`` 3.0.0 via ``datasets``. For ``source="local"``,
    ``data_dir`` is a directory with ``<split>.csv`` / ``.parquet`` / ``.jsonl`` (or the hub's
    parquet shards) of columns ``article,highlights,id``, or one such file. At token level,
    ``tokenizer=None`` trains a byte-level BPE on the source's train split (cached).

    Offline, ``source="synthetic"`` (``CNNDailyMailEnv.offline_kwargs``) builds everything with
    no network; the default ``source="hub"`` fails at once with ``DataUnavailableError`` naming
    that switch when the hub is unreachable. Bad arguments raise ``ConfigurationError``.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/CNNDailyMail-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    shares the data between N copies and scores all N summaries with one batched call.

    ## Version History
    * v0: initial version. RL4LMs' prompt, truncation side and ROUGE-1 reward.
    """

    token_level_defaults: ClassVar[dict[str, Any]] = {
        "max_prompt_length": 512,
        "max_new_tokens": 100,
        "prompt_truncation_side": "right",
    }
    generation_defaults: ClassVar[dict[str, int]] = {"min_new_tokens": 50}
    offline_kwargs: ClassVar[dict[str, Any]] = {"source": "synthetic"}

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return (ROUGE or METEOR, by ``reward``) and the ROUGE and METEOR metrics in [0, 1];
        ``num_words``: a count."""
        from lm_gym.metrics import meteor, rouge

        scores = dict.fromkeys(("rouge1", "rouge2", "rougeL", "rougeLsum"), rouge.RANGE)
        return {"return": UNIT, **scores, "meteor": meteor.RANGE, "num_words": COUNT}

    def __init__(
        self,
        split: str = "train",
        source: str = "hub",
        data_dir: str | Path | None = None,
        reward: str = "rouge1",
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        check_choice("reward", reward, REWARDS)
        self.split, self.source, self.data_dir = split, source, data_dir
        self.samples = [
            Sample(
                PROMPT_PREFIX + article[:MAX_ARTICLE_LENGTH],
                (highlights,),
                {"id": article_id, "index": index, "source": source},
            )
            for index, (article, highlights, article_id) in enumerate(load_articles(source, split, data_dir))
        ]
        self.reward_fn = ReferenceReward(reward)

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        train = load_articles(self.source, "train", self.data_dir)
        texts = [PROMPT_PREFIX + article for article, _, _ in train] + [highlights for _, highlights, _ in train]
        return keyed_corpus(f"cnn_dailymail-{self.source}", texts)

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, Any]:
        from lm_gym import metrics

        references = [list(sample.references)]
        results = metrics.corpus_rouge(
            [utterance], references, ("rouge1", "rouge2", "rougeL")
        )  # one sample: its scores
        scored = {self.reward_fn.metric: score}  # the reward's own metric is not scored again
        if "rougeLsum" not in scored:
            scored["rougeLsum"] = float(
                metrics.rouge_scores([metrics.split_sentences(utterance)], references, rouge_type="rougeLsum")[0]
            )
        if "meteor" not in scored:
            scored["meteor"] = float(metrics.meteor_scores([utterance], references)[0])
        results.update(rougeLsum=scored["rougeLsum"], meteor=scored["meteor"], num_words=len(utterance.split()))
        return results

    def task_corpus_metrics(self, episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Corpus BLEU (nltk) and SacreBLEU of the summaries against the references."""
        from lm_gym import metrics

        require_extra("nlg", "lm_gym/CNNDailyMail-v0's evaluation (corpus metric sacrebleu)", "sacrebleu")
        _, utterances, references = episode_texts(episodes)
        return metrics.bleu_scores(utterances, references)
