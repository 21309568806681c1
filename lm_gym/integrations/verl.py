"""lm-gym's tasks for verl (0.9) users: an agent loop that plays multi-turn episodes, and ``compute_score`` plus
parquet prompts for single-turn tasks (``pip install "lm-gym[verl]"``).

verl trains from parquet files of chat prompts (``prompt``, ``data_source``, ``reward_model``,
``extra_info`` and, for an agent loop, ``agent_name``, read by ``RLHFDataset``). A single-turn
rollout is one generation, scored by a reward function ``compute_score(data_source,
solution_str, ground_truth, extra_info)``; a multi-turn rollout is an agent loop
(``AgentLoopBase.run(sampling_params, **row) -> AgentLoopOutput``) that generates through
verl's server manager and returns the prompt's and the response's token ids, with a response
mask of 1 for the model's tokens and 0 for everything else. This module gives verl all three:

* :func:`write_parquet` (``python -m lm_gym.integrations.verl parquet ENV_ID DIR``): a task's
  prompts as verl's ``train.parquet`` and ``validation.parquet``, in the task's chat view
  (:mod:`lm_gym.core.chat`: its rules as the system message, its first observation as the
  user's). Single-turn tasks (IMDB, CommonGen, yours): a row per sample, its index in
  ``extra_info``. Multi-turn tasks (Wordle, VisDial, yours): a row per episode, episode ``i``
  being ``reset(seed=i)`` (:mod:`lm_gym.core.episodes`), its seed in ``extra_info``, so every
  rollout of a GRPO group plays the same game; the rows name the agent loop
  (``agent_name="lm_gym_agent"``), and ``DIR/agent_loop.yaml`` registers it with verl's workers.
* :func:`compute_score`: the task's reward of a single-turn row's completion, exactly what the
  env's ``step`` gives for that sample (a completion longer than the action space is cut to it).
* :class:`LMGymAgentLoop`: the multi-turn episode of a row, played against the lm-gym env:
  each turn the policy generates through verl's server manager, the env steps with the
  decoded reply and its answer is appended as the chat's next user message, tokenised by
  verl's own continuous-token builder and masked out (``response_mask`` 0). The episode's
  return is the trajectory's ``reward_score`` (verl's ``rm_scores``: no reward function runs),
  the per-turn rewards its ``extra_fields["turn_scores"]``; a reply the task judges bad gets the
  task's own penalty. An episode that outgrows ``rollout.response_length`` stops there, with
  its return so far.

Single-turn (CommonGen), then verl's trainer with these overrides::

    python -m lm_gym.integrations.verl parquet lm_gym/CommonGen-v0 data/commongen
    python -m verl.trainer.main_ppo data.train_files=data/commongen/train.parquet \\
        data.val_files=data/commongen/validation.parquet \\
        reward.custom_reward_function.path=pkg://lm_gym.integrations.verl ...

Multi-turn (Wordle) adds ``actor_rollout_ref.rollout.agent.agent_loop_config_path=
data/wordle/agent_loop.yaml``. A task of yours is registered in verl's worker processes by the
modules the rows name (``--import MODULE``, imported before the env is made).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from datasets import Dataset
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer

from lm_gym.cli import Command, command_parser
from lm_gym.core.episodes import SPLITS, TaskEpisodes
from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.validation import check_int
from lm_gym.integrations.chat_session import ChatSession
from lm_gym.integrations.trl import DEFAULT_GAMES, INDEX_COLUMN, MAX_TURNS, SEED_COLUMN

MODULE = "lm_gym.integrations.verl"  #: this module's name, also when it runs as ``python -m``
AGENT_NAME = "lm_gym_agent"  #: the ``agent_name`` of multi-turn rows: :class:`LMGymAgentLoop`
SINGLE_TURN_AGENT = "single_turn_agent"  #: verl's own agent loop, the ``agent_name`` of single-turn rows
ENV_ID_FIELD = "lm_gym_env_id"  #: ``extra_info``'s task id
ENV_KWARGS_FIELD = "lm_gym_env_kwargs"  #: ``extra_info``'s task arguments (JSON text, without the split)
IMPORTS_FIELD = "lm_gym_imports"  #: ``extra_info``'s modules that register the task (yours), imported first
RETURN_KEY = "lm_gym_return"  #: the episode's return, among the trajectory's ``reward_extra_info``
TURNS_KEY = "lm_gym_turns"  #: the replies the episode played
ENDED_KEY = "lm_gym_ended"  #: whether the episode ended (1.0) or ran out of response tokens (0.0)
AGENT_LOOP_CONFIG = "agent_loop.yaml"  #: the file that registers :class:`LMGymAgentLoop` with verl's workers


def episode_session(extra_info: Mapping[str, Any] | None) -> tuple[ChatSession, dict[str, Any]]:
    """The :class:`~lm_gym.integrations.chat_session.ChatSession` of a row's task (the task's modules
    imported, the env built with the row's arguments on its split) and the row's ``extra_info`` as a dict.
    A row that :func:`write_parquet` did not write raises :class:`~lm_gym.core.errors.ConfigurationError`."""
    info = dict(extra_info or {})
    missing = [name for name in (ENV_ID_FIELD, ENV_KWARGS_FIELD, "split") if name not in info]
    if missing:
        raise ConfigurationError(
            f"extra_info must hold {missing} (the lm-gym task of the row): write the parquet files with "
            f"python -m lm_gym.integrations.verl parquet ENV_ID DIR, got {safe_repr(info)}"
        )
    for module in info.get(IMPORTS_FIELD) or ():
        importlib.import_module(module)
    episodes = TaskEpisodes(info[ENV_ID_FIELD], json.loads(info[ENV_KWARGS_FIELD]))
    return ChatSession(info[ENV_ID_FIELD], episodes.split_kwargs(info["split"])), info


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **kwargs: Any
) -> float:
    """verl's reward function of a single-turn row: the reward of the task's env (the row's
    ``extra_info``) stepped with ``solution_str`` on the row's sample, exactly what its ``step`` gives
    (a completion longer than the action space is cut to it). ``data_source``, ``ground_truth``
    (the sample's references) and verl's extra keyword arguments are not needed: the sample's index
    says it all. Rows of multi-turn tasks are played by :class:`LMGymAgentLoop`, which gives their reward."""
    session, info = episode_session(extra_info)
    try:
        if not isinstance(session.task, SingleTurnTextEnv) or info.get(INDEX_COLUMN) is None:
            raise ConfigurationError(
                f"{info[ENV_ID_FIELD]} rows are episodes of several turns: verl plays them with the agent loop "
                f"{AGENT_NAME!r} (the rows' agent_name; actor_rollout_ref.rollout.agent.agent_loop_config_path="
                f"DIR/{AGENT_LOOP_CONFIG}), whose reward_score is the episode's return"
            )
        session.start(index=int(info[INDEX_COLUMN]))
        return session.play(solution_str).reward
    finally:
        session.close()


@register(AGENT_NAME)
class LMGymAgentLoop(AgentLoopBase):
    """verl's agent loop for a row of a multi-turn lm-gym task (see the module docstring).

    ``max_new_tokens`` (from the agent loop's config, e.g. ``DIR/agent_loop.yaml``) caps each
    reply's tokens; by default a reply may use what is left of ``rollout.response_length``.
    """

    def __init__(self, *args: Any, max_new_tokens: int | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.response_length = self.rollout_config.response_length
        self.max_new_tokens = None if max_new_tokens is None else check_int("max_new_tokens", max_new_tokens, 1)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        session, info = episode_session(kwargs.get("extra_info"))
        if info.get(SEED_COLUMN) is None:
            raise ConfigurationError(
                f"{info[ENV_ID_FIELD]} rows are single-turn samples: verl plays them with its "
                f"{SINGLE_TURN_AGENT!r} agent loop and reward.custom_reward_function.path=pkg://{MODULE}"
            )
        try:
            return await self._play(session, int(info[SEED_COLUMN]), sampling_params, kwargs)
        finally:
            session.close()

    async def _play(
        self, session: ChatSession, seed: int, sampling_params: dict[str, Any], row: dict[str, Any]
    ) -> AgentLoopOutput:
        messages, _ = session.start(seed=seed)
        prompt = [dict(message) for message in row.get("raw_prompt", messages)]
        if prompt != messages:
            raise ConfigurationError(
                f"the row's prompt is not the chat of episode {seed} of {session.env_id} with the row's arguments "
                f"(its first messages are {safe_repr(messages)}): rewrite the parquet files with the task as it is"
            )
        episode = _Trajectory(token_ids=await self.ct_build_initial_tokens(messages))
        request_id = uuid4().hex  # one id for the episode: the server keeps its prefix cached between turns
        for _ in range(MAX_TURNS):
            room = self.response_length - len(episode.response_mask)
            limit = room if self.max_new_tokens is None else min(room, self.max_new_tokens)
            with simple_timer("generate_sequences", episode.metrics):
                output = await self.server_manager.generate(
                    request_id=request_id,
                    prompt_ids=episode.token_ids,
                    sampling_params={**sampling_params, "max_tokens": limit},
                )
            merged, episode.response_mask, episode.logprobs = await self.ct_merge_assistant_token(
                episode.token_ids,
                output.token_ids,
                episode.response_mask,
                episode.logprobs if (episode.logprobs or output.log_probs) else None,
                assistant_logprobs=output.log_probs or None,
            )
            episode.token_ids = merged.token_ids
            reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            with simple_timer("tool_calls", episode.metrics):  # verl's name for the time the environment takes
                step = await self.loop.run_in_executor(None, session.play, reply)
            episode.turn_scores.append(step.reward)
            if step.answer is None:
                episode.ended, episode.task_metrics = True, step.info.get("metrics", {})
                break
            if len(episode.response_mask) >= self.response_length:
                break  # no room for the env's answer and another reply: the episode stops with its return so far
            chat = [dict(message) for message in session.transcript.messages]
            merged, response_mask, logprobs = await self.ct_merge_context_msg(
                chat[:-1], chat, episode.token_ids, episode.response_mask, episode.logprobs
            )
            if len(response_mask) >= self.response_length:
                break
            episode.token_ids, episode.response_mask, episode.logprobs = merged.token_ids, response_mask, logprobs
            episode.answers += 1
        else:
            raise RuntimeError(f"{session.env_id}: episode {seed} still running after {MAX_TURNS} turns")
        return episode.output(self.response_length)


@dataclass
class _Trajectory:
    """An episode as verl sees it while it is played: the token ids so far (prompt and response), the
    response's mask and log-probabilities, the rewards of the turns, the env's answers appended, whether
    the episode ended (and the task's metrics then), and verl's timings."""

    token_ids: list[int]
    response_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    turn_scores: list[float] = field(default_factory=list)
    answers: int = 0
    ended: bool = False
    task_metrics: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)

    def output(self, response_length: int) -> AgentLoopOutput:
        """The trajectory: the prompt's and the response's token ids (cut to ``response_length``), its mask and
        log-probabilities, the episode's return as its ``reward_score`` and the per-turn rewards."""
        start = len(self.token_ids) - len(self.response_mask)
        episode_return = float(sum(self.turn_scores))
        output = AgentLoopOutput(
            prompt_ids=self.token_ids[:start],
            response_ids=self.token_ids[start:][:response_length],
            response_mask=self.response_mask[:response_length],
            response_logprobs=self.logprobs[:response_length] if self.logprobs else None,
            reward_score=episode_return,
            num_turns=1 + len(self.turn_scores) + self.answers,  # the prompt, the replies, the env's answers
            metrics=self.metrics,
        )
        output.extra_fields.update(
            turn_scores=self.turn_scores,
            tool_rewards=[],
            lm_gym_metrics=self.task_metrics,
            reward_extra_info={
                RETURN_KEY: episode_return,
                TURNS_KEY: len(self.turn_scores),
                ENDED_KEY: float(self.ended),
            },
        )
        return output


def parquet_rows(
    env_id: str,
    split: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    num_prompts: int | None = None,
    imports: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The rows of task ``env_id``'s ``split`` in verl's RL dataset layout (see the module docstring).

    Single-turn tasks: one row per sample (the first ``num_prompts``; default all), its
    references as ``reward_model.ground_truth``. Multi-turn tasks: one row per episode, seeds
    ``0 .. num_prompts - 1`` (default 1,024, at most the split's episodes). ``imports`` are the
    modules that register the task (a task of yours), imported here and by verl's workers.
    """
    for module in imports:
        importlib.import_module(module)
    env_kwargs = dict(env_kwargs or {})
    try:
        kwargs_text = json.dumps(env_kwargs, sort_keys=True)
    except TypeError as error:
        raise ConfigurationError(f"env_kwargs must be JSON values (the rows carry them as JSON): {error}") from error
    if num_prompts is not None:
        num_prompts = check_int("num_prompts", num_prompts, 1)
    episodes = TaskEpisodes(env_id, env_kwargs)
    session = ChatSession(env_id, episodes.split_kwargs(split))
    common = {ENV_ID_FIELD: env_id, ENV_KWARGS_FIELD: kwargs_text, IMPORTS_FIELD: list(imports), "split": split}
    rows = []
    try:
        single_turn = isinstance(session.task, SingleTurnTextEnv)
        limit = num_prompts or (None if single_turn else DEFAULT_GAMES)
        count = episodes.num_episodes(split)
        for index in range(count if limit is None else min(count, limit)):
            if single_turn:
                messages, _ = session.start(index=index)
                truth: Any = list(session.task.samples[index].references)
                extra = {**common, "index": index, INDEX_COLUMN: index}
            else:
                messages, _ = session.start(seed=index)
                truth, extra = "", {**common, "index": index, SEED_COLUMN: index}
            rows.append(
                {
                    "data_source": env_id,
                    "prompt": messages,
                    "ability": "lm_gym",
                    "reward_model": {"style": "rule", "ground_truth": truth},
                    "extra_info": extra,
                    "agent_name": SINGLE_TURN_AGENT if single_turn else AGENT_NAME,
                }
            )
    finally:
        session.close()
    if not rows:
        raise ConfigurationError(f"{env_id} has no episodes on split {split!r} with these arguments")
    return rows


def write_parquet(
    env_id: str,
    directory: str | Path,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    splits: Sequence[str] = ("train", "validation"),
    num_prompts: int | None = None,
    imports: Sequence[str] = (),
) -> list[Path]:
    """Write ``<split>.parquet`` of task ``env_id`` into ``directory`` for each of ``splits`` (rows of
    :func:`parquet_rows`), and, for a multi-turn task, ``agent_loop.yaml`` registering
    :class:`LMGymAgentLoop`; returns the paths written."""
    unknown = [split for split in splits if split not in SPLITS]
    if unknown or not splits:
        raise ConfigurationError(f"splits must be among {list(SPLITS)}, got {safe_repr(list(splits))}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    multi_turn = False
    for split in splits:
        rows = parquet_rows(env_id, split, env_kwargs, num_prompts=num_prompts, imports=imports)
        multi_turn = rows[0]["agent_name"] == AGENT_NAME
        path = directory / f"{split}.parquet"
        Dataset.from_list(rows).to_parquet(str(path))
        paths.append(path)
    if multi_turn:
        path = directory / AGENT_LOOP_CONFIG
        path.write_text(f"- name: {AGENT_NAME}\n  _target_: {MODULE}.{LMGymAgentLoop.__qualname__}\n")
        paths.append(path)
    return paths


def _parquet_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("env_id", help="the task, e.g. lm_gym/Wordle-v0")
    parser.add_argument("directory", help="where <split>.parquet (and agent_loop.yaml) go")
    parser.add_argument("--env-kwargs", default="{}", help="the task's arguments as a JSON object")
    parser.add_argument("--splits", nargs="+", default=["train", "validation"], choices=SPLITS)
    parser.add_argument("--num-prompts", type=int, help="rows per split (default: every sample; 1,024 games)")
    parser.add_argument(
        "--import", dest="imports", action="append", default=[], metavar="MODULE",
        help="a module that registers the task (yours); repeatable",
    )  # fmt: skip


def _run_parquet(args: argparse.Namespace) -> int:
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}: {error}") from error
    if not isinstance(env_kwargs, dict):
        raise ConfigurationError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    paths = write_parquet(
        args.env_id, args.directory, env_kwargs, splits=args.splits, num_prompts=args.num_prompts, imports=args.imports
    )
    for path in paths:
        print(path)
    files = {path.stem: path for path in paths if path.suffix == ".parquet"}
    evaluation = files.get("validation") or files.get("test")
    overrides = [f"data.train_files={files['train']}"] if "train" in files else []
    overrides += [f"data.val_files={evaluation}"] if evaluation else []
    if paths[-1].name == AGENT_LOOP_CONFIG:
        overrides.append(f"actor_rollout_ref.rollout.agent.agent_loop_config_path={paths[-1]}")
    else:
        overrides.append(f"reward.custom_reward_function.path=pkg://{MODULE}")
    print("verl overrides: " + " ".join(overrides))
    return 0


COMMANDS = (
    Command(
        "parquet",
        "write a task's prompts as verl's parquet files",
        "Write DIR/<split>.parquet of an lm-gym task in verl's RL dataset layout (and DIR/agent_loop.yaml for a "
        "multi-turn task).",
        _parquet_arguments,
        _run_parquet,
    ),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser(f"python -m {MODULE}", "lm-gym's tasks as verl's RL datasets", COMMANDS)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
