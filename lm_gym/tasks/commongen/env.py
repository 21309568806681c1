"""``lm_gym/CommonGen-v0``: write a sentence that uses every concept of a set."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lm_gym.core.errors import DataUnavailableError, require_extra
from lm_gym.core.ranges import COUNT, UNIT, Range, argument
from lm_gym.core.text_env import Sample, SingleTurnTextEnv, episode_texts
from lm_gym.core.validation import check_choice, check_number
from lm_gym.rewards.reference import ReferenceReward
from lm_gym.tasks.commongen.data import load_concept_sets
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

PROMPT_PREFIX = "generate a sentence with: "
REWARDS = ("meteor", "rouge1", "rouge2", "rougeL", "cider")
COCO_PIPELINES = ("auto", "java", "python", "off")
MAX_OBSERVATION_LENGTH = 2048
MAX_ACTION_LENGTH = 1024


def concept_prompt(concepts: Iterable[str]) -> str:
    """RL4LMs' CommonGen prompt: ``generate a sentence with: dog frisbee catch.``"""
    return f"{PROMPT_PREFIX}{' '.join(concepts)}."


def repeats_prompt(prompt: str, utterance: str) -> bool:
    """RL4LMs' ``common_gen_repeat_penalty`` test: the utterance copies the prompt or its wording.

    True when the lower-cased utterance contains the concept list as written in the prompt,
    the prompt's prefix, or the words ``generate`` or ``sentence``.
    """
    text = utterance.lower()
    concept_list = prompt.removeprefix(PROMPT_PREFIX).removesuffix(".").lower()
    return concept_list in text or PROMPT_PREFIX.strip() in text or "generate" in text or "sentence" in text


class RepeatPenalizedReward:
    """A reference reward minus ``penalty`` for utterances that repeat the prompt (:func:`repeats_prompt`)."""

    def __init__(self, reward: ReferenceReward, penalty: float):
        self.reward, self.penalty = reward, penalty

    def __call__(self, prompts, utterances, references, meta=None) -> np.ndarray:
        repeats = np.array([repeats_prompt(p, u) for p, u in zip(prompts, utterances, strict=True)], dtype=np.float64)
        return self.reward(prompts, utterances, references, meta) - self.penalty * repeats


