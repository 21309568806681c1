"""GRPO and RLOO for language models on lm-gym environments (written CleanRL style).

This file holds the algorithm: arguments, groups, advantages, loss, loop. The LM plumbing
(loading, the KV-cache sampler, rollouts, evaluation, checkpoints, ``result.json``) is
``baselines/lm_toolkit``, shared by every baseline.

* Groups: each iteration plays ``num_prompts`` groups of ``group_size`` episodes. The envs of
  a group are reset with the same seed, so they start from the same prompt (single-turn
  tasks) or the same game (Wordle: the same hidden word) and differ only by the policy's
  samples. The native batched vector env plays all of them, one batched reward call a turn.
* Advantages, no value model: every token of an episode gets its episode's advantage.
  GRPO (Shao et al., 2024): ``(R - mean of the group) / (std of the group + 1e-4)``
  (``--no-scale-rewards``: not divided). RLOO (``--rloo``; Ahmadian et al., 2024):
  ``R - mean of the other G - 1 returns``.
* KL to the frozen starting policy, weight ``--beta``: GRPO adds the per-token estimator
  ``exp(ref - logp) - (ref - logp) - 1`` to the loss; RLOO subtracts ``beta * sum(logp - ref)``
  from each episode's return before the baseline. ``--beta 0``: no reference model at all.
  With LoRA (``--lora-r``) only the adapters train and the reference is the policy's own weights with
  the adapters off: one copy of the model (``lm_toolkit.lora``).
* Loss: PPO's clipped ratio per token against the sampling policy, averaged over the
  minibatch's tokens; minibatches hold whole groups.
* Speed, without changing the result: the log-probs of the sampled tokens are kept from
  sampling; a query shared by several sequences (a group's prompt) is run through the model
  once and its key/value cache is shared, in sampling, in the reference model's pass and,
  with the gradient flowing back through the shared prompt, in the update.
* Evaluation on the validation split: samples of the policy (or ``--eval-greedy``), the same
  episodes and random numbers at every evaluation of every run, the starting policy included.
* Data-parallel under ``torchrun --nproc_per_node N``: each process plays ``num_prompts / N``
  whole groups; the loss is the mean over every process's tokens, gradients are averaged, rank 0
  evaluates and saves (``lm_toolkit.distributed``).
* Causal language models: ``--model-name`` (hub name or path), ``--model-config`` (JSON for a
  small randomly initialised one) or ``--init-from`` (an SFT checkpoint from ``baselines/sft.py``).

Examples::

    python baselines/grpo.py --env-kwargs '{"source": "synthetic"}'
    python baselines/grpo.py --env-id lm_gym/Wordle-v0 --init-from runs/sft-wordle/checkpoint --rloo
    torchrun --standalone --nproc_per_node 2 baselines/grpo.py --env-id lm_gym/Prompts-v0
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import tyro

from lm_toolkit import distributed
from lm_toolkit.arguments import OnlineArgs, Rule, at_least, check_args, within
from lm_toolkit.lora import policy_to_train, reference_of, trainable_parameters
from lm_toolkit.optimization import anneal, fused_adamw, optimizer_step
from lm_toolkit.policy_gradient import TurnBatch, clipped_surrogate
from lm_toolkit.rollouts import TextPolicy, evaluator, play_round
from lm_toolkit.runs import Run, due, setup
from lm_toolkit.tasks import Lengths, task_setup
from lm_toolkit.training_stats import Stats


@dataclass
class Args(OnlineArgs):
    out_dir: str = "runs/grpo"
    """where checkpoint/ and result.json are written"""
    learning_rate: float = 1e-5
    """AdamW learning rate"""
    update_epochs: int = 1
    """epochs over each rollout batch per update"""
    num_prompts: int = 16
    """groups per iteration (prompts, or games of a multi-turn task)"""
    group_size: int = 4
    """episodes per group (G), at least 2"""
    rloo: bool = False
    """RLOO: leave-one-out baseline and the KL penalty in the return (not GRPO's group normalisation and KL loss)"""
    scale_rewards: bool = True
    """GRPO: divide the advantages by the group's standard deviation"""
    beta: float = 0.04
    """weight of the KL to the reference (starting) policy; 0: no reference model"""


def group_advantages(returns: np.ndarray, group_size: int, rloo: bool, scale_rewards: bool) -> np.ndarray:
    """One advantage per episode from the returns of its group (episodes ``g * G .. g * G + G - 1``)."""
    grouped = returns.reshape(-1, group_size)
    if rloo:
        advantages = grouped - (grouped.sum(1, keepdims=True) - grouped) / (group_size - 1)
    else:
        advantages = grouped - grouped.mean(1, keepdims=True)
        if scale_rewards:
            advantages = advantages / (grouped.std(1, keepdims=True) + 1e-4)
    return advantages.reshape(-1)


def main(args: Args) -> dict:
    algorithm = "rloo" if args.rloo else "grpo"
    env_kwargs, model_config = check_args(
        args,
        "grpo.py",
        num_prompts=at_least(1),
        group_size=Rule(lambda v: v >= 2, ">= 2 (a group needs others to compare with)"),
        num_minibatches=within(1, args.num_prompts, text="in [1, num_prompts]"),
        beta=at_least(0),
    )
    device, autocast = setup(args)
    run = Run(args, algorithm)
    first_group, num_prompts = distributed.shard(args.num_prompts, "--num-prompts")  # this process's groups
    num_envs = num_prompts * args.group_size

    # Envs: the native batched vector env, a group's envs adjacent (env i is in group i // G); the policy's
    # tokenizer and the task's lengths (a served task: its server's).
    source = run.source(args.init_from or args.model_name)
    played = task_setup(
        args.env_id, env_kwargs, {"train": num_envs, "validation": args.eval_batch_size}, source, args.min_new_tokens
    )
    train_env, eval_env, tokenizer = played.envs["train"], played.envs["validation"], played.tokenizer
    lengths = Lengths.of(played.token_settings)

    # Models: the policy, and the frozen reference only when the KL term needs it.
    # (LoRA: the reference is the policy's own weights with the adapters off.)
    policy = policy_to_train(args, source, model_config, tokenizer, device, run.resuming, causal_only="grpo.py").eval()
    reference = reference_of(policy, run.checkpoint_dir / "reference" if run.resuming else None) if args.beta else None
    parameters = trainable_parameters(policy)
    optimizer = fused_adamw(parameters, lr=args.learning_rate, eps=1e-5)
    if run.resuming:
        optimizer.load_state_dict(run.restore()["optimizer"])
    actor = TextPolicy(policy, tokenizer, lengths, args.temperature)

    evaluation = evaluator(eval_env, actor, args, autocast)

    def save() -> None:
        models = {"reference": reference} if reference is not None else {}
        run.save(policy, tokenizer, {"optimizer": optimizer.state_dict()}, models=models, frozen=["reference"])

    run.begin(
        [policy],
        f"{args.num_prompts} groups of {args.group_size} x {args.iterations} iterations, beta {args.beta:g}",
        args.iterations,
    )
    if distributed.is_main() and not run.resuming:
        run.initial = evaluation()
    for iteration in range(run.step + 1, args.iterations + 1):
        anneal(optimizer, args.learning_rate, iteration, args.iterations, args.anneal_lr)

        # ---- rollout: one episode per env, a group's envs reset with one seed
        iteration_start = time.time()
        group_seeds = args.seed * 1_000_003 + iteration * args.num_prompts + first_group + np.arange(num_prompts)
        with autocast:
            seeds = np.repeat(group_seeds, args.group_size).tolist()
            rollout = play_round(train_env, actor, seeds, first_env=first_group * args.group_size)
        turns = rollout.turns
        batch = TurnBatch.of(turns, tokenizer.pad_token_id, device)
        token_mask = batch.response_mask.float()
        turn_envs = np.array([t.env for t in turns])
        turn_groups = turn_envs // args.group_size

        # ---- reference log-probs (only with a KL term), a minibatch of groups at a time
        groups_per_minibatch = -(-num_prompts // args.num_minibatches)
        ref_log_probs = batch.old_log_probs  # no reference model: no KL
        if reference is not None:
            ref_log_probs = torch.zeros_like(batch.old_log_probs)
            with torch.no_grad(), autocast:
                for g in range(0, num_prompts, groups_per_minibatch):
                    c = np.flatnonzero((turn_groups >= g) & (turn_groups < g + groups_per_minibatch))
                    ref_log_probs[c] = actor.score(*batch.rows(c), model=reference).log_probs
        token_kl = (batch.old_log_probs - ref_log_probs) * token_mask

        # ---- advantages: one per episode, shared by its tokens (every turn)
        returns = rollout.returns.copy()
        if args.rloo and reference is not None:  # RLOO: the KL penalty is part of the return
            returns -= args.beta * np.bincount(turn_envs, weights=token_kl.sum(1).cpu().numpy(), minlength=num_envs)
        advantages = group_advantages(returns, args.group_size, args.rloo, args.scale_rewards)
        turn_advantages = torch.tensor(advantages[turn_envs], device=device, dtype=torch.float32)[:, None] * token_mask
        rollout_seconds = time.time() - iteration_start

        # ---- update: minibatches of whole groups, so each group's prompt is run once
        stats = Stats()
        for _ in range(args.update_epochs):
            order = torch.randperm(num_prompts).numpy()
            for begin in range(0, num_prompts, groups_per_minibatch):
                mb = np.flatnonzero(np.isin(turn_groups, order[begin : begin + groups_per_minibatch]))
                with autocast:
                    new_log_probs = actor.score(*batch.rows(mb)).log_probs
                m = token_mask[mb]
                pg_loss, pg_stats = clipped_surrogate(
                    new_log_probs, batch.old_log_probs[mb], turn_advantages[mb], m, args.clip_coef
                )
                kl_loss = torch.zeros((), device=device)
                if reference is not None and not args.rloo:
                    ref_gap = (ref_log_probs[mb] - new_log_probs) * m
                    kl_loss = ((ref_gap.exp() - ref_gap - 1) * m).sum() / m.sum()
                loss = (pg_loss + args.beta * kl_loss) * distributed.weight(m.sum())  # the mean over every process
                optimizer_step(optimizer, loss, parameters, args.max_grad_norm)
                stats.add(pg_loss=pg_loss, kl_loss=kl_loss, **pg_stats)

        row = run.rollout_row(rollout, token_mask, optimizer, iteration_start, rollout_seconds)
        kl_sum, num_turns = distributed.all_sum(np.array([float(token_kl.sum()), len(turns)])).tolist()
        row |= {"kl": kl_sum / num_turns, **stats.means()}
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
