"""lm-gym's tasks as verifiers 0.4 environments: a ``Taskset`` of a task's episodes and an ``Env`` that plays them.

verifiers 0.4 (``pip install "lm-gym[verifiers]"``; prime-rl and the Environments Hub read the same
tasksets) loads an environment by id: an installed top-level module whose ``__all__`` exports one
``vf.Taskset`` subclass and, optionally, one ``vf.Env`` subclass whose ``run(task, agents)`` drives
the turns. ``python -m lm_gym.integrations.verifiers export ENV_ID DIR [--env-kwargs JSON]`` writes
such a package for any lm-gym task, built-in or yours (a module of this file's :class:`LmGymTaskset`
with the task as its defaults, and :class:`LmGymEnv`)::

    python -m lm_gym.integrations.verifiers export lm_gym/Wordle-v0 envs/wordle && pip install envs/wordle
    vf-eval lm-gym-wordle-v0 -m MODEL --client.base-url http://127.0.0.1:8000/v1 -n 8 -r 4 --no-push

The folder is what ``prime env push`` publishes on the hub (not tried here: no hub access). In Python,
``LmGymTaskset(LmGymTasksetConfig(env_id=...))`` yields the tasks directly. A served task
(``python -m lm_gym.serve``) is played with verifiers' own ``OpenEnvTaskset`` (``base_url`` the server,
``resets`` of ``{"split": ..., "index": i}``: the Task API), not through this module.

* **Tasks** (:class:`LmGymTaskset`): episode ``i`` of a split is the episode that
  ``gymnasium.make(env_id, split=split, **env_kwargs).reset(seed=i)`` plays (the index is the reset
  seed, as in :mod:`lm_gym.core.episodes` and the served Task API). Each task carries the
  episode's seed, task id, arguments and split in its data, so every rollout of a group
  (``-r N``) plays the same state, and the chat view's first messages (:mod:`lm_gym.core.chat`:
  the task's rules as the system prompt, the first observation as the prompt). A task with a
  count of its own (a single-turn task's samples, VisDial's images) has that many episodes; one
  without (Wordle's games, your procedural task) has ``num_episodes`` (default
  :data:`DEFAULT_EPISODES`). A task of yours registered in module ``m`` is ``"m:user/MyTask-v0"``.
* **Turns** (:class:`LmGymEnv`): the model's reply is stepped into the env (one reset per rollout,
  from the task's seed), the env's answer (``TextEnv.chat_user_message``) is the next user turn,
  until the episode ends (or the agent's ``max_turns`` ends the exchange first). The trace gets the
  episode's return as its reward ``lm_gym_return``, the per-turn rewards and the step infos in
  ``trace.info["lm_gym"]`` beside it, and the task's last ``info["metrics"]`` as metrics.
* **Bad actions** are handled as the env handles them: a reply the task judges bad (a Wordle guess
  that is not a word) gets the task's own penalty. A reply longer than the task's action space,
  which ``env.step`` refuses with ``InvalidActionError``, is cut to its first
  ``action_space.max_length`` characters (what the task then plays; ``info["lm_gym_chars_cut"]``
  says how many were dropped): a model's generation is bounded in tokens, not characters, and a
  refused step would end the rollout with no reward at all. The SkyRL and GEM adapters do the same
  (:mod:`lm_gym.integrations.chat_session`).

The model plays through verifiers' tool-less chat harness (``null``) in a local subprocess
(``runtime.type subprocess``): the env steps the task in the eval's own process, so nothing of
lm-gym runs in the agent's box. That harness is a ``uv`` script, so ``uv`` must be on the ``PATH``
(the extra installs it); its few packages (openai, mcp, httpx) come from PyPI on first use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import split_kwargs
from lm_gym.integrations.chat_session import ChatSession

#: Episodes of a task that has no count of its own (seeds ``0 .. DEFAULT_EPISODES - 1``), unless ``num_episodes`` says.
DEFAULT_EPISODES = 1024

#: The trace reward that holds the episode's return (the sum of its per-turn rewards).
RETURN_REWARD = "lm_gym_return"

#: The ``trace.info`` key of an episode's per-turn record (see :meth:`LmGymEnv.run`).
TRACE_INFO_KEY = "lm_gym"


class LmGymData(vf.TaskData):
    """One episode of an lm-gym task: which task, built how, on which split, reset with which seed."""

    env_id: str
    """The lm-gym task id (``lm_gym/Wordle-v0``; a task of yours as ``module:user/MyTask-v0``)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """The task's keyword arguments (``split`` is the ``split`` field's)."""
    split: str = "train"
    """The split the episode is played on (a task that takes no split plays the same episodes on each)."""
    seed: int
    """The reset seed: the episode's identity (the same seed, the same starting state)."""


