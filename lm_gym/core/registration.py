"""Registering lm-gym tasks, and how ``gymnasium.make`` and ``gymnasium.make_vec`` build them.

:func:`register` registers any :class:`TextEnv` subclass (the eight built-in tasks and a
user's own) with Gymnasium under two entry points that name the class:
``"lm_gym.envs:make(module/Class)"`` builds the task's :class:`TextEnv` and, for
``action_level="token"``, the :class:`TokenLevel` MDP around it (:func:`make_env`);
``"lm_gym.envs:make_vec(module/Class)"`` builds the native :class:`TextVectorEnv` (or, at
token level, :class:`TokenVectorEnv`) (:func:`make_vector_env`). Being ``"module:callable"``
strings, they let ``env.spec.to_json()`` round trip and a spec rebuild its env in any process,
and the spec's kwargs stay the arguments the user gave. Gymnasium's registry is the only
registry: :func:`registered_tasks` lists the ids with such entry points, :func:`task_class`
reads an id's class (Gymnasium's ``"module:env_id"`` form imports the module first).

Packages ship tasks through the ``lm_gym.tasks`` entry-point group (:func:`load_task_plugins`,
run by ``import lm_gym``): each entry point names a module that registers its tasks on import,
or a function that does when called.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import os
import re
import sys
import warnings
from types import ModuleType
from typing import Any

import gymnasium
from gymnasium.envs.registration import EnvSpec

from lm_gym.core.errors import ConfigurationError, UnknownArgumentError, safe_repr
from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenLevel
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.tokenizer import load_tokenizer, train_tokenizer
from lm_gym.core.validation import check_choice, is_integer
from lm_gym.core.vector import TextVectorEnv

ACTION_LEVELS = ("utterance", "token")
#: Action levels that have a native ``vector_entry_point`` env.
NATIVE_VECTOR_LEVELS = ("utterance", "token")
#: The module whose attributes ``make(module/Class)`` and ``make_vec(module/Class)`` are the entry points.
ENTRY_POINT_MODULE = "lm_gym.envs"
_ENTRY_POINT_NAME = re.compile(r"(make|make_vec)\(([A-Za-z_][\w.]*)/([A-Za-z_][\w.]*)\)")
#: The entry-point group through which installed packages register their tasks.
PLUGIN_GROUP = "lm_gym.tasks"
#: Arguments that :func:`make_env` takes besides the task's own.
_ENV_ARGUMENTS = ("action_level", "render_mode")
_TOKEN_ARGUMENTS = (
    "tokenizer",
    "max_prompt_length",
    "max_new_tokens",
    "min_new_tokens",
    "prompt_truncation_side",
    "early_eos_penalty",
)
_CLASS_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
#: ``plugin name -> why it failed``, for the error of an id that such a plugin would have registered.
_FAILED_PLUGINS: dict[str, str] = {}


def register(env_id: str, entry_point: type[TextEnv] | str, **default_kwargs: Any) -> None:
    """Register the :class:`TextEnv` subclass ``entry_point`` (a class or a ``"module:Class"``
    string) as Gymnasium id ``env_id`` (``"namespace/Name-vN"``), with ``default_kwargs`` for its
    constructor (or for the token level: ``tokenizer``, ``max_new_tokens``, ...).

    Then ``gymnasium.make(env_id)`` builds it at utterance level, ``gymnasium.make(env_id,
    action_level="token")`` as the token-level MDP, and ``gymnasium.make_vec(env_id, num_envs,
    vectorization_mode="vector_entry_point")`` gives the native vector env at either level.
    Registering an id again replaces it (Gymnasium warns). Everything is checked before
    anything is registered: a bad id, a module that fails to import, a class that is not a
    ``TextEnv`` raise :class:`ConfigurationError`, a default its constructor does not take
    :class:`~lm_gym.core.errors.UnknownArgumentError` (a ``ConfigurationError`` and a ``TypeError``).
    """
    if not isinstance(env_id, str) or not env_id or ":" in env_id:
        raise ConfigurationError(f"env_id must be a Gymnasium id such as 'my/Task-v0', got {safe_repr(env_id)}")
    try:
        gymnasium.envs.registration.parse_env_id(env_id)
    except gymnasium.error.Error as error:
        raise ConfigurationError(f"env_id {env_id!r} is not a Gymnasium id ('namespace/Name-vN'): {error}") from error
    cls = _load_class(entry_point, "entry_point")
    _check_arguments(cls, default_kwargs, f"lm_gym.register({env_id!r}, ...)")
    reference = entry_point if isinstance(entry_point, str) else _class_reference(cls)
    if isinstance(reference, str):
        module, _, qualname = reference.partition(":")
        scalar, vector = (f"{ENTRY_POINT_MODULE}:{kind}({module}/{qualname})" for kind in ("make", "make_vec"))
    else:  # a class Python cannot import by name: callables (its spec is not JSON, as Gymnasium's rule is)
        scalar, vector = functools.partial(make_env, cls), functools.partial(make_vector_env, cls)
    gymnasium.register(
        id=env_id, entry_point=scalar, vector_entry_point=vector, kwargs=default_kwargs, disable_env_checker=False
    )


def entry_point_creator(name: str) -> functools.partial:
    """The creator that entry point name ``"make(module/Class)"`` or ``"make_vec(module/Class)"`` stands for."""
    match = _ENTRY_POINT_NAME.fullmatch(name)
    if match is None:
        raise AttributeError(f"module {ENTRY_POINT_MODULE!r} has no attribute {name!r}")
    kind, module, qualname = match.groups()
    return functools.partial(make_env if kind == "make" else make_vector_env, f"{module}:{qualname}")


def _spec_class(spec: EnvSpec) -> type[TextEnv] | str | None:
    """The task class (or ``"module:Class"``) that ``spec``'s entry point builds; ``None`` for other envs."""
    if isinstance(spec.entry_point, functools.partial) and spec.entry_point.func is make_env:
        return spec.entry_point.args[0]
    prefix = ENTRY_POINT_MODULE + ":"
    if isinstance(spec.entry_point, str) and spec.entry_point.startswith(prefix):
        match = _ENTRY_POINT_NAME.fullmatch(spec.entry_point[len(prefix) :])
        if match is not None and match.group(1) == "make":
            return f"{match.group(2)}:{match.group(3)}"
    return None


