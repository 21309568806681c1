"""``lm_gym/TextGeneration-v0``: your data, no code: a single-turn task over any dataset ``datasets`` reads."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import Sample, SingleTurnTextEnv, episode_texts
from lm_gym.core.validation import check_int
from lm_gym.rewards.completion import import_callable
from lm_gym.tasks.text_generation.dataset import SampleSource, build_samples, check_reference_columns, load_table
from lm_gym.tasks.text_generation.rewards import EXTRAS, METRICS, TEXT_METRICS, FunctionReward, MetricReward
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

MAX_ACTION_LENGTH = 4096
MAX_OBSERVATION_LENGTH = 2**17
#: Longest prompt kept whole (longer ones keep their end): the prompt and a full-length utterance fit the observation.
MAX_PROMPT_LENGTH = MAX_OBSERVATION_LENGTH - MAX_ACTION_LENGTH - 1
#: Most samples ``num_samples`` may ask for.
MAX_SAMPLES = 2**31 - 1


class TextGenerationEnv(SingleTurnTextEnv):
    """Your data, no code: prompts and references from any dataset ``datasets`` reads, scored by a metric.

    ## Description
    The agent reads a prompt from a dataset row and writes one text, scored against the row's
    references by an lm-gym metric (ROUGE, METEOR, BLEU, SacreBLEU, CIDEr-D, BERTScore) or by
    your reward function, written as TRL's trainers take one. The data is a Hugging Face hub
    dataset (``dataset="EdinburghNLP/xsum"``), local ``.jsonl``/``.json``/``.csv``/``.parquet``
    files (``data_files=``), or a ``datasets.Dataset``; columns pick the prompt and the
    references, and a ``str.format`` template can build the prompt from several columns. With
    neither ``dataset`` nor ``data_files``, the env plays a small example shipped in the
    package (made-up news articles to summarize in one sentence: 30 / 10 / 10 rows in
    ``train`` / ``validation`` / ``test``, columns ``prompt``, ``completion``, ``id``, ``topic``),
    so it builds offline with no arguments.

    ## Action Space
    ``Text(max_length=4096)`` of printable ASCII: the generated text (characters outside the
    charset are transliterated or dropped; ``info["utterance"]`` is the text as scored). A
    non-``str`` action or one longer than 4,096 characters raises ``InvalidActionError``. At
    ``action_level="token"``: ``Discrete(vocab_size)``, the text ending at EOS or after
    ``max_new_tokens`` (default 128) tokens.

    ## Observation Space
    ``Text(max_length=131072)``: the prompt (mapped to printable ASCII; a prompt longer than
    126,975 characters keeps its end), then the prompt followed by the text. At token level:
    ``TokenLevel``'s ``Dict`` of ids and masks, the prompt cut to its last ``max_prompt_length``
    (default 512) tokens.

    ## Rewards
    On the single step. ``reward`` names a metric of the text against the row's references:
    ``"rouge1"`` (the default), ``"rouge2"``, ``"rougeL"``, ``"rougeLsum"`` (F-measures, rouge-score
    with stemming, best reference), ``"meteor"`` (nltk), ``"bleu"`` (nltk's BLEU of the one
    sample: 1- to 4-grams, no smoothing, 0-1), ``"sacrebleu"`` (SacreBLEU of the one sample,
    0-100), ``"cider"`` (CIDEr-D with the document frequencies of the split's references) or
    ``"bertscore"`` (BERTScore F1 with ``bertscore_model``). ``sacrebleu`` and ``cider`` need the
    ``nlg`` extra, ``bertscore`` the ``bertscore`` extra: without it the env raises
    ``DataUnavailableError`` naming it. Or ``reward`` is your function, a callable or a
    ``"module:function"`` string, called as TRL's trainers call one:
    ``fn(prompts=[...], completions=[...], references=[...], **columns) -> list[float]``, where
    ``references`` holds each sample's list of references and each other column of the rows
    (not the prompt's, the template's or the references' columns, and only cells of plain
    JSON-like data) comes as a list; a function without ``**kwargs`` gets the arguments it
    names. One finite number per completion; a function that raises or returns anything else
    raises ``ConfigurationError`` naming it.

    ## Starting State
    A row of the split drawn uniformly with the env's RNG, or row ``i`` with
    ``reset(options={"index": i})``. ``info`` holds ``prompt``, ``references`` (empty without
    ``reference_column``) and ``meta``: ``index`` (the row) and ``row`` (its other columns, as
    passed to a reward function).

    ## Episode End
    The episode terminates after one step. ``info["metrics"]`` holds the reward under its
    metric's name (``reward`` for a function) and the per-episode metrics of ``metrics``
    (default: ``num_words``), any of the reward metrics above and ``num_words``.
    ``lm_gym.metrics.corpus_metrics(env, final_infos)`` adds, for a dataset with references,
    the corpus ``bleu`` (nltk), ``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum`` and, with the
    ``nlg`` extra, ``sacrebleu`` and ``cider`` (left out with a warning naming the extra
    without it), and the diversity metrics of every single-turn task.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``dataset`` | ``None`` | a hub dataset name (``datasets.load_dataset``), a ``Dataset`` or ``DatasetDict`` |
    | ``dataset_config`` | ``None`` | the hub dataset's configuration name |
    | ``data_files`` | ``None`` | local files: a path or list of paths (``split``'s), or a dict of those per split |
    | ``split`` | ``"train"`` | the split to play |
    | ``prompt_column`` | ``"prompt"`` | the column holding the prompt (unused with ``prompt_template``) |
    | ``reference_column`` | ``"completion"`` | a column or list of columns of references; ``None``: no references |
    | ``prompt_template`` | ``None`` | a ``str.format`` template of the row's columns: ``"Summarize: {document}"`` |
    | ``num_samples`` | ``None`` | play only the split's first ``num_samples`` rows |
    | ``reward`` | ``"rouge1"`` | a metric name (see Rewards), a callable or a ``"module:function"`` |
    | ``metrics`` | ``None`` | per-episode metric names (``None``: ``["num_words"]``) |
    | ``bertscore_model`` | ``"roberta-large"`` | ``bertscore``: the BERTScore model (a hub name or directory) |
    | ``bertscore_layers`` | ``None`` | ``bertscore``: its layer (``None``: bert-score's default for the model) |
    | ``device`` | ``None`` | the BERTScore model's torch device (default CUDA when available) |
    | ``action_level``, ``tokenizer`` | | token level, as for every task |
    | ``max_prompt_length``, ``max_new_tokens`` | | token level, as for every task (defaults 512 and 128 tokens) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    Files of a split are all ``.jsonl``/``.json`` (read as JSON), ``.csv`` (every column as
    text, with a header row) or ``.parquet``. A reference cell is a str or a list of str. The
    default ``prompt_column="prompt"`` and ``reference_column="completion"`` read TRL's
    prompt-completion format as it is. At token level, ``tokenizer=None`` trains a byte-level
    BPE on the prompts and references of the ``train`` split (of the split played where there
    is no ``train`` split, e.g. one file), cached.

    Bad arguments raise ``ConfigurationError`` naming the argument: a column the data lacks
    (the message lists its columns), a template naming one, an unknown metric (the message
    lists them), a reference metric without references, an unreadable or empty file, a split
    that ``data_files`` has no files for, a row without a prompt or references. A hub dataset
    that cannot be fetched raises ``DataUnavailableError``; ``data_files`` work offline.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/TextGeneration-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    shares the data between N copies and scores the N texts of a step with one batched reward call.

    ## Version History
    * v0: initial version.
    """

    token_level_defaults: ClassVar[dict[str, Any]] = {"max_prompt_length": 512, "max_new_tokens": 128}
    #: No dataset and no files: the example data shipped in the package.
    offline_kwargs: ClassVar[dict[str, Any]] = {"dataset": None, "data_files": None}

    def __init__(
        self,
        dataset: Any = None,
        dataset_config: str | None = None,
        data_files: str | Path | Sequence[str | Path] | dict[str, Any] | None = None,
        split: str = "train",
        prompt_column: str = "prompt",
        reference_column: str | Sequence[str] | None = "completion",
        prompt_template: str | None = None,
        num_samples: int | None = None,
        reward: str | Callable[..., Sequence[float]] = "rouge1",
        metrics: Sequence[str] | None = None,
        bertscore_model: str = "roberta-large",
        bertscore_layers: int | None = None,
        device: str | None = None,
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        if not isinstance(prompt_column, str) or not prompt_column:
            raise ConfigurationError(f"prompt_column must be a column name (str), got {safe_repr(prompt_column)}")
        self.reference_columns = check_reference_columns(reference_column)
        if prompt_template is not None and not isinstance(prompt_template, str):
            raise ConfigurationError(f"prompt_template must be None or a str, got {safe_repr(prompt_template)}")
        if num_samples is not None:
            num_samples = check_int("num_samples", num_samples, 1, MAX_SAMPLES)
        metric_names = self._check_metrics(reward, metrics)
        self.split = split
        self._source = SampleSource(dataset, dataset_config, data_files, prompt_column, prompt_template)
        self.samples = self._load_samples(split, num_samples)
        corpus_references = [sample.references for sample in self.samples] if self.reference_columns else None
        options = {"bertscore_model": bertscore_model, "bertscore_layers": bertscore_layers, "device": device}
        if isinstance(reward, str) and reward in METRICS:
            self.reward_name = reward
            self.reward_fn = MetricReward(reward, corpus_references, **options)
        else:
            self.reward_name = "reward"
            columns = sorted({column for sample in self.samples for column in sample.meta["row"]})
            function = reward if callable(reward) else import_callable("reward", reward)
            self.reward_fn = FunctionReward(function, columns)
        self._metric_fns = {
            name: MetricReward(name, corpus_references, name="metrics", **options)
            for name in metric_names
            if name in METRICS and name != self.reward_name
        }
        self.metric_names = metric_names

    def _check_metrics(self, reward: Any, metrics: Any) -> tuple[str, ...]:
        """Check ``reward`` and ``metrics`` against each other and the references; the per-episode metric names."""
        if isinstance(reward, str) and reward not in METRICS and ":" not in reward:
            raise ConfigurationError(
                f"reward: unknown metric {safe_repr(reward)}; known metrics: {METRICS}, "
                "or pass a reward function (a callable or a 'module:function' string)"
            )
        if not isinstance(reward, str) and not callable(reward):
            raise ConfigurationError(
                f"reward must be a metric name {METRICS}, a callable or a 'module:function' string, "
                f"got {safe_repr(reward)}"
            )
        if metrics is None:
            names: tuple[str, ...] = TEXT_METRICS
        elif isinstance(metrics, (str, bytes)) or not isinstance(metrics, Sequence):
            raise ConfigurationError(f"metrics must be None or a list of metric names, got {safe_repr(metrics)}")
        else:
            names = tuple(dict.fromkeys(metrics))
            for name in names:
                if name not in METRICS + TEXT_METRICS:
                    raise ConfigurationError(
                        f"metrics: unknown metric {safe_repr(name)}; known metrics: {METRICS + TEXT_METRICS}"
                    )
        if not self.reference_columns:
            needing = [name for name in (reward, *names) if isinstance(name, str) and name in METRICS]
            if needing:
                raise ConfigurationError(
                    f"{'reward' if needing[0] == reward else 'metrics'}: {needing[0]!r} scores against references, "
                    "and reference_column=None gives none; pass reference_column=<the column of references>, "
                    "or a reward function (a callable or a 'module:function' string)"
                )
        return names

    def _load_samples(self, split: str, num_samples: int | None = None) -> list[Sample]:
        source = self._source
        table = load_table(source.dataset, source.dataset_config, source.data_files, split)
        return build_samples(
            table, source.prompt_column, self.reference_columns, source.prompt_template, num_samples, MAX_PROMPT_LENGTH
        )

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        """The prompts and references of the ``train`` split (of this split where there is no ``train``)."""
        samples = self.samples
        dataset, data_files = self._source.dataset, self._source.data_files
        splits = data_files if data_files is not None else dataset  # a dict of files or a DatasetDict
        has_train = isinstance(dataset, str) or (dataset is None and data_files is None)
        has_train = has_train or (isinstance(splits, Mapping) and "train" in splits)
        if self.split != "train" and has_train:
            samples = self._load_samples("train")
        texts = [sample.prompt for sample in samples] + [ref for sample in samples for ref in sample.references]
        return keyed_corpus("text_generation", texts)

    def demonstrations(self) -> list[tuple[str, str]]:
        """Every ``(prompt, reference)`` pair of the split."""
        if not self.reference_columns:
            raise ConfigurationError(
                "TextGeneration-v0 has demonstrations only with references: pass reference_column=<a column>"
            )
        return super().demonstrations()

    @staticmethod
    def _sample_info(sample: Sample) -> dict[str, Any]:
        info = SingleTurnTextEnv._sample_info(sample)
        info["meta"] = copy.deepcopy(info["meta"])  # each info its own: the row's cells may be lists or dicts
        return info

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, float]:
        results = {self.reward_name: float(score)}
        for name in self.metric_names:
            if name == "num_words":
                results[name] = len(utterance.split())
            elif name != self.reward_name:
                scores = self._metric_fns[name]([sample.prompt], [utterance], [sample.references], [sample.meta])
                results[name] = float(scores[0])
        return results

    def task_corpus_metrics(self, episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Corpus BLEU (nltk), ROUGE and, with the ``nlg`` extra, SacreBLEU and CIDEr-D of the texts;
        none without references."""
        from lm_gym import metrics
        from lm_gym.core.errors import DataUnavailableError, require_extra

        _, utterances, references = episode_texts(episodes)
        if not all(references):
            return {}
        with warnings.catch_warnings():  # nltk warns of a corpus without 3- or 4-gram matches
            warnings.simplefilter("ignore", UserWarning)
            results = {"bleu": metrics.corpus_bleu(utterances, references)}
        results.update(metrics.corpus_rouge(utterances, references, ("rouge1", "rouge2", "rougeL")))
        lsum = metrics.rouge_scores([metrics.split_sentences(u) for u in utterances], references, "rougeLsum")
        results["rougeLsum"] = float(lsum.mean())
        for name, function in (("sacrebleu", metrics.corpus_sacrebleu), ("cider", metrics.cider)):
            extra, package = EXTRAS[name]
            try:
                require_extra(extra, f"lm_gym/TextGeneration-v0's corpus metric {name}", package)
            except DataUnavailableError as error:
                warnings.warn(f"{error}; left out", stacklevel=2)
                continue
            results[name] = function(utterances, references)
        return results
