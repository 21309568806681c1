"""The pieces of the on-policy update (PPO, NLPO, GRPO, RLOO, IPPO): a rollout's turns as tensors, and PPO's
clipped surrogate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

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
