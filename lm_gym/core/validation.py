"""Argument checks shared by every env: each raises :class:`ConfigurationError` naming the argument.

Envs check their constructor arguments, ``reset`` seeds and options with these before they
touch any state, so a bad value gives a clear error and never a crash deep in a library.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {safe_repr(value)}"


def is_integer(value: Any) -> bool:
    """True for Python and NumPy integers; False for ``bool`` and ``np.timedelta64``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_, np.timedelta64))


def check_choice(name: str, value: Any, choices: Collection[str]) -> str:
    """``value`` if it is one of the strings ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ConfigurationError(f"{name} must be one of {tuple(choices)}, got {_shown(value)}")
    return value


def check_int(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an ``int`` if it is an integer in ``[minimum, maximum]`` (bounds optional)."""
    if is_integer(value) and (minimum is None or value >= minimum) and (maximum is None or value <= maximum):
        return int(value)
    if minimum is not None and maximum is not None:
        rule = f"an int in [{minimum}, {maximum}]"
    elif minimum is not None:
        rule = f"an int >= {minimum}"
    else:
        rule = "an int" if maximum is None else f"an int <= {maximum}"
    raise ConfigurationError(f"{name} must be {rule}, got {_shown(value)}")


def check_number(name: str, value: Any, minimum: float | None = None) -> float:
    """``value`` as a ``float`` if it is a finite real number, at least ``minimum`` when given."""
    if (
        isinstance(value, (bool, np.bool_, np.timedelta64))  # numpy counts a timedelta as an integer
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or (minimum is not None and value < minimum)
    ):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ConfigurationError(f"{name} must be a finite number{bound}, got {_shown(value)}")
    return float(value)


def check_path(name: str, value: Any) -> Path:
    """``value`` as an expanded ``Path`` if it is a ``str`` or ``os.PathLike``."""
    if not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and not value):
        raise ConfigurationError(f"{name} must be a path (str or os.PathLike), got {_shown(value)}")
    try:
        return Path(value).expanduser()
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{name} is not a usable path: {error}") from None


def check_seed(seed: Any) -> int | None:
    """A ``reset`` seed: ``None`` or a non-negative integer (Gymnasium's rule)."""
    if seed is None:
        return None
    if not is_integer(seed) or seed < 0:
        raise ConfigurationError(f"seed must be None or a non-negative int, got {_shown(seed)}")
    return int(seed)


def check_options(options: Any, allowed: Collection[str]) -> dict[str, Any]:
    """``reset`` options: ``None`` or a dict whose keys are among ``allowed``."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ConfigurationError(f"options must be a dict or None, got {_shown(options)}")
    unknown = [key for key in options if key not in allowed]
    if unknown:
        raise ConfigurationError(
            f"unknown reset option(s) {', '.join(safe_repr(key) for key in unknown[:5])}; "
            f"this env accepts {sorted(allowed)}"
        )
    return options


def check_device(name: str, device: Any) -> str | None:
    """``device`` as a string if it is ``None`` or a device torch can parse.

    For instance ``"cpu"``, ``"cuda:1"`` or a ``torch.device``.
    """
    import torch

    if device is None:
        return None
    try:
        if not isinstance(device, (str, torch.device)):
            raise TypeError
        return str(torch.device(device))
    except (RuntimeError, TypeError, ValueError):
        raise ConfigurationError(
            f"{name} must be None or a torch device such as 'cpu' or 'cuda:0', got {_shown(device)}"
        ) from None


def resolve_device(name: str, device: Any) -> str:
    """:func:`check_device`, with ``None`` meaning CUDA when available, else the CPU."""
    import torch

    return check_device(name, device) or ("cuda" if torch.cuda.is_available() else "cpu")
