"""PPO for language models on lm-gym environments (RL4LMs' PPO, written CleanRL style).

This file holds the algorithm: arguments, rollout, advantages, loss, loop. The LM plumbing
(loading, the KV-cache sampler, rollouts, evaluation, checkpoints, ``result.json``) is
``baselines/lm_toolkit``, shared by every baseline.

* Rollouts: each of ``num_envs`` copies of the env (the native batched vector env) plays one
  episode per iteration. Every turn, the policy samples the utterances of all active envs as
  one batch with the KV cache, and the env scores them with one batched reward call.
  Multi-turn tasks (Wordle) are episodes of several utterances, with the env's reward at the
  end of each.
* Sampling keeps each token's log-prob and value, so no forward pass recomputes them. The
  frozen reference model's log-probs come from forward passes over the finished sequences, a
  minibatch at a time. The task's generation protocol holds in both (``generation_defaults``;
  IMDB: EOS is impossible before 48 tokens, as in RL4LMs).
* Per-token reward: ``-kl_coef * (log pi - log pi_ref)`` on every generated token, plus the
  env's reward on the utterance's last token. GAE runs over the tokens of a whole episode.
* Adaptive KL controller (Ziegler et al., 2019): after each rollout, with ``kl`` the mean
  over utterances of the summed per-token KL estimate,
  ``kl_coef *= 1 + clip(kl / kl_target - 1, -0.2, 0.2) * num_envs / kl_horizon``;
  ``--kl-target None`` keeps the coefficient fixed.
* Value function: a linear head on the policy's last hidden states (shared trunk), so the
  only model copies are the policy and the reference.
* LoRA (``--lora-r``): only the policy's adapters and the value head train, and the reference is the
  policy's own weights with the adapters off (``lm_toolkit.lora``): one copy of the model.
  ``--gradient-checkpointing`` and ``--bf16`` (on CUDA with LoRA: a bfloat16 base) for larger models.
* Evaluation on the validation split: samples of the policy (RL4LMs' IMDB protocol; the
  return PPO optimises) or greedy decoding (``--eval-greedy``), the same episodes and random
  numbers at every evaluation of every run, the starting policy included.
* Causal and seq2seq policies: ``--model-name`` (hub name or path), ``--model-config`` (JSON
  for a small randomly initialised one) or ``--init-from`` (an SFT checkpoint of ``sft.py``).
* Data-parallel under ``torchrun --nproc_per_node N``: each process plays ``num_envs / N`` of the
  episodes (the same ones, sampled alike, as rows of the one-process batch), the advantages are
  normalised and the losses averaged over every process's tokens, gradients averaged; rank 0
  evaluates and saves (``lm_toolkit.distributed``).
* ``baselines/nlpo.py`` (NLPO) reuses this file's pieces (arguments, the run's setup, GAE,
  advantages, losses, KL controller) in a loop of its own.

Examples::

    python baselines/sft.py --env-kwargs '{"source": "synthetic"}' --out-dir runs/sft-imdb
    python baselines/ppo.py --env-kwargs '{"source": "synthetic"}' --init-from runs/sft-imdb/checkpoint
    python baselines/ppo.py --env-id lm_gym/Wordle-v0 --init-from runs/sft-wordle/checkpoint
    torchrun --standalone --nproc_per_node 2 baselines/ppo.py --env-id lm_gym/Prompts-v0
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import tyro
from torch import nn

from lm_toolkit import distributed
from lm_toolkit.arguments import OnlineArgs, above, at_least, check_args, optional, within
from lm_toolkit.lora import policy_to_train, reference_of, trainable_parameters
from lm_toolkit.optimization import anneal, fused_adamw, optimizer_step
from lm_toolkit.policy_gradient import TurnBatch, clipped_surrogate
from lm_toolkit.rollouts import TextPolicy, Turn, evaluator, play_round
from lm_toolkit.runs import Run, due, setup
from lm_toolkit.sampling import TokenScores
from lm_toolkit.tasks import Lengths, task_setup
from lm_toolkit.training_stats import Stats


@dataclass
class Args(OnlineArgs):
    out_dir: str = "runs/ppo"
    """where checkpoint/ and result.json are written"""
    num_envs: int = 64
    """episodes per iteration (the rollout batch)"""
    gamma: float = 0.99
    """discount factor over tokens and turns"""
    gae_lambda: float = 0.95
    """lambda of generalised advantage estimation"""
    clip_vloss: bool = True
    """clip the value loss around the rollout values, as PPO does"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    ent_coef: float = 0.0
    """weight of the entropy bonus"""
    target_kl: float | None = None
    """stop the epochs of an update early when the approximate KL to the rollout policy exceeds this"""
    kl_coef: float = 0.05
    """initial coefficient of the per-token KL penalty against the reference model"""
    kl_target: float | None = 6.0
    """target per-utterance KL of the adaptive controller; None: fixed coefficient"""
    kl_horizon: int = 10000
    """horizon (in episodes) of the adaptive KL controller's update"""


