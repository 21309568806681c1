"""The files of an exported OpenEnv environment package, as :class:`string.Template` texts.

:mod:`lm_gym.serve.export` fills them in (``$name`` placeholders; ``$$`` is a literal ``$``). The
layout is OpenEnv 0.10's (``openenv init``): the client package at the root (``__init__.py``,
``models.py``, ``client.py``), the server under ``server/``, ``openenv.yaml``, a ``Dockerfile`` at
the root (where ``openenv push`` wants it) and ``validation/runtime.json`` (the plan of the episode
``openenv validate`` plays in the built image).
"""

from string import Template

INIT = Template('''\
"""Typed OpenEnv client of lm-gym task $env_id ($action_level level), exported by lm-gym $version.

    from $package import $client, $action

    with $client(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)
        result = env.step($action($example_field))

The server (``server/``) needs lm-gym; this client needs only OpenEnv.
"""

from .client import $client
from .models import $action, $observation, $state

__all__ = ["$action", "$client", "$observation", "$state"]
''')

MODELS = Template('''\
"""The wire types of lm-gym task $env_id at the $action_level level, as its server publishes them
(``GET /schema``); lm-gym's ``lm_gym.serve.environment`` defines them on the server."""

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field


class $action(Action):
    """$action_doc"""

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=True, arbitrary_types_allowed=True)
$action_fields

class $observation(Observation):
    """$observation_doc"""

    terminated: bool = Field(default=False, description="the episode ended (Gymnasium's terminated)")
    truncated: bool = Field(default=False, description="the episode was cut (Gymnasium's truncated)")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info (JSON; see lm_gym.serve.wire)")
$observation_fields

class $state(State):
    """OpenEnv's state with the served task's id, action level, spaces, digest and split."""

    env_id: str = ""
    action_level: str = "utterance"
    spaces: dict[str, Any] = Field(default_factory=dict)
    task_digest: str = Field(default="", description="SHA-256 of the task's id, kwargs and action level")
    split: str | None = Field(default=None, description="the split the session plays (None: the task takes none)")
''')

UTTERANCE_FIELDS = Template("""\
    text: str = Field(
        description="the utterance (at most the task's max_action_length characters)",
        json_schema_extra={"maxLength": $max_action_length},
    )
""")

TOKEN_ACTION_FIELDS = Template("""\
    token: int = Field(
        description="a token id, 0 <= token < vocab_size",
        json_schema_extra={"minimum": 0, "maximum": $max_token},
    )
""")

TEXT_OBSERVATION_FIELDS = """\
    text: str = Field(default="", description="the observation text")
"""

TOKEN_OBSERVATION_FIELDS = """\
    prompt_ids: list[int] = Field(default_factory=list)
    prompt_mask: list[int] = Field(default_factory=list)
    context_ids: list[int] = Field(default_factory=list)
    context_mask: list[int] = Field(default_factory=list)
"""

CLIENT = Template('''\
"""The OpenEnv client of lm-gym task $env_id: one WebSocket session of its server."""

import os
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from .models import $action, $observation, $state

#: The environment variable holding the server's bearer token (lm-gym's ``LM_GYM_SERVE_TOKEN``).
TOKEN_VARIABLE = "LM_GYM_SERVE_TOKEN"


class $client(EnvClient[$action, $observation, $state]):
    """A session of a served $env_id: ``reset(seed=...)`` (or ``reset(split=..., index=...)``, OpenEnv's
    Task API), ``step($action(...))``, ``state()``.

    ``token``: the server's bearer token (else ``$$LM_GYM_SERVE_TOKEN`` if set); a server bound
    beyond loopback requires one. Other arguments are OpenEnv's ``EnvClient``'s.
    """

    def __init__(self, base_url: str | None = None, *, token: str | None = None, **kwargs: Any):
        token = token if token is not None else os.environ.get(TOKEN_VARIABLE)
        if token:
            kwargs["headers"] = {**(kwargs.get("headers") or {}), "Authorization": f"Bearer {token.strip()}"}
        super().__init__(base_url, **kwargs)

    def _step_payload(self, action: $action) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[$observation]:
        fields = {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)}
        observation = $observation.model_validate(fields)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> $state:
        return $state.model_validate(payload)
''')

SERVER_INIT = '''\
"""The server of the exported lm-gym task (``server.app``)."""
'''

