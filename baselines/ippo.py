"""Independent PPO (IPPO) for lm-gym's multi-agent envs: agents that learn to talk to each other (CleanRL style).

``--env-id`` names the task; its PettingZoo version (``lm_gym.multiagent``) is played:
``lm_gym/VisDial-v0`` -> ``visdial_v0`` (a questioner and an answerer, cooperative: both get the
round's reward), ``lm_gym/DailyDialog-v0`` -> ``dailydialog_v0`` (two speakers continuing a
dataset conversation, each scored on its own utterances).

* Every learning agent is PPO of ``ppo.py`` on its own transitions: its own policy (or, with
  ``--shared-policy``, one policy whose prompt ends with the agent's name), value head, frozen
  reference and per-token KL, adaptive KL controller, GAE over its own turns; ``ppo.py``'s
  ``advantages_and_returns``, ``update`` and ``adapt_kl_coef`` do the work. ``--value-norm`` (the
  default, MAPPO's value normalisation): each value head predicts its agent's returns normalised by
  their running mean and std, so VisDial's returns near -10 do not give a value loss that swamps the
  policy's in the shared trunk (without it, the answerer's policy fell apart in a few iterations).
* Rollouts (``lm_toolkit.multiagent_rollouts``): ``--num-envs`` copies of the parallel env play one
  game each per iteration. Every cycle, each agent speaks in the copies where it is the active
  agent: one batched sampling pass of its policy with the KV cache (the others hand in ``""``,
  which the env ignores). An agent's transition is one of its utterances, rewarded with everything
  the agent received from that cycle until its next turn (VisDial: a question is rewarded when it
  is answered).
* ``--shaping-info KEY``: training rewards also get ``--shaping-coef`` x each change of a potential
  made of the env's numeric info ``KEY`` (clipped to ``--shaping-range``), the dense reward of Das et
  al. (2017), where the game's own reward is -1 a round until the cutoff. ``--shaping-potential
  log-gap`` takes ``-ln(HIGH - value + 0.001)``: a step counts by the share of the gap to ``HIGH``
  that it closes or opens. On VisDial's ``percentile`` (range 0 1) that is the share of the
  candidates still ahead of the image that an answer rules out (or in); the plain clipped
  ``percentile_gain`` rises by about 0.1 with a right answer, and one wrong answer often takes it
  to -1, where it stays whatever the answerer says next. Evaluation, ``mean_return`` and the curves
  stay the env's reward.
* ``--scripted AGENT`` plays an agent with its scripted policy (the VisDial informative
  questioner or scene-reading answerer of ``lm_gym.tasks.visdial.policies``; a DailyDialog
  speaker saying the dataset's utterance): the partner is then fixed and only the other learns.
* Warm starts: ``--warm-start AGENT=CHECKPOINT`` (``sft.py --dataset`` of
  ``python -m lm_gym.multiagent.demonstrations`` with ``--agent AGENT``); ``--init-from`` is the
  shared policy's (or every agent's) checkpoint.
* Evaluation: ``--eval-episodes`` validation games (seeds ``--eval-seed + j``, sampled from
  keyed random numbers): ``mean_return`` is the mean over games of the agents' mean return (the
  game's return in cooperative VisDial), with ``mean_<agent>_return``, the mean reward of an
  utterance and the env's metrics (a game's mean over the utterances DailyDialog scores: ``mean_meteor``
  is the mean METEOR of an utterance, as in the single-agent task).

Outputs in ``--out-dir``: ``checkpoint/`` (the first learning agent's policy and the tokenizer;
every other agent's policy with the tokenizer in ``checkpoint/<agent>/``, references in ``<agent>-reference/``,
``trainer_state.pt``) and ``result.json``.

    python -m lm_gym.multiagent.demonstrations --env visdial_v0 --pairing expert --out data/pairs.parquet
    python baselines/sft.py --env-id lm_gym/VisDial-v0 --env-kwargs '{"source": "synthetic"}' \\
        --dataset data/pairs.parquet --agent questioner --eval-episodes 0 --max-prompt-length 768 --out-dir runs/sft-q
    python baselines/ippo.py --warm-start questioner=runs/sft-q/checkpoint answerer=runs/sft-a/checkpoint
    python baselines/ippo.py --warm-start questioner=runs/sft-q/checkpoint --scripted answerer   # an ablation
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
import ppo
import torch
import tyro
from gymnasium.wrappers.utils import RunningMeanStd
from torch import nn

from lm_gym.core.task_setup import policy_tokenizer
from lm_toolkit import distributed
from lm_toolkit.arguments import at_least, check_args, integer, is_number, one_of, within
from lm_toolkit.lora import policy_to_train, reference_of, trainable_parameters
from lm_toolkit.models import check_positions
from lm_toolkit.multiagent_rollouts import evaluate_games, play_games
from lm_toolkit.optimization import anneal, fused_adamw
from lm_toolkit.policy_gradient import TurnBatch
from lm_toolkit.rollouts import TextPolicy, Turn
from lm_toolkit.runs import Run, due, setup
from lm_toolkit.tasks import Lengths, kwargs_for_split, task_lengths

MULTI_AGENT_ENVS = {"lm_gym/VisDial-v0": "visdial_v0", "lm_gym/DailyDialog-v0": "dailydialog_v0"}


@dataclass
class Args(ppo.Args):
    env_id: str = "lm_gym/VisDial-v0"
    """the task: lm_gym/VisDial-v0 (questioner and answerer) or lm_gym/DailyDialog-v0 (two speakers)"""
    env_kwargs: str = '{"source": "synthetic"}'
    """JSON arguments of the multi-agent env (its parallel_env)"""
    out_dir: str = "runs/ippo"
    """where checkpoint/ and result.json are written"""
    num_envs: int = 32
    """games per iteration"""
    num_minibatches: int = 2
    """minibatches per epoch of each agent's turns"""
    warm_start: tuple[str, ...] = ()
    """AGENT=CHECKPOINT entries: the sft.py checkpoint an agent's policy starts from"""
    shared_policy: bool = False
    """one policy for every agent, its prompt ending with the agent's name"""
    scripted: tuple[str, ...] = ()
    """agents played by their scripted policy, not learning (the other agent then learns with a fixed partner)"""
    max_prompt_length: int = 384
    """prompt tokens kept, from the end (the VisDial answerer sees the scene line and the dialogue: 90-230 tokens)"""
    max_cycles: int = 40
    """utterances after which a game is truncated"""
    value_norm: bool = True
    """the value head predicts returns normalised by their running mean and std (MAPPO's value normalisation)"""
    shaping_info: str | None = None
    """training's reward shaping: a learning agent's turn also gets --shaping-coef x the change of a potential made of
    this numeric info since the agent's previous info (VisDial: percentile, as Das et al.); None: the env's only"""
    shaping_coef: float = 10.0
    """weight of the potential's changes (VisDial: 3 with log-gap on percentile; 10 on the clipped percentile_gain)"""
    shaping_range: tuple[float, float] = (-1.0, 1.0)
    """the info's values are clipped to this range first (a wrong VisDial answer can drop percentile_gain to -12)"""
    shaping_potential: Literal["clipped", "log-gap"] = "clipped"
    """the potential: clipped: the clipped value; log-gap: -ln(HIGH - clipped value + 0.001), the log of the gap left
    to the range's top (VisDial: --shaping-info percentile --shaping-range 0 1, the candidates still ahead)"""