def registered_tasks() -> list[str]:
    """The ids of every registered lm-gym task (built-in, user-registered and plugins'), sorted."""
    return sorted(env_id for env_id, spec in gymnasium.registry.items() if _spec_class(spec) is not None)


def task_spec(env_id: str) -> EnvSpec:
    """The Gymnasium spec of lm-gym task ``env_id``; ``"module:env_id"`` imports ``module`` first."""
    if not isinstance(env_id, str):
        raise ConfigurationError(f"env_id must be a str, got {safe_repr(env_id)}")
    module, _, name = env_id.rpartition(":")
    if module:
        _import(module, f"env_id {env_id!r}")
    spec = gymnasium.registry.get(name)
    if spec is None:
        failed = "".join(f"; task plugin {plugin!r} failed to load: {why}" for plugin, why in _FAILED_PLUGINS.items())
        raise ConfigurationError(
            f"{safe_repr(env_id)} is not a registered lm-gym task (lm_gym.register it, or pass "
            f"'module:{name}' to import the module that registers it); registered: {registered_tasks()}{failed}"
        )
    if _spec_class(spec) is None:
        raise ConfigurationError(
            f"{name} is a Gymnasium env but not an lm-gym task (entry point {safe_repr(spec.entry_point)}): "
            "register a TextEnv subclass with lm_gym.register(env_id, entry_point) for the token level, "
            "the native vector envs, the baselines and the harness"
        )
    return spec


def task_id(env_id: str) -> str:
    """The registered id of ``env_id`` (``"module:env_id"`` gives ``env_id``, after importing ``module``)."""
    return task_spec(env_id).id


def task_class(env_id: str) -> type[TextEnv]:
    """The utterance-level :class:`TextEnv` class registered as ``env_id``."""
    return _load_class(_spec_class(task_spec(env_id)), "the task's entry point")


def split_kwargs(env_id: str, env_kwargs: dict[str, Any], split: str) -> dict[str, Any]:
    """``env_kwargs`` plus ``split`` when task ``env_id`` takes one (tasks without splits are played as they are)."""
    return {**env_kwargs, "split": split} if takes_argument(task_class(env_id), "split") else dict(env_kwargs)


def takes_argument(cls: type[TextEnv], name: str) -> bool:
    """Whether task class ``cls``'s constructor names an argument ``name`` (``split``, say)."""
    return name in inspect.signature(cls.__init__).parameters


