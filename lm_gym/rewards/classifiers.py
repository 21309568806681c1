"""Text classifiers that rewards are built on, one interface: ``probabilities(texts) -> (n, classes)``.

* :class:`TransformersClassifier` — any ``transformers`` sequence classifier, by hub name or
  local directory (RL4LMs used ``lvwerra/distilbert-imdb`` for IMDB and
  ``rajkumarrrk/roberta-daily-dialog-intent-classifier`` for DailyDialog).
* :class:`NgramClassifier` — a bag-of-n-grams linear classifier (fastText-style: hashed word
  unigrams and bigrams, mean-pooled embeddings) that lm-gym trains on a task's labelled
  training text and caches (:func:`trained_ngram_classifier`), so rewards work with no hub.
  Training (10 epochs of minibatch Adagrad, in numpy: :mod:`lm_gym.rewards.ngram_adagrad`)
  takes under a second on the synthetic corpora, about 5 s on DailyDialog's 87,000 training
  utterances and about 10 s on 20,000 real IMDB reviews on 2 CPU cores, once: a progress bar
  shows it in a terminal, ``logging`` lines otherwise, and the model is cached under
  ``$LM_GYM_CACHE/reward_models``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from lm_gym.core.cache import cached_directory
from lm_gym.core.errors import ConfigurationError, DataUnavailableError, safe_repr
from lm_gym.core.hub import require_local_or_hub
from lm_gym.core.validation import resolve_device
from lm_gym.rewards.ngram_adagrad import fit_adagrad

logger = logging.getLogger(__name__)


class TransformersClassifier:
    """Class probabilities from a ``transformers`` sequence classifier (hub name or local path).

    Args:
        model_name_or_path: e.g. ``"lvwerra/distilbert-imdb"``.
        what: what the classifier is for, for error messages (``"sentiment classifier"``).
        offline_hint: how to do without the hub, appended to loading errors.
        device: ``"cpu"``, ``"cuda"``, ...; default CUDA when available.
        batch_size: texts per forward pass.
        max_length: input truncation, in tokens.
    """

    def __init__(
        self,
        model_name_or_path: str,
        what: str,
        offline_hint: str,
        device: str | None = None,
        batch_size: int = 64,
        max_length: int = 512,
    ):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.device = resolve_device("reward_device", device)
        require_local_or_hub(model_name_or_path, f"the {what} {safe_repr(model_name_or_path)}", offline_hint)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
            model = AutoModelForSequenceClassification.from_pretrained(model_name_or_path)
        except (OSError, ValueError) as error:  # ValueError: a directory without a model
            raise DataUnavailableError(
                f"could not load the {what} {model_name_or_path!r:.200} ({type(error).__name__}: {error}). "
                f"{offline_hint}"
            ) from error
        self.model = model.to(self.device).eval()
        self.labels = {int(i): str(name) for i, name in model.config.id2label.items()}
        self.batch_size = batch_size
        self.max_length = max_length

    @torch.inference_mode()
    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                list(texts[start : start + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            rows.append(torch.softmax(self.model(**batch).logits.float(), dim=-1).cpu().double().numpy())
        return np.concatenate(rows) if rows else np.zeros((0, len(self.labels)))


# ---- the offline classifier -------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9']+|[!?]")


def hashed_ngrams(texts: Sequence[str], num_buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """The hashed ids of the lower-cased word unigrams and bigrams of ``texts`` (stable across runs).

    An n-gram's id is the CRC-32 of its text (bigram words joined by a space) modulo
    ``num_buckets``. Returns ``(ids, lengths)``: every text's ids, concatenated (each word's
    unigram, then its bigram with the next word), and how many belong to each text. The CRC-32s
    are computed once per distinct word and word pair, not per occurrence.
    """
    vocabulary: dict[str, int] = {}
    word_indices: list[int] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        words = _WORD.findall(text.lower())
        counts[i] = len(words)
        word_indices += [vocabulary.setdefault(word, len(vocabulary)) for word in words]
    indices = np.array(word_indices, dtype=np.int64)
    encoded = [word.encode() for word in vocabulary]
    bigram_starts = np.ones(len(indices), dtype=bool)
    bigram_starts[np.cumsum(counts)[counts > 0] - 1] = False  # a text's last word starts no bigram
    bigram_starts = np.flatnonzero(bigram_starts)
    pairs, pair_of_bigram = np.unique(
        indices[bigram_starts] * len(encoded) + indices[bigram_starts + 1], return_inverse=True
    )
    spaced = [zlib.crc32(word + b" ") for word in encoded]  # CRC-32("a b") continues CRC-32("a ") over "b"
    firsts, seconds = divmod(pairs, max(len(encoded), 1))
    pair_hashes = [
        zlib.crc32(encoded[second], spaced[first]) for first, second in zip(firsts.tolist(), seconds.tolist())
    ]
    grams = np.empty(2 * len(indices), dtype=np.int64)
    grams[0::2] = np.array([zlib.crc32(word) for word in encoded], dtype=np.int64)[indices]
    grams[2 * bigram_starts + 1] = np.array(pair_hashes, dtype=np.int64)[pair_of_bigram]
    keep = np.zeros(len(grams), dtype=bool)
    keep[0::2] = True
    keep[2 * bigram_starts + 1] = True
    return grams[keep] % num_buckets, np.maximum(2 * counts - 1, 0)


def ngram_ids(text: str, num_buckets: int) -> list[int]:
    """The hashed ids of the word unigrams and bigrams of one text (see :func:`hashed_ngrams`)."""
    return hashed_ngrams([text], num_buckets)[0].tolist()


class NgramClassifier(nn.Module):
    """Linear classifier over mean-pooled hashed n-gram embeddings (one logit per class)."""

    def __init__(self, num_classes: int = 2, num_buckets: int = 2**18):
        super().__init__()
        self.num_classes, self.num_buckets = num_classes, num_buckets
        self.weights = nn.EmbeddingBag(num_buckets, num_classes, mode="mean")
        self.bias = nn.Parameter(torch.zeros(num_classes))
        nn.init.zeros_(self.weights.weight)

    def encode(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(flat_ids, offsets)``: the ``EmbeddingBag`` input of ``texts``."""
        ids, lengths = hashed_ngrams(texts, self.num_buckets)
        return torch.from_numpy(ids), torch.from_numpy(np.cumsum(lengths) - lengths)

    def forward(self, flat_ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.weights(flat_ids, offsets) + self.bias

    @torch.inference_mode()
    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Class probabilities per text, ``(len(texts), num_classes)``.

        A text with no words scores ``softmax(bias)``.
        """
        if not texts:
            return np.zeros((0, self.num_classes))
        return torch.softmax(self(*self.encode(texts)), dim=-1).double().numpy()


def train_ngram_classifier(
    texts: Sequence[str],
    labels: Sequence[int],
    num_classes: int = 2,
    num_buckets: int = 2**18,
    epochs: int = 10,
    batch_size: int = 64,
    learning_rate: float = 0.5,
    seed: int = 0,
    description: str = "training an offline classifier",
) -> NgramClassifier:
    """Train a :class:`NgramClassifier` on ``texts`` with labels in ``[0, num_classes)``.

    Progress: a bar in a terminal; otherwise ``logging`` lines at INFO (loggers under
    ``lm_gym.rewards``) when hashing is done, after each epoch and at the end.
    """
    options = {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate, "seed": seed}
    return _train(texts, labels, num_classes, num_buckets, description, **options)[0]


def _train(
    texts: Sequence[str], labels: Sequence[int], num_classes: int, num_buckets: int, description: str, **options: Any
) -> tuple[NgramClassifier, float]:
    """:func:`train_ngram_classifier` with :func:`fit_adagrad`'s ``options``; also the accuracy on
    the training texts, from their hashed n-grams (hashing them again took seconds on IMDB)."""
    if len(texts) != len(labels) or not texts:
        raise ConfigurationError(
            f"need as many labels as texts, and at least one; got {len(texts)} texts, {len(labels)} labels"
        )
    targets = np.asarray(labels, dtype=np.int64)
    if targets.min() < 0 or targets.max() >= num_classes:
        raise ConfigurationError(
            f"labels must lie in [0, {num_classes}), got {int(targets.min())}..{int(targets.max())}"
        )
    started = time.perf_counter()
    ids, lengths = hashed_ngrams(texts, num_buckets)
    logger.info(
        "%s: %d texts, %d n-grams hashed in %.1f s", description, len(texts), len(ids), time.perf_counter() - started
    )
    weights, bias = fit_adagrad(ids, lengths, targets, num_classes, num_buckets, description, **options)
    model = NgramClassifier(num_classes, num_buckets)
    with torch.no_grad():
        model.weights.weight.copy_(torch.from_numpy(weights))
        model.bias.copy_(torch.from_numpy(bias))
        predicted = model(torch.from_numpy(ids), torch.from_numpy(np.cumsum(lengths) - lengths)).argmax(-1).numpy()
    accuracy = float(np.mean(predicted == targets))
    logger.info("%s: done in %.1f s, training accuracy %.3f", description, time.perf_counter() - started, accuracy)
    return model.eval(), accuracy


def trained_ngram_classifier(
    texts: Sequence[str], labels: Sequence[int], name: str, num_classes: int = 2, num_buckets: int = 2**18
) -> NgramClassifier:
    """Train on ``texts``/``labels`` once and cache under ``$LM_GYM_CACHE/reward_models``.

    The cache key is ``name`` plus a hash of the data, so other data trains a new model.
    """
    labels = [int(label) for label in labels]
    payload = [list(texts), labels, num_buckets] + ([num_classes] if num_classes != 2 else [])
    digest = hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]

    def build(directory: Path) -> None:
        from safetensors.torch import save_model

        model, accuracy = _train(texts, labels, num_classes, num_buckets, f"training the offline {name} classifier")
        save_model(model, str(directory / "model.safetensors"))
        config = {
            "num_classes": num_classes,
            "num_buckets": num_buckets,
            "train_examples": len(texts),
            "train_accuracy": accuracy,
        }
        (directory / "config.json").write_text(json.dumps(config, indent=2))

    return load_ngram_classifier(cached_directory("reward_models", f"{name}-{digest}", build))


def load_ngram_classifier(directory: str | Path) -> NgramClassifier:
    """Load a classifier saved by :func:`trained_ngram_classifier`."""
    from safetensors.torch import load_model

    directory = Path(directory)
    config = json.loads((directory / "config.json").read_text())
    model = NgramClassifier(config.get("num_classes", 2), config["num_buckets"])
    load_model(model, str(directory / "model.safetensors"))
    return model.eval()
