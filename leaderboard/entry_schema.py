"""The leaderboard entry's format: its limits, its JSON Schema (:data:`ENTRY_SCHEMA`), its canonical JSON,
and a schema error in words.

An entry is one method's runs on one board (``leaderboard/README.md``, "Entries"). The schema is strict:
no unknown field anywhere; every string bounded and free of control and invisible formatting characters
(``leaderboard.texts``); every number finite and within +-:data:`NUMBER_LIMIT`. Patterns are matched
against the whole string (:func:`entry_validator`). What a schema cannot say is checked by
``leaderboard.entry_checks``; a refusal of either is an :class:`EntryError`.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema

from leaderboard.boards import USER_ENV_ID_PATTERN, boards
from leaderboard.messages import field_path, json_type, shorten, shown
from leaderboard.texts import LINE_REFUSED_CHARACTERS, TEXT_REFUSED_CHARACTERS
from lm_gym.core.errors import LMGymError

SCHEMA_VERSION = 1
MAX_ENTRY_BYTES = 5_000_000  #: the largest entry file (and canonical form) accepted
NUMBER_LIMIT = 1e9  #: every number lies within +-NUMBER_LIMIT
NAME_LENGTH = 100
METHOD_LENGTH = 100
MODEL_LENGTH = 200
TEXT_LENGTH = 2000  #: description, and each sample's prompt and generation
MIN_RUNS, MAX_RUNS = 3, 20  #: runs (seeds) per task
MAX_CURVE_POINTS = 200
MAX_SAMPLES = 5
MAX_METRICS = 64  #: metrics per evaluation

# Characters no text may hold (leaderboard.texts): controls, unpaired surrogates, invisible formatting characters.

LINE_PATTERN = f"^[^{LINE_REFUSED_CHARACTERS}]*$"
TEXT_PATTERN = f"^[^{TEXT_REFUSED_CHARACTERS}]*$"
ENV_ID_PATTERN = "^lm_gym/[A-Za-z0-9]+-v[0-9]+$"
METRIC_NAME_PATTERN = "^(mean_|corpus_)[A-Za-z0-9_]{1,64}$|^(num_episodes|std_return)$"
VERSION_PATTERN = "^[A-Za-z0-9.+_-]{1,64}$"
COMMIT_PATTERN = "^[0-9a-f]{7,40}(-dirty)?$"
SHA256_PATTERN = "^[0-9a-f]{64}$"
DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
JOB_NAME_PATTERN = "^[A-Za-z0-9_.-]{1,64}(/[A-Za-z0-9_.%-]{1,64}){1,3}$"
LABEL_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.%-]{0,63}$"  #: never an option (verify passes labels to the harness)
SUITE_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"  #: a file name in benchmark/suites/, never a path
#: a K-sample statistic (lm_gym.results.samples_per_episode)
STATISTIC_PATTERN = "^(mean|best|pass)@[0-9]{1,4}$|^spread$"

_PATTERN_MEANINGS = {
    ENV_ID_PATTERN: "an env id (lm_gym/<Name>-v<N>)",
    USER_ENV_ID_PATTERN: "an env id ([<namespace>/]<Name>[-v<N>])",
    METRIC_NAME_PATTERN: "a metric name (mean_<name>, corpus_<name>, num_episodes or std_return)",
    VERSION_PATTERN: "a version (letters, digits, '.+_-')",
    COMMIT_PATTERN: "a git commit (7-40 lowercase hex digits, optionally -dirty)",
    SHA256_PATTERN: "a SHA-256 (64 lowercase hex digits)",
    DATE_PATTERN: "a date (YYYY-MM-DD)",
    JOB_NAME_PATTERN: "a job name (<task>/<algorithm>/seed<k>)",
    LABEL_PATTERN: "a label of the suite (letters, digits, '_.%-', starting with a letter or digit)",
    SUITE_NAME_PATTERN: "a suite's name (letters, digits, '_-', starting with a letter or digit)",
    STATISTIC_PATTERN: "a K-sample statistic (mean@K, best@K, pass@k or spread)",
}


def _number(minimum: float = -NUMBER_LIMIT) -> dict[str, Any]:
    return {"type": "number", "minimum": minimum, "maximum": NUMBER_LIMIT}


def _integer(minimum: float = -NUMBER_LIMIT) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": NUMBER_LIMIT}


def _text(max_length: int, *, min_length: int = 0, multiline: bool = False) -> dict[str, Any]:
    pattern = TEXT_PATTERN if multiline else LINE_PATTERN
    return {"type": "string", "minLength": min_length, "maxLength": max_length, "pattern": pattern}


def _evaluation(*, nullable: bool) -> dict[str, Any]:
    return {  # the object keywords apply to objects only, so null passes them
        "type": ["object", "null"] if nullable else "object",
        "required": ["num_episodes", "mean_return", "std_return"],
        "maxProperties": MAX_METRICS,
        "properties": {"num_episodes": _integer(1), "std_return": _number(0)},
        "propertyNames": {"pattern": METRIC_NAME_PATTERN},
        "additionalProperties": _number(),
    }


_SAMPLE = {
    "type": "object",
    "required": ["prompt", "generation", "return"],
    "additionalProperties": False,
    "properties": {
        "prompt": _text(TEXT_LENGTH, multiline=True),
        "generation": _text(TEXT_LENGTH, multiline=True),
        "return": _number(),
    },
}

_RUN = {
    "type": "object",
    "required": ["seed", "final_eval", "initial_eval", "curve", "wall_time_s", "samples"],
    "additionalProperties": False,
    "properties": {
        "seed": _integer(),
        "final_eval": _evaluation(nullable=False),
        "initial_eval": _evaluation(nullable=True),
        "curve": {  # [[step, mean_return], ...]
            "type": "array",
            "maxItems": MAX_CURVE_POINTS,
            "items": {"type": "array", "minItems": 2, "maxItems": 2, "prefixItems": [_integer(0), _number()]},
        },
        "wall_time_s": _number(0),
        "samples": {"type": "array", "maxItems": MAX_SAMPLES, "items": _SAMPLE},
        "sampling": {  # an evaluation entry's run only: result.json's sampling (K samples per episode)
            "type": "object",
            "required": ["samples_per_episode", "statistics", "malformed_replies"],
            "additionalProperties": False,
            "properties": {
                "samples_per_episode": _integer(1),
                "statistics": {
                    "type": "object",
                    "maxProperties": MAX_METRICS,
                    "propertyNames": {"pattern": STATISTIC_PATTERN},
                    "additionalProperties": _number(),
                },
                "malformed_replies": _integer(0),
            },
        },
    },
}

MAX_RECIPE_JOBS = 1000
#: the versions a recipe records (``lm_gym.results.library_versions``' keys)
RECIPE_VERSIONS = ("python", "lm_gym", "torch", "transformers", "gymnasium", "tokenizers", "datasets", "numpy")
MAX_ARGUMENTS = 200

_RECIPE = {  # how the runs were made, for ``python -m leaderboard verify`` (see leaderboard/README.md, "Verification")
    "type": "object",
    "required": ["suite", "algorithm", "tasks", "device", "versions", "jobs"],
    "additionalProperties": False,
    "properties": {
        "suite": {"type": "string", "pattern": SUITE_NAME_PATTERN},  # benchmark/suites/<suite>.toml, or a file's stem
        "algorithm": {"type": "string", "pattern": LABEL_PATTERN},  # the suite's algorithm label
        "tasks": {  # {env_id: the suite's task label}
            "type": "object",
            "maxProperties": 64,
            "propertyNames": {"maxLength": 130, "pattern": USER_ENV_ID_PATTERN},
            "additionalProperties": {"type": "string", "pattern": LABEL_PATTERN},
        },
        "device": _text(64, min_length=1),  # the torch device of the runs (cpu, cuda)
        "versions": {  # result.json's versions of the runs (python, torch, ...)
            "type": "object",
            "maxProperties": 32,
            "required": ["python", "lm_gym", "torch"],
            "propertyNames": {"enum": list(RECIPE_VERSIONS)},
            "additionalProperties": {"type": "string", "pattern": VERSION_PATTERN},
        },
        "jobs": {  # every job of the runs and the jobs they need (SFT warm starts, datasets), as the harness ran them
            "type": "array",
            "maxItems": MAX_RECIPE_JOBS,
            "items": {
                "type": "object",
                "required": ["name", "argv"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": JOB_NAME_PATTERN},  # <task>/<algorithm>/seed<k>
                    # the command line: the script (relative to the checkout) or -m module, then every flag;
                    # paths of the runs folder written {runs}/...
                    "argv": {"type": "array", "minItems": 1, "maxItems": MAX_ARGUMENTS, "items": _text(TEXT_LENGTH)},
                },
            },
        },
    },
}

_EVALUATION = {  # what re-runs an evaluation entry's runs (python -m benchmark evaluate), see leaderboard.evaluations
    "type": "object",
    "required": ["suite", "tasks", "model", "model_digest", "base_url", "api", "chat", "sampling", "argv"]
    + ["device", "versions"],
    "additionalProperties": False,
    "properties": {
        "suite": _RECIPE["properties"]["suite"],
        "tasks": _RECIPE["properties"]["tasks"],  # {env_id: the suite's task label}
        "model": _text(TEXT_LENGTH, min_length=1),  # a hub name, a checkpoint's path, or the served model's name
        "model_digest": {"type": ["string", "null"], "pattern": SHA256_PATTERN},  # a checkpoint's weights
        "base_url": {"type": ["string", "null"], "maxLength": TEXT_LENGTH, "pattern": LINE_PATTERN},
        "api": {"enum": ["chat", "completions", None]},  # a server's API (null: a local model)
        "chat": {"type": "boolean"},
        "sampling": {
            "type": "object",
            "required": ["episodes", "samples", "seed", "temperature", "top_p", "greedy"],
            "additionalProperties": False,
            "properties": {
                "episodes": _integer(1),
                "samples": _integer(1),
                "seed": _integer(),
                "temperature": _number(0),
                "top_p": _number(0),
                "greedy": {"type": "boolean"},
            },
        },
        # the arguments after `python -m benchmark evaluate`, the --out folder written {out}
        "argv": {"type": "array", "minItems": 1, "maxItems": MAX_ARGUMENTS, "items": _text(TEXT_LENGTH)},
        "device": _RECIPE["properties"]["device"],
        "versions": _RECIPE["properties"]["versions"],
    },
}


def _runs_of_tasks(key: str, count: int) -> dict[str, Any]:
    """A schema that bounds every task's number of runs (``key``: minItems or maxItems)."""
    return {"properties": {"tasks": {"additionalProperties": {"properties": {"runs": {key: count}}}}}}


