"""Word lists derived from ``wordfreq``'s English frequency list, and copies of them for
machines without it.

Prompts-v0's synthetic prompts and Wordle's default vocabulary are derived from wordfreq, a
dependency of lm-gym whose wheel is 57 MB (frequency data of many languages). A machine that
cannot install it (a GPU host with no network, say) can use copies of the derived lists made
where it is installed:

    python -m lm_gym.tasks.word_lists export DIR     # where wordfreq is installed
    python -m lm_gym.tasks.word_lists install DIR    # on the other machine: into $LM_GYM_CACHE

Where wordfreq is installed the lists are always derived from it; the copies are read only
where it is absent, from ``$LM_GYM_CACHE/word-lists/<name>.json`` (each records the wordfreq
version it came from).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from lm_gym.core.cache import cache_root
from lm_gym.core.errors import DataUnavailableError

#: Name -> the function that derives the list from wordfreq; filled by :func:`wordfreq_list` as the
#: tasks' modules are imported (``lm_gym.tasks.word_lists`` imports them all).
DERIVATIONS: dict[str, Callable[[], Sequence[str]]] = {}


def wordfreq_installed() -> bool:
    try:
        import wordfreq  # noqa: F401
    except ImportError:
        return False
    return True


def copies_dir() -> Path:
    """Where copies of the lists are read from when wordfreq is absent."""
    return cache_root() / "word-lists"


def wordfreq_list(name: str) -> Callable[[Callable[[], Sequence[str]]], Callable[[], tuple[str, ...]]]:
    """Decorator: ``derive()`` (which imports wordfreq) becomes a cached function returning its
    list, or, where wordfreq is not installed, the copy of the list exported under ``name``."""

    def decorate(derive: Callable[[], Sequence[str]]) -> Callable[[], tuple[str, ...]]:
        if name in DERIVATIONS:
            raise ValueError(f"a word list named {name!r} is already registered")
        DERIVATIONS[name] = derive

        @functools.wraps(derive)
        @functools.cache
        def words() -> tuple[str, ...]:
            return tuple(derive()) if wordfreq_installed() else read_copy(name)

        return words

    return decorate


def read_copy(name: str) -> tuple[str, ...]:
    """The exported copy of the list ``name``, with a clear error where there is none."""
    path = copies_dir() / f"{name}.json"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataUnavailableError(
            f"the word list {name!r} is derived from the wordfreq package, which is not installed, and no copy "
            f"of it is at {path}: pip install wordfreq, or run `python -m lm_gym.tasks.word_lists export DIR` "
            "where wordfreq is installed and `python -m lm_gym.tasks.word_lists install DIR` here"
        ) from None
    except ValueError as error:
        raise DataUnavailableError(f"the word list copy {path} is not valid JSON: {error}") from None
    words = record.get("words") if isinstance(record, dict) else None
    if not isinstance(words, list) or not words or not all(isinstance(word, str) for word in words):
        raise DataUnavailableError(f"the word list copy {path} holds no list of words under 'words'")
    return tuple(words)


def export(directory: str | Path) -> list[Path]:
    """Write every registered list, derived from wordfreq, to ``directory/<name>.json``."""
    if not wordfreq_installed():
        raise DataUnavailableError("exporting the word lists derives them from wordfreq: pip install wordfreq")
    version = importlib.metadata.version("wordfreq")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, derive in sorted(DERIVATIONS.items()):
        path = directory / f"{name}.json"
        path.write_text(json.dumps({"name": name, "wordfreq": version, "words": list(derive())}))
        written.append(path)
    return written


def install(directory: str | Path) -> list[Path]:
    """Copy the registered lists ``export`` wrote in ``directory`` to :func:`copies_dir`."""
    sources = [Path(directory) / f"{name}.json" for name in sorted(DERIVATIONS)]
    missing = [str(path) for path in sources if not path.is_file()]
    if missing:
        raise DataUnavailableError(f"no exported word list at {', '.join(missing)}: run `export` where wordfreq is")
    target = copies_dir()
    target.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(path, target / path.name)) for path in sources]