SERVER_APP = Template('''\
"""The server of lm-gym task $env_id: lm-gym's own server (``python -m lm_gym.serve``) with the
task and the settings the export chose baked in (exported by lm-gym $version).

    python -m server.app [--host HOST] [--port PORT] [--token-file FILE] [--insecure] [...]

from this folder (as the Docker image runs it), or ``server`` once the package is installed; any
option of ``python -m lm_gym.serve`` given here overrides the baked one. ``app`` is the ASGI app
for ``uvicorn server.app:app`` on loopback (uvicorn does not tell the app which address it binds, so
serve beyond loopback through ``main``, which refuses to without a token unless ``--insecure``).
"""

import sys
from typing import Any

#: The task and the settings baked in: ``python -m lm_gym.serve`` arguments.
SERVE_ARGUMENTS = $serve_arguments


def settings(argv: list[str] | None = None) -> Any:
    """The server's ``ServeConfig``: the baked arguments, then ``argv`` (default: the command line's)."""
    from lm_gym.serve.config import parse_args

    return parse_args([*SERVE_ARGUMENTS, *(sys.argv[1:] if argv is None else argv)])


def warm_up() -> None:
    """Build the task once, so its data, reward model and tokenizer are fetched and cached (the image
    runs this while it is built, and serves offline)."""
    from lm_gym.serve.environment import TaskService

    TaskService(settings([])).batcher.shutdown()


def main() -> None:
    """Serve the task until SIGTERM or SIGINT."""
    from lm_gym.serve.app import serve

    serve(settings())


def __getattr__(name: str) -> Any:
    if name == "app":  # built on first use: importing the module for main() builds nothing
        from lm_gym.serve.app import ServedApp

        globals()["app"] = ServedApp(settings([])).asgi
        return globals()["app"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
''')

DOCKERFILE = Template("""\
# lm-gym task $env_id ($action_level level), exported by lm-gym $version.
# Build: docker build -t $package .   Run: docker run -p 8000:8000 -e LM_GYM_SERVE_TOKEN=... $package
FROM python:3.11-slim

WORKDIR /app/env
COPY . /app/env

# lm-gym with its serve extra (the export's --lm-gym-requirement), the task's other requirements, then this package
RUN pip install --no-cache-dir $requirements && pip install --no-cache-dir --no-deps .

# The task is built once now: its data, reward model and tokenizer are fetched into the image, and it serves offline.
ENV PYTHONPATH=/app/env ENABLE_WEB_INTERFACE=false
RUN python -c "from server.app import warm_up; warm_up()"
ENV HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s --retries=3 \\
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2)"
# Beyond loopback the server needs a token (LM_GYM_SERVE_TOKEN, e.g. a Space secret) unless exported with --insecure.
CMD ["python", "-m", "server.app", "--host", "0.0.0.0", "--port", "8000"$insecure]
""")

PYPROJECT = Template("""\
# lm-gym task $env_id, exported by lm-gym $version. `pip install .` installs the typed client (OpenEnv only);
# `pip install ".[server]"` adds what the server needs (lm-gym).
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-$package"
version = "$version"
description = $description
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["openenv>=0.10,<0.11"]

[project.optional-dependencies]
server = $server_requirements

[project.scripts]
server = "$package.server.app:main"

[tool.setuptools]
packages = $packages
package-dir = $package_dir
$py_modules""")

README = Template("""\
---
title: $title
emoji: 🎯
colorFrom: blue
colorTo: green
sdk: docker
app_port: 8000
tags:
  - openenv
  - lm-gym
---

# $env_id ($action_level level)

$summary

An [OpenEnv](https://github.com/meta-pytorch/OpenEnv) environment package of the lm-gym task
`$env_id`, exported by lm-gym $version with `python -m lm_gym.serve export`; the server is
lm-gym's own (`python -m lm_gym.serve`), with these settings baked in (`server/app.py`):

```
$serve_command
```

Rewards per step lie in $reward_range (`openenv.yaml`).

## Serve it

```bash
docker build -t $package .
docker run -p 8000:8000 -e LM_GYM_SERVE_TOKEN="$$(cat token.txt)" $package
# or without Docker, with lm-gym installed:  pip install ".[server]" && server --port 8000
```

The image binds 0.0.0.0, so it needs a bearer token (`LM_GYM_SERVE_TOKEN`, at least 16
characters; on a Hugging Face Space a secret: `openenv push --secret LM_GYM_SERVE_TOKEN=...`)
$token_note

## Play it

```python
from $package import $client, $action

with $client(base_url="http://127.0.0.1:8000", token=...).sync() as env:
    result = env.reset(seed=0)  # the reset seed is the episode: seed i plays the episode a local env plays
    # or episode 3 of a split (OpenEnv's Task API: GET /{env}/splits, POST /{env}/task, ...):
    # result = env.reset(split="validation", index=3)
    while not result.done:
        result = env.step($action($example_field))
        print(result.reward, result.observation)
```

`pip install .` installs this client (it needs only OpenEnv).

## The task

$manual
""")