#: The JSON Schema (2020-12) of a leaderboard entry. Patterns are matched against the whole
#: string (as ECMA-262's ``^...$`` does; Python's ``$`` would also accept a final newline).
ENTRY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "lm-gym leaderboard entry",
    "type": "object",
    "required": [
        "schema_version",
        "name",
        "method",
        "model",
        "description",
        "board",
        "library_version",
        "git_commit",
        "config_hash",
        "date",
        "tasks",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "name": _text(NAME_LENGTH, min_length=1),
        "method": _text(METHOD_LENGTH, min_length=1),
        "model": _text(MODEL_LENGTH, min_length=1),
        "description": _text(TEXT_LENGTH, multiline=True),
        "board": {"type": "string", "enum": sorted(boards())},
        "library_version": {"type": "string", "pattern": VERSION_PATTERN},
        "git_commit": {"type": ["string", "null"], "pattern": COMMIT_PATTERN},
        "config_hash": {"type": "string", "pattern": SHA256_PATTERN},
        "date": {"type": "string", "pattern": DATE_PATTERN, "format": "date"},
        "recipe": _RECIPE,  # optional: an entry without one cannot be verified
        "evaluation": _EVALUATION,  # an evaluation entry's, in place of a recipe: a model evaluated, not trained
        "tasks": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"maxLength": 64, "pattern": ENV_ID_PATTERN},
            "additionalProperties": {
                "type": "object",
                "required": ["runs"],
                "additionalProperties": False,
                "properties": {
                    "runs": {"type": "array", "minItems": 1, "maxItems": MAX_RUNS, "items": _RUN},
                },
            },
        },
    },
    # a trained entry's runs are MIN_RUNS seeds or more; an evaluation entry's, the one evaluation of each task
    "if": {"required": ["evaluation"]},
    "then": _runs_of_tasks("maxItems", 1),
    "else": _runs_of_tasks("minItems", MIN_RUNS),
}


