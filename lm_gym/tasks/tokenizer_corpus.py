"""The cache key of a task's tokenizer corpus, as the tasks with training text key it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def keyed_corpus(name: str, texts: Sequence[str]) -> tuple[str, Sequence[str]]:
    """``(key, texts)`` as :meth:`TextEnv.tokenizer_corpus <lm_gym.core.text_env.TextEnv.tokenizer_corpus>`
    returns them: the key is ``<name>-<the first 16 hex digits of the texts' SHA-256>``, so other
    texts train and cache another tokenizer."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return f"{name}-{digest}", texts
