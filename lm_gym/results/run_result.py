"""The one run-result format: ``result.json``, written by every baseline, read by the harness and leaderboard.

A result is a JSON object (schema: :data:`RESULT_SCHEMA`, JSON Schema 2020-12):

=====================  ==========================================================================
field                  content
=====================  ==========================================================================
``schema_version``     ``1``
``env_id``             the registered env id, e.g. ``"lm_gym/IMDB-v0"`` (a run given Gymnasium's
                       ``"module:env_id"`` form records ``env_id``; ``config`` keeps the form given)
``algorithm``          ``"sft"``, ``"bc"``, ``"filtered_bc"`` (%BC), ``"ppo"``, ``"nlpo"``,
                       ``"ilql"``, ...; one agent's run of a multi-agent env names the agent
                       (``"bc-questioner"``, ``"ippo"``, ``"ippo-scripted-answerer"``)
``seed``               the run's seed
``config``             the run's arguments (the baseline's ``Args`` as a dict)
``initial_eval``       evaluation of the starting policy (see below); null when the run was told
                       not to evaluate (e.g. ``--eval-episodes 0``)
``final_eval``         evaluation of the final policy, with the same metric names (null likewise)
``curves``             list of rows ``{"step": int, <name>: number, ...}``: training statistics per
                       step (an optimizer step for supervised algorithms, an iteration for RL);
                       rows with an evaluation hold it as ``"eval/<metric>"``
``wall_time_s``        the run's wall time, resumed parts included
``tokens_per_s``       tokens per second of the algorithm's main loop (generated tokens for RL,
                       training tokens for supervised learning)
``episodes_per_s``     episodes per second of training (rollouts for RL, demonstrations for
                       supervised learning)
``peak_memory_mb``     peak GPU memory on CUDA, peak resident memory on CPU
``checkpoint``         the final checkpoint's path relative to the folder of ``result.json``, or null
``versions``           ``{"lm_gym": ..., "python": ..., "torch": ..., ...}``
``git_commit``         the lm-gym checkout's commit (``"<sha>-dirty"`` with local changes), or null
``created``            ISO 8601 time the result was written
``device``             the torch device the run used
``world_size``         optional: the number of processes of a data-parallel run (``torchrun``); 1 when absent
``samples``            optional: a few episodes of the final evaluation, each ``{"prompt": str,
                       "generation": str, "return": number}`` (``lm_gym.results.evaluation``; the
                       leaderboard shows them)
``sampling``           optional, an evaluation run's (``algorithm`` ``"eval"``: ``python -m benchmark
                       evaluate``, ``initial_eval`` null, no curves): ``{"samples_per_episode": K,
                       "statistics": {"mean@K": ..., "best@K": ..., "spread": ..., "pass@k": ...},
                       "malformed_replies": int}`` (``lm_gym.results.samples_per_episode``)
``tasks``              optional, a run on several tasks (``lm_gym/Mixture-v0``): each task's own
                       results, ``{"<task id>": {"initial_eval": <evaluation>, "final_eval":
                       <evaluation>}}``, over the evaluation episodes whose ``info["task"]`` is
                       that task; its corpus metrics are there too
=====================  ==========================================================================

An evaluation is ``{"num_episodes": int, "mean_return": float, "std_return": float,
"mean_<metric>": float, ...}``, one ``mean_<metric>`` per numeric key of the task's
``info["metrics"]`` (IMDB: ``mean_sentiment``, ``mean_num_words``; Wordle: ``mean_solved``,
``mean_num_guesses``, ...), and one ``corpus_<metric>`` per metric of the whole set of
episodes (``lm_gym.metrics.corpus_metrics``: ``corpus_bleu``, ``corpus_cider``,
``corpus_distinct_2``, ``corpus_perplexity_generations``, ...).
``lm_gym.results.evaluation.summarize_episodes`` computes it, so every algorithm reports the same
names. Numbers are finite (the file is written with ``allow_nan=False``).

Use :func:`make_result` to fill the bookkeeping fields (the evaluation fields from
``Evaluation.result_fields(initial, final)``), :func:`write_result` to validate and write
atomically, :func:`load_result` / :func:`validate_result` to read and check
(``Evaluation.of_result`` reads the evaluations back).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import numbers
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from lm_gym.core.errors import LMGymError
from lm_gym.core.ranges import Range

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"
MAX_SAMPLES = 16
#: The ``algorithm`` of an evaluation run (a model evaluated, nothing trained: ``python -m benchmark evaluate``).
EVALUATION_ALGORITHM = "eval"
SAMPLE_TEXT_CHARS = 2000  #: a sample's prompt and generation are cut to this many characters
_VERSIONED_PACKAGES = ("lm-gym", "torch", "transformers", "gymnasium", "tokenizers", "datasets", "numpy")

_EVALUATION = {  # null: the run did not evaluate (the object keywords apply to objects only)
    "type": ["object", "null"],
    "required": ["num_episodes", "mean_return", "std_return"],
    "properties": {
        "num_episodes": {"type": "integer", "minimum": 1},
        "mean_return": {"type": "number"},
        "std_return": {"type": "number", "minimum": 0},
    },
    "propertyNames": {"pattern": "^(num_episodes|mean_[A-Za-z0-9_]+|corpus_[A-Za-z0-9_]+|std_return)$"},
    "additionalProperties": {"type": "number"},
}

#: The JSON Schema of ``result.json``.
RESULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "lm-gym run result",
    "type": "object",
    "required": [
        "schema_version",
        "env_id",
        "algorithm",
        "seed",
        "config",
        "initial_eval",
        "final_eval",
        "curves",
        "wall_time_s",
        "tokens_per_s",
        "episodes_per_s",
        "peak_memory_mb",
        "checkpoint",
        "versions",
        "git_commit",
        "created",
        "device",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "env_id": {"type": "string", "minLength": 1},
        "algorithm": {"type": "string", "pattern": "^[a-z0-9_%-]+$"},
        "seed": {"type": "integer"},
        "config": {"type": "object"},
        "initial_eval": _EVALUATION,
        "final_eval": _EVALUATION,
        "curves": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["step"],
                "properties": {"step": {"type": "integer", "minimum": 0}},
                "additionalProperties": {"type": "number"},
            },
        },
        "wall_time_s": {"type": "number", "minimum": 0},
        "tokens_per_s": {"type": "number", "minimum": 0},
        "episodes_per_s": {"type": "number", "minimum": 0},
        "peak_memory_mb": {"type": "number", "minimum": 0},
        "checkpoint": {"type": ["string", "null"]},
        "versions": {"type": "object", "required": ["lm_gym", "python"], "additionalProperties": {"type": "string"}},
        "git_commit": {"type": ["string", "null"]},
        "created": {"type": "string", "format": "date-time"},
        "device": {"type": "string"},
        "world_size": {"type": "integer", "minimum": 1},
        "tasks": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["initial_eval", "final_eval"],
                "additionalProperties": False,
                "properties": {"initial_eval": _EVALUATION, "final_eval": _EVALUATION},
            },
        },
        "sampling": {
            "type": "object",
            "required": ["samples_per_episode", "statistics", "malformed_replies"],
            "additionalProperties": False,
            "properties": {
                "samples_per_episode": {"type": "integer", "minimum": 1},
                "statistics": {
                    "type": "object",
                    "propertyNames": {"pattern": "^((mean|best|pass)@[1-9][0-9]*|spread)$"},
                    "additionalProperties": {"type": "number"},
                },
                "malformed_replies": {"type": "integer", "minimum": 0},
            },
        },
        "samples": {
            "type": "array",
            "maxItems": MAX_SAMPLES,
            "items": {
                "type": "object",
                "required": ["prompt", "generation", "return"],
                "additionalProperties": False,
                "properties": {
                    "prompt": {"type": "string"},
                    "generation": {"type": "string"},
                    "return": {"type": "number"},
                },
            },
        },
    },
}


class ResultFormatError(LMGymError, ValueError):
    """A ``result.json`` that does not follow :data:`RESULT_SCHEMA`."""


def library_versions() -> dict[str, str]:
    """Versions of Python and the libraries a result depends on."""
    versions = {"python": platform.python_version()}
    for package in _VERSIONED_PACKAGES:
        try:
            versions[package.replace("-", "_")] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    versions.setdefault("lm_gym", "unknown")
    return versions


def git_commit(directory: str | Path | None = None) -> str | None:
    """The commit of the git checkout holding ``directory`` (default: lm-gym's source), or None."""
    directory = Path(directory or Path(__file__).resolve().parent)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=directory, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if status.stdout.strip() else "")


