"""``lm_gym/DailyDialog-v0``: reply in a daily conversation with the intended dialogue act."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lm_gym.core.errors import ConfigurationError, require_extra, safe_repr
from lm_gym.core.ranges import COUNT, UNIT, Range, argument
from lm_gym.core.text_env import Sample, SingleTurnTextEnv, episode_texts
from lm_gym.core.validation import check_int, check_number, resolve_device
from lm_gym.rewards.intent import EOU, IntentMeteorReward, NgramActClassifier, TransformersActClassifier
from lm_gym.tasks.dailydialog.data import ACTS, EMOTIONS, load_dialogues
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

HUB_INTENT_CLASSIFIER = "rajkumarrrk/roberta-daily-dialog-intent-classifier"
MAX_CONTEXT_SIZE = 64
MAX_OBSERVATION_LENGTH = 16384
MAX_ACTION_LENGTH = 1024


def context_prompt(utterances: Iterable[str]) -> str:
    """The context utterances joined by `` <EOU> ``, ending with the marker: the reply comes next."""
    return f" {EOU} ".join(utterances) + f" {EOU}"


class DailyDialogEnv(SingleTurnTextEnv):
    """Open-domain dialogue: the next utterance of a daily conversation (RL4LMs' DailyDialog task).

    ## Description
    The agent reads the last five utterances of a conversation and writes the next one. It is
    rewarded when its reply carries the dialogue act the real reply had (inform, question,
    directive, commissive) and for its closeness to that reply. This is DailyDialog (Li et al.,
    2017) as RL4LMs / GRUE (Ramamurthy et al., 2023) poses it.

    ## Action Space
    ``Text(max_length=1024)`` of printable ASCII: the reply (characters outside the charset are
    transliterated or dropped; ``info["utterance"]`` is the text as scored). A non-``str``
    action or one longer than 1,024 characters raises ``InvalidActionError``. At
    ``action_level="token"`` the action is a token id (``Discrete(vocab_size)``, see
    ``lm_gym.core.TokenLevel``); the reply ends at EOS or after ``max_new_tokens`` (default 20).

    ## Observation Space
    ``Text(max_length=16384)``: at reset the context, the last ``context_size`` utterances
    joined by `` <EOU> `` and ending with `` <EOU>`` (RL4LMs' format, with spaces around the
    marker); after the step, the context followed by the reply. At token level:
    ``TokenLevel``'s ``Dict`` of ids and masks, the prompt cut to its last
    ``max_prompt_length`` (default 128) tokens.

    ## Rewards
    On the single step, per reply: ``intent_coef * [act(reply) == act of the real reply] +
    meteor_coef * METEOR(reply, real reply)``, defaults ``0.75`` and ``0.25`` (RL4LMs' weights),
    in [0, 1]. RL4LMs computed the METEOR part as a running corpus score over the replies seen
    so far, so one reply's reward depended on the others; lm-gym scores each reply on its own.
    The act of the reply comes from ``intent_model``: RL4LMs' RoBERTa classifier (input: the
    context's last utterance and the reply, as RL4LMs) or, offline, a bag-of-n-grams
    classifier of the reply that lm-gym trains on the source's labelled training utterances
    and caches (``lm_gym.rewards.intent``). METEOR's synonyms come from the WordNet 3.0 shipped in
    the package (``lm_gym.metrics.wordnet``).

    ## Starting State
    A reply of the split drawn uniformly with the env's RNG, or reply ``i`` with
    ``reset(options={"index": i})``. As in RL4LMs, the replies are the utterances that follow
    at least ``context_size`` utterances of their dialogue. ``info`` holds ``prompt``,
    ``references`` (the real reply) and ``meta``: ``act`` and ``act_id`` (the real reply's
    dialogue act), ``emotion`` and ``emotion_id``, ``dialogue`` and ``turn`` (its position),
    ``index``, ``source``.

    ## Episode End
    The episode terminates after one step. ``info["metrics"]`` then holds ``intent_match``
    (0/1: the intent accuracy), ``meteor``, ``rouge1``, ``rouge2``, ``rougeL`` and
    ``num_words``. ``lm_gym.metrics.corpus_metrics(env, final_infos)`` adds ``bleu`` (nltk),
    ``sacrebleu``, the diversity metrics (``distinct_1``, ``distinct_2``, ``msttr``,
    ``unigram_entropy``, ``vocab_size``, ``mean_length``) and, given a language model,
    perplexities; ``sacrebleu`` needs the ``nlg`` extra (``pip install "lm-gym[nlg]"``; without
    it ``corpus_metrics`` raises ``DataUnavailableError`` naming it).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` or ``"test"`` |
    | ``source`` | ``"hub"`` | ``"hub"``, ``"local"`` (``data_dir``) or ``"synthetic"`` (generated offline by lm-gym) |
    | ``data_dir`` | ``None`` | for ``source="local"``: the unzipped release (see below) |
    | ``context_size`` | ``5`` | utterances of context (1 to 64) |
    | ``intent_model`` | ``"auto"`` | a dialogue-act classifier name or path, or ``"trained"`` (see below) |
    | ``intent_coef``, ``meteor_coef`` | ``0.75``, ``0.25`` | weights of the intent match and of METEOR |
    | ``reward_device`` | ``None`` | device of a ``transformers`` classifier (default CUDA when available) |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a ``transformers`` tokenizer, hub name or path; ``None``: see below |
    | ``max_prompt_length`` | ``128`` | token level: prompt tokens kept (the last ones) |
    | ``max_new_tokens`` | ``20`` | token level: reply length limit |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    ``source="hub"`` reads ``li2017dailydialog/daily_dialog`` via ``datasets``. For
    ``source="local"``, ``data_dir`` is the unzipped release with ``dialogues_<split>.txt``,
    ``dialogues_act_<split>.txt``, ``dialogues_emotion_<split>.txt`` (in it or in its
    ``<split>/``). ``intent_model`` is a ``transformers`` dialogue-act classifier name or path,
    or ``"trained"`` (the offline n-gram classifier); ``"auto"`` means
    ``rajkumarrrk/roberta-daily-dialog-intent-classifier`` for ``source="hub"``, ``"trained"``
    otherwise. At token level, ``tokenizer=None`` trains a byte-level BPE on the source's train
    split (cached).

    ``env.unwrapped.dropped_dialogues`` counts the dialogues of the split dropped because their
    utterance and label counts disagree (a quirk of the release; see
    ``lm_gym.tasks.dailydialog.data``).

    Offline, ``source="synthetic"`` (``DailyDialogEnv.offline_kwargs``) builds everything with
    no network; the default ``source="hub"`` fails at once with ``DataUnavailableError`` naming
    that switch when the hub is unreachable. Bad arguments raise ``ConfigurationError``.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/DailyDialog-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    shares the data and classifier between N copies and scores all N replies with one batched
    classifier call.

    ## Version History
    * v0: initial version. RL4LMs' context and reward weights; METEOR per reply instead of a
      running corpus score; references without RL4LMs' trailing ``<EOU>`` (the reply ends at EOS).
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 128, "max_new_tokens": 20}
    offline_kwargs: ClassVar[dict[str, Any]] = {"source": "synthetic"}

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return: ``intent_coef * match + meteor_coef * METEOR``, both parts in [0, 1]; ``intent_match``,
        METEOR and ROUGE in [0, 1]; ``num_words``: a count."""
        from lm_gym.metrics import meteor, rouge

        intent, meteor_coef = float(argument(cls, kwargs, "intent_coef")), float(argument(cls, kwargs, "meteor_coef"))
        ends = [0.0, intent, meteor_coef, intent + meteor_coef]
        scores = dict.fromkeys(("rouge1", "rouge2", "rougeL"), rouge.RANGE)
        return {
            "return": Range(min(ends), max(ends)),
            "intent_match": UNIT,
            "meteor": meteor.RANGE,
            **scores,
            "num_words": COUNT,
        }

    def __init__(
        self,
        split: str = "train",
        source: str = "hub",
        data_dir: str | Path | None = None,
        context_size: int = 5,
        intent_model: str = "auto",
        intent_coef: float = 0.75,
        meteor_coef: float = 0.25,
        reward_device: str | None = None,
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        self.context_size = check_int("context_size", context_size, 1, MAX_CONTEXT_SIZE)
        intent_coef = check_number("intent_coef", intent_coef, minimum=0)
        meteor_coef = check_number("meteor_coef", meteor_coef, minimum=0)
        if not isinstance(intent_model, str) or not intent_model:
            raise ConfigurationError(
                f"intent_model must be 'auto', 'trained' or a classifier name/path, got {safe_repr(intent_model)}"
            )
        device = resolve_device("reward_device", reward_device)
        self.split, self.source, self.data_dir = split, source, data_dir
        loaded = load_dialogues(source, split, data_dir)
        self.dropped_dialogues = loaded.dropped_dialogues
        self.samples = []
        for dialogue_index, dialogue in enumerate(loaded.dialogues):
            for turn in range(self.context_size, len(dialogue)):
                utterance, act, emotion = dialogue[turn]
                meta = {
                    "act": ACTS[act],
                    "act_id": act,
                    "emotion": EMOTIONS[emotion],
                    "emotion_id": emotion,
                    "dialogue": dialogue_index,
                    "turn": turn,
                    "index": len(self.samples),
                    "source": source,
                }
                prompt = context_prompt(u for u, _, _ in dialogue[turn - self.context_size : turn])
                self.samples.append(Sample(prompt, (utterance,), meta))
        if not self.samples:
            raise ConfigurationError(
                f"no dialogue of the {split!r} split has more than context_size={self.context_size} utterances"
            )
        if intent_model == "auto":
            intent_model = HUB_INTENT_CLASSIFIER if source == "hub" else "trained"
        if intent_model == "trained":
            train = [turn for dialogue in load_dialogues(source, "train", data_dir).dialogues for turn in dialogue]
            classifier = NgramActClassifier.trained_on(
                [u for u, _, _ in train], [a for _, a, _ in train], f"dailydialog-acts-{source}"
            )
        else:
            classifier = TransformersActClassifier(intent_model, device=device)
        self.reward_fn = IntentMeteorReward(classifier, intent_coef, meteor_coef)

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        train = load_dialogues(self.source, "train", self.data_dir).dialogues
        texts = [context_prompt(u for u, _, _ in dialogue) for dialogue in train]
        return keyed_corpus(f"dailydialog-{self.source}", texts)

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, Any]:
        from lm_gym import metrics

        references = [list(sample.references)]
        match = self.reward_fn.classifier.predict([sample.prompt], [utterance])[0] == sample.meta["act_id"]
        results = {"intent_match": float(match), "meteor": float(metrics.meteor_scores([utterance], references)[0])}
        results.update(
            metrics.corpus_rouge([utterance], references, ("rouge1", "rouge2", "rougeL"))
        )  # one sample: its scores
        results["num_words"] = len(utterance.split())
        return results

    def task_corpus_metrics(self, episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Corpus BLEU (nltk) and SacreBLEU of the utterances against the references."""
        from lm_gym import metrics

        require_extra("nlg", "lm_gym/DailyDialog-v0's evaluation (corpus metric sacrebleu)", "sacrebleu")
        _, utterances, references = episode_texts(episodes)
        return metrics.bleu_scores(utterances, references)
