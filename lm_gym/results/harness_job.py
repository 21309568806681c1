"""The record of one harness job: ``harness_job.json`` in the job's folder, beside its ``result.json``.

The harness (``python -m benchmark run``) writes it as it starts the job; ``python -m leaderboard submit``
builds an entry's recipe from the records of the entry's runs, and ``verify`` compares a re-run's records
with the recipe. A record says by its fields which job it is, so that no reader takes it from the folder's
place:

=============  ============================================================================================
field          content
=============  ============================================================================================
``suite``      the suite's name, its file's name less ``.toml`` (``smoke``)
``job``        the job's name in the suite, ``<task>/<algorithm>/seed<k>`` or ``<task>/data/<name>``, which
               is also its folder in the suite's runs folder
``task``       the suite's label of the task (``imdb``)
``algorithm``  the suite's label of the algorithm (``ppo``), ``"data"`` for a data job
``seed``       the job's seed; null for a data job
``argv``       the command after the interpreter: a script and its flags, or ``-m MODULE`` and its flags
=============  ============================================================================================

A harness older than these fields wrote ``argv`` alone: :func:`read_harness_job` refuses such a record,
naming the fields it lacks (re-running the job writes them); :func:`read_harness_argv` reads the command of
any record.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lm_gym.core.errors import LMGymError

HARNESS_JOB_FILE = "harness_job.json"


class HarnessJobError(LMGymError, ValueError):
    """A job folder's ``harness_job.json`` that cannot be read, or that lacks fields; the message says which."""


@dataclass(frozen=True)
class HarnessJob:
    """What the harness ran in one job folder (the fields of the module docstring)."""

    suite: str
    job: str
    task: str
    algorithm: str
    seed: int | None
    argv: tuple[str, ...]


_FIELD_TYPES = {"suite": str, "job": str, "task": str, "algorithm": str, "seed": (int, type(None)), "argv": list}


def write_harness_job(out_dir: str | Path, job: HarnessJob) -> Path:
    """Write ``out_dir/harness_job.json`` atomically (creating the folder); returns its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / HARNESS_JOB_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**asdict(job), "argv": list(job.argv)}, indent=1))
    os.replace(tmp, path)
    return path


def read_harness_job(out_dir: str | Path) -> HarnessJob:
    """The record in ``out_dir``; :class:`HarnessJobError` when it cannot be read, lacks a field (one an older
    harness wrote) or holds a value of the wrong type."""
    path = Path(out_dir) / HARNESS_JOB_FILE
    record = _read(path)
    missing = [name for name in _FIELD_TYPES if name not in record]
    if missing:
        raise HarnessJobError(
            f"{path} lacks {', '.join(missing)}: an older harness wrote it. Re-run the job (remove its folder "
            "and run the suite again) so that its record says which suite, task, algorithm and seed it ran"
        )
    wrong = [
        name
        for name, kind in _FIELD_TYPES.items()
        if not isinstance(record[name], kind) or (name == "seed" and isinstance(record[name], bool))
    ]
    if wrong or not all(isinstance(argument, str) for argument in record["argv"]):
        raise HarnessJobError(f"{path}: {', '.join(wrong) or 'argv'} of the wrong type")
    return HarnessJob(**{name: record[name] for name in _FIELD_TYPES if name != "argv"}, argv=tuple(record["argv"]))


def read_harness_argv(out_dir: str | Path) -> list[str] | None:
    """The command a job's record holds, whichever harness wrote it; None without a readable one."""
    try:
        argv = _read(Path(out_dir) / HARNESS_JOB_FILE)["argv"]
    except (HarnessJobError, KeyError):
        return None
    return argv if isinstance(argv, list) else None


def _read(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise HarnessJobError(f"cannot read {path}: {error}") from None
    if not isinstance(record, dict):
        raise HarnessJobError(f"{path}: not a JSON object")
    return record
