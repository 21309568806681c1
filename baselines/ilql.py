"""Implicit Language Q-Learning (ILQL, Snell et al. 2022) on offline trajectories of an lm-gym task.

Offline RL per token: the policy never plays during training. It learns from trajectories in
``lm_gym.offline``'s format (``--dataset``; without it, the task's references scored by its reward).
Every turn is one causal sequence ``observation + utterance + EOS``; only the utterance's tokens
(and EOS) are actions. On the trunk's last hidden state before each action token sit two Q heads
(a value per vocabulary token) with Polyak-averaged targets ``Q'``, a V head, and the policy's own
LM head ``pi``. Per action token ``a`` in state ``s`` with next state ``s'``:

* Q loss ``(Qi(s, a) - y)^2``, ``y = r + gamma * V(s')`` (V detached). The turn's reward lands on
  its EOS; after it, ``s'`` is the next turn's first state (multi-turn episodes bootstrap across
  turns); a turn that ends the episode (or is truncated: the format keeps no later state) has ``y = r``.
* V loss, expectile regression ``|tau - 1(u < 0)| * u^2``, ``u = min(Q1', Q2')(s, a) - V(s)``.
* CQL term (``--cql-weight``): ``logsumexp_a' Qi(s, a') - Qi(s, a)``, Q down on tokens the data never took.
* Policy loss (``--awac-weight``): cross-entropy of ``pi`` on the data's tokens (``--policy-loss bc``),
  or weighted by ``exp(--awac-beta * (min Q' - V))`` (``awac``, capped at ``--max-awac-weight``).
* After every optimizer step ``Q' <- Q' + polyak * (Q - Q')``.

Trunks: by default (as the ILQL code base's Wordle configs) Q and V sit on their own copy of the
transformer, so value learning cannot disturb the policy's LM; ``--no-separate-trunk`` shares the
policy's (half the compute). Inference draws from ``log pi(.|s) + beta * (min Q'(s, .) - V(s))``
(``--beta``; 0 is behaviour cloning), :class:`QSteering`, a logits hook of the toolkit's KV-cache
sampler. Causal policies only. Data-parallel under ``torchrun`` (``lm_toolkit.distributed``).
Outputs in ``--out-dir``: ``checkpoint/`` (policy, tokenizer, ``ilql_heads.pt``, ``value_trunk/``,
``trainer_state.pt`` for ``--resume``) and ``result.json``.

    python -m lm_gym.tasks.wordle.offline_data --dataset mixture --num-games 2000 --num-answers 100 \\
        --out data/wordle_mixture.parquet
    python baselines/ilql.py --env-id lm_gym/Wordle-v0 --env-kwargs '{"num_answers": 100}' \\
        --dataset data/wordle_mixture.parquet
    python baselines/ilql.py --env-kwargs '{"source": "synthetic"}' --max-steps 200   # IMDB references

BC and %BC on the same data: ``sft.py --dataset`` and ``--top-fraction 0.1``.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium
import torch
import torch.nn.functional as F
import tyro
from torch import nn

from lm_gym.core.task_setup import policy_tokenizer
from lm_toolkit import distributed
from lm_toolkit.arguments import OfflineArgs, above, at_least, check_args, integer, one_of, optional, within
from lm_toolkit.models import check_positions, load_policy
from lm_toolkit.offline import encode_turns, trajectories_or_references, transition_batch
from lm_toolkit.optimization import adamw, batch_indices, optimizer_step, warmup_schedule
from lm_toolkit.rollouts import TextPolicy, evaluator
from lm_toolkit.runs import Run, due, setup
from lm_toolkit.sampling import Prefix
from lm_toolkit.tasks import task_lengths, vector_env_for_split
from lm_toolkit.training_stats import Stats

HEADS_FILE = "ilql_heads.pt"


@dataclass
class Args(OfflineArgs):
    out_dir: str = "runs/ilql"
    """where checkpoint/ and result.json are written"""
    dataset: str | None = None
    """offline trajectories in lm_gym.offline's format (.parquet, .jsonl or a save_to_disk directory);
    None: the task's train-split references scored by its reward (single-turn tasks)"""
    max_trajectories: int | None = None
    """use only the first N trajectories (quick runs)"""
    separate_trunk: bool = True
    """Q and V heads on their own copy of the transformer (--no-separate-trunk: on the policy's)"""
    gamma: float = 0.99
    """discount per token"""
    tau: float = 0.7
    """expectile of the V loss (0.5: V is the mean of Q; towards 1: the max)"""
    cql_weight: float = 0.005
    """weight of the CQL term (the ILQL code base's cql_loss_weight: 1e-4 Wordle, 1.0 Visual Dialogue, 0.25 Reddit)"""
    awac_weight: float = 1.0
    """weight of the policy (behaviour-cloning) loss"""
    policy_loss: Literal["bc", "awac"] = "bc"
    """bc: plain cross-entropy on the data's tokens; awac: weighted by exp(awac_beta * advantage)"""
    awac_beta: float = 1.0
    """inverse temperature of the awac advantage weights"""
    max_awac_weight: float = 100.0
    """cap of the awac weights"""
    polyak: float = 0.005
    """target-head update rate per optimizer step"""
    beta: float = 1.0
    """inference: weight of the advantage min(Q1', Q2') - V added to the policy's log-probs (0: behaviour cloning)"""
    warmup_steps: int = 100
    """linear warmup steps; the learning rate is then constant, as in the ILQL code base"""
    batch_size: int = 64
    """turns per optimizer step"""
    log_every: int = 10
    """record the mean losses in the curves (and W&B) every N steps"""


