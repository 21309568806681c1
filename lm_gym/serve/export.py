"""``python -m lm_gym.serve export ENV_ID DIR [options]``: an OpenEnv environment package of a task.

:func:`export_package` writes, for any registered task (a user's too), the folder OpenEnv 0.10's
tools read (``openenv validate DIR``, ``openenv build``, ``openenv push``; docs/serving.md):

- ``openenv.yaml``: the name, version and description, OpenEnv's ``validation:`` block (its reward
  range: :func:`reward_range`, from the task's declared return range,
  :meth:`lm_gym.core.text_env.TextEnv.value_ranges`, or ``--reward-range``) and, under
  ``lm_gym:``, the task's id, kwargs, action level and digest;
- ``server/app.py``: lm-gym's own server with the task and the chosen settings baked in;
- ``Dockerfile``: installs lm-gym (``--lm-gym-requirement``) and serves the task offline;
- ``README.md``: a Hugging Face Space's front matter, how to serve and play it, the task's manual
  (its class docstring);
- ``pyproject.toml`` and the typed client package (``models.py``: the task's ``Action``,
  ``Observation`` and ``State`` types; ``client.py``: an OpenEnv ``EnvClient``), which ``pip install``
  from the folder with OpenEnv as their only dependency;
- ``validation/runtime.json``: an episode ``openenv validate`` plays against the built image;
- the module that registers a user's task (``module:env_id``, or the task class's module), copied
  when it is a local file or folder.

The package is written into a fresh folder beside ``DIR`` and renamed to ``DIR`` at the end, so a
failed export leaves nothing behind; a ``DIR`` that exists and is not empty is refused.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import re
import shlex
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import yaml

from lm_gym.core.errors import ConfigurationError, LMGymError, safe_repr
from lm_gym.core.registration import task_class, task_spec
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.serve import export_templates as templates
from lm_gym.serve.config import (
    ServeConfig,
    add_session_arguments,
    add_task_arguments,
    parsed_env_kwargs,
    session_settings,
)
from lm_gym.serve.wire import describe_spaces

#: The default requirement line of lm-gym in the image (``--lm-gym-requirement``): this version, with the serve extra.
LM_GYM_REQUIREMENT = "lm-gym[serve]=={version}"
#: The utterance the validation episode plays each turn (a token-level package plays token 0).
PROBE_UTTERANCE = "hello"
#: OpenEnv's validation plays at most this many actions.
MAX_PROBE_ACTIONS = 100
_SESSION_DEFAULTS = ServeConfig(env_id="-")
#: The server's settings a package bakes in (``ServeConfig``'s fields; the command line's session options).
SESSION_FIELDS = (
    "max_sessions",
    "batch_window_ms",
    "batching",
    "workers",
    "max_message_bytes",
    "idle_timeout_s",
    "max_steps_per_s",
    "shutdown_grace_s",
)


@dataclass(frozen=True)
class ExportOptions:
    """What :func:`export_package` bakes in besides the task: the server's session settings
    (:class:`~lm_gym.serve.config.ServeConfig`'s fields of those names), the package's name (a
    Python identifier; default from the env id), the reward range (default: the task's declared
    return range), lm-gym's requirement line in the image and the task's other requirements, and
    ``insecure`` (the image serves beyond loopback without a token when none is set)."""

    max_sessions: int = _SESSION_DEFAULTS.max_sessions
    batch_window_ms: float = _SESSION_DEFAULTS.batch_window_ms
    batching: bool = _SESSION_DEFAULTS.batching
    workers: int = _SESSION_DEFAULTS.workers
    max_message_bytes: int = _SESSION_DEFAULTS.max_message_bytes
    idle_timeout_s: float = _SESSION_DEFAULTS.idle_timeout_s
    max_steps_per_s: float = _SESSION_DEFAULTS.max_steps_per_s
    shutdown_grace_s: float = _SESSION_DEFAULTS.shutdown_grace_s
    name: str | None = None
    reward_range: tuple[float, float] | None = None
    lm_gym_requirement: str | None = None
    requirements: tuple[str, ...] = field(default_factory=tuple)
    insecure: bool = False


def export_package(
    env_id: str,
    directory: str | os.PathLike,
    env_kwargs: dict[str, Any] | None = None,
    action_level: str = "utterance",
    options: ExportOptions | None = None,
) -> Path:
    """Write the OpenEnv environment package of task ``env_id`` (built with ``env_kwargs`` at
    ``action_level``) into ``directory``, which must not exist or be empty; return its path.

    Raises ``ConfigurationError`` for an unknown id, kwargs the task refuses, an action level it
    cannot be played at, a non-empty ``directory`` or a bad option; nothing is written then.
    """
    options = options or ExportOptions()
    target = _empty_target(directory)
    env_kwargs = {} if env_kwargs is None else env_kwargs
    config = ServeConfig(  # checks the id's type, the kwargs' type, the action level and the settings
        env_id=env_id,
        env_kwargs=env_kwargs,
        action_level=action_level,
        **{name: getattr(options, name) for name in SESSION_FIELDS},
    )
    _check_json("env_kwargs", env_kwargs)
    if options.reward_range is not None:
        _given_range(options.reward_range)  # before the task is built: a bad option fails at once
    spec = task_spec(env_id)  # ConfigurationError for an id that is not an lm-gym task
    package = _package_name(options.name or spec.id)
    env = _build(config)
    shipped, served_id = _task_module(env_id)
    files = _render(config, options, spec, env, package, served_id, shipped)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.export-{uuid.uuid4().hex[:12]}"
    staging.mkdir()  # beside DIR, so the rename below stays on one file system
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if shipped is not None:
            _copy_module(shipped, staging)
        _empty_target(target)  # again: something may have been written there meanwhile
        os.rename(staging, target)  # onto a missing or empty folder: the package appears whole or not at all
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _empty_target(directory: Any) -> Path:
    if not isinstance(directory, (str, os.PathLike)) or not str(directory):
        raise ConfigurationError(f"DIR must be a folder path, got {safe_repr(directory)}")
    target = Path(directory).expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise ConfigurationError(f"DIR {str(directory)!r} is a file; export writes a package folder")
    if target.is_dir() and any(target.iterdir()):
        raise ConfigurationError(f"DIR {str(directory)!r} is not empty; export into a new or empty folder")
    return target


def _check_json(name: str, value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{name} must be JSON (they are baked into the package): {error}") from None


def _build(config: ServeConfig) -> Any:
    """The task's env at its action level, as the server builds it; a task that cannot be built so is refused."""
    try:
        return gymnasium.make(config.env_id, action_level=config.action_level, **config.env_kwargs).unwrapped
    except LMGymError:
        raise
    except Exception as error:  # a task's constructor may fail in any way on arguments it does not expect
        raise ConfigurationError(
            f"{config.env_id} cannot be built with env_kwargs {safe_repr(config.env_kwargs)} at action_level "
            f"{config.action_level!r}: {type(error).__name__}: {error}"
        ) from error


def _task_module(env_id: str) -> tuple[Path | None, str]:
    """The file or folder of the module that registers a user's task, when it is local (not an installed
    distribution's, which the image installs through ``--requirement``), and the id the server is given."""
    module_name, _, name = env_id.rpartition(":")
    if not module_name:
        cls = task_class(env_id)
        if cls.__module__.partition(".")[0] == "lm_gym":
            return None, env_id
        module_name = cls.__module__  # the class's module registers it, as user tasks do
    top = module_name.partition(".")[0]
    if top == "lm_gym":
        return None, name
    module = sys.modules.get(top)
    source = getattr(module, "__file__", None)
    if source is None or {"site-packages", "dist-packages"} & set(Path(source).parts):
        return None, f"{module_name}:{name}"
    path = Path(source)
    return (path.parent if path.name == "__init__.py" else path), f"{module_name}:{name}"


def _copy_module(source: Path, staging: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, staging / source.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        shutil.copy2(source, staging / source.name)


def _package_name(name: str) -> str:
    package = re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()
    if not package or package[0].isdigit():
        package = f"env_{package}"
    if not package.isidentifier():
        raise ConfigurationError(f"--name must give a Python package name, got {safe_repr(name)}")
    return package


def _class_prefix(env_id: str) -> str:
    base = re.sub(r"-v\d+$", "", env_id.rpartition("/")[2])
    parts = [part for part in re.split(r"[^0-9a-zA-Z]+", base) if part]
    prefix = "".join(part[0].upper() + part[1:] for part in parts) or "Task"
    return prefix if prefix[0].isalpha() else f"Task{prefix}"


def reward_range(
    env_id: str, env_kwargs: dict[str, Any], given: tuple[float, float] | None = None, early_eos_penalty: float = 0.0
) -> tuple[float, float]:
    """The range of a step's reward, openenv.yaml's ``reward.range``: ``given``, else the task's declared return
    range for ``env_kwargs`` (with its registered defaults), widened to hold 0 (the reward of a step before the
    last, at the token level) and, at the token level, lowered by ``early_eos_penalty``. It must be finite
    (OpenEnv's manifest takes finite numbers only)."""
    if given is not None:
        return _given_range(given)
    spec = task_spec(env_id)
    declared = task_class(env_id).value_ranges(**{**spec.kwargs, **env_kwargs}).get("return")
    if declared is None or math.isinf(declared.low) or math.isinf(declared.high) or declared.low == declared.high:
        what = "no return range" if declared is None else f"the return range {declared}"
        raise ConfigurationError(
            f"{spec.id} declares {what} for env_kwargs {safe_repr(env_kwargs)} (TextEnv.value_ranges); "
            "OpenEnv's manifest needs a finite one: pass --reward-range LOW HIGH"
        )
    return min(float(declared.low) - early_eos_penalty, 0.0), max(float(declared.high), 0.0)


def _given_range(given: Any) -> tuple[float, float]:
    try:
        low, high = (float(value) for value in given)
    except (TypeError, ValueError):
        low, high = math.nan, math.nan
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ConfigurationError(f"--reward-range must be two finite numbers LOW < HIGH, got {safe_repr(given)}")
    return low, high


def _probe(env: Any, action_level: str) -> dict[str, Any]:
    """OpenEnv's runtime plan: episode 0 played with a fixed action until it ends (at most 100 actions)."""
    env.reset(seed=0)
    action = {"text": PROBE_UTTERANCE} if action_level == "utterance" else {"token": 0}
    actions = []
    while len(actions) < MAX_PROBE_ACTIONS:
        actions.append(action)
        _, _, terminated, truncated, _ = env.step(action.get("text", action.get("token")))
        if terminated or truncated:
            break
    return {"plan_schema_version": "1", "reset": {"episode_id": "validation-0", "seed": 0}, "actions": actions}


def _serve_arguments(config: ServeConfig, served_id: str) -> list[str]:
    arguments = [served_id, "--env-kwargs", json.dumps(config.env_kwargs, sort_keys=True)]
    arguments += ["--action-level", config.action_level]
    for name in SESSION_FIELDS:
        value = getattr(config, name)
        if name == "batching":
            arguments += [] if value else ["--no-batching"]
        elif value != getattr(_SESSION_DEFAULTS, name):
            arguments += [f"--{name.replace('_', '-')}", str(value)]
    return arguments


def _manifest(config: ServeConfig, options: ExportOptions, package: str, summary: str, low_high: tuple) -> dict:
    """openenv.yaml's content."""
    from lm_gym import __version__

    single_turn = issubclass(task_class(config.env_id), SingleTurnTextEnv)
    return {
        "spec_version": 1,
        "name": package,
        "version": __version__,
        "description": summary,
        "type": "space",
        "runtime": "fastapi",
        "app": "server.app:app",
        "port": 8000,
        "lm_gym": {
            "env_id": task_spec(config.env_id).id,
            "env_kwargs": config.env_kwargs,
            "action_level": config.action_level,
            "task_digest": config.task_digest(),
        },
        "validation": {
            "reward": {"range": list(low_high), "oracle_tolerance": 0.0, "floor_margin": 0.1},
            "resources": {"cpu": 1.0, "memory_mb": 4096, "disk_mb": 8192, "episode_timeout_s": 600.0},
            "network": {"mode": "no-network"},
            "capabilities": {"verifier": {"kind": "reward_channel"}, "task_api": True},
            "types": {"tags": ["lm-gym", "single-turn" if single_turn else "multi-turn", config.action_level]},
            "execution": {
                "kind": "openenv_ws",
                "probe_path": "validation/runtime.json",
                "dockerfile": "Dockerfile",
                "context": ".",
                "agent_boundary": "api",
                "requires_credentials": not options.insecure,
            },
        },
    }


def _render(config, options, spec, env, package, served_id, shipped) -> dict[str, str]:
    """The package's files (path -> text), but the copied module."""
    from lm_gym import __version__

    penalty = float(getattr(env, "early_eos_penalty", 0.0))  # a TokenLevel's, at the token level
    low_high = reward_range(config.env_id, config.env_kwargs, options.reward_range, penalty)
    manual = inspect.getdoc(task_class(config.env_id)) or f"lm-gym task {spec.id}."
    summary = f"lm-gym task {spec.id} ({config.action_level} level): {manual.splitlines()[0].strip()}"
    prefix = _class_prefix(spec.id)
    names = {
        "env_id": spec.id,
        "action_level": config.action_level,
        "version": __version__,
        "package": package,
        "client": f"{prefix}Env",
        "action": f"{prefix}Action",
        "observation": f"{prefix}Observation",
        "state": f"{prefix}State",
    }
    spaces = describe_spaces(env, config.action_level)
    if config.action_level == "utterance":
        names["example_field"] = f"text={PROBE_UTTERANCE!r}"
        action_fields = templates.UTTERANCE_FIELDS.substitute(max_action_length=spaces["max_action_length"])
        observation_fields = templates.TEXT_OBSERVATION_FIELDS
        action_doc, observation_doc = "An utterance.", "The text the policy sees."
    else:
        names["example_field"] = "token=0"
        action_fields = templates.TOKEN_ACTION_FIELDS.substitute(max_token=spaces["vocab_size"] - 1)
        observation_fields = templates.TOKEN_OBSERVATION_FIELDS
        action_doc, observation_doc = "One token id.", "The four arrays of the token MDP, as lists."
    arguments = _serve_arguments(config, served_id)
    requirement = options.lm_gym_requirement or LM_GYM_REQUIREMENT.format(version=__version__)
    requirements = [requirement, *options.requirements]
    packages = [package, f"{package}.server"]
    package_dir = {package: ".", f"{package}.server": "server"}
    py_modules = ""
    if shipped is not None and shipped.is_dir():
        found = sorted(path.parent for path in shipped.rglob("__init__.py") if "__pycache__" not in path.parts)
        for folder in found:
            dotted = ".".join(folder.relative_to(shipped.parent).parts)
            packages.append(dotted)
            package_dir[dotted] = folder.relative_to(shipped.parent).as_posix()
    elif shipped is not None:
        package_dir[""] = "."
        py_modules = f"py-modules = {json.dumps([shipped.stem])}\n"
    token_note = (
        "This package was exported with `--insecure`: without a token set, the image serves anyone who reaches it."
        if options.insecure
        else "and refuses to start without one."
    )
    return {
        "openenv.yaml": yaml.safe_dump(
            _manifest(config, options, package, summary, low_high), sort_keys=False, allow_unicode=True
        ),
        "__init__.py": templates.INIT.substitute(names),
        "models.py": templates.MODELS.substitute(
            names,
            action_fields=action_fields,
            observation_fields=observation_fields,
            action_doc=action_doc,
            observation_doc=observation_doc,
        ),
        "client.py": templates.CLIENT.substitute(names),
        "server/__init__.py": templates.SERVER_INIT,
        "server/app.py": templates.SERVER_APP.substitute(names, serve_arguments=_python_list(arguments)),
        "Dockerfile": templates.DOCKERFILE.substitute(
            names,
            requirements=" ".join(shlex.quote(line) for line in requirements),
            insecure=', "--insecure"' if options.insecure else "",
        ),
        "pyproject.toml": templates.PYPROJECT.substitute(
            names,
            description=json.dumps(summary),
            server_requirements=json.dumps(requirements),
            packages=json.dumps(packages),
            package_dir="{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in package_dir.items()) + " }",
            py_modules=py_modules,
        ),
        "README.md": templates.README.substitute(
            names,
            title=spec.id.replace("/", " "),
            summary=summary,
            serve_command="python -m lm_gym.serve " + " ".join(shlex.quote(a) for a in arguments),
            reward_range=f"[{low_high[0]:g}, {low_high[1]:g}]",
            token_note=token_note,
            manual=manual,
        ),
        "validation/runtime.json": json.dumps(_probe(env, config.action_level), indent=2) + "\n",
    }


def _python_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def parse_export_args(argv: list[str] | None = None) -> tuple[str, str, dict[str, Any], str, ExportOptions]:
    """``(env_id, dir, env_kwargs, action_level, options)`` of ``python -m lm_gym.serve export ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m lm_gym.serve export",
        description="Write an OpenEnv environment package of an lm-gym task: openenv.yaml, server, Dockerfile, client.",
    )
    parser.add_argument("env_id", help="a registered lm-gym id, or 'module:env_id' for one a module of yours registers")
    parser.add_argument("dir", metavar="DIR", help="the package folder to write (new or empty)")
    add_task_arguments(parser)
    add_session_arguments(parser)
    parser.add_argument("--name", help="the package's name (a Python package name; default: from the env id)")
    parser.add_argument(
        "--reward-range",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="openenv.yaml's reward range (default: the task's declared return range)",
    )
    parser.add_argument(
        "--lm-gym-requirement",
        metavar="REQ",
        help="how the image installs lm-gym: a pip requirement (default: lm-gym[serve]==this version)",
    )
    parser.add_argument(
        "--requirement",
        action="append",
        default=[],
        metavar="REQ",
        help="another pip requirement of the task for the image (repeatable): an installed task plugin, say",
    )
    parser.add_argument(
        "--insecure", action="store_true", help="the image serves beyond loopback without a token when none is set"
    )
    args = parser.parse_args(argv)
    env_kwargs = parsed_env_kwargs(parser, args.env_kwargs)
    options = ExportOptions(
        **session_settings(args),
        name=args.name,
        reward_range=None if args.reward_range is None else tuple(args.reward_range),
        lm_gym_requirement=args.lm_gym_requirement,
        requirements=tuple(args.requirement),
        insecure=args.insecure,
    )
    return args.env_id, args.dir, env_kwargs, args.action_level, options


def main(argv: list[str] | None = None) -> None:
    """``python -m lm_gym.serve export``: write the package, or exit with the typed error's message."""
    env_id, directory, env_kwargs, action_level, options = parse_export_args(argv)
    try:
        target = export_package(env_id, directory, env_kwargs, action_level, options)
    except ConfigurationError as error:
        sys.exit(f"python -m lm_gym.serve export: error: {type(error).__name__}: {error}")
    print(f"exported {env_id} ({action_level} level) to {target}; check: openenv validate {target} --skip-build")


__all__ = ["ExportOptions", "export_package", "main", "parse_export_args", "reward_range"]
