"""The data of ``lm_gym/TextGeneration-v0``: any table ``datasets.load_dataset`` reads, turned into samples.

* :func:`load_table`: one split of a hub dataset (``dataset=`` name, optional config), of local
  ``.jsonl``/``.json``/``.csv``/``.parquet`` files (``data_files=``: a path, a list of paths, or a
  dict of those per split), of a ``datasets.Dataset``/``DatasetDict`` object, or of the small
  example shipped in ``data/`` (made-up news articles and one-sentence summaries).
* :class:`SampleSource`: the arguments that say where an env's samples come from and how a row
  becomes a prompt, kept by the env to load another split.
* :func:`build_samples`: the rows as :class:`~lm_gym.core.text_env.Sample` s: the prompt (a
  column, or a ``str.format`` template over the row's columns), the references (one or more
  columns, each a str or a list of str) and the row's other plain columns as ``meta["row"]``.

Every problem with the data or the arguments raises :class:`~lm_gym.core.errors.ConfigurationError`
naming the argument (a hub dataset that cannot be fetched: :class:`~lm_gym.core.errors.DataUnavailableError`).
"""

from __future__ import annotations

import csv
import functools
import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.spaces import to_charset
from lm_gym.core.text_env import Sample
from lm_gym.data.sources import load_hub_split

#: The example dataset shipped in the package: one JSON-lines file per split.
EXAMPLE_DIR = Path(__file__).resolve().parent / "data"
EXAMPLE_FILES = {split: str(EXAMPLE_DIR / f"{split}.jsonl") for split in ("train", "validation", "test")}
#: ``datasets``' builder of each file suffix.
FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
#: Keyword arguments of a reward function that a column of the same name would shadow.
RESERVED_KWARGS = ("prompts", "completions", "references")
OFFLINE_HINT = "Offline, pass data_files=<local .jsonl/.csv/.parquet files> (or no dataset: the example data)."


@dataclass(frozen=True)
class SampleSource:
    """Where ``lm_gym/TextGeneration-v0``'s samples come from (the env's arguments of the same names):
    the table (:func:`load_table`'s ``dataset``, ``dataset_config``, ``data_files``) and the column or
    template that makes a row's prompt (:func:`build_samples`)."""

    dataset: Any
    dataset_config: str | None
    data_files: Any
    prompt_column: str
    prompt_template: str | None


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {safe_repr(value)}"


def _check_split(split: Any) -> str:
    if not isinstance(split, str) or not split:
        raise ConfigurationError(f"split must be a non-empty str, got {_shown(split)}")
    return split


def resolve_files(data_files: Any, split: str) -> list[str]:
    """The files of ``split`` from ``data_files`` (a path, a list of paths, or a dict of those per
    split), checked: existing files, all of one format (:data:`FORMATS`)."""
    if isinstance(data_files, Mapping):
        if split not in data_files:
            raise ConfigurationError(
                f"data_files has no {safe_repr(split)} split; its splits are {safe_repr(list(data_files))} "
                "(pass split=<one of them>)"
            )
        data_files = data_files[split]
    paths = [data_files] if isinstance(data_files, (str, os.PathLike)) else data_files
    if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence) or not paths:
        raise ConfigurationError(
            "data_files must be a path, a non-empty list of paths or a dict of those per split, "
            f"got {_shown(data_files)}"
        )
    files = []
    for path in paths:
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ConfigurationError(f"data_files must hold paths (str or os.PathLike), got {_shown(path)}")
        try:
            resolved = Path(path).expanduser().resolve()
            is_file = resolved.is_file()
        except (OSError, ValueError) as error:  # a NUL byte, a name too long
            raise ConfigurationError(f"data_files: {safe_repr(str(path))} is not a usable path: {error}") from None
        if not is_file:
            raise ConfigurationError(f"data_files: {safe_repr(str(path))} is not a file")
        if resolved.suffix.lower() not in FORMATS:
            raise ConfigurationError(
                f"data_files: {safe_repr(str(path))} must end in one of {tuple(FORMATS)} (the file format), "
                f"not {safe_repr(resolved.suffix)}"
            )
        files.append(str(resolved))
    formats = {FORMATS[Path(file).suffix.lower()] for file in files}
    if len(formats) > 1:
        raise ConfigurationError(f"data_files of one split must have one format, got {sorted(formats)}: {files}")
    return files


