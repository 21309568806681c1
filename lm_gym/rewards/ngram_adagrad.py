"""Minibatch Adagrad for the offline n-gram classifier, in numpy.

The model: ``softmax(mean of a text's rows of weights + bias)``, one weights row per hashed
n-gram (:class:`lm_gym.rewards.classifiers.NgramClassifier`). The updates are those of
``torch.optim.Adagrad`` on the model's sparse gradients of the mean cross-entropy, written as a
few numpy array operations over each batch's n-grams: no autograd and no thread pool, whose
per-operation cost (milliseconds when the two cores of a busy machine are shared) made
training on 87,000 DailyDialog utterances take minutes.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

EPSILON = 1e-10  # torch.optim.Adagrad's default


def fit_adagrad(
    ids: np.ndarray,
    lengths: np.ndarray,
    targets: np.ndarray,
    num_classes: int,
    num_buckets: int,
    description: str,
    epochs: int = 10,
    batch_size: int = 64,
    learning_rate: float = 0.5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(weights, bias)`` as float32, ``(num_buckets, num_classes)`` and ``(num_classes,)``, from zeros.

    ``ids`` are all texts' n-gram ids concatenated, ``lengths`` how many belong to each text,
    ``targets`` the class of each text. Progress: a bar in a terminal, else a log line per epoch.
    """
    # class-major (classes, buckets) arrays; numpy's take/put, not fancy indexing,
    # which is many times slower on 2-D arrays
    weights, bias = np.zeros((num_classes, num_buckets)), np.zeros(num_classes)
    weight_squares, bias_squares = np.zeros_like(weights), np.zeros_like(bias)  # Adagrad's sums of squared gradients
    class_offsets = np.arange(num_classes)[:, None] * num_buckets  # flat index of (class, id) = class offset + id
    slots = np.zeros(num_buckets, dtype=np.int64)  # scratch: each of a batch's ids' column in its gradient
    scales = 1.0 / np.maximum(lengths, 1)  # mean pooling; a text without n-grams has only the bias
    starts = np.cumsum(lengths) - lengths
    rng = np.random.default_rng(seed)
    steps_per_epoch = -(-len(targets) // batch_size)
    progress = tqdm(total=epochs * steps_per_epoch, desc=description, unit="batch", disable=None)  # terminals only
    started = time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(targets))
        # the epoch's n-grams in batch order, so that a batch's n-grams are one slice and each text's a run in it
        epoch_lengths = lengths[order]
        bounds = np.concatenate([[0], np.cumsum(epoch_lengths)])
        epoch_ids = ids[np.repeat(starts[order] - bounds[:-1], epoch_lengths) + np.arange(bounds[-1])]
        epoch_texts = np.repeat(np.arange(len(order)), epoch_lengths)  # each n-gram's text, by position in order
        loss = 0.0
        for first in range(0, len(order), batch_size):
            last = min(first + batch_size, len(order))
            batch_ids = epoch_ids[bounds[first] : bounds[last]]
            texts = epoch_texts[bounds[first] : bounds[last]] - first
            batch_scales, batch_targets = scales[order[first:last]], targets[order[first:last]]
            rows = np.arange(last - first)
            nonempty = epoch_lengths[first:last] > 0
            sums = np.zeros((num_classes, len(rows)))
            if nonempty.any():
                sums[:, nonempty] = np.add.reduceat(
                    np.take(weights, batch_ids, axis=1), bounds[first:last][nonempty] - bounds[first], axis=1
                )
            logits = sums.T * batch_scales[:, None] + bias
            logits -= logits.max(axis=1, keepdims=True)
            probabilities = np.exp(logits)
            probabilities /= probabilities.sum(axis=1, keepdims=True)
            loss -= np.log(probabilities[rows, batch_targets]).sum()
            gradient = probabilities  # of the mean cross-entropy with respect to the logits, in place
            gradient[rows, batch_targets] -= 1.0
            gradient /= len(rows)
            # sum the gradients of repeated ids; the distinct ids found in O(n-grams) through slots, not by sorting
            positions = np.arange(len(batch_ids))
            slots[batch_ids] = positions  # a repeated id keeps one of its positions
            unique_ids = batch_ids[slots[batch_ids] == positions]
            slots[unique_ids] = np.arange(len(unique_ids))
            inverse = slots[batch_ids]
            ngram_gradients = np.take((gradient * batch_scales[:, None]).T, texts, axis=1)
            weight_gradient = np.stack(
                [np.bincount(inverse, weights=row, minlength=len(unique_ids)) for row in ngram_gradients]
            )
            flat = unique_ids + class_offsets
            squares = np.take(weight_squares, flat) + weight_gradient**2
            np.put(weight_squares, flat, squares)
            np.put(
                weights, flat, np.take(weights, flat) - learning_rate * weight_gradient / (np.sqrt(squares) + EPSILON)
            )
            bias_gradient = gradient.sum(axis=0)
            bias_squares += bias_gradient**2
            bias -= learning_rate * bias_gradient / (np.sqrt(bias_squares) + EPSILON)
            progress.update()
        if progress.disable:
            logger.info(
                "%s: epoch %d/%d (%d%%), mean loss %.4f, %.1f s",
                description,
                epoch,
                epochs,
                100 * epoch // epochs,
                loss / len(order),
                time.perf_counter() - started,
            )
    progress.close()
    return weights.T.astype(np.float32), bias.astype(np.float32)
