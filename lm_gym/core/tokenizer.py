"""Tokenizers: a hub or local one by name, or one trained offline on a task's own text.

Offline, ``TokenLevel`` envs use a byte-level BPE tokenizer trained with Hugging Face
``tokenizers`` on the task's training text (:meth:`TextEnv.tokenizer_corpus`) and cached
under ``$LM_GYM_CACHE/tokenizers/<key>``. :func:`word_tokenizer` builds a word-level one
from a word list (the speed benchmark's standard workload). It is saved in the ``transformers`` format, so
``AutoTokenizer.from_pretrained(<that directory>)`` loads it too, and baselines can save it
beside their checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lm_gym.core.cache import cached_directory
from lm_gym.core.errors import ConfigurationError, DataUnavailableError, safe_repr
from lm_gym.core.hub import require_local_or_hub

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
UNK_TOKEN = "<unk>"
#: The most characters a BPE tokenizer trains on (about 6 s on 2 cores): of a bigger corpus, an
#: evenly spaced subset of its texts. CNN/DailyMail's 1.3 GB took minutes; 4,096 merges need far less.
MAX_TRAINING_CHARS = 30_000_000


def truncate_prompt(ids: Sequence[int], max_length: int, side: str = "left") -> list[int]:
    """A prompt's tokens cut to ``max_length``, the rule of every token-level env and baseline:
    ``side="left"`` drops the first tokens (keeps the end of a dialogue), ``"right"`` the last
    (CNN/DailyMail keeps the article's start)."""
    if len(ids) <= max_length:
        return list(ids)
    return list(ids[-max_length:]) if side == "left" else list(ids[:max_length])


#: The classes a tokenizer saved from a bare ``tokenizers`` tokenizer names (lm-gym's own, trained on a task's text).
GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(name_or_path: str) -> PreTrainedTokenizerBase:
    """``AutoTokenizer.from_pretrained(name_or_path)``, given a pad token if it has none.

    A local folder whose tokenizer is a bare ``tokenizers`` one (lm-gym's own, saved beside a model) loads
    as it was saved: transformers 5's ``AutoTokenizer`` would otherwise take the class of the folder's model
    config (a ``qwen2`` config gives a ``Qwen2Tokenizer``, which splits lm-gym's word-level and byte-level
    tokenizers' text differently)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    offline_hint = (
        "Pass a local directory, or tokenizer=None to use the tokenizer lm-gym trains on the task's own text."
    )
    require_local_or_hub(name_or_path, f"the tokenizer {safe_repr(name_or_path)}", offline_hint)
    loader = (
        PreTrainedTokenizerFast if saved_tokenizer_class(name_or_path) in GENERIC_TOKENIZER_CLASSES else AutoTokenizer
    )
    try:
        tokenizer = loader.from_pretrained(name_or_path)
    except (OSError, ValueError) as error:
        raise DataUnavailableError(f"could not load tokenizer {name_or_path!r} ({error}). {offline_hint}") from error
    if tokenizer.eos_token_id is None:
        raise ConfigurationError(
            f"tokenizer {name_or_path!r} has no EOS token; token-level envs need one to end an utterance"
        )
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def saved_tokenizer_class(name_or_path: str) -> str | None:
    """The ``tokenizer_class`` a local folder's ``tokenizer_config.json`` names (``None``: no such folder or file)."""
    config = Path(name_or_path) / "tokenizer_config.json"
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        return None


class StridedCorpus(list):
    """The texts a tokenizer trains on, already taken from a task's corpus (every ``stride``-th text,
    :func:`training_texts`): what a served task sends (``lm_gym.serve``), so that
    :func:`train_tokenizer` trains on it as it is and caches it as it would the whole corpus."""

    def __init__(self, texts: Iterable[str], stride: int):
        super().__init__(texts)
        self.stride = int(stride)


def training_texts(corpus: Iterable[str]) -> StridedCorpus:
    """The texts of ``corpus`` a tokenizer trains on: every ``n``-th, ``n`` = characters /
    :data:`MAX_TRAINING_CHARS` rounded up (all of them when the corpus is small enough)."""
    corpus = list(corpus)
    stride = max(1, -(-sum(map(len, corpus)) // MAX_TRAINING_CHARS))  # ceil(characters / MAX_TRAINING_CHARS)
    return StridedCorpus(corpus[::stride], stride)


def train_tokenizer(corpus: Iterable[str], key: str, vocab_size: int = 4096) -> PreTrainedTokenizerBase:
    """A byte-level BPE tokenizer trained on ``corpus``, cached under ``key``.

    ``key`` must change whenever the corpus does (tasks derive it from their data).
    Special tokens: ``<|endoftext|>`` (BOS and EOS) and ``<|pad|>``. A corpus of more than
    :data:`MAX_TRAINING_CHARS` characters trains on every ``n``-th text, ``n`` = characters /
    ``MAX_TRAINING_CHARS`` rounded up, and is cached under ``<key>-bpe<vocab_size>-every<n>``
    (:func:`training_texts`). A :class:`StridedCorpus` (those texts, taken already) trains as it is.
    """
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 300:
        raise ConfigurationError(
            f"vocab_size must be at least 300 (256 bytes + merges + special tokens), got {vocab_size}"
        )
    texts = corpus if isinstance(corpus, StridedCorpus) else training_texts(corpus)
    stride = texts.stride

    def build(directory: Path) -> None:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[EOS_TOKEN, PAD_TOKEN],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train_from_iterator(texts, trainer=trainer)
        wrapped = PreTrainedTokenizerFast(
            tokenizer_object=tokenizer, bos_token=EOS_TOKEN, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN
        )
        wrapped.save_pretrained(directory)

    directory = cached_directory(
        "tokenizers", f"{key}-bpe{vocab_size}" + (f"-every{stride}" if stride > 1 else ""), build
    )
    return PreTrainedTokenizerFast.from_pretrained(directory)


def word_tokenizer(words: Iterable[str], key: str) -> PreTrainedTokenizerBase:
    """A word-level tokenizer: ids 0-2 are ``<|endoftext|>`` (BOS and EOS), ``<|pad|>`` and
    ``<unk>``, then one id per word in the order given. Text splits on whitespace and decodes
    with single spaces, so a text of known words round-trips. Cached under ``key``."""
    from transformers import PreTrainedTokenizerFast

    vocabulary = [EOS_TOKEN, PAD_TOKEN, UNK_TOKEN] + list(dict.fromkeys(words))

    def build(directory: Path) -> None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(vocabulary)}, unk_token=UNK_TOKEN))
        tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        wrapped = PreTrainedTokenizerFast(
            tokenizer_object=tokenizer,
            bos_token=EOS_TOKEN,
            eos_token=EOS_TOKEN,
            pad_token=PAD_TOKEN,
            unk_token=UNK_TOKEN,
        )
        wrapped.save_pretrained(directory)

    directory = cached_directory("tokenizers", f"{key}-word{len(vocabulary)}", build)
    return PreTrainedTokenizerFast.from_pretrained(directory)