def load_table(dataset: Any, dataset_config: Any, data_files: Any, split: Any):
    """Split ``split`` as a ``datasets.Dataset`` (see the module docstring for the sources)."""
    import datasets

    split = _check_split(split)
    if dataset is not None and data_files is not None:
        raise ConfigurationError("pass dataset= (a hub dataset) or data_files= (local files), not both")
    if dataset_config is not None and (not isinstance(dataset_config, str) or not isinstance(dataset, str)):
        raise ConfigurationError(
            f"dataset_config must be a str and goes with dataset=<a hub name>, got {_shown(dataset_config)}"
        )
    if isinstance(dataset, datasets.DatasetDict):
        if split not in dataset:
            raise ConfigurationError(f"dataset has no {safe_repr(split)} split; its splits are {list(dataset)}")
        return dataset[split]
    if isinstance(dataset, datasets.Dataset):
        return dataset
    if dataset is not None:
        if not isinstance(dataset, str) or not dataset:
            raise ConfigurationError(
                "dataset must be a hub dataset name (str), a datasets.Dataset or DatasetDict, or None, "
                f"got {_shown(dataset)}"
            )
        return _load_hub(dataset, dataset_config, split)
    files = resolve_files(EXAMPLE_FILES if data_files is None else data_files, split)
    stamps = tuple((file, os.stat(file).st_mtime_ns, os.stat(file).st_size) for file in files)
    return _load_files(stamps, split)


@functools.lru_cache(maxsize=16)
def _load_hub(name: str, config: str | None, split: str):
    return load_hub_split(name, split, OFFLINE_HINT, config=config)


@functools.lru_cache(maxsize=16)
def _load_files(stamps: tuple[tuple[str, int, int], ...], split: str):
    import datasets

    files = [file for file, _, _ in stamps]
    builder = FORMATS[Path(files[0]).suffix.lower()]
    options: dict[str, Any] = {}
    if builder == "csv":  # CSV has no types: every column is text ("007" stays "007", an empty cell "")
        options = {"features": datasets.Features({c: datasets.Value("string") for c in _csv_header(files[0])})}
        options["keep_default_na"] = False
    try:
        return datasets.load_dataset(builder, data_files={split: files}, split=split, **options)
    except Exception as error:  # noqa: BLE001 - datasets and its readers raise many types on bad files
        if isinstance(error, StopIteration) or "corresponds to no data" in str(error):
            raise ConfigurationError(f"data_files: {files} hold no rows; an env needs at least one sample") from error
        cause = error.__cause__ or error.__context__ or error
        detail = f"{type(error).__name__}: {error}".strip(": ")
        if cause is not error:
            detail += f" ({type(cause).__name__}: {str(cause)[:300]})"
        raise ConfigurationError(f"data_files: could not read {files} as {builder}: {detail}") from error


def _csv_header(path: str) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), None)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ConfigurationError(f"data_files: could not read {path!r}: {error}") from error
    if not header:
        raise ConfigurationError(f"data_files: {path!r} is empty (a CSV file needs a header row of column names)")
    return header


def check_reference_columns(reference_column: Any) -> tuple[str, ...]:
    """``reference_column`` (``None``, a column name or a list of them) as a tuple of names."""
    if reference_column is None:
        return ()
    columns = [reference_column] if isinstance(reference_column, str) else reference_column
    if (
        isinstance(columns, (bytes, Mapping))
        or not isinstance(columns, Sequence)
        or not columns
        or not all(isinstance(c, str) and c for c in columns)
    ):
        raise ConfigurationError(
            f"reference_column must be None, a column name or a non-empty list of column names, "
            f"got {_shown(reference_column)}"
        )
    return tuple(dict.fromkeys(columns))


def template_fields(prompt_template: str) -> tuple[str, ...]:
    """The columns a ``str.format`` template names (``"{article}"``; ``"{meta[title]}"`` names ``meta``)."""
    if not isinstance(prompt_template, str):
        raise ConfigurationError(f"prompt_template must be a str.format template, got {_shown(prompt_template)}")
    fields = []
    try:
        for _, name, spec, _ in string.Formatter().parse(prompt_template):
            if name is None:
                continue
            root = name.split(".", 1)[0].split("[", 1)[0]
            if not root or root.isdigit():
                raise ConfigurationError(
                    "prompt_template must name columns ({column}), not positional fields: " + safe_repr(prompt_template)
                )
            fields.append(root)
            if spec and "{" in spec:
                fields += [f for f in template_fields(spec)]
    except ValueError as error:  # an unmatched brace, a bad conversion
        raise ConfigurationError(
            f"prompt_template is not a str.format template ({error}): {safe_repr(prompt_template)}"
        ) from None
    return tuple(dict.fromkeys(fields))