@dataclass
class Learner:
    """One policy PPO trains, and what its update needs."""

    actor: TextPolicy
    reference: Any
    optimizer: torch.optim.Optimizer
    parameters: list[torch.Tensor]
    kl_coef: float
    agents: list[str] = field(default_factory=list)
    returns: RunningMeanStd | None = None  # with --value-norm: the running moments of its value targets


def moments_state(moments: RunningMeanStd | None) -> list[float] | None:
    """Mean, variance and count as plain floats (a checkpoint loads with ``weights_only``)."""
    return None if moments is None else [float(moments.mean), float(moments.var), float(moments.count)]


def normalised(values: torch.Tensor, moments: RunningMeanStd | None, inverse: bool = False) -> torch.Tensor:
    """Values in the value head's units (``inverse``: back to returns). VisDial's -1 a round gives returns
    near -10: unnormalised, their value loss would swamp the policy's loss in the shared trunk."""
    if moments is None:
        return values
    std = float(np.sqrt(moments.var + 1e-8))
    return values * std + float(moments.mean) if inverse else (values - float(moments.mean)) / std


def scripted_speaker(env, agent: str):
    """The scripted policy of ``agent`` (observation text -> utterance)."""
    from lm_gym.tasks.visdial.policies import InformativeQuestioner, SceneTextAnswerer

    if agent == "questioner":
        return InformativeQuestioner()
    if agent == "answerer":
        return SceneTextAnswerer()
    return lambda observation: env.current_reference()  # a DailyDialog speaker: the dataset's utterance