class CommonGenEnv(SingleTurnTextEnv):
    """Generative commonsense: one sentence using a set of concepts (RL4LMs' CommonGen task).

    ## Description
    The agent is given 3 to 5 concepts (lemmas such as ``dog``, ``frisbee``, ``catch``) and
    writes one everyday sentence that uses all of them. It is scored against every human
    reference sentence of the concept set. This is CommonGen (Lin et al., 2020) as RL4LMs /
    GRUE (Ramamurthy et al., 2023) poses it.

    ## Action Space
    ``Text(max_length=1024)`` of printable ASCII: the sentence (characters outside the
    charset are transliterated or dropped; ``info["utterance"]`` is the text as scored). A
    non-``str`` action or one longer than 1,024 characters raises ``InvalidActionError``. At
    ``action_level="token"`` the action is a token id (``Discrete(vocab_size)``, see
    ``lm_gym.core.TokenLevel``); the sentence ends at EOS or after ``max_new_tokens``
    (default 20). EOS is masked before ``min_new_tokens`` (default 5, RL4LMs' setting) and
    penalised by ``early_eos_penalty`` when played anyway.

    ## Observation Space
    ``Text(max_length=2048)``: at reset the prompt ``generate a sentence with: <concepts
    separated by spaces>.`` (RL4LMs' prefix and end token); after the step, the prompt
    followed by the sentence. At token level: ``TokenLevel``'s ``Dict`` of ids and masks, the
    prompt cut to its last ``max_prompt_length`` (default 20) tokens.

    ## Rewards
    On the single step: ``reward`` of the sentence against all references (default METEOR,
    nltk's, multi-reference: the best reference counts) minus ``repeat_penalty`` (default 1)
    when the sentence repeats the prompt — RL4LMs' ``common_gen_repeat_penalty`` shaping: the
    lower-cased sentence contains the prompt's concept list, its prefix, ``generate`` or
    ``sentence``. Other ``reward`` choices: ``rouge1``, ``rouge2``, ``rougeL`` (F-measure,
    best reference) and ``cider`` (CIDEr-D with document frequencies of the split's references,
    so a sentence's reward does not depend on its batch). METEOR's synonyms come from the
    WordNet 3.0 shipped in the package (``lm_gym.metrics.wordnet``).

    ## Starting State
    A concept set of the split drawn uniformly with the env's RNG, or set ``i`` with
    ``reset(options={"index": i})``. ``info`` holds ``prompt``, ``references`` (all scenes of
    the set) and ``meta`` (``concepts``, ``index``, ``source``).

    ## Episode End
    The episode terminates after one step. ``info["metrics"]`` then holds ``meteor``,
    ``rouge1``, ``rouge2``, ``rougeL``, ``coverage`` (share of the concepts the sentence uses,
    inflections counted), ``repeats_prompt`` (0/1) and ``num_words``.
    ``lm_gym.metrics.corpus_metrics(env, final_infos)`` adds the corpus metrics of an evaluation:
    ``bleu`` (nltk, multi-reference), ``sacrebleu``, ``cider``, the diversity metrics
    (``distinct_1``, ``distinct_2``, ``msttr``, ``unigram_entropy``, ``vocab_size``,
    ``mean_length``), given a language model perplexities, and the COCO caption evaluation that
    published CommonGen numbers come from (``lm_gym.metrics.coco``), named by its pipeline:
    ``coco_bleu4``, ``coco_meteor`` (METEOR 1.5), ``coco_rouge_l``, ``coco_cider`` (and
    ``coco_spice`` when SPICE's Stanford models are installed) from the official Java pipeline,
    or ``coco_py_bleu4``, ``coco_py_rouge_l``, ``coco_py_cider`` from its pure-Python
    approximation where there is no Java. lm-gym's own ``bleu``, ``cider`` and ``meteor`` use
    its tokenization and nltk's METEOR, so they differ from published values. ``sacrebleu``,
    ``cider``, the COCO scores and ``reward="cider"`` need the ``nlg`` extra (SacreBLEU,
    pycocoevalcap: ``pip install "lm-gym[nlg]"``); without SacreBLEU ``corpus_metrics`` raises
    ``DataUnavailableError`` naming it; without pycocoevalcap it leaves ``cider`` and the COCO
    scores out with a warning naming it, and making the env with ``reward="cider"`` raises.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` or ``"test"`` (see below) |
    | ``source`` | ``"hub"`` | ``"hub"``, ``"local"`` (``data_dir``) or ``"synthetic"`` (generated offline by lm-gym) |
    | ``data_dir`` | ``None`` | for ``source="local"``: a directory of split files, or one such file (see below) |
    | ``reward`` | ``"meteor"`` | ``"meteor"``, ``"rouge1"``, ``"rouge2"``, ``"rougeL"`` or ``"cider"`` |
    | ``repeat_penalty`` | ``1.0`` | subtracted when the sentence repeats the prompt (0 turns the shaping off) |
    | ``coco_pipeline`` | ``"python"`` | the COCO evaluation of ``task_corpus_metrics`` (see below) |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a ``transformers`` tokenizer, hub name or path; ``None``: see below |
    | ``max_prompt_length`` | ``20`` | token level: prompt tokens kept (the last ones) |
    | ``max_new_tokens`` | ``20`` | token level: sentence length limit |
    | ``min_new_tokens`` | ``5`` | token level: EOS masked before this many tokens |
    | ``early_eos_penalty`` | ``1.0`` | token level: the penalty for playing EOS before ``min_new_tokens`` anyway |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    The released test split hides its references: ``source="hub"`` and ``"local"`` refuse
    ``split="test"``. ``source="hub"`` reads ``allenai/common_gen`` via ``datasets``. For
    ``source="local"``, ``data_dir`` is a directory with the official ``commongen.<split>.jsonl``
    (``concept_set``, ``scene``) or hub-schema files (``concepts``, ``target``), or one such file.
    ``coco_pipeline`` is ``"python"`` (no Java: the same numbers on every machine), ``"java"``
    (official, adds METEOR 1.5; its jar takes about 20 s to start, once per process), ``"auto"``
    (java when a ``java`` is installed) or ``"off"``. At token level, ``tokenizer=None`` trains a
    byte-level BPE on the source's train split (cached).

    Offline, ``source="synthetic"`` (``CommonGenEnv.offline_kwargs``) builds everything with no
    network; the default ``source="hub"`` fails at once with ``DataUnavailableError`` naming
    that switch when the hub is unreachable. Bad arguments raise ``ConfigurationError``.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/CommonGen-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    shares the data between N copies and scores all N sentences with one batched call.

    ## Version History
    * v0: initial version. RL4LMs' prompt, METEOR reward and repeat-penalty shaping; CIDEr-D
      with split-level document frequencies; references of the hub release grouped per set.
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 20, "max_new_tokens": 20}
    generation_defaults: ClassVar[dict[str, int]] = {"min_new_tokens": 5}
    offline_kwargs: ClassVar[dict[str, Any]] = {"source": "synthetic"}

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return: the ``reward`` metric (METEOR, ROUGE in [0, 1]; CIDEr-D >= 0) minus ``repeat_penalty``
        when the sentence repeats the prompt; METEOR, ROUGE, coverage and ``repeats_prompt`` in [0, 1];
        ``num_words``: a count."""
        from lm_gym.metrics import meteor, rouge
        from lm_gym.metrics.cider import RANGE as CIDER
        from lm_gym.metrics.coverage import RANGE as COVERAGE

        reward = argument(cls, kwargs, "reward")
        penalty = float(argument(cls, kwargs, "repeat_penalty"))
        high = CIDER.high if reward == "cider" else UNIT.high
        scores = dict.fromkeys(("rouge1", "rouge2", "rougeL"), rouge.RANGE)
        return {
            "return": Range(-penalty, high),
            "meteor": meteor.RANGE,
            **scores,
            "coverage": COVERAGE,
            "repeats_prompt": UNIT,
            "num_words": COUNT,
        }

    def __init__(
        self,
        split: str = "train",
        source: str = "hub",
        data_dir: str | Path | None = None,
        reward: str = "meteor",
        repeat_penalty: float = 1.0,
        coco_pipeline: str = "python",
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        check_choice("reward", reward, REWARDS)
        self.repeat_penalty = check_number("repeat_penalty", repeat_penalty, minimum=0)
        self.coco_pipeline = check_choice("coco_pipeline", coco_pipeline, COCO_PIPELINES)
        if reward == "cider":
            require_extra("nlg", "lm_gym/CommonGen-v0's reward='cider' (CIDEr-D)", "pycocoevalcap")
        self.split, self.source, self.data_dir = split, source, data_dir
        concept_sets = load_concept_sets(source, split, data_dir)
        self.samples = [
            Sample(concept_prompt(concepts), scenes, {"concepts": list(concepts), "index": index, "source": source})
            for index, (concepts, scenes) in enumerate(concept_sets)
        ]
        references = [sample.references for sample in self.samples]
        self.reward_fn = RepeatPenalizedReward(ReferenceReward(reward, references), self.repeat_penalty)

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        train = load_concept_sets(self.source, "train", self.data_dir)
        texts = [concept_prompt(concepts) for concepts, _ in train] + [scene for _, scenes in train for scene in scenes]
        return keyed_corpus(f"commongen-{self.source}", texts)

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, Any]:
        from lm_gym import metrics

        references = [list(sample.references)]
        repeats = float(repeats_prompt(sample.prompt, utterance))
        if self.reward_fn.reward.metric == "meteor" and not repeats:  # then the reward is METEOR itself
            meteor = score
        else:
            meteor = float(metrics.meteor_scores([utterance], references)[0])
        results = {"meteor": meteor}
        results.update(
            metrics.corpus_rouge([utterance], references, ("rouge1", "rouge2", "rougeL"))
        )  # one sample: its scores
        results["coverage"] = float(metrics.concept_coverage([utterance], [sample.meta["concepts"]])[0])
        results["repeats_prompt"] = repeats
        results["num_words"] = len(utterance.split())
        return results

    def task_corpus_metrics(self, episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Corpus BLEU (nltk), SacreBLEU, CIDEr-D and, unless ``coco_pipeline="off"``, the COCO evaluation."""
        from lm_gym import metrics
        from lm_gym.metrics.coco import coco_evaluate

        require_extra("nlg", "lm_gym/CommonGen-v0's evaluation (corpus metric sacrebleu)", "sacrebleu")
        _, utterances, references = episode_texts(episodes)
        results = metrics.bleu_scores(utterances, references)
        try:
            require_extra("nlg", "lm_gym/CommonGen-v0's corpus metrics cider and coco_*", "pycocoevalcap")
        except DataUnavailableError as error:  # its jars make it 104 MB: a machine may go without it
            warnings.warn(f"{error}; they are left out of this evaluation", stacklevel=2)
            return results
        results["cider"] = metrics.cider(utterances, references)
        if self.coco_pipeline != "off":
            results.update(coco_evaluate(utterances, references, self.coco_pipeline).metrics())
        return results