class LmGymTask(vf.Task[LmGymData]):
    """An lm-gym episode. Its reward is what the env returned, recorded by :class:`LmGymEnv` (no scoring hooks)."""


class LmGymTasksetConfig(vf.TasksetConfig):
    """Which task and episodes (``--env.taskset.*`` on ``vf-eval``)."""

    env_id: str = ""
    """The lm-gym task id (required)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """The task's keyword arguments (on the command line as JSON: ``--env.taskset.env-kwargs '{"n": 1}'``)."""
    split: str = "train"
    """The split whose episodes the taskset yields: ``train``, ``validation`` or ``test``."""
    num_episodes: int | None = Field(None, ge=1)
    """How many episodes (seeds ``0 .. num_episodes - 1``); default: the task's own count, else
    :data:`DEFAULT_EPISODES`. More than a task's own count replays its items with other seeds."""


def _session(data: LmGymData) -> ChatSession:
    """A fresh env of ``data``'s task on its split (a replicate of one prototype per task and arguments)."""
    if "split" in data.env_kwargs:
        raise ConfigurationError(
            f"env_kwargs must not hold 'split' ({safe_repr(data.env_kwargs['split'])}); the split field sets it"
        )
    return ChatSession(data.env_id, split_kwargs(data.env_id, data.env_kwargs, data.split))


def _first_messages(session: ChatSession, seed: int) -> tuple[str | None, str]:
    """The system prompt (the task's rules, or ``None``) and first observation of episode ``seed``."""
    messages, _ = session.start(seed=seed)
    system = messages[0]["content"] if messages[0]["role"] == "system" else None
    return system, messages[-1]["content"]


class LmGymTaskset(vf.Taskset[LmGymTask, LmGymTasksetConfig]):
    """The episodes of an lm-gym task on a split, one :class:`LmGymTask` each (see the module docstring)."""

    def load(self):
        config = self.config
        if not config.env_id:
            raise ConfigurationError(
                "env_id must name an lm-gym task (--env.taskset.env-id lm_gym/Wordle-v0), got none"
            )
        template = LmGymData(env_id=config.env_id, env_kwargs=dict(config.env_kwargs), split=config.split, seed=0)
        if config.split not in ("train", "validation", "test"):
            raise ConfigurationError(f"split must be 'train', 'validation' or 'test', got {safe_repr(config.split)}")
        session = _session(template)
        count = config.num_episodes or session.task.num_episodes() or DEFAULT_EPISODES
        for seed in range(count):
            system, prompt = _first_messages(session, seed)
            data = template.model_copy(
                update={"seed": seed, "name": f"{config.env_id}#{seed}", "system_prompt": system, "prompt": prompt}
            )
            yield LmGymTask(data, config.task)


class LmGymEnvConfig(vf.EnvConfig):
    """The env's one seat, ``player`` (``--env.player.*``): verifiers' tool-less chat harness in a local subprocess."""

    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})


def _reply(segment: vf.Segment) -> str:
    """The model's reply of ``segment`` as it wrote it (``Segment.last_reply`` strips it; the task sees the text)."""
    for message in reversed(segment.messages):
        if isinstance(message, vf.AssistantMessage):
            content = message.content
            if isinstance(content, str) or content is None:
                return content or ""
            return "".join(part.text for part in content if isinstance(part, vf.TextContentPart))
    return segment.last_reply