def gae(
    turns: list[Turn], token_rewards: np.ndarray, values: np.ndarray, num_envs: int, gamma: float, gae_lambda: float
) -> np.ndarray:
    """Advantages per token: GAE over each episode's tokens, its turns processed last to first."""
    advantages = np.zeros_like(token_rewards)
    next_value, next_advantage = np.zeros(num_envs), np.zeros(num_envs)
    for s in reversed(range(len(turns))):
        env = turns[s].env
        value, advantage = (0.0, 0.0) if turns[s].done else (next_value[env], next_advantage[env])
        for t in reversed(range(len(turns[s].response))):
            delta = token_rewards[s, t] + gamma * value - values[s, t]
            advantage = delta + gamma * gae_lambda * advantage
            advantages[s, t] = advantage
            value = values[s, t]
        next_value[env], next_advantage[env] = value, advantage
    return advantages


def advantages_and_returns(
    actor: TextPolicy,
    reference,
    batch: TurnBatch,
    turns: list[Turn],
    values: torch.Tensor,
    kl_coef: float,
    args: Args,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per token: the advantages (GAE on ``values``, the rollout's value estimates in units of returns;
    normalised over every process's tokens), the value targets and the KL estimate to ``reference``. The
    reward: ``-kl_coef * KL`` per token, plus the env's on the last one."""
    token_mask = batch.response_mask.float()
    chunks = np.array_split(np.arange(len(turns)), args.num_minibatches)  # no rollout-sized (B, T, V) buffer
    with torch.no_grad():
        ref_log_probs = torch.cat([actor.score(*batch.rows(c), model=reference).log_probs for c in chunks])
    kl = (batch.old_log_probs - ref_log_probs) * token_mask
    rewards = -kl_coef * kl
    last = token_mask.sum(1).long() - 1
    rewards[torch.arange(len(turns)), last] += torch.tensor([t.reward for t in turns], device=kl.device)
    num_envs = max(t.env for t in turns) + 1
    advantages = gae(turns, rewards.cpu().numpy(), values.cpu().numpy(), num_envs, args.gamma, args.gae_lambda)
    advantages = torch.tensor(advantages, device=kl.device)
    returns = advantages + values
    mean, std = distributed.masked_moments(advantages, token_mask.bool())  # over every process's tokens
    return (advantages - mean) / (std + 1e-8) * token_mask, returns, kl


def losses(
    new: TokenScores,
    batch: TurnBatch,
    mb: np.ndarray,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    old_values: torch.Tensor,
    args: Args,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's loss on minibatch ``mb`` of turns, from its new log-probs, values and entropy (``new``): the clipped
    policy loss, the (clipped) value loss against ``returns`` around ``old_values`` (both in the value head's
    units) and the entropy bonus. Returns the loss, the token count it averages over and its statistics."""
    m = batch.response_mask[mb].float()
    count = m.sum()
    pg_loss, pg_stats = clipped_surrogate(new.log_probs, batch.old_log_probs[mb], advantages[mb], m, args.clip_coef)
    value_error = (new.values - returns[mb]) ** 2
    if args.clip_vloss:
        clipped = old_values[mb] + (new.values - old_values[mb]).clamp(-args.clip_coef, args.clip_coef)
        value_error = torch.max(value_error, (clipped - returns[mb]) ** 2)
    vf_loss = 0.5 * (value_error * m).sum() / count
    entropy = (new.entropy * m).sum() / count
    loss = pg_loss + args.vf_coef * vf_loss - args.ent_coef * entropy
    return loss, count, {"pg_loss": pg_loss, "vf_loss": vf_loss, "entropy": entropy, **pg_stats}


def update(
    actor: TextPolicy,
    optimizer: torch.optim.Optimizer,
    parameters: list[torch.Tensor],
    batch: TurnBatch,
    turns: list[Turn],
    advantages: torch.Tensor,
    returns: torch.Tensor,
    old_values: torch.Tensor,
    args: Args,
) -> Stats:
    """PPO's update: ``--update-epochs`` epochs of ``--num-minibatches`` minibatches of turns (the policy in
    eval mode: dropout off, so log-probs match the rollout's), clipped policy and value losses."""
    stats = Stats()
    for _ in range(args.update_epochs):
        order = torch.randperm(len(turns)).numpy()
        for mb in np.array_split(order, args.num_minibatches):  # as many on every process
            entropy = "loss" if args.ent_coef else "statistic"
            new = actor.score(*batch.rows(mb), value_head=actor.value_head, entropy=entropy)
            loss, count, loss_stats = losses(new, batch, mb, advantages, returns, old_values, args)
            optimizer_step(optimizer, loss * distributed.weight(count), parameters, args.max_grad_norm)
            stats.add(**loss_stats)
            if args.target_kl is not None and distributed.mean(loss_stats["approx_kl"]) > args.target_kl:
                return stats
    return stats


def adapt_kl_coef(kl_coef: float, kl: torch.Tensor, num_turns: int, args: Args) -> tuple[float, float]:
    """The adaptive KL controller's next coefficient, from ``kl``'s mean over every process's utterances
    of the summed per-token KL; returns it and that mean."""
    kl_sum, num_turns = distributed.all_sum(np.array([float(kl.sum()), num_turns])).tolist()
    mean_kl = kl_sum / num_turns
    if args.kl_target is not None:
        kl_coef *= 1.0 + float(np.clip(mean_kl / args.kl_target - 1.0, -0.2, 0.2)) * args.num_envs / args.kl_horizon
    return kl_coef, mean_kl


class Setup(NamedTuple):
    """What a PPO run builds before its loop (``ppo.py`` and ``nlpo.py`` alike)."""

    run: Run
    device: torch.device
    autocast: Any
    first_env: int  # this process's first env among the --num-envs
    train_env: Any
    eval_env: Any
    lengths: Lengths
    tokenizer: Any
    policy: Any
    reference: Any
    value_head: nn.Linear
    parameters: list[torch.Tensor]
    optimizer: torch.optim.Optimizer
    kl_coef: float


def set_up(args: Args, algorithm: str) -> Setup:
    """Check the flags; the envs (the native batched vector env for rollouts, this process's part of the train
    split, and the evaluation's); the policy with a value head on its last hidden states, the frozen reference
    and the optimizer, restored from the checkpoint when resuming."""
    env_kwargs, model_config = check_args(
        args,
        f"{algorithm}.py",
        num_envs=at_least(1),
        num_minibatches=within(1, args.num_envs, text="in [1, num_envs]"),
        gamma=within(0, 1),
        gae_lambda=within(0, 1),
        kl_coef=at_least(0),
        kl_target=optional(above(0)),
    )
    device, autocast = setup(args)
    run = Run(args, algorithm)

    first_env, num_envs = distributed.shard(args.num_envs, "--num-envs")
    if args.num_minibatches > num_envs:
        raise ValueError(
            f"--num-minibatches ({args.num_minibatches}) must be at most the episodes per process ({num_envs})"
        )
    source = run.source(args.init_from or args.model_name)
    played = task_setup(
        args.env_id, env_kwargs, {"train": num_envs, "validation": args.eval_batch_size}, source, args.min_new_tokens
    )
    train_env, eval_env, tokenizer = played.envs["train"], played.envs["validation"], played.tokenizer
    lengths = Lengths.of(played.token_settings)
    # dropout off: rollout and update log-probs agree. With LoRA the reference is the policy, adapters off
    policy = policy_to_train(args, source, model_config, tokenizer, device, run.resuming).eval()
    reference = reference_of(policy, run.checkpoint_dir / "reference" if run.resuming else None)
    value_head = nn.Linear(policy.config.hidden_size, 1).to(device)
    nn.init.zeros_(value_head.weight)
    nn.init.zeros_(value_head.bias)
    parameters = trainable_parameters(policy, value_head)  # a LoRA policy's: its adapters, and the value head
    optimizer = fused_adamw(parameters, lr=args.learning_rate, eps=1e-5)
    kl_coef = args.kl_coef
    if run.resuming:
        state = run.restore()
        value_head.load_state_dict(state["value_head"])
        optimizer.load_state_dict(state["optimizer"])
        kl_coef = state["kl_coef"]
    return Setup(
        run, device, autocast, first_env, train_env, eval_env, lengths, tokenizer, policy, reference,
        value_head, parameters, optimizer, kl_coef,
    )  # fmt: skip


def main(args: Args) -> dict:
    (run, device, autocast, first_env, train_env, eval_env, lengths, tokenizer, policy, reference, value_head,
     parameters, optimizer, kl_coef) = set_up(args, "ppo")  # fmt: skip
    actor = TextPolicy(policy, tokenizer, lengths, args.temperature, value_head)

    evaluation = evaluator(eval_env, actor, args, autocast)

    def save() -> None:
        state = {"value_head": value_head.state_dict(), "optimizer": optimizer.state_dict(), "kl_coef": kl_coef}
        run.save(policy, tokenizer, state, models={"reference": reference}, frozen=["reference"])

    run.begin([policy], f"{args.num_envs} episodes x {args.iterations} iterations", args.iterations)
    if distributed.is_main() and not run.resuming:
        run.initial = evaluation()
    for iteration in range(run.step + 1, args.iterations + 1):
        anneal(optimizer, args.learning_rate, iteration, args.iterations, args.anneal_lr)

        # ---- rollout: one episode per env; every turn is one batched sampling pass + one env step
        iteration_start = time.time()
        with autocast:
            seed = args.seed * 1_000_003 + iteration * args.num_envs + first_env
            rollout = play_round(train_env, actor, seed, first_env=first_env)
        batch = TurnBatch.of(rollout.turns, tokenizer.pad_token_id, device)
        with autocast:
            advantages, returns, kl = advantages_and_returns(
                actor, reference, batch, rollout.turns, batch.old_values, kl_coef, args
            )
        rollout_seconds = time.time() - iteration_start  # generation, scoring, forward passes, advantages

        # ---- update, then the KL controller
        with autocast:
            stats = update(
                actor, optimizer, parameters, batch, rollout.turns, advantages, returns, batch.old_values, args
            )
        kl_coef, mean_kl = adapt_kl_coef(kl_coef, kl, len(rollout.turns), args)
        row = run.rollout_row(rollout, batch.response_mask.float(), optimizer, iteration_start, rollout_seconds)
        row |= {"kl": mean_kl, "kl_coef": kl_coef, **stats.means()}

        # ---- evaluation and checkpoint when due, and at the last iteration (or past --time-limit-minutes)
        last = run.out_of_time() or iteration == args.iterations
        if distributed.is_main() and (due(iteration, args.eval_every) or last):
            run.final = evaluation()
            row |= run.final.curve_entries() if run.final else {}
        run.log(iteration, row, show=("mean_return", "kl"))
        if distributed.is_main() and (due(iteration, args.save_every) or last):
            save()
        if last:
            break
    return run.finish(device)


if __name__ == "__main__":
    main(tyro.cli(Args))
