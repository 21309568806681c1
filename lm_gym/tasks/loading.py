"""What every task's data loader does around its own loading: check the source, refuse an empty split."""

from __future__ import annotations

from collections.abc import Callable, Sized
from pathlib import Path
from typing import TypeVar

from lm_gym.core.errors import DataUnavailableError
from lm_gym.data.sources import check_source

Loaded = TypeVar("Loaded")


def load_split(
    load: Callable[[str, str, str | None], Loaded],
    source: str,
    split: str,
    data_dir: str | Path | None,
    local_hint: str,
    what: str,
    items: Callable[[Loaded], Sized] = lambda loaded: loaded,
) -> Loaded:
    """``load(source, split, data_dir)``, after :func:`~lm_gym.data.sources.check_source` (which resolves
    ``data_dir``; ``local_hint`` says what it must hold).

    Raises ``DataUnavailableError`` when the split holds none of ``what`` (``"articles"``, ...):
    ``items`` picks them out of what ``load`` returns (by default the whole of it).
    """
    loaded = load(source, split, check_source(source, split, data_dir, local_hint))
    if not items(loaded):
        raise DataUnavailableError(f"the {split!r} split of source={source!r} holds no {what}")
    return loaded