class LmGymEnv(vf.Env[LmGymEnvConfig]):
    """Plays an :class:`LmGymTask`'s episode: the task's env answers each of the model's replies (module docstring)."""

    async def run(self, task, agents) -> None:
        data = task.data
        session = await asyncio.to_thread(_session, data)
        system, prompt = await asyncio.to_thread(_first_messages, session, data.seed)
        if (system, prompt) != (data.system_prompt, data.prompt):
            raise ConfigurationError(
                f"{data.env_id} reset with seed {data.seed} began another episode than the task's prompt: "
                "the task is not reproducible from its seed (or the task data was edited)"
            )
        steps: list[dict[str, Any]] = []
        ended = False
        try:
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    step = await asyncio.to_thread(session.play, _reply(segment))
                    ending = {"terminated": step.terminated, "truncated": step.truncated}
                    steps.append({"reward": step.reward, **ending, "info": step.info})
                    if step.answer is None:
                        ended = True
                        break
                    segment = await interaction.turn(step.answer)
        finally:
            session.close()
        rewards = [step["reward"] for step in steps]
        trace = interaction.trace
        trace.record_reward(RETURN_REWARD, float(sum(rewards)))
        trace.info[TRACE_INFO_KEY] = {
            "env_id": data.env_id,
            "split": data.split,
            "seed": data.seed,
            "turn_rewards": rewards,
            "episode_ended": ended,
            "steps": steps,
        }
        metrics = steps[-1]["info"].get("metrics", {}) if steps else {}
        trace.record_metrics({name: float(value) for name, value in metrics.items() if _is_number(value)})
        trace.record_metric("lm_gym_turns", float(len(steps)))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---- export: an installable environment package of one task ---------------------------------------------------


def package_names(env_id: str) -> tuple[str, str]:
    """The distribution (``lm-gym-wordle-v0``) and module (``lm_gym_wordle_v0``) names of task ``env_id``'s package."""
    registered = env_id.rsplit(":", 1)[-1]
    slug = re.sub(r"[^a-z0-9]+", "-", registered.lower()).strip("-")
    if not slug.startswith("lm-gym"):
        slug = f"lm-gym-{slug}"
    return slug, slug.replace("-", "_")


def _class_prefix(module: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in module.split("_") if part)


def export(env_id: str, directory: str | Path, env_kwargs: dict[str, Any] | None = None, split: str = "train") -> Path:
    """Write an installable verifiers environment package of task ``env_id`` (built with ``env_kwargs``) into
    ``directory`` (new or empty): ``pyproject.toml``, the module (a taskset whose defaults are this task,
    and :class:`LmGymEnv`) and a ``README.md`` from the task's manual. Returns the package's folder.

    ``pip install DIR`` makes it loadable by id (``vf-eval lm-gym-wordle-v0``); the task is checked first
    (one episode is reset), so a bad id or argument raises :class:`ConfigurationError` and writes nothing.
    """
    import lm_gym
    from lm_gym.core.chat import chat_task

    env_kwargs = dict(env_kwargs or {})
    folder = Path(directory)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigurationError(f"directory must be a new or empty folder, got {str(folder)!r} (not empty)")
    session = _session(LmGymData(env_id=env_id, env_kwargs=env_kwargs, split=split, seed=0))
    _first_messages(session, 0)
    manual = (type(chat_task(session.task)).__doc__ or f"The lm-gym task {env_id}.").strip()
    session.close()
    distribution, module = package_names(env_id)
    prefix = _class_prefix(module)
    summary = manual.splitlines()[0].strip()
    files = {
        "pyproject.toml": _PYPROJECT.format(
            distribution=distribution,
            module=module,
            description=json.dumps(f"{env_id} (lm-gym) as a verifiers environment: {summary}"),
            lm_gym_version=lm_gym.__version__,
        ),
        f"{module}/__init__.py": _MODULE.format(
            env_id=env_id,
            prefix=prefix,
            env_id_literal=repr(env_id),
            env_kwargs_literal=repr(env_kwargs),
            split_literal=repr(split),
        ),
        "README.md": _README.format(
            env_id=env_id,
            distribution=distribution,
            env_kwargs=json.dumps(env_kwargs),
            split=split,
            manual=manual,
        ),
    }
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


