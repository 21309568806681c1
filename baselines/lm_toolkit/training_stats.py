"""The training statistics a baseline reports: numbers collected over an update, logged as means."""

from __future__ import annotations

import numpy as np
import torch

from lm_toolkit import distributed


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
