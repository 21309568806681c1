"""GRPO and RLOO for language models on lm-gym environments (written CleanRL style).

One file, top to bottom: arguments, model, sampling, advantages, loss, loop, logging.

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
* Loss: PPO's clipped ratio per token against the sampling policy, averaged over the
  minibatch's tokens; minibatches hold whole groups.
* Speed, without changing the result:
  - the log-probs of the sampled tokens are kept from sampling: no forward pass recomputes them;
  - a query shared by several sequences (a group's prompt) is run through the model once and
    its key/value cache is shared: in sampling, in the reference model's pass and, with the
    gradient flowing back through the shared prompt, in the update;
  - sampling is a short loop over the model with its KV cache, not ``generate``.
* Evaluation on the validation split: samples of the policy (or ``--eval-greedy``), the same
  episodes and random numbers at every evaluation of a run, the starting policy included.
* Causal language models: ``--model-name`` (hub name or path), ``--model-config`` (JSON for a
  small randomly initialised one) or ``--init-from`` (an SFT checkpoint from ``baselines/sft.py``).

Examples::

    python baselines/grpo.py --env-kwargs '{"source": "synthetic"}'
    python baselines/grpo.py --env-id lm_gym/Wordle-v0 --init-from runs/sft-wordle/checkpoint --rloo
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import random
import resource
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import gymnasium
import numpy as np
import torch
import tyro
from torch import nn
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core.registration import resolve_tokenizer
from lm_gym.core.vector import episode_info
from lm_gym.results import episode_samples, make_result, summarize_episodes, write_result


@dataclass
class Args:
    env_id: str = "lm_gym/IMDB-v0"
    """registered env id"""
    env_kwargs: str = "{}"
    """JSON dict of env arguments, e.g. '{"source": "synthetic"}'"""
    seed: int = 1
    """seed of torch, numpy, random and the envs"""
    model_name: str | None = None
    """hub name or local path of a pretrained causal LM"""
    model_config: str = '{"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4}'
    """JSON for AutoConfig.for_model: a small randomly initialised policy (when no model_name/init_from)"""
    init_from: str | None = None
    """checkpoint directory written by baselines/sft.py"""
    num_prompts: int = 16
    """groups per iteration (prompts, or games of a multi-turn task)"""
    group_size: int = 4
    """episodes per group (G), at least 2"""
    iterations: int = 100
    """iterations (rollout + update)"""
    time_limit_minutes: float | None = None
    """stop after the iteration that passes this wall time (then evaluate and save)"""
    rloo: bool = False
    """RLOO: leave-one-out baseline and the KL penalty in the return, instead of GRPO's group normalisation and KL loss"""
    scale_rewards: bool = True
    """GRPO: divide the advantages by the group's standard deviation"""
    beta: float = 0.04
    """weight of the KL to the reference (starting) policy; 0: no reference model"""
    learning_rate: float = 1e-5
    """AdamW learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the iterations"""
    update_epochs: int = 1
    """epochs over each rollout batch per update"""
    num_minibatches: int = 4
    """minibatches per epoch (the groups split evenly)"""
    clip_coef: float = 0.2
    """ratio clipping range"""
    max_grad_norm: float = 1.0
    """gradient norm clipping"""
    temperature: float = 1.0
    """sampling temperature of rollouts (log-probs use the same)"""
    min_new_tokens: int | None = None
    """EOS is not generated before this many tokens; None: the task's generation_defaults (IMDB: 48, as RL4LMs)"""
    eval_every: int = 10
    """iterations between evaluations (0: only at the end)"""
    eval_episodes: int = 64
    """validation episodes per evaluation"""
    eval_batch_size: int = 32
    """episodes generated together during evaluation (the eval vector env's size)"""
    eval_greedy: bool = False
    """evaluate greedy decoding instead of samples of the policy"""
    save_every: int = 10
    """iterations between checkpoints (0: only at the end)"""
    out_dir: str = "runs/grpo"
    """where checkpoint/ and result.json are written"""
    resume: bool = False
    """continue from out_dir/checkpoint"""
    track: bool = False
    """log to Weights & Biases (WANDB_MODE=offline works)"""
    wandb_project: str = "lm-gym"
    """Weights & Biases project of --track"""
    perplexity_model: str | None = None
    """causal LM (hub name or local path) that evaluations report corpus_perplexity_generations/_references under; None: not reported"""
    device: str | None = None
    """default: cuda when available, else cpu"""
    bf16: bool = False
    """bfloat16 autocast for sampling and forward passes"""
    torch_threads: int | None = None
    """torch.set_num_threads for the run; None: torch's default"""