def entry_schema() -> dict[str, Any]:
    """:data:`ENTRY_SCHEMA`, or with boards of your own (``--boards``) their names and env ids allowed too."""
    if sorted(boards()) == ENTRY_SCHEMA["properties"]["board"]["enum"]:
        return ENTRY_SCHEMA
    schema = copy.deepcopy(ENTRY_SCHEMA)
    schema["properties"]["board"]["enum"] = sorted(boards())
    # the tasks must be the board's own (checked after the schema), so any registered id passes here
    schema["properties"]["tasks"]["propertyNames"]["pattern"] = USER_ENV_ID_PATTERN
    return schema


class EntryError(LMGymError, ValueError):
    """A leaderboard entry (or entry file) that is refused; the message names every field at fault."""


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, no spaces, non-ASCII kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def entry_validator() -> jsonschema.protocols.Validator:
    """The validator of :func:`entry_schema` for the boards known now (one per set of boards)."""
    return _validator_of(tuple(sorted(boards())))


@functools.cache
def _validator_of(board_names: tuple[str, ...]) -> jsonschema.protocols.Validator:
    validator_class = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _whole_string_pattern})
    return validator_class(entry_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _whole_string_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """``pattern`` matched against the whole string, so that ``$`` cannot match before a final newline."""
    if validator.is_type(instance, "string") and not re.fullmatch(pattern, instance):
        yield jsonschema.ValidationError(f"{shown(instance)} does not match {pattern!r}")


def schema_problem(error: jsonschema.ValidationError) -> str:
    """``field: reason`` for a schema error, in words, quoting untrusted values only shortened."""
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    subject = f"key {shown(instance)}" if "propertyNames" in error.relative_schema_path else shown(instance)
    if keyword == "type":
        expected_types = " or ".join(expected) if isinstance(expected, list) else expected
        reason = f"expected {expected_types}, got {json_type(instance)}"
    elif keyword == "required":
        reason = "lacks " + ", ".join(name for name in expected if name not in instance)
    elif keyword == "additionalProperties":
        unknown = [key for key in instance if key not in error.schema.get("properties", {})]
        reason = "unknown field " + ", ".join(shown(key) for key in unknown[:3])
    elif keyword == "const":
        reason = f"must be {expected}"
    elif keyword == "enum":
        reason = f"{subject} is not one of {', '.join(expected)}"
    elif keyword in ("minLength", "maxLength"):
        bound = "at least" if keyword == "minLength" else "at most"
        reason = f"{subject} is {len(instance)} characters long, {bound} {expected} allowed"
    elif keyword in ("minItems", "maxItems", "minProperties", "maxProperties"):
        bound = "at least" if keyword.startswith("min") else "at most"
        reason = (
            f"has {len(instance)} {'items' if keyword.endswith('Items') else 'entries'}, {bound} {expected} allowed"
        )
    elif keyword in ("minimum", "maximum"):
        reason = f"{subject} is {'below' if keyword == 'minimum' else 'above'} {expected:g}"
    elif keyword == "pattern":
        reason = _pattern_problem(subject, expected, instance)
    elif keyword == "format":
        reason = f"{subject} is not a valid {expected}"
    else:
        reason = shorten(error.message, 200)
    return f"{field_path(error.absolute_path)}: {reason}"


def _pattern_problem(subject: str, pattern: str, instance: str) -> str:
    if pattern in (LINE_PATTERN, TEXT_PATTERN):
        refused = LINE_REFUSED_CHARACTERS if pattern == LINE_PATTERN else TEXT_REFUSED_CHARACTERS
        found = re.search(f"[{refused}]", instance)
        return f"holds the control or invisible character U+{ord(found.group()):04X} at index {found.start()}"
    return f"{subject} is not {_PATTERN_MEANINGS.get(pattern, f'matching {pattern!r}')}"
