"""What every synthetic generator does first: check the requested split and size, seed its RNG."""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping

from lm_gym.core.errors import safe_repr


def split_request(
    task: str, split: str, count: int | None, sizes: Mapping[str, int], count_name: str
) -> tuple[int, random.Random]:
    """How many items to generate (``sizes[split]`` when ``count`` is ``None``) and the split's RNG.

    The RNG's seed is fixed per task and split: crc32 of ``lm_gym.<task>.synthetic/<split>``
    (stable across processes, unlike the salted built-in ``hash``). Bad values raise ``ValueError``.
    """
    if split not in sizes:
        raise ValueError(f"split must be one of {tuple(sizes)}, got {safe_repr(split)}")
    if count is None:
        count = sizes[split]
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"{count_name} must be a non-negative int or None, got {safe_repr(count)}")
    return count, random.Random(zlib.crc32(f"lm_gym.{task}.synthetic/{split}".encode("ascii")))