def parse_json(name: str, text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--{name.replace('_', '-')} must be a JSON object, got {text!r}: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"--{name.replace('_', '-')} must be a JSON object, got {text!r}")
    return value


def check_args(args: Args) -> None:
    """A ValueError naming the flag of the first setting out of its range."""
    rules = [
        ("num_prompts", args.num_prompts >= 1, ">= 1"),
        ("group_size", args.group_size >= 2, ">= 2 (a group needs others to compare with)"),
        ("iterations", args.iterations >= 1, ">= 1"),
        ("update_epochs", args.update_epochs >= 1, ">= 1"),
        ("num_minibatches", 1 <= args.num_minibatches <= args.num_prompts, "in [1, num_prompts]"),
        ("learning_rate", args.learning_rate > 0, "> 0"),
        ("beta", args.beta >= 0, ">= 0"),
        ("clip_coef", args.clip_coef > 0, "> 0"),
        ("temperature", args.temperature > 0, "> 0"),
        ("eval_episodes", args.eval_episodes >= 1, ">= 1"),
        ("eval_batch_size", args.eval_batch_size >= 1, ">= 1"),
    ]
    for flag, ok, expected in rules:
        if not ok:
            raise ValueError(f"--{flag.replace('_', '-')} must be {expected}, got {getattr(args, flag)!r}")


@functools.cache
def takes_logits_to_keep(model_class) -> bool:
    """Whether the causal LM can compute only its last logits (most transformers models can)."""
    return "logits_to_keep" in inspect.signature(model_class.forward).parameters


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def fuse_activation(config) -> None:
    """GPT-2's ``gelu_new`` computed by PyTorch's fused tanh GELU: the same function, one kernel
    instead of eight (about a quarter off a forward and backward pass of a small GPT-2 on CPU)."""
    if getattr(config, "activation_function", None) == "gelu_new":
        config.activation_function = "gelu_pytorch_tanh"


def load_policy(args: Args, env: gymnasium.Env, device: str):
    """The causal LM policy and its tokenizer."""
    source = args.init_from or args.model_name
    if source is not None:
        tokenizer = AutoTokenizer.from_pretrained(source) if args.init_from else resolve_tokenizer(env.unwrapped, source)
        config = AutoConfig.from_pretrained(source)
    else:
        tokenizer = resolve_tokenizer(env.unwrapped, None)
        config = AutoConfig.for_model(**parse_json("model_config", args.model_config))
        config.vocab_size = len(tokenizer)
        config.pad_token_id, config.eos_token_id, config.bos_token_id = tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.eos_token_id
    if config.is_encoder_decoder:
        raise ValueError("grpo.py trains causal language models; use ppo.py for an encoder-decoder policy")
    fuse_activation(config)
    model = AutoModelForCausalLM.from_pretrained(source, config=config) if source is not None else AutoModelForCausalLM.from_config(config)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(device), tokenizer


def env_kwargs_for(env_id: str, env_kwargs: dict, split: str) -> dict:
    """``env_kwargs`` plus ``split`` when the env takes one."""
    env_class = type(gymnasium.make(env_id, **env_kwargs).unwrapped)
    return {**env_kwargs, "split": split} if "split" in inspect.signature(env_class.__init__).parameters else dict(env_kwargs)


# ---- batches of token sequences ---------------------------------------------------------


