"""The offline trajectory format (documented in :mod:`lm_gym.offline`): build, check, save, load."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lm_gym.core.errors import (
    ConfigurationError,
    DataUnavailableError,
    TrajectoryFormatError,
)
from lm_gym.core.validation import check_path

#: Core columns with defaults in :func:`trajectories_from_rows`: rows may leave them out.
_DEFAULTED_COLUMNS = ("truncated", "return")
#: Tolerance of the ``return == sum(rewards)`` check (float32 sums).
RETURN_RTOL, RETURN_ATOL = 1e-4, 1e-5


def trajectory_features(extra: Mapping[str, Any] | None = None):
    """The ``datasets.Features`` of trajectories: the core columns, then the metadata columns ``extra``."""
    import datasets

    core = {
        "env_id": datasets.Value("string"),
        "observations": datasets.Sequence(datasets.Value("string")),
        "actions": datasets.Sequence(datasets.Value("string")),
        "rewards": datasets.Sequence(datasets.Value("float32")),
        "dones": datasets.Sequence(datasets.Value("bool")),
        "truncated": datasets.Value("bool"),
        "return": datasets.Value("float32"),
    }
    extra = dict(extra or {})
    clashing = sorted(set(extra) & set(core))
    if clashing:
        raise ConfigurationError(f"extra features {clashing} have the names of core trajectory columns {list(core)}")
    return datasets.Features({**core, **extra})


def trajectories_from_rows(rows: Sequence[Mapping[str, Any]], extra_features: Mapping[str, Any] | None = None):
    """A validated ``datasets.Dataset`` of ``rows``, one dict per trajectory.

    Each row holds the core columns and the metadata columns of ``extra_features``;
    ``truncated`` defaults to False and ``return`` to the sum of ``rewards``.
    """
    import datasets

    features = trajectory_features(extra_features)
    columns: dict[str, list[Any]] = {name: [] for name in features}
    for index, row in enumerate(rows):
        missing = sorted(set(features) - set(row) - set(_DEFAULTED_COLUMNS))
        unknown = sorted(set(row) - set(features))
        if missing or unknown:
            raise TrajectoryFormatError(
                f"trajectory row {index}: missing columns {missing}, unknown columns {unknown} "
                "(declare metadata columns in extra_features)"
            )
        row = {"truncated": False, "return": math.fsum(row["rewards"]), **row}
        for name in features:
            columns[name].append(row[name])
    dataset = datasets.Dataset.from_dict(columns, features=features)
    validate_trajectories(dataset)
    return dataset


def validate_trajectories(dataset: Any) -> None:
    """Raise :class:`TrajectoryFormatError` (naming the column, the row and what was expected)
    unless ``dataset`` is a ``datasets.Dataset`` of trajectories in the format of :mod:`lm_gym.offline`.

    The checks are vectorised over the columns, so large datasets validate in seconds.
    """
    import datasets
    import pyarrow.compute as pc

    if not isinstance(dataset, datasets.Dataset):
        raise ConfigurationError(f"dataset must be a datasets.Dataset of trajectories, got {type(dataset).__name__}")
    core = trajectory_features()
    missing = [name for name in core if name not in dataset.features]
    if missing:
        raise TrajectoryFormatError(
            f"trajectories lack the core columns {missing} (the format is documented in lm_gym.offline)"
        )
    for name, feature in core.items():
        if dataset.features[name] != feature:
            raise TrajectoryFormatError(f"trajectory column {name!r} must be {feature}, got {dataset.features[name]}")
    if len(dataset) == 0:
        return
    table = dataset.select_columns(list(core)).with_format("arrow")[:]
    columns = {name: table.column(name).combine_chunks() for name in core}
    list_names = ("observations", "actions", "rewards", "dones")
    lengths = {name: columns[name].value_lengths().fill_null(0).to_numpy() for name in list_names}
    # the turns of every row in one flat array per column; turn_row maps a turn to its row
    turns = {name: columns[name].flatten() for name in list_names}
    turn_row = {name: np.repeat(np.arange(len(dataset)), lengths[name]) for name in list_names}

    def rows_with(name: str, flagged_turns: np.ndarray) -> np.ndarray:
        flagged = np.zeros(len(dataset), dtype=bool)
        flagged[turn_row[name][flagged_turns]] = True
        return flagged

    def check(name: str, flagged: np.ndarray, expected: str) -> None:
        if flagged.any():
            row = int(np.argmax(flagged))
            got = columns[name][row].as_py()
            raise TrajectoryFormatError(f"trajectory column {name!r}, row {row}: expected {expected}, got {got!r:.200}")

    for name, column in columns.items():
        check(name, column.is_null().to_numpy(zero_copy_only=False), "a value, not null")
        if name in turns:
            check(name, rows_with(name, turns[name].is_null().to_numpy(zero_copy_only=False)), "no null entries")
    check("env_id", pc.utf8_length(columns["env_id"]).to_numpy() == 0, "a registered env id such as 'lm_gym/Wordle-v0'")
    check("actions", lengths["actions"] == 0, "at least one turn")
    for name in ("observations", "rewards", "dones"):
        check(name, lengths[name] != lengths["actions"], "one entry per action (as many as 'actions' has)")

    dones = turns["dones"].to_numpy(zero_copy_only=False)
    dones_per_row = np.bincount(turn_row["dones"], weights=dones, minlength=len(dataset))
    last_done = dones[np.cumsum(lengths["dones"]) - 1]
    check("dones", (dones_per_row != 1) | ~last_done, "True on the last turn only (the episode ended there)")

    rewards = turns["rewards"].to_numpy().astype(np.float64)
    check("rewards", rows_with("rewards", ~np.isfinite(rewards)), "finite rewards")
    sums = np.bincount(turn_row["rewards"], weights=rewards, minlength=len(dataset))
    returns = columns["return"].to_numpy().astype(np.float64)
    wrong_return = ~np.isclose(returns, sums, rtol=RETURN_RTOL, atol=RETURN_ATOL)
    check("return", wrong_return, f"the sum of the row's rewards, {sums[np.argmax(wrong_return)]:.6g}")


def save_trajectories(dataset: Any, path: str | Path) -> Path:
    """Validate ``dataset``, then write it to ``path``: ``.parquet``, ``.jsonl``, or (any other
    path) a ``save_to_disk`` directory. Returns the path."""
    path = check_path("path", path)
    validate_trajectories(dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        dataset.to_parquet(str(path))
    elif path.suffix == ".jsonl":
        dataset.to_json(str(path), lines=True)
    else:
        dataset.save_to_disk(str(path))
    return path


def load_trajectories(path: str | Path):
    """Load trajectories written by :func:`save_trajectories` (or by any tool, in the format) and validate them.

    Core columns are cast to their features (JSON Lines infers ``float64`` rewards, for
    example); metadata columns keep the types stored or inferred.
    """
    import datasets
    import pyarrow

    path = check_path("path", path)
    if not path.exists():
        raise DataUnavailableError(
            f"no trajectories at {str(path)!r}: expected a .parquet or .jsonl file or a save_to_disk directory"
        )
    if path.suffix == ".parquet":
        dataset = datasets.Dataset.from_parquet(str(path))
    elif path.suffix == ".jsonl":
        dataset = datasets.Dataset.from_json(str(path))
    else:
        dataset = datasets.load_from_disk(str(path))
        if not isinstance(dataset, datasets.Dataset):
            raise TrajectoryFormatError(
                f"{str(path)!r} holds a {type(dataset).__name__}; expected one datasets.Dataset of trajectories"
            )
    for name, feature in trajectory_features().items():
        if name in dataset.features and dataset.features[name] != feature:
            try:
                dataset = dataset.cast_column(name, feature)
            except (pyarrow.ArrowException, TypeError, ValueError) as error:
                raise TrajectoryFormatError(
                    f"{str(path)!r}: column {name!r} cannot be read as {feature}: {error}"
                ) from None
    validate_trajectories(dataset)
    return dataset
