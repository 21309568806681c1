"""Image features for the HTTP world, read from the HDF5 files of the VisDial v1.0 starter code.

Layout (``visdial-challenge-starter-pytorch``'s ``ImageFeaturesHdfReader``): a dataset
``image_id`` of shape ``(N,)`` and a dataset ``features`` of shape ``(N, dim)`` (VGG-16 fc7)
or ``(N, boxes, dim)`` (bottom-up boxes; averaged over the boxes here). Rows are
L2-normalised by default, as the ILQL code base does with ``norm_img_feats``.

lm-gym has no ranker of its own for features: a feature-based percentile needs a trained
Q-bot that predicts the image feature from the dialogue (visdial-rl's), which is what the
server of :class:`~lm_gym.tasks.visdial.world.HttpWorld` runs. So features are read only to
be sent to such a server. Reading needs ``h5py``, lm-gym's optional ``visdial`` extra
(``pip install "lm-gym[visdial]"``), imported on use.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from lm_gym.core.errors import DataUnavailableError, require_extra


def load_image_features(
    path: str | Path, image_ids: Iterable[int] | None = None, normalize: bool = True
) -> dict[int, np.ndarray]:
    """``{image_id: float32 feature vector}`` from a starter-code HDF5 file (the ``image_ids`` given, or all)."""
    require_extra("visdial", f"reading image features from {str(path)!r}", "h5py")
    import h5py

    path = Path(path)
    try:
        with h5py.File(path, "r") as handle:
            if "image_id" not in handle or "features" not in handle:
                raise DataUnavailableError(
                    f"{path} must hold the datasets 'image_id' and 'features' (VisDial v1.0 starter layout), "
                    f"found {sorted(handle)}"
                )
            ids = np.asarray(handle["image_id"][:], dtype=np.int64)
            rows = {int(image_id): row for row, image_id in enumerate(ids)}
            wanted = list(rows) if image_ids is None else [int(i) for i in image_ids]
            missing = [i for i in wanted if i not in rows]
            if missing:
                raise DataUnavailableError(f"{path} has no features for {len(missing)} image ids, e.g. {missing[:5]}")
            order = sorted(rows[i] for i in set(wanted))  # h5py reads rows in increasing order
            block = np.asarray(handle["features"][order] if order else np.zeros((0, 1)), dtype=np.float32)
    except OSError as error:
        raise DataUnavailableError(f"could not read image features from {path}: {error}") from error
    if block.ndim == 3:
        block = block.mean(axis=1)
    if block.ndim != 2:
        raise DataUnavailableError(f"{path}: 'features' must have shape (N, dim) or (N, boxes, dim), got {block.shape}")
    if normalize:
        block = block / np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
    by_row = dict(zip(order, block, strict=True))
    return {i: by_row[rows[i]] for i in wanted}