def encode_prompts(tokenizer, texts: list[str], max_length: int, side: str = "left") -> list[list[int]]:
    """Prompt tokens cut to ``max_length`` as lm-gym's TokenLevel does (``side="left"`` keeps the end)."""
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return [row[-max_length:] if side == "left" else row[:max_length] for row in ids]


def pad(rows: list[list[int]], pad_id: int, side: str, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            span = slice(width - len(row), width) if side == "left" else slice(0, len(row))
            ids[i, span] = torch.tensor(row)
            mask[i, span] = 1
    return ids.to(device), mask.to(device)


def prefill(model, queries: list[list[int]], pad_id: int, device: str):
    """Run each distinct query once; return the KV cache, the last position's logits (one row per
    query: shared rows are indexed copies, so gradients of all of them reach the one computation),
    the queries' attention mask and the next position id of each row."""
    distinct: dict[tuple[int, ...], int] = {}
    rows = [distinct.setdefault(tuple(q), len(distinct)) for q in queries]
    ids, mask = pad([list(q) for q in distinct], pad_id, "left", device)
    keep = {"logits_to_keep": 1} if takes_logits_to_keep(type(model)) else {}
    out = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0), use_cache=True, **keep)
    index = torch.tensor(rows, device=device)
    cache = out.past_key_values
    if rows != list(range(len(rows))):
        cache.batch_select_indices(index)
    return cache, out.logits[index, -1], mask[index], mask.sum(1)[index]


def next_token_log_probs(logits: torch.Tensor, temperature: float, eos_masked: bool, eos_id: int) -> torch.Tensor:
    """Log-probs of the sampling distribution: temperature, and EOS impossible before ``min_new_tokens``."""
    logits = logits.float() / temperature
    if eos_masked:
        logits[..., eos_id] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


def draw(log_probs: torch.Tensor) -> torch.Tensor:
    """One token per row from its log-probs, by inverse-CDF sampling: one uniform number per row
    against the cumulative probabilities (``torch.multinomial`` takes about 50 times longer on CPU)."""
    cdf = log_probs.exp().cumsum(-1)
    tokens = torch.searchsorted(cdf, torch.rand_like(cdf[:, -1:]) * cdf[:, -1:], right=True).squeeze(-1)
    return torch.where(tokens < cdf.shape[-1], tokens, log_probs.argmax(-1))  # u * total rounded up to the total: p ~ 1e-7


