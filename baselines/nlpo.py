"""NLPO for language models on lm-gym environments (RL4LMs' NLPO, written CleanRL style).

NLPO is PPO with action masking (Ramamurthy et al., 2023). A *mask model*, a copy of the
policy refreshed every ``mask_update_every`` iterations (here it really is refreshed;
RL4LMs' never was), keeps only its top-``top_p`` tokens at every step:

* rollouts sample from the policy restricted to that set: the mask is applied inside the
  toolkit's KV-cache sampler (a :class:`~lm_toolkit.sampling.LogitsHook` that runs the mask
  model alongside the policy, with its own KV cache), so NLPO samples exactly as PPO does;
* the sets are kept from sampling, bit-packed (vocabulary / 8 bytes per token), and the PPO
  ratio of the update uses the policy's log-probs under the same masked, renormalised
  distribution. The log-probs and values of the rollout are kept from sampling too;
* evaluation plays the masked policy, as RL4LMs' NLPO policy generates: that is the policy
  the training optimised;
* while the mask model equals the policy (a fresh run's first iteration, and the iteration after
  each refresh), the mask comes from the policy's own logits: the same mask, with no forward pass
  of the mask model.

Everything else is PPO, from ``baselines/ppo.py``'s pieces in this file's own loop: the setup
(``ppo.set_up``), rollouts, per-token KL reward, GAE (``ppo.advantages_and_returns``), PPO's
losses (``ppo.losses``), the adaptive KL controller, the value head, the evaluation protocol,
checkpoints. The only model
copies are the policy, the reference and the mask model. With LoRA (``--lora-r``) there is one: the
reference is the policy's weights with the adapters off, the mask model a second, frozen adapter on them
that the policy's is copied into (``lm_toolkit.lora``).

Examples::

    python baselines/sft.py --env-kwargs '{"source": "synthetic"}' --out-dir runs/sft-imdb
    python baselines/nlpo.py --env-kwargs '{"source": "synthetic"}' --init-from runs/sft-imdb/checkpoint
    python baselines/nlpo.py --env-id lm_gym/Wordle-v0 --init-from runs/sft-wordle/checkpoint
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ppo
import torch
import tyro

from lm_toolkit import distributed
from lm_toolkit.arguments import check_flags, integer, within
from lm_toolkit.lora import refresh_snapshot, snapshot_of, weights_of
from lm_toolkit.optimization import anneal, optimizer_step
from lm_toolkit.policy_gradient import TurnBatch
from lm_toolkit.rollouts import TextPolicy, Turn, evaluator, play_round
from lm_toolkit.runs import due
from lm_toolkit.sampling import Prefix, log_probs_of
from lm_toolkit.training_stats import Stats


@dataclass
class Args(ppo.Args):
    out_dir: str = "runs/nlpo"
    """where checkpoint/ and result.json are written"""
    top_p: float = 0.9
    """the mask model keeps its smallest set of tokens with this much probability"""
    mask_update_every: int = 5
    """iterations between copies of the policy into the mask model (RL4LMs' mu)"""


BIT_WEIGHTS = 2 ** torch.arange(8, dtype=torch.uint8)


def pack_bits(keep: torch.Tensor) -> torch.Tensor:
    """(..., V) booleans as (..., ceil(V / 8)) bytes."""
    keep = torch.nn.functional.pad(keep.to(torch.uint8), (0, -keep.shape[-1] % 8))
    return (keep.view(*keep.shape[:-1], -1, 8) * BIT_WEIGHTS.to(keep.device)).sum(-1, dtype=torch.uint8)


def unpack_bits(packed: torch.Tensor, size: int) -> torch.Tensor:
    """The inverse of ``pack_bits``: (..., size) booleans."""
    bits = packed.unsqueeze(-1) & BIT_WEIGHTS.to(packed.device)
    return bits.view(*packed.shape[:-1], -1)[..., :size].bool()


def top_p_keep(log_probs: torch.Tensor, top_p: float, bins: int = 256) -> torch.Tensor:
    """Boolean mask of the smallest set of tokens holding ``top_p`` of the probability (the top token
    always): a token is kept while the mass of the tokens more likely than it is below ``top_p``.

    Without sorting the vocabulary (sorting the 64 x 4,000 log-probs of every step took 7% of an NLPO
    iteration of the standard workload): each row's log-probs go into ``bins`` equal bins, the bins'
    masses say which bins are kept whole, which are dropped, and which one holds the boundary; only
    that bin's tokens are ranked (``topk``). The same set as sorting the row (tested); ``log_probs``
    are normalised (a log-softmax).
    """
    log_probs = log_probs.float()
    probs = log_probs.exp()
    high = log_probs.amax(-1, keepdim=True)
    low = torch.where(log_probs.isfinite(), log_probs, high).amin(-1, keepdim=True)
    scale = bins / (high - low).clamp(min=1e-12)
    bin_of = ((log_probs - low) * scale).nan_to_num(0.0).clamp(0, bins - 1).long()  # impossible tokens: bin 0
    mass = probs.new_zeros(probs.shape[0], bins).scatter_add_(1, bin_of, probs)
    above = mass.flip(-1).cumsum(-1).flip(-1) - mass  # the mass of the more likely bins
    keep = (above + mass).gather(1, bin_of) <= top_p  # a whole bin before the boundary
    boundary = (above < top_p) & (above + mass > top_p)  # at most one bin per row
    ranked = boundary.gather(1, bin_of) & ~keep
    width = int(ranked.sum(-1).max())
    if width:
        candidates, index = torch.where(ranked, probs, -1.0).topk(width, dim=-1)
        before = (above * boundary).sum(-1, keepdim=True) + candidates.cumsum(-1) - candidates
        keep.scatter_(1, index, keep.gather(1, index) | ((before < top_p) & (candidates >= 0)))
    return keep


class TopPMask:
    """NLPO's action mask: the mask model's top-p tokens, computed step by step alongside the policy
    while it samples (a :class:`~lm_toolkit.sampling.LogitsHook`), kept per turn for the update."""

    needs_hidden = False

    def __init__(
        self, mask_model, tokenizer, min_new_tokens: int, top_p: float, update_every: int, same_as_policy: bool
    ):
        self.mask_model, self.top_p, self.update_every = mask_model, top_p, update_every
        self.pad_id, self.eos_id, self.min_new_tokens = tokenizer.pad_token_id, tokenizer.eos_token_id, min_new_tokens
        self.vocab_size = 0
        self.same_as_policy = same_as_policy  # the mask model's weights are the policy's: its logits are too

    # ---- the sampling hook
    def start(self, queries: Sequence[Sequence[int]]) -> None:
        self.packed, self.prefix = [], None
        if not self.same_as_policy:
            with weights_of(self.mask_model) as mask_model:
                self.prefix = Prefix(mask_model, queries, self.pad_id, growing=True)

    def __call__(self, position: int, logits: torch.Tensor, hidden) -> torch.Tensor:
        # the mask model's distribution under the same protocol (EOS impossible before min_new_tokens)
        mask_logits = logits if self.prefix is None else self.prefix.logits
        mask_log_probs = log_probs_of(mask_logits[:, None], 1.0, self.eos_id, self.min_new_tokens, position)[:, 0]
        keep = top_p_keep(mask_log_probs, self.top_p)
        self.vocab_size = keep.shape[-1]
        self.packed.append(pack_bits(keep))
        return logits.masked_fill(~keep, float("-inf"))

    def advance(self, tokens: torch.Tensor) -> None:
        if self.prefix is not None:
            with weights_of(self.mask_model):
                self.prefix.extend(tokens[:, None])

    def rows(self, lengths: list[int]) -> list[torch.Tensor]:
        packed = torch.stack(self.packed, 1)  # (B, steps, V / 8)
        return [packed[i, :n] for i, n in enumerate(lengths)]

    # ---- the update's restriction, and the mask model's refresh
    def allowed(self, turns: list[Turn], index: np.ndarray, width: int) -> torch.Tensor:
        """The allowed tokens (b, width, V booleans) of ``turns[index]``' response positions, as sampled."""
        rows = [turns[i].hook_row for i in index]
        packed = torch.zeros((len(rows), width, rows[0].shape[-1]), dtype=torch.uint8, device=rows[0].device)
        for k, row in enumerate(rows):
            packed[k, : len(row)] = row
        return unpack_bits(packed, self.vocab_size)

    def refresh(self, iteration: int, policy) -> None:
        """After the policy's update of ``iteration``: every ``update_every`` iterations the mask model becomes it."""
        self.same_as_policy = iteration % self.update_every == 0
        if self.same_as_policy:  # the mask model really is refreshed
            refresh_snapshot(self.mask_model, policy)


def update(
    actor: TextPolicy,
    optimizer: torch.optim.Optimizer,
    parameters: list[torch.Tensor],
    batch: TurnBatch,
    turns: list[Turn],
    advantages: torch.Tensor,
    returns: torch.Tensor,
    mask: TopPMask,
    args: Args,
) -> Stats:
    """PPO's update (``ppo.update``) with the policy's log-probs under the masked, renormalised distribution each
    token was sampled from: ``--update-epochs`` epochs of ``--num-minibatches`` minibatches of turns."""
    width = batch.response_mask.shape[1]
    stats = Stats()
    for _ in range(args.update_epochs):
        order = torch.randperm(len(turns)).numpy()
        for mb in np.array_split(order, args.num_minibatches):  # as many on every process
            keep = mask.allowed(turns, mb, width)
            entropy = "loss" if args.ent_coef else "statistic"
            new = actor.score(*batch.rows(mb), value_head=actor.value_head, keep=keep, entropy=entropy)
            loss, count, loss_stats = ppo.losses(new, batch, mb, advantages, returns, batch.old_values, args)
            optimizer_step(optimizer, loss * distributed.weight(count), parameters, args.max_grad_norm)
            stats.add(**loss_stats)
            if args.target_kl is not None and distributed.mean(loss_stats["approx_kl"]) > args.target_kl:
                return stats
    return stats


def main(args: Args) -> dict:
    check_flags(args, top_p=within(0, 1, open_low=True), mask_update_every=integer(1))
    (run, device, autocast, first_env, train_env, eval_env, lengths, tokenizer, policy, reference, value_head,
     parameters, optimizer, kl_coef) = ppo.set_up(args, "nlpo")  # fmt: skip
    mask_model = snapshot_of(policy, "mask_model", run.checkpoint_dir / "mask_model" if run.resuming else None)
    # the mask model equals the policy at the start, and after a refresh (a run resumed there too)
    same = not run.resuming or run.step % args.mask_update_every == 0
    mask = TopPMask(mask_model, tokenizer, lengths.min_new_tokens, args.top_p, args.mask_update_every, same)
    actor = TextPolicy(policy, tokenizer, lengths, args.temperature, value_head, hook=mask)  # samples within the mask

    evaluation = evaluator(eval_env, actor, args, autocast)  # the masked policy, as RL4LMs' NLPO generates

    def save() -> None:
        state = {"value_head": value_head.state_dict(), "optimizer": optimizer.state_dict(), "kl_coef": kl_coef}
        models = {"reference": reference, "mask_model": mask_model}
        run.save(policy, tokenizer, state, models=models, frozen=["reference"])

    run.begin([policy], f"{args.num_envs} episodes x {args.iterations} iterations", args.iterations)
    if distributed.is_main() and not run.resuming:
        run.initial = evaluation()
    for iteration in range(run.step + 1, args.iterations + 1):
        anneal(optimizer, args.learning_rate, iteration, args.iterations, args.anneal_lr)

        # ---- rollout: one episode per env, sampled within the mask model's top-p tokens
        iteration_start = time.time()
        with autocast:
            seed = args.seed * 1_000_003 + iteration * args.num_envs + first_env
            rollout = play_round(train_env, actor, seed, first_env=first_env)
        batch = TurnBatch.of(rollout.turns, tokenizer.pad_token_id, device)
        with autocast:
            advantages, returns, kl = ppo.advantages_and_returns(
                actor, reference, batch, rollout.turns, batch.old_values, kl_coef, args
            )
        rollout_seconds = time.time() - iteration_start  # generation, scoring, forward passes, advantages

        # ---- the masked update, the mask model's refresh when due, the KL controller
        with autocast:
            stats = update(actor, optimizer, parameters, batch, rollout.turns, advantages, returns, mask, args)
        mask.refresh(iteration, policy)
        kl_coef, mean_kl = ppo.adapt_kl_coef(kl_coef, kl, len(rollout.turns), args)
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