LOG_GAP_FLOOR = 1e-3  # the log-gap potential's gap at the top: VisDial's percentile then counts down to ~5 of 5,000


class Shaping(NamedTuple):
    """The training reward's shaping: ``weight`` x the changes of a potential made of the info ``key``."""

    key: str
    weight: float
    low: float
    high: float
    potential: str = "clipped"  # or "log-gap"

    def value(self, info: dict) -> float:
        """The potential of a step's ``info``."""
        value = info.get(self.key)
        if not is_number(value, finite=False):
            numbers = sorted(k for k, v in info.items() if is_number(v, finite=False))
            raise ValueError(
                f"--shaping-info {self.key!r}: the env's info has no number of that name (its numbers: {numbers})"
            )
        clipped = min(max(float(value), self.low), self.high)
        return -math.log(self.high - clipped + LOG_GAP_FLOOR) if self.potential == "log-gap" else clipped


def multiagent_env(env_id: str):
    """The ``lm_gym.multiagent`` module of ``env_id``'s task (its ``parallel_env``)."""
    if env_id not in MULTI_AGENT_ENVS:
        raise ValueError(f"--env-id must be one of {sorted(MULTI_AGENT_ENVS)} (their lm_gym.multiagent versions)")
    return importlib.import_module(f"lm_gym.multiagent.{MULTI_AGENT_ENVS[env_id]}")


def make_envs(env_module, args: Args, env_kwargs: dict[str, Any], split: str, count: int) -> list:
    """``count`` copies of the task's parallel env on ``split``, its games truncated after ``--max-cycles``."""
    kwargs = {**env_kwargs, "max_cycles": args.max_cycles}
    return [env_module.parallel_env(**kwargs_for_split(args.env_id, kwargs, split)) for _ in range(count)]


def reward_shaping(args: Args, env) -> Shaping | None:
    """``--shaping-info``'s shaping, its info checked on a reset of ``env`` (before any model loads)."""
    if args.shaping_info is None:
        return None
    low, high = args.shaping_range
    if not low < high:
        raise ValueError(f"--shaping-range takes LOW HIGH with LOW < HIGH, got {args.shaping_range}")
    shaping = Shaping(
        key=args.shaping_info, weight=args.shaping_coef, low=low, high=high, potential=args.shaping_potential
    )
    shaping.value(env.reset(seed=args.seed)[1][env.possible_agents[0]])
    return shaping


def warm_starts(args: Args, agents: list[str]) -> dict[str, str]:
    """``--warm-start``'s checkpoint per agent, once ``--warm-start`` and ``--scripted`` are found to name agents of
    the env and to leave one learning."""
    if any("=" not in entry for entry in args.warm_start):
        raise ValueError(f"--warm-start takes AGENT=CHECKPOINT entries, got {list(args.warm_start)}")
    warm = dict(entry.split("=", 1) for entry in args.warm_start)
    if set(args.scripted) - set(agents) or set(warm) - set(agents) or set(args.scripted) >= set(agents):
        raise ValueError(f"--scripted and --warm-start name agents of {agents}, and at least one agent must learn")
    return warm


def policy_sources(args: Args, run: Run, owners: list[list[str]], warm: dict[str, str]) -> list[str | None]:
    """Where each policy loads from: resuming, the checkpoint (the first policy at its root, the others in their
    first agent's folder); else its first agent's ``--warm-start``, or ``--init-from``."""
    if run.resuming:
        return [str(run.checkpoint_dir / (owner[0] if k else "")) for k, owner in enumerate(owners)]
    return [warm.get(owner[0], args.init_from) for owner in owners]


