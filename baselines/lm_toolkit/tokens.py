"""Texts to token ids and ids to padded batches, by the rules lm-gym's token-level envs use."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lm_gym.core.tokenizer import truncate_prompt
from lm_toolkit.tasks import Lengths


def encode_prompts(tokenizer, texts: Sequence[str], lengths: Lengths) -> list[list[int]]:
    """Observation tokens (no special tokens) cut as lm-gym's ``TokenLevel`` cuts them
    (``lm_gym.core.tokenizer.truncate_prompt``). An empty prompt becomes ``[EOS]``, so that a
    causal model always has a token to start from."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if len(texts) else []
    cut = (truncate_prompt(row, lengths.max_prompt_length, lengths.truncation_side) for row in ids)
    return [row or [tokenizer.eos_token_id] for row in cut]


def encode_targets(tokenizer, texts: Sequence[str], lengths: Lengths) -> list[list[int]]:
    """An utterance's first ``max_new_tokens - 1`` tokens, then EOS: what a policy should generate."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if len(texts) else []
    return [list(row[: lengths.max_new_tokens - 1]) + [tokenizer.eos_token_id] for row in ids]


def pad(
    rows: Sequence[Sequence[int]], value: int, side: str, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows padded with ``value`` on ``side`` ("left" or "right") to the longest (at least 1), and the
    mask of real tokens."""
    width = max(1, max((len(row) for row in rows), default=0))
    ids = torch.full((len(rows), width), value, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if len(row):
            span = slice(width - len(row), width) if side == "left" else slice(0, len(row))
            ids[i, span] = torch.as_tensor(row, dtype=torch.long)
            mask[i, span] = 1
    return ids.to(device), mask.to(device)


def padded_floats(rows: Sequence[Sequence[float]], width: int, device: torch.device | str) -> torch.Tensor:
    """Per-token numbers of ragged rows (kept log-probs, values) right-padded with 0 to ``width``."""
    out = torch.zeros((len(rows), width))
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.as_tensor(row, dtype=torch.float32)
    return out.to(device)


def supervised_batch(
    prompts: Sequence[list[int]], targets: Sequence[list[int]], pad_id: int, is_seq2seq: bool, device
) -> dict[str, torch.Tensor]:
    """A teacher-forcing batch; ``labels`` are -100 wherever no loss is taken.

    Causal: ``prompt + target`` right-padded, labels on the target only. Seq2seq: the encoder reads
    the left-padded prompt, the labels are the target.
    """
    if is_seq2seq:
        input_ids, attention_mask = pad(prompts, pad_id, "left", device)
        labels, _ = pad(targets, -100, "right", device)
    else:
        input_ids, attention_mask = pad([p + t for p, t in zip(prompts, targets, strict=True)], pad_id, "right", device)
        labels, _ = pad([[-100] * len(p) + t for p, t in zip(prompts, targets, strict=True)], -100, "right", device)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
