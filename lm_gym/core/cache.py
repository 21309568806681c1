"""Where lm-gym keeps what it builds offline: trained tokenizers and reward models."""

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_root() -> Path:
    """``$LM_GYM_CACHE`` if set, else ``~/.cache/lm_gym``."""
    return Path(os.environ.get("LM_GYM_CACHE") or Path.home() / ".cache" / "lm_gym")


def cached_directory(kind: str, key: str, build: Callable[[Path], None]) -> Path:
    """The cache directory ``<root>/<kind>/<key>``, made by ``build(tmp_dir)`` if absent.

    ``build`` writes into a temporary directory that is renamed into place, so concurrent
    processes never see a half-written entry (the first rename wins).
    """
    target = cache_root() / kind / key
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=target.parent))
    try:
        build(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
