"""Perplexity of texts under a ``transformers`` causal language model.

Each text is scored after a start token, the tokenizer's BOS token (else its EOS token, the
document separator of GPT-2-style models), so that its first token is predicted too; a
tokenizer with neither has its first text token unscored (it only serves as context).
With ``prefixes``, the context is start token + prefix, and only the text's tokens count.
Prefix and text are tokenized separately, so a text's tokens do not depend on its prefix.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from lm_gym.core.errors import ConfigurationError, DataUnavailableError, safe_repr
from lm_gym.core.hub import require_local_or_hub
from lm_gym.core.ranges import Range
from lm_gym.core.validation import check_device, check_int
from lm_gym.metrics.inputs import check_texts

#: a perplexity is at least 1
RANGE = Range(1.0)


def perplexity(
    texts: Sequence[str],
    model: Any,
    tokenizer: Any,
    *,
    prefixes: Sequence[str] | None = None,
    batch_size: int = 16,
    device: str | None = None,
) -> dict[str, Any]:
    """Perplexity of ``texts`` (optionally each conditioned on its prefix) under ``model``.

    Args:
        texts: the texts to score.
        model: a causal LM, or a name/path for ``AutoModelForCausalLM.from_pretrained``.
        tokenizer: its tokenizer, or a name/path for ``AutoTokenizer.from_pretrained``;
            ``None`` loads the one at ``model`` when that is a name/path.
        prefixes: one context per text, scored with but not counted.
        batch_size: texts per forward pass.
        device: where to run (the model is moved there); default where the model is.

    Returns:
        ``perplexity``: exp(total negative log-likelihood / total scored tokens);
        ``mean_perplexity``: the mean of the per-text perplexities;
        ``perplexities``: the per-text perplexities (``np.ndarray``).

    A sequence longer than the model's positions (``n_positions`` / ``max_position_embeddings``)
    keeps the last tokens of its context (at least one) and, if still too long, the text's first tokens.
    """
    texts = check_texts("texts", texts)
    if prefixes is not None:
        prefixes = check_texts("prefixes", prefixes)
        if len(prefixes) != len(texts):
            raise ConfigurationError(
                f"prefixes has {len(prefixes)} items but texts has {len(texts)}; they must be equally long"
            )
    batch_size = check_int("batch_size", batch_size, minimum=1)
    device = check_device("device", device)
    model, tokenizer = _loaded(model, tokenizer)
    if device is not None:
        model.to(device)

    sequences, first_scored = _encode(texts, prefixes, tokenizer, _max_positions(model))
    was_training = model.training
    model.eval()  # no dropout while scoring
    try:
        nll, counts = _negative_log_likelihoods(model, sequences, first_scored, batch_size, tokenizer.pad_token_id or 0)
    finally:
        model.train(was_training)
    perplexities = np.exp(nll / counts)
    return {
        "perplexity": float(np.exp(nll.sum() / counts.sum())),
        "mean_perplexity": float(perplexities.mean()),
        "perplexities": perplexities,
    }


def _loaded(model: Any, tokenizer: Any) -> tuple[Any, Any]:
    """``model`` and ``tokenizer``, loaded with ``from_pretrained`` where they are names or paths."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if tokenizer is None:
        if not isinstance(model, (str, os.PathLike)):
            raise ConfigurationError("tokenizer must be given (a tokenizer, name or path) when model is a model object")
        tokenizer = model
    if isinstance(model, (str, os.PathLike)):
        model = _from_pretrained(AutoModelForCausalLM, "language model", model)
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = _from_pretrained(AutoTokenizer, "tokenizer", tokenizer)
    return model, tokenizer


def _from_pretrained(auto_class: Any, what: str, name_or_path: str | os.PathLike) -> Any:
    hint = "Pass a local directory or an already loaded object."
    require_local_or_hub(name_or_path, f"the {what} {safe_repr(str(name_or_path))}", hint)
    try:
        return auto_class.from_pretrained(name_or_path)
    except (OSError, ValueError) as error:
        raise DataUnavailableError(f"could not load the {what} {str(name_or_path)!r} ({error}). {hint}") from error


def _max_positions(model: Any) -> int | None:
    config = getattr(model, "config", None)
    return getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)


def _encode(
    texts: list[str], prefixes: list[str] | None, tokenizer: Any, max_length: int | None
) -> tuple[list[list[int]], list[int]]:
    """Token ids of start token + prefix + text (fitted into ``max_length``).

    Returned with the position of each sequence's first scored token.
    """
    start_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    start = [] if start_id is None else [start_id]
    text_ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    prefix_ids = tokenizer(prefixes, add_special_tokens=False)["input_ids"] if prefixes else [[] for _ in texts]
    sequences, first_scored = [], []
    for i, (prefix, text) in enumerate(zip(prefix_ids, text_ids)):
        context = start + prefix
        if max_length is not None and len(context) + len(text) > max_length:
            context = context[-max(1, max_length - len(text)) :] if context else context
            text = text[: max_length - len(context)]
        first = max(len(context), 1)  # a token needs one before it to be predicted
        if len(context) + len(text) <= first:
            raise ConfigurationError(
                f"texts[{i}] has no token to score: it is {len(text)} token(s) long after {len(context)} of context"
            )
        sequences.append(context + text)
        first_scored.append(first)
    return sequences, first_scored


def _negative_log_likelihoods(
    model: Any, sequences: list[list[int]], first_scored: list[int], batch_size: int, pad_id: int
) -> tuple[np.ndarray, np.ndarray]:
    """Summed negative log-likelihood of each sequence's scored tokens, and how many were scored."""
    device = next(model.parameters()).device
    nll, counts = np.zeros(len(sequences)), np.zeros(len(sequences))
    order = sorted(
        range(len(sequences)), key=lambda i: len(sequences[i])
    )  # similar lengths share a batch: less padding
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        width = max(len(sequences[i]) for i in batch)
        ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        scored = torch.zeros((len(batch), width), dtype=torch.bool)
        for row, i in enumerate(batch):
            ids[row, : len(sequences[i])] = torch.tensor(sequences[i])
            attention[row, : len(sequences[i])] = 1
            scored[row, first_scored[i] : len(sequences[i])] = True
        ids, attention, scored = ids.to(device), attention.to(device), scored.to(device)
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=attention).logits.float()
        # Position t predicts token t + 1.
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        nll[batch] = -log_probs.where(scored[:, 1:], 0.0).sum(dim=1).double().cpu().numpy()
        counts[batch] = scored[:, 1:].sum(dim=1).cpu().numpy()
    return nll, counts