_PYPROJECT = """\
[project]
name = "{distribution}"
version = "0.1.0"
description = {description}
requires-python = ">=3.11"
dependencies = ["lm-gym[verifiers]>={lm_gym_version}", "verifiers>=0.4,<0.5"]

[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[tool.setuptools]
packages = ["{module}"]
"""

_MODULE = '''\
"""lm-gym's {env_id} as a verifiers environment (written by ``python -m lm_gym.integrations.verifiers export``)."""

import verifiers.v1 as vf

from lm_gym.integrations.verifiers import LmGymEnv, LmGymTask, LmGymTaskset, LmGymTasksetConfig


class {prefix}Config(LmGymTasksetConfig):
    """{env_id}'s episodes; every field can be changed under ``--env.taskset.*``."""

    env_id: str = {env_id_literal}
    env_kwargs: dict = {env_kwargs_literal}
    split: str = {split_literal}


class {prefix}Taskset(LmGymTaskset, vf.Taskset[LmGymTask, {prefix}Config]):
    """{env_id}'s episodes (episode i: the task reset with seed i)."""


__all__ = ["{prefix}Taskset", "{prefix}Config", "LmGymEnv"]
'''

_README = """\
# {distribution}

lm-gym's `{env_id}` as a [verifiers](https://github.com/PrimeIntellect-ai/verifiers) 0.4 environment,
written by `python -m lm_gym.integrations.verifiers export`. Task arguments: `{env_kwargs}`; split: `{split}`.

```bash
pip install .
vf-eval {distribution} -m MODEL --client.base-url http://127.0.0.1:8000/v1 -n 8 -r 4 --no-push
```

Episode `i` is the task reset with seed `i`, so every rollout of a group plays the same state. The
reward `lm_gym_return` is the episode's return; `trace.info["lm_gym"]` holds the per-turn rewards.
Change the task's arguments with `--env.taskset.env-kwargs JSON`, the split with `--env.taskset.split`,
the number of episodes with `--env.taskset.num-episodes`.

## The task

{manual}
"""


def main(argv: list[str] | None = None) -> None:
    """``python -m lm_gym.integrations.verifiers export ENV_ID DIR [--env-kwargs JSON] [--split SPLIT]``."""
    parser = argparse.ArgumentParser(prog="python -m lm_gym.integrations.verifiers", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    exporter = commands.add_parser("export", help="write an installable verifiers environment package of a task")
    exporter.add_argument("env_id", help="the lm-gym task id (a task of yours: module:user/MyTask-v0)")
    exporter.add_argument("directory", help="the package's folder (new or empty)")
    exporter.add_argument("--env-kwargs", default="{}", help="the task's keyword arguments as a JSON object")
    exporter.add_argument("--split", default="train", choices=("train", "validation", "test"))
    args = parser.parse_args(argv)
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as error:
        parser.error(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r} ({error})")
    if not isinstance(env_kwargs, dict):
        parser.error(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    try:
        folder = export(args.env_id, args.directory, env_kwargs, args.split)
    except ConfigurationError as error:
        parser.exit(2, f"error: {error}\n")
    print(f"wrote {folder}: pip install {folder} && vf-eval {package_names(args.env_id)[0]} ...")


__all__ = [
    "DEFAULT_EPISODES",
    "RETURN_REWARD",
    "TRACE_INFO_KEY",
    "LmGymData",
    "LmGymEnv",
    "LmGymEnvConfig",
    "LmGymTask",
    "LmGymTaskset",
    "LmGymTasksetConfig",
    "export",
    "package_names",
]

if __name__ == "__main__":
    main(sys.argv[1:])
