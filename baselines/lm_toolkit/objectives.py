"""Pieces of the update the on-policy baselines share: PPO's clipped surrogate (PPO, NLPO, GRPO, RLOO),
the turn batch of a rollout, one optimizer step, and per-update statistics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lm_toolkit import distributed
from lm_toolkit.rollouts import Turn
from lm_toolkit.tokens import pad, padded_floats


@dataclass
class TurnBatch:
    """A rollout's turns as tensors: queries (token lists), right-padded responses, kept log-probs and values."""

    queries: list[list[int]]
    response_ids: torch.Tensor
    response_mask: torch.Tensor
    old_log_probs: torch.Tensor
    old_values: torch.Tensor | None

    @classmethod
    def of(cls, turns: Sequence[Turn], pad_id: int, device) -> TurnBatch:
        response_ids, response_mask = pad([t.response for t in turns], pad_id, "right", device)
        width = response_ids.shape[1]
        values = padded_floats([t.values for t in turns], width, device) if turns[0].values is not None else None
        return cls(
            [t.query for t in turns],
            response_ids,
            response_mask,
            padded_floats([t.log_probs for t in turns], width, device),
            values,
        )

    def rows(self, index: torch.Tensor | np.ndarray) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
        """The queries, responses and response mask of the turns at ``index``."""
        positions = torch.as_tensor(index, device=self.response_ids.device)
        return (
            [self.queries[i] for i in positions.tolist()],
            self.response_ids[positions],
            self.response_mask[positions],
        )


def clipped_surrogate(
    new_log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_coef: float,
):
    """PPO's clipped policy loss per token, averaged over the ``mask``'s tokens, and its statistics
    (``approx_kl``: the k3 estimate of KL(old || new); ``clipfrac``: share of tokens clipped)."""
    count = mask.sum()
    log_ratio = torch.where(mask.bool(), new_log_probs - old_log_probs, 0.0)  # padding may hold -inf - -inf
    ratio = log_ratio.exp()
    loss = (
        torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)) * mask
    ).sum() / count
    with torch.no_grad():
        approx_kl = (((ratio - 1) - log_ratio) * mask).sum() / count
        clipfrac = (((ratio - 1).abs() > clip_coef).float() * mask).sum() / count
    return loss, {"approx_kl": approx_kl.item(), "clipfrac": clipfrac.item()}


def anneal(
    optimizer: torch.optim.Optimizer, learning_rate: float, iteration: int, iterations: int, enabled: bool = True
) -> None:
    """The learning rate decayed linearly from ``learning_rate`` (iteration 1) towards 0 (``--anneal-lr``)."""
    if enabled:
        optimizer.param_groups[0]["lr"] = learning_rate * (1.0 - (iteration - 1) / iterations)


def optimizer_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, parameters, max_grad_norm: float) -> None:
    """Backward, average the gradients over the processes of a data-parallel run, clip the global
    gradient norm (0: no clipping), step; a non-finite loss stops the run."""
    if not math.isfinite(loss.item()):
        raise FloatingPointError(f"non-finite loss {loss.item()}")
    parameters = list(parameters)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    distributed.average_gradients(parameters)
    if max_grad_norm > 0:
        nn.utils.clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


# ---- offline training (sft, ilql) ----------------------------------------------------------


def batch_indices(seed: int, step: int, steps_per_epoch: int, batch_size: int, size: int) -> np.ndarray:
    """The examples of optimizer step ``step`` (counted from 1): each epoch's order is a function of
    (seed, epoch) only, so a resumed run replays it."""
    epoch, position = divmod(step - 1, steps_per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(size)
    return order[position * batch_size : (position + 1) * batch_size]


def adamw(modules, learning_rate: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over the trainable parameters of ``modules``; no weight decay on biases and norm weights."""
    parameters = [p for module in modules if module is not None for p in module.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in parameters if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in parameters if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=learning_rate)


def warmup_schedule(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int, decay: bool
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over ``warmup_steps``, then linear decay to 0 at ``total_steps`` (``decay``) or constant."""

    def multiplier(step: int) -> float:  # step = optimizer updates done so far
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps)) if decay else 1.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)


class Stats:
    """Numbers collected over an update's minibatches (or a logging window), reported as means."""

    def __init__(self):
        self.values: dict[str, list[float]] = {}

    def add(self, **numbers: float | torch.Tensor) -> None:
        for key, value in numbers.items():
            self.values.setdefault(key, []).append(value.item() if isinstance(value, torch.Tensor) else float(value))

    def means(self) -> dict[str, float]:
        """The means (over the processes too, in a data-parallel run), emptying the collection."""
        means = {key: float(np.mean(values)) for key, values in self.values.items()}
        self.values = {}
        if distributed.world_size() > 1:
            every = distributed.gather(means)
            means = {key: float(np.mean([m[key] for m in every if key in m])) for key in every[0]}
        return means