def make_learners(args: Args, run: Run, owners, sources, model_config, tokenizer, lengths, device) -> list[Learner]:
    """Per owner (the agents one policy plays): the policy with a value head on its last hidden states, its frozen
    reference and its optimizer, as ``ppo.py`` builds them (with ``--lora-r``: adapters, the reference the policy's
    own weights with them off)."""
    learners = []
    for owner, source in zip(owners, sources, strict=True):
        policy = policy_to_train(args, source, model_config, tokenizer, device, run.resuming).eval()
        check_positions(policy, lengths.max_prompt_length, lengths.max_new_tokens)
        reference = reference_of(policy, run.checkpoint_dir / f"{owner[0]}-reference" if run.resuming else None)
        value_head = nn.Linear(policy.config.hidden_size, 1).to(device)
        nn.init.zeros_(value_head.weight)
        nn.init.zeros_(value_head.bias)
        parameters = trainable_parameters(policy, value_head)
        learners.append(
            Learner(
                actor=TextPolicy(policy, tokenizer, lengths, args.temperature, value_head),
                reference=reference,
                optimizer=fused_adamw(parameters, lr=args.learning_rate, eps=1e-5),
                parameters=parameters,
                kl_coef=args.kl_coef,
                agents=owner,
                returns=RunningMeanStd(shape=()) if args.value_norm else None,
            )
        )
    return learners


def trainer_state(learners: list[Learner]) -> dict[str, dict]:
    """What a checkpoint keeps of each learner beside its models, under its first agent's name."""
    return {
        learner.agents[0]: {
            "value_head": learner.actor.value_head.state_dict(),
            "optimizer": learner.optimizer.state_dict(),
            "kl_coef": learner.kl_coef,
            "returns": moments_state(learner.returns),
        }
        for learner in learners
    }


def restore(learners: list[Learner], state: dict[str, dict]) -> None:
    """The learners as :func:`trainer_state` saved them."""
    for learner in learners:
        saved = state[learner.agents[0]]
        learner.actor.value_head.load_state_dict(saved["value_head"])
        learner.optimizer.load_state_dict(saved["optimizer"])
        learner.kl_coef = saved["kl_coef"]
        if learner.returns is not None:
            learner.returns.mean, learner.returns.var, learner.returns.count = saved["returns"]


def update_learner(learner: Learner, turns: list[Turn], name: str, args: Args, device, autocast) -> dict[str, float]:
    """``ppo.py``'s advantages, update and KL controller on one policy's ``turns``; with ``--value-norm`` the value
    head learns its targets in the units of their running moments. Returns the curves' entries, named ``name_*``."""
    batch = TurnBatch.of(turns, learner.actor.tokenizer.pad_token_id, device)
    head_values = batch.old_values  # the value head's outputs, in the units of the moments so far
    values = normalised(head_values, learner.returns, inverse=True)  # in units of returns, for GAE
    with autocast:
        advantages, targets, kl = ppo.advantages_and_returns(
            learner.actor, learner.reference, batch, turns, values, learner.kl_coef, args
        )
        if learner.returns is not None:  # the moments of every process's targets, then the targets in them
            mask = batch.response_mask.bool()
            learner.returns.update(np.concatenate(distributed.gather(targets[mask].cpu().numpy())))
            targets = normalised(targets, learner.returns)
        stats = ppo.update(
            learner.actor, learner.optimizer, learner.parameters, batch, turns, advantages, targets, head_values, args
        )
    learner.kl_coef, mean_kl = ppo.adapt_kl_coef(learner.kl_coef, kl, len(turns), args)
    return {
        f"{name}_kl": mean_kl,
        f"{name}_kl_coef": learner.kl_coef,
        **{f"{name}_{key}": value for key, value in stats.means().items()},
    }


