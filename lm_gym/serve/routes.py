"""lm-gym's own read-only HTTP routes, beside OpenEnv's: what a trainer reads about the served task.

- ``GET /lm-gym/task``: the task's description (:meth:`TaskRoutes.task`): ``env_id``,
  ``action_level``, ``spaces``, ``task_digest``, ``split`` (the split the task plays, ``null``
  when its class takes none), ``token_level_defaults``, ``generation_defaults``, ``single_turn``
  and ``num_samples`` (a single-turn task's samples, else ``null``).
- ``GET /lm-gym/tokenizer-corpus``: ``{"key", "texts", "stride"}``, the texts a tokenizer trained
  on the task's ``tokenizer_corpus()`` trains on (every ``stride``-th, at most about
  ``lm_gym.core.tokenizer.MAX_TRAINING_CHARS`` characters), so a client trains the tokenizer a
  local run trains (``lm_gym.core.tokenizer.StridedCorpus``).
- ``POST /lm-gym/corpus-metrics`` with ``{"episodes": [final infos], "task": name or null}``:
  ``{"metrics": lm_gym.metrics.corpus_metrics(env, episodes), "single_turn": bool}`` of the task,
  or with ``task`` of a mixture's task (``env.task_envs[task]``); no perplexity (a client computes
  that with its own language model: ``single_turn`` says whether it applies). Non-finite numbers
  come back as ``null``.

Nothing a client sends is code, a pickle or a file path: the episodes are JSON, bounded by the
server's ``--max-message-bytes`` (``413`` over it), and bad ones get a ``400`` reply naming the
typed error (``{"detail", "message", "error_type"}``, as the app's other HTTP errors).
"""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool

from lm_gym.core.errors import LMGymError
from lm_gym.core.registration import task_class
from lm_gym.core.task_setup import task_env
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.tokenizer import training_texts
from lm_gym.serve.errors import WireError, to_wire
from lm_gym.serve.wire import to_json

PREFIX = "/lm-gym"


def task_split(env_id: str, env_kwargs: dict[str, Any]) -> str | None:
    """The split task ``env_id`` plays with ``env_kwargs``: the argument or its default; ``None`` when it takes none."""
    parameter = inspect.signature(task_class(env_id).__init__).parameters.get("split")
    if parameter is None:
        return None
    split = env_kwargs.get("split", parameter.default)
    return None if split is inspect.Parameter.empty else str(split)


class TaskRoutes:
    """The routes' answers for one server process's task (``service``: its ``TaskService``)."""

    def __init__(self, service: Any):
        self.service = service
        self.text_env = task_env(service.prototype)
        self._corpus: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def task(self) -> dict[str, Any]:
        env, config = self.text_env, self.service.config
        single_turn = isinstance(env, SingleTurnTextEnv)
        return to_json(
            {
                "env_id": self.service.env_id,
                "action_level": config.action_level,
                "spaces": self.service.spaces,
                "task_digest": config.task_digest(),
                "split": task_split(config.env_id, config.env_kwargs),
                "token_level_defaults": dict(env.token_level_defaults),
                "generation_defaults": dict(env.generation_defaults),
                "single_turn": single_turn,
                "num_samples": len(env.samples) if single_turn else None,
            }
        )

    def tokenizer_corpus(self) -> dict[str, Any]:
        """Computed once per process (a task's default corpus plays episodes of a copy of the env)."""
        with self._lock:
            if self._corpus is None:
                key, corpus = self.text_env.tokenizer_corpus()
                texts = training_texts(corpus)
                self._corpus = {"key": str(key), "texts": list(texts), "stride": texts.stride}
            return self._corpus

    def corpus_metrics(self, body: bytes) -> dict[str, Any]:
        from lm_gym.metrics import corpus_metrics

        try:
            request = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            raise WireError("ProtocolError", f"the body is not JSON: {error}") from None
        if not isinstance(request, dict) or set(request) - {"episodes", "task"}:
            raise WireError("ProtocolError", 'the body must be {"episodes": [final infos], "task": name or null}')
        episodes, task = request.get("episodes"), request.get("task")
        if not isinstance(episodes, list) or not episodes or not all(isinstance(e, dict) for e in episodes):
            raise WireError("ProtocolError", "episodes must be a non-empty list of final infos (JSON objects)")
        env = self.text_env
        if task is not None:
            task_envs = getattr(env, "task_envs", None) or {}
            if not isinstance(task, str) or task not in task_envs:
                raise WireError(
                    "ConfigurationError", f"task must be one of the served task's tasks {sorted(task_envs)}"
                )
            env = task_envs[task]
        try:
            return to_json(
                {"metrics": corpus_metrics(env, episodes), "single_turn": isinstance(env, SingleTurnTextEnv)}
            )
        except LMGymError as error:
            raise to_wire(error) from None
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise WireError(
                "ProtocolError", f"the episodes do not fit the task's corpus metrics: {type(error).__name__}: {error}"
            ) from None


def add_task_routes(app: FastAPI, service: Any) -> TaskRoutes:
    """Add the ``/lm-gym/...`` routes of ``service``'s task to OpenEnv's ``app``."""
    routes = TaskRoutes(service)

    @app.get(f"{PREFIX}/task", tags=["lm-gym"], summary="The served task: ids, spaces, split and token-level defaults")
    async def task() -> dict[str, Any]:
        return routes.task()

    @app.get(f"{PREFIX}/tokenizer-corpus", tags=["lm-gym"], summary="The texts a task tokenizer trains on")
    async def tokenizer_corpus() -> dict[str, Any]:
        return await run_in_threadpool(routes.tokenizer_corpus)

    @app.post(f"{PREFIX}/corpus-metrics", tags=["lm-gym"], summary="The task's corpus metrics of final infos")
    async def corpus_metrics(request: Request) -> dict[str, Any]:
        body = await request.body()
        return await run_in_threadpool(routes.corpus_metrics, body)

    return routes


__all__ = ["PREFIX", "TaskRoutes", "add_task_routes", "task_split"]