@torch.no_grad()
def sample(model, tokenizer, queries: list[list[int]], lengths: dict, greedy: bool, temperature: float, device: str):
    """Responses (up to and including EOS) and the sampling log-prob of each of their tokens."""
    eos_id, pad_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    cache, logits, mask, positions = prefill(model, queries, pad_id, device)
    batch, max_new = len(queries), lengths["max_new_tokens"]
    tokens = torch.full((batch, max_new), pad_id, dtype=torch.long, device=device)
    log_probs = torch.zeros((batch, max_new), device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    response_lengths = torch.full((batch,), max_new, device=device)
    for t in range(max_new):
        step_log_probs = next_token_log_probs(logits, temperature, t < lengths["min_new_tokens"], eos_id)
        token = step_log_probs.argmax(-1) if greedy else draw(step_log_probs)
        token = token.masked_fill(finished, pad_id)
        tokens[:, t], log_probs[:, t] = token, step_log_probs.gather(-1, token[:, None]).squeeze(-1)
        ends = (token == eos_id) & ~finished
        response_lengths[ends] = t + 1
        finished |= ends
        if bool(finished.all()):
            break
        if t < max_new - 1:
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            out = model(input_ids=token[:, None], past_key_values=cache, attention_mask=mask, position_ids=(positions + t)[:, None], use_cache=True)
            logits = out.logits[:, -1]
    rows, row_log_probs, ends = tokens.tolist(), log_probs.tolist(), response_lengths.tolist()
    return [r[:n] for r, n in zip(rows, ends, strict=True)], [lp[:n] for lp, n in zip(row_log_probs, ends, strict=True)]


def sequence_log_probs(model, queries: list[list[int]], responses: torch.Tensor, response_mask: torch.Tensor, pad_id: int, temperature: float, early_eos: tuple[int, int], device: str):
    """Per-token log-probs of right-padded ``responses`` (B, T), each query run once (shared prefixes)."""
    cache, last_logits, query_mask, positions = prefill(model, queries, pad_id, device)
    length = responses.shape[1]
    out = model(
        input_ids=responses, past_key_values=cache, attention_mask=torch.cat([query_mask, response_mask], 1),
        position_ids=positions[:, None] + torch.arange(length, device=device), use_cache=True,
    )
    logits = torch.cat([last_logits[:, None], out.logits[:, :-1]], 1).float() / temperature  # logits at i predict token i
    eos_id, min_new_tokens = early_eos
    if min_new_tokens:
        logits[:, :min_new_tokens, eos_id] = float("-inf")
    return torch.log_softmax(logits, dim=-1).gather(-1, responses[..., None]).squeeze(-1)


# ---- playing episodes ------------------------------------------------------------------------


def play_round(venv, model, tokenizer, seed, lengths: dict, greedy: bool, temperature: float, device: str):
    """Every sub-env plays one episode from ``venv.reset(seed=seed)``. Returns per env its return,
    metrics and final info, and every generated turn as (env, query, response, log-probs)."""
    observations, _ = venv.reset(seed=seed)
    active = np.ones(venv.num_envs, dtype=bool)
    totals = np.zeros(venv.num_envs)
    metrics, finals, turns = [None] * venv.num_envs, [None] * venv.num_envs, []
    while active.any():
        indices = np.flatnonzero(active)
        queries = encode_prompts(tokenizer, [observations[i] for i in indices], lengths["max_prompt_length"], lengths.get("prompt_truncation_side", "left"))
        responses, log_probs = sample(model, tokenizer, queries, lengths, greedy, temperature, device)
        texts = tokenizer.batch_decode(responses, skip_special_tokens=True)
        actions = [""] * venv.num_envs  # finished envs: NextStep autoreset ignores their action
        for k, i in enumerate(indices):
            actions[i] = texts[k]
        observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
        turns.extend(zip(indices.tolist(), queries, responses, log_probs, strict=True))
        totals[indices] += rewards[indices]
        for i in indices[(terminations | truncations)[indices]]:
            active[i] = False
            finals[i] = {**episode_info(infos, i), "observation": observations[i]}
            if "metrics" in infos:
                metrics[i] = {key: float(values[i]) for key, values in infos["metrics"].items() if not key.startswith("_")}
    return totals, metrics, finals, turns


def evaluate(eval_env, model, tokenizer, args: Args, lengths: dict, device: str) -> tuple[dict, list[dict]]:
    """Episodes of the validation split: the evaluation and a few sample episodes. Every evaluation of a run plays the same episodes with the
    same random numbers (a fixed seed in a forked RNG, so training's random streams are untouched)."""
    returns, metrics, finals = [], [], []
    with torch.random.fork_rng(devices=[device] if device.startswith("cuda") else []):
        torch.manual_seed(args.seed)
        round_index = 0
        while len(returns) < args.eval_episodes:
            totals, round_metrics, round_finals, _ = play_round(
                eval_env, model, tokenizer, 10_000 + args.seed + round_index * eval_env.num_envs, lengths, args.eval_greedy, args.temperature, device
            )
            returns.extend(totals.tolist())
            metrics.extend(m for m in round_metrics if m is not None)
            finals.extend(round_finals)
            round_index += 1
        corpus = eval_env.envs[0].corpus_metrics(finals[: args.eval_episodes], language_model=args.perplexity_model)
    evaluation = summarize_episodes(np.array(returns[: args.eval_episodes]), metrics[: args.eval_episodes], corpus)
    return evaluation, episode_samples(finals, returns)


def format_eval(evaluation: dict) -> str:
    return ", ".join(f"{key} {value:.4g}" for key, value in evaluation.items())


# ---- the run -------------------------------------------------------------------------------


def main(args: Args) -> dict:
    start_time = time.time()
    check_args(args)
    seed_everything(args.seed)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    autocast = torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=args.bf16)
    out_dir = Path(args.out_dir)
    checkpoint_dir = out_dir / "checkpoint"
    env_kwargs = parse_json("env_kwargs", args.env_kwargs)
    num_envs = args.num_prompts * args.group_size

    # Envs: the native batched vector env; a group's envs are adjacent (env i is in group i // G).
    train_env = gymnasium.make_vec(args.env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kwargs_for(args.env_id, env_kwargs, "train"))
    eval_env = gymnasium.make_vec(args.env_id, num_envs=args.eval_batch_size, vectorization_mode="vector_entry_point", **env_kwargs_for(args.env_id, env_kwargs, "validation"))
    task = train_env.envs[0]
    min_new_tokens = task.generation_defaults.get("min_new_tokens", 0) if args.min_new_tokens is None else args.min_new_tokens
    lengths = {**task.token_level_defaults, "min_new_tokens": min_new_tokens}
    if not 0 <= lengths["min_new_tokens"] <= lengths["max_new_tokens"]:
        raise ValueError(f"--min-new-tokens must be in [0, {lengths['max_new_tokens']}] (the task's max_new_tokens), got {lengths['min_new_tokens']}")

    # Models: the policy, and the frozen reference only when the KL term needs it.
    resuming = args.resume and (checkpoint_dir / "trainer_state.pt").is_file()
    policy, tokenizer = load_policy(replace(args, init_from=str(checkpoint_dir)) if resuming else args, task, device)
    reference = None
    if args.beta > 0:
        source = checkpoint_dir / "reference" if resuming else args.init_from or args.model_name
        reference = AutoModelForCausalLM.from_pretrained(source, config=policy.config) if source else AutoModelForCausalLM.from_config(policy.config)
        if not source:
            reference.load_state_dict(policy.state_dict())
        reference.to(device).eval().requires_grad_(False)
    early_eos = (tokenizer.eos_token_id, lengths["min_new_tokens"])  # sampling's min_new_tokens, in the log-probs too
    policy.eval()  # dropout off throughout: sampling and update log-probs must agree
    optimizer = torch.optim.AdamW(policy.parameters(), lr=args.learning_rate, eps=1e-5)
    first_iteration, curves, elapsed_before = 1, [], 0.0
    if resuming:
        state = torch.load(checkpoint_dir / "trainer_state.pt", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        first_iteration, curves, elapsed_before, initial_eval = state["iteration"] + 1, state["curves"], state["wall_time_s"], state["initial_eval"]
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])

    if args.track:
        import wandb

        algorithm = "rloo" if args.rloo else "grpo"
        wandb.init(project=args.wandb_project, config=asdict(args), dir=str(out_dir), name=f"{algorithm}-{args.env_id.split('/')[-1]}-{args.seed}")

    def save_checkpoint(iteration: int) -> None:
        """Replaced atomically: a run killed while saving resumes from the previous checkpoint."""
        tmp, old = checkpoint_dir.with_name("checkpoint.tmp"), checkpoint_dir.with_name("checkpoint.old")
        shutil.rmtree(tmp, ignore_errors=True)
        policy.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if reference is not None and (checkpoint_dir / "reference").is_dir():  # frozen: hard links, no copy
            shutil.copytree(checkpoint_dir / "reference", tmp / "reference", copy_function=os.link)
        elif reference is not None:
            reference.save_pretrained(tmp / "reference", safe_serialization=True)
        rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
        state = {"optimizer": optimizer.state_dict(), "iteration": iteration, "curves": curves, "initial_eval": initial_eval, "rng": rng, "wall_time_s": elapsed_before + time.time() - start_time}
        torch.save(state, tmp / "trainer_state.pt")
        shutil.rmtree(old, ignore_errors=True)
        if checkpoint_dir.exists():
            checkpoint_dir.rename(old)
        tmp.rename(checkpoint_dir)
        shutil.rmtree(old, ignore_errors=True)

    algorithm = "rloo" if args.rloo else "grpo"
    num_parameters = sum(p.numel() for p in policy.parameters())
    print(
        f"{algorithm} on {args.env_id}, seed {args.seed}: {num_parameters / 1e6:.2f}M-parameter policy on {device}, "
        f"{args.num_prompts} groups of {args.group_size} x {args.iterations} iterations, beta {args.beta:g}"
        f"{', resumed at iteration ' + str(first_iteration) if resuming else ''}, writing to {out_dir}"
    )
    samples: list[dict] = []  # a few episodes of the latest evaluation, for result.json
    if not resuming:  # the starting policy, evaluated exactly as the final one
        initial_eval, samples = evaluate(eval_env, policy, tokenizer, args, lengths, device)
    generated_tokens, rollout_seconds = 0, 0.0
    progress = tqdm(range(first_iteration, args.iterations + 1), desc=algorithm, unit="it", initial=first_iteration - 1, total=args.iterations)
    for iteration in progress:
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1) / args.iterations)

        # ---- rollout: one episode per env, a group's envs reset with one seed
        iteration_start = time.time()
        group_seeds = args.seed * 1_000_003 + iteration * args.num_prompts + np.arange(args.num_prompts)
        with autocast:
            episode_returns, episode_metrics, _, turns = play_round(
                train_env, policy, tokenizer, np.repeat(group_seeds, args.group_size).tolist(), lengths, False, args.temperature, device
            )
        envs, queries, responses, sampled_log_probs = zip(*turns, strict=True)
        envs = np.array(envs)
        response_ids, response_mask = pad(list(responses), tokenizer.pad_token_id, "right", device)
        old_log_probs = torch.zeros(response_ids.shape, device=device)  # kept from sampling, not recomputed
        for s, row in enumerate(sampled_log_probs):
            old_log_probs[s, : len(row)] = torch.tensor(row, device=device)
        mask = response_mask.float()
        generated_tokens += int(response_mask.sum())

        # ---- reference log-probs (only with a KL term), a minibatch of groups at a time
        turn_groups = envs // args.group_size
        groups_per_minibatch = -(-args.num_prompts // args.num_minibatches)
        chunks = [np.flatnonzero((turn_groups >= g) & (turn_groups < g + groups_per_minibatch)) for g in range(0, args.num_prompts, groups_per_minibatch)]
        ref_log_probs = old_log_probs  # no reference model: no KL
        if reference is not None:
            ref_log_probs = torch.zeros_like(old_log_probs)
            with torch.no_grad(), autocast:
                for c in chunks:
                    ref_log_probs[c] = sequence_log_probs(reference, [queries[s] for s in c], response_ids[c], response_mask[c], tokenizer.pad_token_id, args.temperature, early_eos, device)
        token_kl = (old_log_probs - ref_log_probs) * mask

        # ---- advantages: one per episode, shared by its tokens (every turn)
        returns = episode_returns.copy()
        if args.rloo and reference is not None:  # RLOO: the KL penalty is part of the return
            returns -= args.beta * np.bincount(envs, weights=token_kl.sum(1).cpu().numpy(), minlength=num_envs)
        grouped = returns.reshape(args.num_prompts, args.group_size)
        if args.rloo:
            advantages = grouped - (grouped.sum(1, keepdims=True) - grouped) / (args.group_size - 1)
        else:
            advantages = grouped - grouped.mean(1, keepdims=True)
            if args.scale_rewards:
                advantages = advantages / (grouped.std(1, keepdims=True) + 1e-4)
        turn_advantages = torch.tensor(advantages.reshape(-1)[envs], device=device, dtype=torch.float32)[:, None] * mask
        iteration_rollout_seconds = time.time() - iteration_start
        rollout_seconds += iteration_rollout_seconds

        # ---- update: minibatches of whole groups, so each group's prompt is run once
        stats = {"pg_loss": [], "kl_loss": [], "approx_kl": [], "clipfrac": []}
        for _ in range(args.update_epochs):
            order = torch.randperm(args.num_prompts).numpy()
            for begin in range(0, args.num_prompts, groups_per_minibatch):
                mb = np.flatnonzero(np.isin(turn_groups, order[begin : begin + groups_per_minibatch]))
                with autocast:
                    new_log_probs = sequence_log_probs(policy, [queries[s] for s in mb], response_ids[mb], response_mask[mb], tokenizer.pad_token_id, args.temperature, early_eos, device)
                m, count = mask[mb], mask[mb].sum()
                log_ratio = (new_log_probs - old_log_probs[mb]) * m
                ratio = log_ratio.exp()
                a = turn_advantages[mb]
                pg_loss = (torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)) * m).sum() / count
                kl_loss = torch.zeros((), device=device)
                if reference is not None and not args.rloo:
                    ref_gap = (ref_log_probs[mb] - new_log_probs) * m
                    kl_loss = ((ref_gap.exp() - ref_gap - 1) * m).sum() / count
                loss = pg_loss + args.beta * kl_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
                optimizer.step()
                with torch.no_grad():
                    stats["pg_loss"].append(pg_loss.item())
                    stats["kl_loss"].append(kl_loss.item())
                    stats["approx_kl"].append(((((ratio - 1) - log_ratio) * m).sum() / count).item())
                    stats["clipfrac"].append((((ratio - 1).abs() > args.clip_coef).float() * m).sum().item() / count.item())

        row = {
            "step": iteration,
            "mean_return": float(episode_returns.mean()),
            "kl": float(token_kl.sum(1).mean()),
            "learning_rate": optimizer.param_groups[0]["lr"],
            "response_tokens": float(mask.sum(1).mean()),
            "seconds": time.time() - iteration_start,  # rollout and update, without evaluation
            "rollout_seconds": iteration_rollout_seconds,
            **{key: float(np.mean(values)) for key, values in stats.items()},
        }
        for key in episode_metrics[0] if episode_metrics[0] else []:
            row[f"mean_{key}"] = float(np.mean([m_[key] for m_ in episode_metrics]))
        out_of_time = args.time_limit_minutes is not None and time.time() - start_time > 60 * args.time_limit_minutes
        last_iteration = iteration == args.iterations or out_of_time
        if (args.eval_every and iteration % args.eval_every == 0) or last_iteration:
            evaluation, samples = evaluate(eval_env, policy, tokenizer, args, lengths, device)
            row.update({f"eval/{key}": value for key, value in evaluation.items()})
        curves.append(row)
        progress.set_postfix(ret=f"{row['mean_return']:.3f}", kl=f"{row['kl']:.2f}")
        if args.track:
            wandb.log(row, step=iteration)
        if (args.save_every and iteration % args.save_every == 0) or last_iteration:
            save_checkpoint(iteration)
        if out_of_time:
            break

    final_eval = {key.removeprefix("eval/"): value for key, value in curves[-1].items() if key.startswith("eval/")}
    peak_memory_mb = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = make_result(
        env_id=args.env_id,
        algorithm=algorithm,
        seed=args.seed,
        config=asdict(args),
        initial_eval=initial_eval,
        final_eval=final_eval,
        curves=curves,
        wall_time_s=elapsed_before + time.time() - start_time,
        tokens_per_s=generated_tokens / max(rollout_seconds, 1e-9),
        episodes_per_s=num_envs * len(curves) / max(sum(row["seconds"] for row in curves), 1e-9),
        peak_memory_mb=peak_memory_mb,
        checkpoint=checkpoint_dir.name,
        device=device,
        samples=samples,
    )
    write_result(out_dir, result)
    print(f"{args.env_id} {algorithm} seed {args.seed}: final evaluation {format_eval(final_eval)} (start {format_eval(initial_eval)})")
    if args.track:
        wandb.finish()
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