def make_result(
    *,
    env_id: str,
    algorithm: str,
    seed: int,
    config: Mapping[str, Any],
    initial_eval: Mapping[str, float] | None,
    final_eval: Mapping[str, float] | None,
    curves: Sequence[Mapping[str, Any]],
    wall_time_s: float,
    tokens_per_s: float,
    episodes_per_s: float,
    peak_memory_mb: float,
    checkpoint: str | None,
    device: str,
    samples: Sequence[Mapping[str, Any]] = (),
    world_size: int = 1,
    tasks: Mapping[str, Mapping[str, Any]] | None = None,
    sampling: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A result with the bookkeeping fields filled in (schema version, versions, commit, time)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "env_id": env_id.rpartition(":")[2],  # "module:env_id" names the module that registers env_id
        "algorithm": algorithm,
        "seed": seed,
        "config": dict(config),
        "initial_eval": None if initial_eval is None else dict(initial_eval),
        "final_eval": None if final_eval is None else dict(final_eval),
        "curves": [dict(row) for row in curves],
        "wall_time_s": wall_time_s,
        "tokens_per_s": tokens_per_s,
        "episodes_per_s": episodes_per_s,
        "peak_memory_mb": peak_memory_mb,
        "checkpoint": checkpoint,
        "versions": library_versions(),
        "git_commit": git_commit(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "samples": [dict(sample) for sample in samples],
        "world_size": world_size,
        **({"tasks": {task: dict(results) for task, results in tasks.items()}} if tasks else {}),
        **({"sampling": dict(sampling)} if sampling is not None else {}),
    }


def evaluation_ranges(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> dict[str, Range]:
    """The range of each key of an evaluation of task ``env_id`` made with ``env_kwargs``, as the task and the
    metrics declare them (``lm_gym.core.ranges``): ``num_episodes`` a count of at least 1; ``mean_return`` the
    task's return range and ``std_return`` at most half its width; ``mean_<name>`` the range of
    ``info["metrics"]["<name>"]`` (a mean, so not necessarily whole); ``corpus_<name>`` the corpus metric's
    (``lm_gym.metrics.corpus.corpus_ranges``). A key the task and metrics do not declare is absent, as is every
    key but ``num_episodes`` of a task that is not registered here."""
    ranges = {"num_episodes": Range(1, math.inf, integer=True), "std_return": Range(0.0)}
    try:
        import lm_gym  # noqa: F401  (registers the envs)
        from lm_gym.core.registration import task_class

        declared = task_class(env_id.rpartition(":")[2]).value_ranges(**dict(env_kwargs or {}))
    except Exception:  # not a registered lm-gym task, or arguments it does not take: nothing declared
        return ranges
    from lm_gym.metrics.corpus import corpus_ranges

    ranges.update({f"corpus_{name}": value for name, value in corpus_ranges().items()})
    ranges.update({f"mean_{name}": value.mean() for name, value in declared.items()})
    if "return" in declared:
        ranges["mean_return"] = declared["return"].mean()
        ranges["std_return"] = declared["return"].spread()
    return ranges


def out_of_range(evaluation: Mapping[str, Any], ranges: Mapping[str, Range]) -> list[tuple[str, Any, Range]]:
    """``(key, value, range)`` of each number of ``evaluation`` outside its range in ``ranges``."""
    return [
        (key, value, ranges[key])
        for key, value in evaluation.items()
        if key in ranges
        and isinstance(value, numbers.Real)
        and math.isfinite(value)
        and not ranges[key].contains(value)
    ]


def result_ranges(result: Mapping[str, Any]) -> dict[str, Range]:
    """:func:`evaluation_ranges` of a result's task and env arguments (``config["env_kwargs"]``, a JSON text or
    an object); only ``num_episodes``'s where those cannot be read."""
    kwargs = result.get("config", {}).get("env_kwargs") if isinstance(result.get("config"), dict) else None
    if isinstance(kwargs, str):
        try:
            kwargs = json.loads(kwargs)
        except ValueError:
            kwargs = None
    if kwargs is not None and not isinstance(kwargs, dict):
        kwargs = None
    env_id = result.get("env_id")
    return evaluation_ranges(env_id, kwargs) if isinstance(env_id, str) else {}


def validate_result(result: Any, check_ranges: bool = True) -> None:
    """Raise :class:`ResultFormatError` listing every way ``result`` breaks the format.

    ``check_ranges``: also refuse numbers of ``initial_eval``, ``final_eval`` and ``samples`` outside the ranges
    the task and metrics declare (:func:`evaluation_ranges`); :func:`write_result` leaves this to the reader, so
    that a long run's result is written whatever it holds."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(RESULT_SCHEMA, format_checker=jsonschema.FormatChecker())
    problems = [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in validator.iter_errors(result)
    ]
    if isinstance(result, dict):
        problems += [f"{path}: {value!r} is not finite" for path, value in _non_finite(result)]
        initial, final = result.get("initial_eval"), result.get("final_eval")
        if isinstance(initial, dict) and isinstance(final, dict) and set(initial) != set(final):
            problems.append(f"initial_eval and final_eval name different metrics: {sorted(set(initial) ^ set(final))}")
        evaluation_run = result.get("algorithm") == EVALUATION_ALGORITHM
        if (initial is None) != (final is None) and not (evaluation_run and initial is None):
            problems.append("initial_eval and final_eval must both be evaluations or both be null")
        if evaluation_run and (initial is not None or result.get("curves")):
            problems.append(f"an evaluation run ({EVALUATION_ALGORITHM!r}) has no initial_eval and no curves")
        tasks = result.get("tasks")
        for task, evaluations in tasks.items() if isinstance(tasks, dict) else ():
            initial, final = (
                evaluations.get(key) if isinstance(evaluations, dict) else None
                for key in ("initial_eval", "final_eval")
            )
            if isinstance(initial, dict) and isinstance(final, dict) and set(initial) != set(final):
                problems.append(f"tasks/{task}: initial_eval and final_eval name different metrics")
        if check_ranges and not problems:
            ranges = result_ranges(result)
            for name in ("initial_eval", "final_eval"):
                evaluation = result.get(name)
                problems += [
                    f"{name}/{key}: {value!r} is not {declared} (the range its task or metric declares)"
                    for key, value, declared in out_of_range(evaluation if isinstance(evaluation, dict) else {}, ranges)
                ]
            for index, sample in enumerate(result.get("samples") or []):
                problems += [
                    f"samples/{index}/return: {value!r} is not {declared} (the task's return range)"
                    for _, value, declared in out_of_range({"mean_return": sample.get("return")}, ranges)
                ]
        checkpoint = result.get("checkpoint")
        if isinstance(checkpoint, str) and (
            PurePosixPath(checkpoint).is_absolute() or ".." in PurePosixPath(checkpoint).parts
        ):
            problems.append(f"checkpoint: {checkpoint!r} must be a path relative to the result's folder, inside it")
    if problems:
        raise ResultFormatError("invalid run result:\n  " + "\n  ".join(problems[:20]))


def write_result(out_dir: str | Path, result: Mapping[str, Any]) -> Path:
    """Validate ``result`` (its form; ranges are checked when it is read) and write ``out_dir/result.json``
    atomically; returns its path."""
    validate_result(dict(result), check_ranges=False)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (RESULT_FILE + ".tmp")
    tmp.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    os.replace(tmp, out_dir / RESULT_FILE)
    return out_dir / RESULT_FILE


def load_result(path: str | Path) -> dict[str, Any]:
    """Read and validate a ``result.json`` (or the one inside a run folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULT_FILE
    try:
        result = json.loads(path.read_text(), parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
        raise ResultFormatError(f"cannot read {path}: {error}") from None
    validate_result(result)
    return result


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a finite number")


def _non_finite(value: Any, path: str = "") -> list[tuple[str, float]]:
    if isinstance(value, float):
        return [] if math.isfinite(value) else [(path or "<root>", value)]
    if isinstance(value, dict):
        return [item for key, inner in value.items() for item in _non_finite(inner, f"{path}/{key}".lstrip("/"))]
    if isinstance(value, (list, tuple)):
        return [item for index, inner in enumerate(value) for item in _non_finite(inner, f"{path}/{index}".lstrip("/"))]
    return []