def main(args: Args) -> dict:
    env_kwargs, model_config = check_args(
        args,
        "ippo.py",
        num_envs=at_least(1),
        gamma=within(0, 1),
        gae_lambda=within(0, 1),
        kl_coef=at_least(0),
        max_prompt_length=integer(8),
        max_cycles=integer(2),
        shaping_potential=one_of("clipped", "log-gap"),
    )
    env_module = multiagent_env(args.env_id)
    lengths = task_lengths(args.env_id, min_new_tokens=args.min_new_tokens)
    lengths = Lengths(args.max_prompt_length, lengths.max_new_tokens, lengths.min_new_tokens, "left")
    device, autocast = setup(args)
    run = Run(args, "ippo" if not args.scripted else f"ippo-scripted-{'-'.join(sorted(args.scripted))}")

    # Envs: this process's copies of the parallel env (train split) and the evaluation's (validation).
    first_env, num_envs = distributed.shard(args.num_envs, "--num-envs")
    if args.num_minibatches > num_envs:  # an agent speaks at least once a game
        raise ValueError(
            f"--num-minibatches ({args.num_minibatches}) must be at most the games per process ({num_envs})"
        )
    train_envs = make_envs(env_module, args, env_kwargs, "train", num_envs)
    eval_envs = make_envs(env_module, args, env_kwargs, "validation", args.eval_batch_size)
    agents = train_envs[0].possible_agents
    shaping = reward_shaping(args, train_envs[0])
    warm = warm_starts(args, agents)
    scripted = {a: [scripted_speaker(e, a) for e in train_envs] for a in args.scripted}
    eval_scripted = {a: [scripted_speaker(e, a) for e in eval_envs] for a in args.scripted}

    # Models: a policy with a value head per learning agent (one for all with --shared-policy), its reference.
    learning = [agent for agent in agents if agent not in scripted]
    owners = [learning] if args.shared_policy else [[agent] for agent in learning]
    sources = policy_sources(args, run, owners, warm)
    tokenizer = policy_tokenizer(train_envs[0].task, sources[0])
    learners = make_learners(args, run, owners, sources, model_config, tokenizer, lengths, device)
    if run.resuming:
        restore(learners, run.restore())
    policies = {agent: learner.actor for learner in learners for agent in learner.agents}

    def evaluation():
        with autocast:
            return evaluate_games(
                eval_envs, policies, eval_scripted, args.eval_episodes, args.eval_seed, args.shared_policy
            )

    def save() -> None:  # the first policy at the checkpoint's root, the others and the references by name
        first, *others = learners
        models = {learner.agents[0]: learner.actor.model for learner in others}
        models |= {f"{learner.agents[0]}-reference": learner.reference for learner in learners}
        frozen = [f"{learner.agents[0]}-reference" for learner in learners]
        run.save(first.actor.model, tokenizer, trainer_state(learners), models=models, frozen=frozen)

    names = "shared policy" if args.shared_policy else ", ".join(learning)
    run.begin(
        [learner.actor.model for learner in learners],
        f"{args.num_envs} games x {args.iterations} iterations, learning: {names}",
        args.iterations,
    )
    if distributed.is_main() and not run.resuming:
        run.initial = evaluation()
    for iteration in range(run.step + 1, args.iterations + 1):
        for learner in learners:
            anneal(learner.optimizer, args.learning_rate, iteration, args.iterations, args.anneal_lr)

        # ---- rollout: one game per copy, every cycle one batched sampling pass per speaking agent
        iteration_start = time.time()
        seeds = [args.seed * 1_000_003 + iteration * args.num_envs + first_env + i for i in range(num_envs)]
        with autocast:
            games = play_games(train_envs, policies, scripted, seeds, first_env, args.shared_policy, shaping)
        rollout_seconds = time.time() - iteration_start

        # ---- each policy's PPO update on its own agents' turns
        row: dict[str, float] = {}
        for learner in learners:
            own = [turn for agent in learner.agents for turn in games.turns[agent]]
            name = "shared" if args.shared_policy else learner.agents[0]
            row |= update_learner(learner, own, name, args, device, autocast)
        every = np.concatenate(distributed.gather(games.returns))
        row |= {
            "mean_return": float(every.mean()),
            "seconds": time.time() - iteration_start,
            "rollout_seconds": rollout_seconds,
        }
        row |= {f"mean_{agent}_return": float(every[:, a].mean()) for a, agent in enumerate(agents)}
        tokens = sum(len(turn.response) for agent_turns in games.turns.values() for turn in agent_turns)
        run.count(tokens=tokens, token_seconds=rollout_seconds, episodes=len(every), episode_seconds=row["seconds"])
        # ---- evaluation and checkpoint when due, and at the last iteration (or past --time-limit-minutes)
        last = run.out_of_time() or iteration == args.iterations
        if distributed.is_main() and (due(iteration, args.eval_every) or last):
            run.final = evaluation()
            row |= run.final.curve_entries() if run.final else {}
        run.log(iteration, row, show=("mean_return",))
        if distributed.is_main() and (due(iteration, args.save_every) or last):
            save()
        if last:
            break
    return run.finish(device)


if __name__ == "__main__":
    main(tyro.cli(Args))
