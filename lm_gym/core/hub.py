"""Fail fast when the Hugging Face hub cannot be used, instead of minutes of retries.

``datasets`` and ``transformers`` retry an unreachable hub with back-off (about 25 s for one
dataset) before they give up. Loaders call :func:`require_hub` first: with
``HF_HUB_OFFLINE`` set it returns at once and the libraries read their local cache; when
the hub's host does not answer within :data:`PROBE_TIMEOUT` seconds it raises
:class:`DataUnavailableError` with the task's offline hint.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from lm_gym.core.errors import DataUnavailableError

PROBE_TIMEOUT = 3.0


@functools.lru_cache(maxsize=1)
def hub_reachable() -> bool:
    """Whether a TCP connection to the hub's endpoint opens (checked once per process)."""
    from huggingface_hub import constants

    endpoint = urlparse(constants.ENDPOINT)
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((endpoint.hostname, port), timeout=PROBE_TIMEOUT).close()
    except (OSError, RuntimeError):  # RuntimeError: sockets disabled (e.g. pytest-socket)
        return False
    return True


def is_local_path(name_or_path: str | os.PathLike) -> bool:
    """Whether ``name_or_path`` names something on disk.

    A name no file system takes (too long, or with a NUL) does not.
    """
    try:
        return Path(name_or_path).exists()
    except (OSError, ValueError):
        return False


def require_local_or_hub(name_or_path: str | os.PathLike, what: str, hint: str) -> None:
    """:func:`require_hub` unless ``name_or_path`` is on disk: a model or tokenizer ``from_pretrained`` will load."""
    if not is_local_path(name_or_path):
        require_hub(what, hint)


def require_hub(what: str, hint: str) -> None:
    """Raise :class:`DataUnavailableError` about ``what`` if the hub can be neither reached nor used offline."""
    from huggingface_hub import is_offline_mode

    if is_offline_mode():
        return  # the libraries use their local cache and fail fast themselves
    if not hub_reachable():
        raise DataUnavailableError(
            f"cannot load {what}: the Hugging Face hub is unreachable (no connection within {PROBE_TIMEOUT:.0f} s). "
            f"{hint} If it is in your local Hugging Face cache, set HF_HUB_OFFLINE=1 to use that copy."
        )