def unknown_arguments(cls: type[TextEnv], names: Any) -> tuple[list[str], list[str]]:
    """The names among ``names`` that task class ``cls``'s constructor does not take (sorted; none when
    it takes ``**kwargs``), and the arguments it does take, for the error that names both."""
    parameters = inspect.signature(cls.__init__).parameters
    accepted = [name for name in parameters if name != "self"]
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return [], accepted
    return sorted(set(names) - set(accepted)), accepted


def token_settings(task: TextEnv | type[TextEnv], given: dict[str, Any]) -> dict[str, Any]:
    """A task's token-level settings: its ``token_level_defaults`` overridden by ``given`` (token-level
    arguments such as ``max_new_tokens``) and, unless ``given`` has one, its ``generation_defaults``'
    ``min_new_tokens``, lowered to ``max_new_tokens`` where larger.

    ``task`` is the task's class, or its env where the defaults depend on its arguments (an instance
    of ``lm_gym/Mixture-v0`` has its tasks' largest). What ``gymnasium.make(..., action_level="token")``
    gives :class:`TokenLevel` (unchecked: ``TokenLevel`` checks them), and what ``lm_gym/Mixture-v0``
    takes each of its tasks' protocol from.
    """
    settings = {**task.token_level_defaults, **given}
    if "min_new_tokens" not in given and "min_new_tokens" in task.generation_defaults:
        max_new_tokens = settings["max_new_tokens"]
        settings["min_new_tokens"] = task.generation_defaults["min_new_tokens"]
        if is_integer(max_new_tokens):  # TokenLevel reports a bad max_new_tokens itself
            settings["min_new_tokens"] = min(settings["min_new_tokens"], max_new_tokens)
    return settings


def load_task_plugins() -> None:
    """Run every ``lm_gym.tasks`` entry point of the installed packages (``import lm_gym`` does).

    An entry point names a module (``"mypkg.tasks"``), imported, or a function
    (``"mypkg.tasks:register_all"``), called. One that fails warns and registers nothing: the
    ids it registered before failing are removed again, and the ids it replaced come back.
    """
    for plugin in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        before = dict(gymnasium.registry)
        try:
            loaded = plugin.load()
            if callable(loaded) and not isinstance(loaded, ModuleType):
                loaded()
        except Exception as error:  # a third-party package must not break ``import lm_gym``
            gymnasium.registry.clear()
            gymnasium.registry.update(before)
            _FAILED_PLUGINS[plugin.name] = f"{type(error).__name__}: {error}"
            warnings.warn(
                f"lm-gym task plugin {plugin.name!r} ({plugin.value}) failed and registers nothing: "
                f"{type(error).__name__}: {error}",
                RuntimeWarning,
                stacklevel=2,
            )


def _import(module: str, context: str) -> ModuleType:
    """``module`` imported; one not found on ``sys.path`` is looked for in the current directory
    too (as uvicorn finds ``"module:app"``), so ``python baselines/ppo.py --env-id my_task:my/Task-v0``
    finds ``./my_task.py`` although Python put the script's folder first on the path."""
    try:
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module.partition(".")[0] or os.getcwd() in sys.path:
                raise
            sys.path.append(os.getcwd())
            return importlib.import_module(module)
    except Exception as error:  # a user's module may fail in any way while it runs
        raise ConfigurationError(
            f"{context}: importing module {module!r} failed: {type(error).__name__}: {error}"
        ) from error


def _load_class(reference: Any, name: str) -> type[TextEnv]:
    """The ``TextEnv`` subclass ``reference`` (a class or ``"module:Class"``), checked."""
    if isinstance(reference, str):
        if not _CLASS_PATH.fullmatch(reference):
            raise ConfigurationError(f"{name} must be 'module:Class' or a TextEnv subclass, got {safe_repr(reference)}")
        module, _, qualname = reference.partition(":")
        cls: Any = _import(module, f"{name} {reference!r}")
        for part in qualname.split("."):
            if not hasattr(cls, part):
                raise ConfigurationError(f"{name} {reference!r}: module {module!r} has no {qualname!r}")
            cls = getattr(cls, part)
    else:
        cls = reference
    if not (isinstance(cls, type) and issubclass(cls, TextEnv)):
        raise ConfigurationError(
            f"{name} must be a subclass of lm_gym.core.TextEnv (or 'module:Class' naming one), got {safe_repr(cls)}"
        )
    return cls


