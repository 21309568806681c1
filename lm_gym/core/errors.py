"""Typed errors raised by lm-gym environments, and :func:`safe_repr` for their messages.

Every error derives from :class:`LMGymError` and from the built-in exception that fits it,
so ``except ValueError`` in user code keeps working.
"""

import importlib


class LMGymError(Exception):
    """Base class of every lm-gym error."""


class InvalidActionError(LMGymError, ValueError):
    """An action that is not in the environment's action space (wrong type, range or length)."""


class ResetNeededError(LMGymError, RuntimeError):
    """``step`` was called before ``reset`` or after the episode ended."""


class ConfigurationError(LMGymError, ValueError):
    """An environment or wrapper argument has a value that cannot be used."""


class UnknownArgumentError(ConfigurationError, TypeError):
    """An argument the env's constructor does not take: a ``TypeError`` with Python's wording
    ("got an unexpected keyword argument 'name'"), as callers that probe optional arguments expect."""


class DataUnavailableError(LMGymError, RuntimeError):
    """A dataset, tokenizer or model could not be loaded from the chosen source, or a package of an
    optional extra that a feature needs is not installed (:func:`require_extra`)."""


class TrajectoryFormatError(ConfigurationError):
    """Offline trajectories that do not follow the format of :mod:`lm_gym.offline`."""


def install_hint(extra: str, *packages: str) -> str:
    """The pip command that installs lm-gym's optional ``extra`` (which brings ``packages``)."""
    return f'pip install "lm-gym[{extra}]" (or pip install {" ".join(packages)})'


def require_extra(extra: str, needed_by: str, *packages: str) -> None:
    """Raise :class:`DataUnavailableError` when one of ``packages`` of lm-gym's optional ``extra`` is missing.

    ``packages`` are pip names, imported as the name with ``_`` for ``-`` (``bert-score``:
    ``bert_score``). The message says what needs them and how to install them:
    ``<needed_by> needs <packages>: pip install "lm-gym[<extra>]" (or pip install <packages>)``.
    """
    missing = []
    for package in packages:
        module = package.replace("-", "_")
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:  # a missing dependency of the package is named too
            missing.append(package if error.name == module else f"{package} ({error})")
    if missing:
        names = [name.split(" ")[0] for name in missing]
        raise DataUnavailableError(f"{needed_by} needs {' and '.join(missing)}: {install_hint(extra, *names)}")


def safe_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message: cut to ``limit`` characters, ``<TypeName object>`` when it fails.

    Messages show the caller's objects, whose ``__repr__`` may raise; the error the caller
    gets must still be lm-gym's typed one.
    """
    try:
        text = repr(value)
    except Exception:  # any failure of a foreign __repr__, including one returning a non-str
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[:limit] + "..."
