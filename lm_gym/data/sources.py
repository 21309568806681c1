"""The three data sources of the dataset tasks: ``hub``, ``local`` and ``synthetic``.

Shared by every task's ``data`` module: argument checks, loading a split from the Hugging
Face hub through ``datasets`` with a clear offline error, and reading the table formats
releases come in (CSV, Parquet, JSON lines) with no hub and no ``datasets`` cache.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from lm_gym.core.episodes import SPLITS
from lm_gym.core.errors import ConfigurationError, DataUnavailableError
from lm_gym.core.hub import require_hub
from lm_gym.core.validation import check_choice, check_path

SOURCES = ("hub", "local", "synthetic")
TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl", ".json")


def check_source(source: Any, split: Any, data_dir: Any, local_hint: str) -> str | None:
    """Check ``source``/``split``/``data_dir``; returns ``data_dir`` resolved (``None`` unless local).

    ``local_hint`` says what ``data_dir`` must hold, for the error when it is missing.
    """
    check_choice("source", source, SOURCES)
    check_choice("split", split, SPLITS)
    if source == "local":
        if data_dir is None:
            raise ConfigurationError(f"source='local' needs data_dir=<{local_hint}>")
        return str(check_path("data_dir", data_dir).resolve())
    if data_dir is not None:
        raise ConfigurationError(f"data_dir is only used with source='local', not source={source!r}")
    return None


def load_hub_split(name: str, split: str, offline_hint: str, config: str | None = None):
    """Split ``split`` of hub dataset ``name`` via ``datasets.load_dataset``; offline: ``DataUnavailableError``."""
    import datasets

    require_hub(f"the dataset {name!r}", offline_hint)
    try:
        if config is None:
            return datasets.load_dataset(name, split=split)
        return datasets.load_dataset(name, config, split=split)
    except Exception as error:  # noqa: BLE001 - datasets raises many types when offline
        raise DataUnavailableError(
            f"could not load {name!r} from the Hugging Face hub ({type(error).__name__}: {error}). {offline_hint}"
        ) from error


def read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``.csv`` (with header), ``.parquet``, ``.jsonl`` or ``.json`` file as dicts."""
    try:
        if path.suffix == ".csv":
            csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # news articles exceed the 128 KiB default
            with path.open(newline="", encoding="utf-8", errors="replace") as handle:
                return list(csv.DictReader(handle))
        if path.suffix == ".parquet":
            import pyarrow.parquet

            return pyarrow.parquet.read_table(path).to_pylist()
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".json" and text.lstrip().startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError, csv.Error) as error:
        raise DataUnavailableError(f"could not read {path}: {type(error).__name__}: {error}") from error


def require_columns(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    """``DataUnavailableError`` naming the file unless its rows have ``columns``."""
    missing = [c for c in columns if rows and c not in rows[0]]
    if missing:
        raise DataUnavailableError(
            f"{path} must have columns {','.join(columns)}; missing {missing}, found {sorted(rows[0])}"
        )