def _class_reference(cls: type[TextEnv]) -> type[TextEnv] | str:
    """``"module:Class"`` when that string imports ``cls`` back (the spec stays JSON), else the class."""
    # a class of a module Python did not import (exec'd code) or of __main__ (another module in a
    # subprocess) cannot be found by name again
    found: Any = sys.modules.get(cls.__module__) if cls.__module__ != "__main__" else None
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return f"{cls.__module__}:{cls.__qualname__}" if found is cls else cls


def _check_arguments(cls: type[TextEnv], kwargs: dict[str, Any], caller: str) -> None:
    """Refuse arguments that neither ``cls``'s constructor nor :func:`make_env` takes."""
    unknown, accepted = unknown_arguments(cls, set(kwargs) - set(_ENV_ARGUMENTS) - set(_TOKEN_ARGUMENTS))
    if unknown:
        others = f" (and {', '.join(unknown[1:])})" if len(unknown) > 1 else ""
        raise UnknownArgumentError(
            f"{caller}: {cls.__name__}() got an unexpected keyword argument {unknown[0]!r}{others}; it takes "
            f"{accepted}, and {list(_ENV_ARGUMENTS)} (with the token level's {list(_TOKEN_ARGUMENTS)})"
        )


def make_env(text_env: type[TextEnv] | str, *, action_level: str = "utterance", **kwargs: Any) -> gymnasium.Env:
    """The ``text_env`` class (or ``"module:Class"``) built with ``kwargs`` at the requested action
    level: what ``gymnasium.make`` of a registered task calls.

    At ``action_level="token"``, ``tokenizer`` (a ``transformers`` tokenizer, or a hub name
    or local path; ``None`` trains one on the task's text), ``max_prompt_length``,
    ``max_new_tokens``, ``min_new_tokens``, ``prompt_truncation_side`` and
    ``early_eos_penalty`` go to :class:`TokenLevel`, with the task's
    ``token_level_defaults`` and ``generation_defaults`` (a default ``min_new_tokens`` above
    ``max_new_tokens`` is lowered to it).
    """
    env, token_settings = _build_task(text_env, action_level, kwargs)
    if token_settings is None:
        return env
    return TokenLevel(env, **token_settings)


def make_vector_env(
    text_env: type[TextEnv] | str,
    num_envs: int = 1,
    *,
    action_level: str = "utterance",
    autoreset_mode: str = "NextStep",
    **kwargs: Any,
) -> TextVectorEnv | TokenVectorEnv:
    """The native batched vector env of ``text_env`` (what ``gymnasium.make_vec(...,
    vectorization_mode="vector_entry_point")`` of a registered task calls): a :class:`TextVectorEnv`,
    or at ``action_level="token"`` a :class:`TokenVectorEnv` (token arguments and defaults as
    :func:`make_env`)."""
    env, token_settings = _build_task(text_env, action_level, kwargs)
    if token_settings is None:
        return TextVectorEnv(env, num_envs, autoreset_mode)
    return TokenVectorEnv(env, num_envs, autoreset_mode=autoreset_mode, **token_settings)


def _build_task(
    text_env: type[TextEnv] | str, action_level: str, kwargs: dict[str, Any]
) -> tuple[TextEnv, dict[str, Any] | None]:
    """The task's utterance-level env and, at token level, the token-level arguments (see :func:`make_env`)."""
    check_choice("action_level", action_level, ACTION_LEVELS)
    cls = _load_class(text_env, "text_env")
    _check_arguments(cls, kwargs, "gymnasium.make")
    token_kwargs = {key: kwargs.pop(key) for key in _TOKEN_ARGUMENTS if key in kwargs}
    if action_level == "utterance" and token_kwargs:
        raise ConfigurationError(f"{sorted(token_kwargs)} only apply with action_level='token'")
    env = cls(**kwargs)
    if action_level == "utterance":
        return env, None
    tokenizer = resolve_tokenizer(env, token_kwargs.pop("tokenizer", None))
    # the env's own defaults: a class's, or an instance's that depend on its arguments (lm_gym/Mixture-v0)
    return env, {"tokenizer": tokenizer, **token_settings(env, token_kwargs)}


def resolve_tokenizer(env: TextEnv, tokenizer: Any):
    """A tokenizer object from a name/path, ``None`` (train on the task's text), or the object itself.

    ``TokenLevel`` checks that the object works as a tokenizer.
    """
    if tokenizer is None:
        key, corpus = env.tokenizer_corpus()
        return train_tokenizer(corpus, key)
    if isinstance(tokenizer, str):
        return load_tokenizer(tokenizer)
    return tokenizer