# ---- model: the policy (trunk + LM head) and the ILQL heads ------------------------------------


class ILQLHeads(nn.Module):
    """Q1, Q2 (a value per vocabulary token), their Polyak-averaged targets and V, on a trunk's hidden states.

    Two-layer MLPs of width 2 x hidden, as the ILQL code base's heads.
    """

    def __init__(self, hidden_size: int, vocab_size: int):
        super().__init__()

        def mlp(outputs: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Linear(hidden_size, 2 * hidden_size), nn.ReLU(), nn.Linear(2 * hidden_size, outputs)
            )

        self.q1, self.q2, self.v = mlp(vocab_size), mlp(vocab_size), mlp(1)
        self.target_q1 = copy.deepcopy(self.q1).requires_grad_(False)
        self.target_q2 = copy.deepcopy(self.q2).requires_grad_(False)

    def target_q(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.minimum(self.target_q1(hidden), self.target_q2(hidden))

    def value(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.v(hidden).squeeze(-1)

    @torch.no_grad()
    def update_targets(self, rate: float) -> None:
        polyak_update(self.q1, self.target_q1, rate)
        polyak_update(self.q2, self.target_q2, rate)


@torch.no_grad()
def polyak_update(source: nn.Module, target: nn.Module, rate: float) -> None:
    """``target <- target + rate * (source - target)``, parameter by parameter."""
    for param, target_param in zip(source.parameters(), target.parameters(), strict=True):
        target_param.lerp_(param, rate)


def next_state_values(trunk, heads: ILQLHeads, batch: dict[str, Any]) -> torch.Tensor:
    """V of each turn's next state, the next observation's last token (0 where the episode ended)."""
    values = torch.zeros_like(batch["rewards"])
    if batch["next_prompts"]:
        hidden = Prefix(trunk, batch["next_prompts"], batch["pad_id"], with_hidden=True).hidden
        values[batch["has_next"]] = heads.value(hidden).float()
    return values


# ---- ILQL's pieces (small functions: tests/baselines/test_ilql.py checks them on hand-computed tensors) ---


def expectile_loss(diff: torch.Tensor, tau: float) -> torch.Tensor:
    """``|tau - 1(diff < 0)| * diff^2`` elementwise, ``diff = target Q - V``."""
    weight = torch.where(diff < 0, 1.0 - tau, tau)
    return weight * diff.pow(2)


def cql_loss(q_values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``logsumexp_a' Q(s, a') - Q(s, a)`` per row of ``q_values`` (N, vocabulary)."""
    return F.cross_entropy(q_values.float(), actions, reduction="none")


def bellman_targets(
    values: torch.Tensor,
    action_mask: torch.Tensor,
    rewards: torch.Tensor,
    dones: torch.Tensor,
    next_turn_values: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """Q targets of the action tokens of a batch of turns, shape (B, L - 1), 0 where no action.

    Position ``j`` holds the target of ``Q(s_j, token_{j+1})``: ``values`` (B, L) is V at every
    position (the state after that token), ``action_mask`` (B, L) marks the utterance's tokens.
    Inside the utterance the target is ``gamma * V(s_{j+1})``; on its last token it is
    ``reward + gamma * (1 - done) * next_turn_values`` (V of the next turn's first state).
    """
    is_action = action_mask[:, 1:]
    next_is_action = F.pad(action_mask[:, 2:], (0, 1), value=False)
    last = is_action & ~next_is_action
    bootstrap = torch.where(last, (next_turn_values * (~dones).to(values.dtype))[:, None], values[:, 1:])
    reward = torch.where(last, rewards[:, None].to(values.dtype), torch.zeros_like(values[:, 1:]))
    return (reward + gamma * bootstrap) * is_action


def perturbed_logits(
    policy_logits: torch.Tensor, target_q: torch.Tensor, value: torch.Tensor, beta: float
) -> torch.Tensor:
    """ILQL's decoding distribution: ``log pi(.|s) + beta * (Q(s, .) - V(s))`` (unnormalized log-probabilities)."""
    return F.log_softmax(policy_logits.float(), dim=-1) + beta * (target_q.float() - value.float()[..., None])


def ilql_losses(
    policy, value_trunk, heads: ILQLHeads, batch: dict[str, Any], args: Args
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The training loss of a batch of turns and its parts."""
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    policy_hidden = policy.base_model(**inputs).last_hidden_state  # after the final norm
    value_hidden = policy_hidden if value_trunk is None else value_trunk(**inputs).last_hidden_state
    selected = batch["action_mask"][:, 1:]  # position j predicts token j+1: an action?
    actions = batch["input_ids"][:, 1:][selected]
    states_pi, states_q = policy_hidden[:, :-1][selected], value_hidden[:, :-1][selected]

    values = heads.value(value_hidden).float()  # V after every token
    with torch.no_grad():
        next_turn_values = next_state_values(policy.base_model if value_trunk is None else value_trunk, heads, batch)
        targets = bellman_targets(
            values.detach(), batch["action_mask"], batch["rewards"], batch["dones"], next_turn_values, args.gamma
        )[selected]
        target_q = heads.target_q(states_q).float().gather(1, actions[:, None]).squeeze(1)
    q1, q2 = heads.q1(states_q).float(), heads.q2(states_q).float()
    q1_taken, q2_taken = q1.gather(1, actions[:, None]).squeeze(1), q2.gather(1, actions[:, None]).squeeze(1)
    state_values = values[:, :-1][selected]

    q_loss = F.mse_loss(q1_taken, targets) + F.mse_loss(q2_taken, targets)
    v_loss = expectile_loss(target_q - state_values, args.tau).mean()
    cql = (cql_loss(q1, actions) + cql_loss(q2, actions)).mean()
    token_nll = F.cross_entropy(policy.get_output_embeddings()(states_pi).float(), actions, reduction="none")
    if args.policy_loss == "awac":
        weights = torch.exp(args.awac_beta * (target_q - state_values.detach())).clamp(max=args.max_awac_weight)
        policy_term = (weights * token_nll).mean()
    else:
        policy_term = token_nll.mean()
    loss = q_loss + v_loss + args.cql_weight * cql + args.awac_weight * policy_term
    parts = {
        "q_loss": q_loss,
        "v_loss": v_loss,
        "cql_loss": cql,
        "policy_loss": policy_term,
        "mean_q": q1_taken.mean(),
        "mean_v": state_values.mean(),
    }
    return loss, parts


class QSteering:
    """ILQL's decoding as a logits hook of the toolkit's sampler: ``log pi(.|s) + beta * (min Q'(s, .) - V(s))``,
    Q' and V on the value trunk (run alongside the policy with its own KV cache) or on the policy's trunk."""

    def __init__(self, heads: ILQLHeads, value_trunk, pad_id: int, beta: float):
        self.heads, self.value_trunk, self.pad_id, self.beta = heads, value_trunk, pad_id, beta
        self.needs_hidden = value_trunk is None  # the policy's own hidden states carry the heads

    def start(self, queries) -> None:
        self.trunk = (
            Prefix(self.value_trunk, queries, self.pad_id, with_hidden=True) if self.value_trunk is not None else None
        )

    def __call__(self, position: int, logits: torch.Tensor, hidden: torch.Tensor | None) -> torch.Tensor:
        state = hidden if self.trunk is None else self.trunk.hidden
        return perturbed_logits(logits, self.heads.target_q(state), self.heads.value(state), self.beta)

    def advance(self, tokens: torch.Tensor) -> None:
        if self.trunk is not None:
            self.trunk.extend(tokens[:, None])

    def rows(self, lengths: list[int]) -> None:
        return None


# ---- the run --------------------------------------------------------------------------------------


def main(args: Args) -> dict[str, Any]:
    env_kwargs, model_config = check_args(
        args,
        "ilql.py",
        max_trajectories=optional(integer(1)),
        warmup_steps=integer(0),
        gamma=within(0, 1),
        tau=within(0, 1, open_low=True),
        polyak=within(0, 1, open_low=True),
        max_awac_weight=above(0),
        cql_weight=at_least(0),
        awac_weight=at_least(0),
        awac_beta=at_least(0),
        beta=at_least(0),
        policy_loss=one_of("bc", "awac"),
    )
    lengths = task_lengths(args.env_id, args.max_prompt_length, args.max_new_tokens)
    device, autocast = setup(args)
    run = Run(args, "ilql")

    # ---- offline data as token ids; the policy, the value trunk and the heads
    tokenizer = policy_tokenizer(gymnasium.make(args.env_id, **env_kwargs).unwrapped, run.source(args.model_name))
    dataset = trajectories_or_references(args.dataset, args.env_id, env_kwargs, args.max_trajectories)
    turns = encode_turns(dataset, tokenizer, lengths)
    policy = load_policy(run.source(args.model_name), model_config, tokenizer, args.seed, causal_only="ilql.py")
    policy.to(device).train()
    check_positions(policy, lengths.max_prompt_length, lengths.max_new_tokens)
    value_trunk = None
    if args.separate_trunk:
        from transformers import AutoModel

        trunk_source = run.checkpoint_dir / "value_trunk"
        value_trunk = AutoModel.from_pretrained(trunk_source) if run.resuming else copy.deepcopy(policy.base_model)
        value_trunk.to(device).train()
    heads = ILQLHeads(policy.config.hidden_size, policy.get_output_embeddings().out_features).to(device)
    trainable = [policy, heads, value_trunk]
    optimizer = adamw(trainable, args.learning_rate, args.weight_decay)
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    steps_per_epoch = math.ceil(len(turns.rewards) / args.batch_size)
    total_steps = min(args.epochs * steps_per_epoch, args.max_steps or math.inf)
    scheduler = warmup_schedule(optimizer, args.warmup_steps, total_steps, decay=False)
    if run.resuming:
        heads.load_state_dict(torch.load(run.checkpoint_dir / HEADS_FILE, map_location=device, weights_only=True))
        state = run.restore()
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])

    # ---- evaluation: the steered policy on the validation split, as every baseline evaluates
    eval_batch = min(args.eval_batch_size, args.eval_episodes)
    eval_env = vector_env_for_split(args.env_id, env_kwargs, "validation", eval_batch) if args.eval_episodes else None
    steering = QSteering(heads, value_trunk, tokenizer.pad_token_id, args.beta)
    actor = TextPolicy(policy, tokenizer, lengths, args.temperature, hook=steering)
    evaluation = evaluator(eval_env, actor, args, autocast, *([value_trunk] if value_trunk is not None else []))

    def save() -> None:
        models = {"value_trunk": value_trunk} if value_trunk is not None else {}
        state = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
        run.save(policy, tokenizer, state, models=models, files={HEADS_FILE: heads.state_dict()})

    trunks = "separate" if value_trunk is not None else "shared"
    run.begin(
        trainable,
        f"{len(dataset)} trajectories, {len(turns.rewards)} turns, {trunks} trunk, {total_steps} steps",
        total_steps,
    )
    if distributed.is_main() and not run.resuming:
        run.initial = evaluation()
    window = Stats()
    for step in range(run.step + 1, total_steps + 1):
        step_start = time.time()
        index = batch_indices(args.seed, step, steps_per_epoch, args.batch_size, len(turns.rewards))
        batch = transition_batch(turns, distributed.shard_indices(index), tokenizer.pad_token_id, device)
        with autocast:
            loss, parts = ilql_losses(policy, value_trunk, heads, batch, args)
        actions = batch["action_mask"][:, 1:].sum()  # every loss is a mean over the action tokens
        optimizer_step(optimizer, loss * distributed.weight(actions), parameters, args.grad_clip)
        scheduler.step()
        heads.update_targets(args.polyak)

        seconds, tokens = time.time() - step_start, int(batch["attention_mask"].sum())
        run.count(tokens=tokens, token_seconds=seconds, episodes=len(batch["rewards"]), episode_seconds=seconds)
        window.add(loss=loss, **parts)
        row = run.window_row(window, step, total_steps, lr=scheduler.get_last_lr()[0])
        # ---- evaluation and checkpoint when due, and at the last step (or past --time-limit-minutes)
        last = run.out_of_time() or step == total_steps
        if distributed.is_main() and (due(step, args.eval_every) or last):
            run.final = evaluation()
            row |= run.final.curve_entries() if run.final else {}
        run.log(step, row, show=("loss", "mean_q"))
        if distributed.is_main() and (due(step, args.save_every) or last):
            save()
        if last:
            break
    return run.finish(device)


if __name__ == "__main__":
    main(tyro.cli(Args))
