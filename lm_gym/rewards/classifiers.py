"""Text classifiers that rewards are built on, one interface: ``probabilities(texts) -> (n, classes)``.

* :class:`TransformersClassifier` — any ``transformers`` sequence classifier, by hub name or
  local directory (RL4LMs used ``lvwerra/distilbert-imdb`` for IMDB and
  ``rajkumarrrk/roberta-daily-dialog-intent-classifier`` for DailyDialog).
* :class:`NgramClassifier` — a bag-of-n-grams linear classifier (fastText-style: hashed word
  unigrams and bigrams, mean-pooled embeddings) that lm-gym trains on a task's labelled
  training text and caches (:func:`trained_ngram_classifier`), so rewards work with no hub.
  Training (10 epochs of sparse Adagrad) takes seconds on the synthetic corpora and about
  35 s on 20,000 real IMDB reviews on 2 CPU cores, once: a progress bar shows it in a
  terminal, and the model is cached under ``$LM_GYM_CACHE/reward_models``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from lm_gym.core.cache import cached_directory
from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.core.hub import require_hub
from lm_gym.core.validation import resolve_device


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
        try:
            local = Path(model_name_or_path).exists()
        except OSError:  # a name too long for a path
            local = False
        if not local:
            require_hub(f"the {what} {model_name_or_path!r:.200}", offline_hint)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
            model = AutoModelForSequenceClassification.from_pretrained(model_name_or_path)
        except (OSError, ValueError) as error:  # ValueError: a directory without a model
            raise DataUnavailableError(
                f"could not load the {what} {model_name_or_path!r:.200} ({type(error).__name__}: {error}). {offline_hint}"
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


def ngram_ids(text: str, num_buckets: int) -> list[int]:
    """Hashed ids of the lower-cased word unigrams and bigrams of ``text`` (stable across runs)."""
    words = _WORD.findall(text.lower())
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    return [zlib.crc32(g.encode()) % num_buckets for g in grams]


def pack_bags(bags: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    offsets = torch.tensor(np.cumsum([0] + [len(bag) for bag in bags[:-1]]), dtype=torch.long)
    flat = torch.tensor([i for bag in bags for i in bag], dtype=torch.long)
    return flat, offsets


def gather_bags(
    all_ids: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor, batch: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The packed ``(flat_ids, offsets)`` of bags ``batch`` out of all bags packed by :func:`pack_bags`."""
    batch_lengths = lengths[batch]
    offsets = torch.cumsum(batch_lengths, 0) - batch_lengths
    within = torch.arange(int(batch_lengths.sum())) - torch.repeat_interleave(offsets, batch_lengths)
    return all_ids[torch.repeat_interleave(starts[batch], batch_lengths) + within], offsets


class NgramClassifier(nn.Module):
    """Linear classifier over mean-pooled hashed n-gram embeddings (one logit per class)."""

    def __init__(self, num_classes: int = 2, num_buckets: int = 2**18):
        super().__init__()
        self.num_classes, self.num_buckets = num_classes, num_buckets
        self.weights = nn.EmbeddingBag(num_buckets, num_classes, mode="mean", sparse=True)  # sparse: fast Adagrad updates
        self.bias = nn.Parameter(torch.zeros(num_classes))
        nn.init.zeros_(self.weights.weight)

    def encode(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(flat_ids, offsets)``: the ``EmbeddingBag`` input of ``texts``."""
        return pack_bags([ngram_ids(text, self.num_buckets) for text in texts])

    def forward(self, flat_ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.weights(flat_ids, offsets) + self.bias

    @torch.inference_mode()
    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Class probabilities per text, ``(len(texts), num_classes)``; a text with no words scores ``softmax(bias)``."""
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
    """Train a :class:`NgramClassifier` on ``texts`` with labels in ``[0, num_classes)``."""
    if len(texts) != len(labels) or not texts:
        raise ConfigurationError(f"need as many labels as texts, and at least one; got {len(texts)} texts, {len(labels)} labels")
    targets = torch.tensor(list(labels), dtype=torch.long)
    if targets.min() < 0 or targets.max() >= num_classes:
        raise ConfigurationError(f"labels must lie in [0, {num_classes}), got {int(targets.min())}..{int(targets.max())}")
    generator = torch.Generator().manual_seed(seed)
    model = NgramClassifier(num_classes, num_buckets)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=learning_rate)
    all_ids, starts = pack_bags([ngram_ids(text, num_buckets) for text in texts])  # hashed once, not every epoch
    lengths = torch.diff(starts, append=torch.tensor([len(all_ids)]))
    steps = epochs * math.ceil(len(texts) / batch_size)
    progress = tqdm(total=steps, desc=description, unit="batch", disable=None)  # terminals only
    for _ in range(epochs):
        order = torch.randperm(len(texts), generator=generator)
        for start in range(0, len(texts), batch_size):
            progress.update()
            batch = order[start : start + batch_size]
            logits = model(*gather_bags(all_ids, starts, lengths, batch))
            loss = nn.functional.cross_entropy(logits, targets[batch])
            optimizer.zero_grad()
            loss.backward()
            with warnings.catch_warnings():  # torch warns once that it skips sparse-tensor checks
                warnings.filterwarnings("ignore", message="Sparse invariant checks")
                optimizer.step()
    progress.close()
    return model.eval()


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

        model = train_ngram_classifier(texts, labels, num_classes, num_buckets, description=f"training the offline {name} classifier")
        save_model(model, str(directory / "model.safetensors"))
        accuracy = float(np.mean(model.probabilities(texts).argmax(-1) == np.asarray(labels)))
        config = {"num_classes": num_classes, "num_buckets": num_buckets, "train_examples": len(texts), "train_accuracy": accuracy}
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