def require_column(argument: str, column: str, columns: Sequence[str], hint: str = "") -> None:
    if column not in columns:
        raise ConfigurationError(
            f"{argument}: the dataset has no column {column!r}; its columns are {list(columns)}{hint}"
        )


def _text(value: Any) -> str | None:
    """A cell as text: a str as is, a number as its str, ``None`` as ``None``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    return None


def _plain(value: Any) -> Any:
    """``value`` if it is JSON-like (str, number, bool, None, lists and str-keyed dicts of those), else ``_DROP``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_plain(item) for item in value]
        return _DROP if any(item is _DROP for item in items) else items
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        items = {key: _plain(item) for key, item in value.items()}
        return _DROP if any(item is _DROP for item in items.values()) else items
    return _DROP


_DROP = object()


def build_samples(
    table,
    prompt_column: str,
    reference_columns: tuple[str, ...],
    prompt_template: str | None,
    num_samples: int | None,
    max_prompt_length: int,
) -> list[Sample]:
    """The samples of ``table`` (a ``datasets.Dataset``), checked against its columns.

    The prompt is ``prompt_template.format(**row)`` or the ``prompt_column`` cell; the references
    the non-empty strings of the ``reference_columns`` cells (a cell may hold a list of str); both
    mapped to printable ASCII, a prompt longer than ``max_prompt_length`` cut to its end.
    ``meta`` holds ``index`` (the row) and ``row``: the row's other columns whose cells are plain
    JSON-like data, except those named like a reward function's keyword arguments.
    """
    if len(table) == 0:
        raise ConfigurationError("the dataset's split has no rows; an env needs at least one sample")
    columns = list(table.column_names)
    if prompt_template is None:
        require_column("prompt_column", prompt_column, columns, " (or pass prompt_template='...{column}...')")
        used = (prompt_column,)
    else:
        used = template_fields(prompt_template)
        for field in used:
            require_column("prompt_template", field, columns)
    for column in reference_columns:
        require_column("reference_column", column, columns, " (reference_column=None: a dataset without references)")
    if num_samples is not None and num_samples < len(table):
        table = table.select(range(num_samples))
    extra_columns = [c for c in columns if c not in used and c not in reference_columns and c not in RESERVED_KWARGS]
    samples = []
    for index, row in enumerate(table):
        prompt = _prompt(row, index, prompt_column, prompt_template)
        references = _references(row, index, reference_columns)
        extras = {column: _plain(row[column]) for column in extra_columns}
        meta = {"index": index, "row": {key: value for key, value in extras.items() if value is not _DROP}}
        samples.append(Sample(to_charset(prompt)[-max_prompt_length:], references, meta))
    return samples


def _prompt(row: Mapping[str, Any], index: int, prompt_column: str, prompt_template: str | None) -> str:
    if prompt_template is not None:
        try:
            return prompt_template.format(**row)
        except (KeyError, IndexError, AttributeError, TypeError, ValueError) as error:
            raise ConfigurationError(
                f"prompt_template {safe_repr(prompt_template)} does not fit row {index}: "
                f"{type(error).__name__}: {error}"
            ) from None
    prompt = _text(row[prompt_column])
    if prompt is None:
        raise ConfigurationError(
            f"prompt_column {prompt_column!r} of row {index} must be text, got {_shown(row[prompt_column])}"
        )
    return prompt


def _references(row: Mapping[str, Any], index: int, reference_columns: tuple[str, ...]) -> tuple[str, ...]:
    references = []
    for column in reference_columns:
        cell = row[column]
        cells = cell if isinstance(cell, (list, tuple)) else [cell]
        for value in cells:
            text = _text(value)
            if text is None and value is not None:
                raise ConfigurationError(
                    f"reference_column {column!r} of row {index} must hold a str or a list of str, got {_shown(cell)}"
                )
            if text is not None and text.strip():
                references.append(to_charset(text))
    if reference_columns and not references:
        raise ConfigurationError(
            f"row {index} has no reference: its {list(reference_columns)} cells are empty "
            "(every row needs one; filter the data, or reference_column=None with a reward function)"
        )
    return tuple(references)
