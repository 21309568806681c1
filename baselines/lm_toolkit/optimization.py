"""Optimizer steps and schedules: the step every baseline takes, the online baselines' learning-rate
annealing, and the offline baselines' (sft, ilql) AdamW, warmup schedule and data order."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from lm_toolkit import distributed


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


def anneal(
    optimizer: torch.optim.Optimizer, learning_rate: float, iteration: int, iterations: int, enabled: bool = True
) -> None:
    """The learning rate decayed linearly from ``learning_rate`` (iteration 1) towards 0 (``--anneal-lr``)."""
    if enabled:
        optimizer.param_groups[0]["lr"] = learning_rate * (1.0 - (iteration - 1) / iterations)


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
    return fused_adamw(groups, lr=learning_rate)


FUSED_DEVICES = ("cpu", "cuda")  #: where ``torch.optim.AdamW(fused=True)`` has a kernel for float tensors


def fused_adamw(params, **options) -> torch.optim.AdamW:
    """``torch.optim.AdamW(params, **options)`` with PyTorch's fused kernel when every parameter is a
    floating-point tensor on a device that has one. On CPU AdamW's default updates the tensors one at a
    time in Python, about 12 ms a step for the speed benchmark's 4.2M-parameter GPT-2 against 4 ms
    fused. The same update up to float rounding."""
    params = list(params)
    tensors = [p for group in params for p in (group["params"] if isinstance(group, dict) else [group])]
    fused = all(p.device.type in FUSED_DEVICES and p.is_floating_point() for p in tensors)
    return torch.optim.AdamW(params, fused=fused or None, **options)


def warmup_schedule(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int, decay: bool
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over ``warmup_steps``, then linear decay to 0 at ``total_steps`` (``decay``) or constant."""

    def multiplier(step: int) -> float:  # step = optimizer updates done so far
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps)) if decay else 1.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)
