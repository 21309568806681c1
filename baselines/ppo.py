"""PPO for language models on lm-gym environments (RL4LMs' PPO, written CleanRL style).

One file, top to bottom: arguments, model, rollout, advantages, loss, loop, logging.

* Rollouts: each of ``num_envs`` copies of the env (the native batched vector env) plays one
  episode per iteration. Every turn, the policy samples the utterances of all active envs
  as one batch with the KV cache, and the env scores them with one batched reward call. Multi-turn tasks (Wordle) are episodes of several utterances, with
  the env's reward at the end of each.
* Sampling is a short loop over the model with its KV cache (not ``generate``) that keeps
  each token's log-prob and value, so no forward pass recomputes them. The frozen reference
  model's log-probs come from single forward passes over the finished sequences (query +
  response), a minibatch of sequences at a time. The task's generation protocol holds in
  both (``generation_defaults``; IMDB: EOS is impossible before 48 tokens, as in RL4LMs).
* Per-token reward: ``-kl_coef * (log pi - log pi_ref)`` on every generated token, plus the
  env's reward on the utterance's last token. GAE runs over the tokens of a whole episode.
* Adaptive KL controller (Ziegler et al., 2019): after each rollout, with ``kl`` the mean
  over utterances of the summed per-token KL estimate,
  ``kl_coef *= 1 + clip(kl / kl_target - 1, -0.2, 0.2) * num_envs / kl_horizon``;
  ``--kl-target None`` keeps the coefficient fixed.
* Evaluation on the validation split: samples of the policy (RL4LMs' IMDB protocol; the
  return PPO optimises) or greedy decoding (``--eval-greedy``), the same episodes and random
  numbers at every evaluation of a run, the starting policy included.
* Value function: a linear head on the policy's last hidden states (shared trunk), so the
  only model copies are the policy and the reference.
* Works with causal and seq2seq policies: ``--model-name`` (hub name or path),
  ``--model-config`` (JSON for a small randomly initialised one) or ``--init-from`` (an
  SFT checkpoint from ``baselines/sft.py``).

Examples::

    python baselines/sft.py --env-kwargs '{"source": "synthetic"}' --out-dir runs/sft-imdb
    python baselines/ppo.py --env-kwargs '{"source": "synthetic"}' --init-from runs/sft-imdb/checkpoint
    python baselines/ppo.py --env-id lm_gym/Wordle-v0 --init-from runs/sft-wordle/checkpoint
"""

from __future__ import annotations

import copy
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
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

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
    """hub name or local path of a pretrained causal or seq2seq LM"""
    model_config: str = '{"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4}'
    """JSON for AutoConfig.for_model: a small randomly initialised policy (when no model_name/init_from)"""
    init_from: str | None = None
    """checkpoint directory written by baselines/sft.py"""
    num_envs: int = 64
    """episodes per iteration (the rollout batch)"""
    iterations: int = 100
    """PPO iterations (rollout + update)"""
    time_limit_minutes: float | None = None
    """stop after the iteration that passes this wall time (then evaluate and save)"""
    learning_rate: float = 1e-4
    """AdamW learning rate of the policy and value head"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the iterations"""
    update_epochs: int = 4
    """epochs over each rollout batch per update"""
    num_minibatches: int = 4
    """minibatches per epoch (the rollout batch split evenly)"""
    gamma: float = 0.99
    """discount factor over tokens and turns"""
    gae_lambda: float = 0.95
    """lambda of generalised advantage estimation"""
    clip_coef: float = 0.2
    """PPO ratio clipping range (and value clipping range)"""
    clip_vloss: bool = True
    """clip the value loss around the rollout values, as PPO does"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    ent_coef: float = 0.0
    """weight of the entropy bonus"""
    max_grad_norm: float = 1.0
    """gradient norm clipping"""
    target_kl: float | None = None
    """stop the epochs of an update early when the approximate KL to the rollout policy exceeds this"""
    kl_coef: float = 0.05
    """initial coefficient of the per-token KL penalty against the reference model"""
    kl_target: float | None = 6.0
    """target per-utterance KL of the adaptive controller; None: fixed coefficient"""
    kl_horizon: int = 10000
    """horizon (in episodes) of the adaptive KL controller's update"""
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
    """evaluate greedy decoding instead of samples of the policy (sampling, RL4LMs' IMDB protocol, measures the return PPO optimises)"""
    save_every: int = 10
    """iterations between checkpoints (0: only at the end)"""
    out_dir: str = "runs/ppo"
    """where checkpoint/ and result.json are written"""
    resume: bool = False
    """continue from out_dir/checkpoint"""
    track: bool = False
    """log to Weights & Biases (WANDB_MODE=offline works)"""
    wandb_project: str = "lm-gym"
    """Weights & Biases project of --track"""
    perplexity_model: str | None = None
    """causal LM (hub name or local path, e.g. an sft.py checkpoint) that evaluations report corpus_perplexity_generations/_references under; None: not reported"""
    device: str | None = None
    """default: cuda when available, else cpu"""
    bf16: bool = False
    """bfloat16 autocast for generation and forward passes"""
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
        ("num_envs", args.num_envs >= 1, ">= 1"),
        ("iterations", args.iterations >= 1, ">= 1"),
        ("update_epochs", args.update_epochs >= 1, ">= 1"),
        ("num_minibatches", 1 <= args.num_minibatches <= args.num_envs, "in [1, num_envs]"),
        ("learning_rate", args.learning_rate > 0, "> 0"),
        ("gamma", 0 <= args.gamma <= 1, "in [0, 1]"),
        ("gae_lambda", 0 <= args.gae_lambda <= 1, "in [0, 1]"),
        ("clip_coef", args.clip_coef > 0, "> 0"),
        ("kl_coef", args.kl_coef >= 0, ">= 0"),
        ("kl_target", args.kl_target is None or args.kl_target > 0, "> 0 or None"),
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
    """The policy, its tokenizer and whether it is an encoder-decoder model."""
    source = args.init_from or args.model_name
    if source is not None:
        tokenizer = AutoTokenizer.from_pretrained(source) if args.init_from else resolve_tokenizer(env.unwrapped, source)
        config = AutoConfig.from_pretrained(source)
        fuse_activation(config)
        model_class = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        model = model_class.from_pretrained(source, config=config)
    else:
        tokenizer = resolve_tokenizer(env.unwrapped, None)
        config = AutoConfig.for_model(**parse_json("model_config", args.model_config))
        config.vocab_size = len(tokenizer)
        config.pad_token_id, config.eos_token_id, config.bos_token_id = tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.eos_token_id
        if config.is_encoder_decoder:
            config.decoder_start_token_id = tokenizer.pad_token_id
        fuse_activation(config)
        model_class = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        model = model_class.from_config(config)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(device), tokenizer, bool(config.is_encoder_decoder)


def env_kwargs_for(env_id: str, env_kwargs: dict, split: str) -> dict:
    """``env_kwargs`` plus ``split`` when the env takes one."""
    env_class = type(gymnasium.make(env_id, **env_kwargs).unwrapped)
    return {**env_kwargs, "split": split} if "split" in inspect.signature(env_class.__init__).parameters else dict(env_kwargs)


# ---- batches of token sequences ---------------------------------------------------------


def encode_prompts(tokenizer, texts: list[str], max_length: int, side: str = "left") -> list[list[int]]:
    """Prompt tokens cut to ``max_length`` as lm-gym's TokenLevel does: ``side="left"`` drops the first
    tokens (keeps the end), ``"right"`` the last (CNN/DailyMail keeps the article's start)."""
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


def draw(log_probs: torch.Tensor) -> torch.Tensor:
    """One token per row from its log-probs, by inverse-CDF sampling: one uniform number per row
    against the cumulative probabilities (``torch.multinomial`` takes about 50 times longer on CPU)."""
    cdf = log_probs.exp().cumsum(-1)
    tokens = torch.searchsorted(cdf, torch.rand_like(cdf[:, -1:]) * cdf[:, -1:], right=True).squeeze(-1)
    return torch.where(tokens < cdf.shape[-1], tokens, log_probs.argmax(-1))  # u * total rounded up to the total: p ~ 1e-7


@torch.no_grad()
def sample(model, value_head, tokenizer, queries: list[list[int]], lengths: dict, is_seq2seq: bool, greedy: bool, temperature: float, device: str):
    """Responses (up to and including EOS) sampled with the KV cache, with each token's sampling
    log-prob and (with a value head) value, kept so that no forward pass recomputes them."""
    eos_id, pad_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    ids, mask = pad(queries, pad_id, "right" if is_seq2seq else "left", device)
    batch, max_new, with_values = len(queries), lengths["max_new_tokens"], value_head is not None
    if is_seq2seq:
        fixed = {"encoder_outputs": model.get_encoder()(input_ids=ids, attention_mask=mask), "attention_mask": mask}
        start = torch.full((batch, 1), model.config.decoder_start_token_id, device=device)
        out = model(decoder_input_ids=start, use_cache=True, output_hidden_states=with_values, **fixed)
    else:
        positions = mask.sum(1)
        keep = {"logits_to_keep": 1} if takes_logits_to_keep(type(model)) else {}
        out = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0), use_cache=True, output_hidden_states=with_values, **keep)
    tokens = torch.full((batch, max_new), pad_id, dtype=torch.long, device=device)
    log_probs, values = torch.zeros((batch, max_new), device=device), torch.zeros((batch, max_new), device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    response_lengths = torch.full((batch,), max_new, device=device)
    for t in range(max_new):
        logits = out.logits[:, -1].float() / temperature
        if t < lengths["min_new_tokens"]:
            logits[:, eos_id] = float("-inf")
        step_log_probs = torch.log_softmax(logits, dim=-1)
        token = step_log_probs.argmax(-1) if greedy else draw(step_log_probs)
        token = token.masked_fill(finished, pad_id)
        tokens[:, t], log_probs[:, t] = token, step_log_probs.gather(-1, token[:, None]).squeeze(-1)
        if with_values:
            hidden = out.decoder_hidden_states[-1] if is_seq2seq else out.hidden_states[-1]
            values[:, t] = value_head(hidden[:, -1].float()).squeeze(-1)
        ends = (token == eos_id) & ~finished
        response_lengths[ends] = t + 1
        finished |= ends
        if bool(finished.all()) or t == max_new - 1:
            break
        if is_seq2seq:
            out = model(decoder_input_ids=token[:, None], past_key_values=out.past_key_values, use_cache=True, output_hidden_states=with_values, **fixed)
        else:
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            out = model(input_ids=token[:, None], past_key_values=out.past_key_values, attention_mask=mask, position_ids=(positions + t)[:, None], use_cache=True, output_hidden_states=with_values)
    ends = response_lengths.tolist()
    cut = lambda rows: [row[:n] for row, n in zip(rows.tolist(), ends, strict=True)]
    return cut(tokens), cut(log_probs), cut(values) if with_values else None


def forward(model, value_head, queries: torch.Tensor, query_mask: torch.Tensor, responses: torch.Tensor, response_mask: torch.Tensor, is_seq2seq: bool, temperature: float, early_eos: tuple[int, int], entropy_grad: bool = False):
    """Per-token log-probs, entropies and (with a value head) values of ``responses``, shape (B, T).

    ``early_eos = (eos_id, n)``: EOS is impossible at the first ``n`` positions, as in generation.
    """
    length = responses.shape[1]
    if is_seq2seq:
        start = torch.full_like(responses[:, :1], model.config.decoder_start_token_id)
        out = model(
            input_ids=queries, attention_mask=query_mask,
            decoder_input_ids=torch.cat([start, responses[:, :-1]], 1),
            decoder_attention_mask=torch.cat([torch.ones_like(start), response_mask[:, :-1]], 1),
            output_hidden_states=value_head is not None,
        )
        logits = out.logits
        hidden = out.decoder_hidden_states[-1] if value_head is not None else None
    else:
        input_ids = torch.cat([queries, responses], 1)
        attention_mask = torch.cat([query_mask, response_mask], 1)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # left padding
        # the logits at position i predict token i + 1: only the last length + 1 positions are needed
        keep = {"logits_to_keep": length + 1} if takes_logits_to_keep(type(model)) else {}
        out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, output_hidden_states=value_head is not None, **keep)
        logits = out.logits[:, -length - 1 : -1]
        hidden = out.hidden_states[-1][:, -length - 1 : -1] if value_head is not None else None
    logits = logits.float() / temperature
    eos_id, min_new_tokens = early_eos
    if min_new_tokens:
        logits[:, :min_new_tokens, eos_id] = float("-inf")
    log_probs_all = torch.log_softmax(logits, dim=-1)
    log_probs = log_probs_all.gather(-1, responses.unsqueeze(-1)).squeeze(-1)
    with torch.set_grad_enabled(torch.is_grad_enabled() and entropy_grad):  # a statistic only, unless it is in the loss
        entropy = -(log_probs_all.exp() * log_probs_all.masked_fill(log_probs_all.isinf(), 0.0)).sum(-1)
    values = value_head(hidden.float()).squeeze(-1) if value_head is not None else None
    return log_probs, entropy, values


# ---- evaluation ----------------------------------------------------------------------------


def play_episodes(venv, model, tokenizer, num_episodes: int, seed: int, lengths: dict, is_seq2seq: bool, greedy: bool, temperature: float, device: str, on_turn=None, value_head=None):
    """Each sub-env plays one episode per round until ``num_episodes``; returns (returns, metrics dicts, final infos).

    ``on_turn(env_indices, queries, responses, log_probs, values, rewards, dones)`` sees every generated
    turn (``values`` with a ``value_head``).
    """
    returns, metrics, finals = [], [], []
    round_index = 0
    while len(returns) < num_episodes:
        observations, _ = venv.reset(seed=seed + round_index * venv.num_envs)
        round_index += 1
        active = np.ones(venv.num_envs, dtype=bool)
        totals = np.zeros(venv.num_envs)
        while active.any():
            indices = np.flatnonzero(active)
            queries = encode_prompts(tokenizer, [observations[i] for i in indices], lengths["max_prompt_length"], lengths.get("prompt_truncation_side", "left"))
            responses, log_probs, values = sample(model, value_head, tokenizer, queries, lengths, is_seq2seq, greedy, temperature, device)
            texts = tokenizer.batch_decode(responses, skip_special_tokens=True)
            actions = [""] * venv.num_envs  # finished envs: NextStep autoreset ignores their action
            for k, i in enumerate(indices):
                actions[i] = texts[k]
            observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
            dones = terminations | truncations
            if on_turn is not None:
                on_turn(indices, queries, responses, log_probs, values, rewards[indices], dones[indices])
            totals[indices] += rewards[indices]
            for i in indices[dones[indices]]:
                active[i] = False
                returns.append(float(totals[i]))
                finals.append({**episode_info(infos, i), "observation": observations[i]})
                if "metrics" in infos:
                    metrics.append({key: float(values[i]) for key, values in infos["metrics"].items() if not key.startswith("_")})
    return np.array(returns[:num_episodes]), metrics[:num_episodes], finals[:num_episodes]


def evaluate(eval_env, model, tokenizer, args: Args, lengths: dict, is_seq2seq: bool, device: str) -> tuple[dict, list[dict]]:
    """Episodes of the validation split: the evaluation and a few sample episodes. Every evaluation of a run
    plays the same episodes with the same random numbers (a fixed seed in a forked RNG, so training's random
    streams are untouched)."""
    with torch.random.fork_rng(devices=[device] if device.startswith("cuda") else []):
        torch.manual_seed(args.seed)
        returns, metrics, finals = play_episodes(
            eval_env, model, tokenizer, args.eval_episodes, 10_000 + args.seed, lengths, is_seq2seq,
            greedy=args.eval_greedy, temperature=args.temperature, device=device,
        )
        # corpus metrics (BLEU, CIDEr, diversity, ...); perplexities under --perplexity-model, the same LM for every algorithm
        corpus = eval_env.envs[0].corpus_metrics(finals, language_model=args.perplexity_model)
    return summarize_episodes(returns, metrics, corpus), episode_samples(finals, returns)


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

    # Envs: the native batched vector env for rollouts (train split) and evaluation (validation).
    train_env = gymnasium.make_vec(args.env_id, num_envs=args.num_envs, vectorization_mode="vector_entry_point", **env_kwargs_for(args.env_id, env_kwargs, "train"))
    eval_env = gymnasium.make_vec(args.env_id, num_envs=args.eval_batch_size, vectorization_mode="vector_entry_point", **env_kwargs_for(args.env_id, env_kwargs, "validation"))
    task = train_env.envs[0]
    min_new_tokens = task.generation_defaults.get("min_new_tokens", 0) if args.min_new_tokens is None else args.min_new_tokens
    lengths = {**task.token_level_defaults, "min_new_tokens": min_new_tokens}
    if not 0 <= lengths["min_new_tokens"] <= lengths["max_new_tokens"]:
        raise ValueError(f"--min-new-tokens must be in [0, {lengths['max_new_tokens']}] (the task's max_new_tokens), got {lengths['min_new_tokens']}")

    # Models: the policy with a value head on its last hidden states, and the frozen reference.
    resuming = args.resume and (checkpoint_dir / "trainer_state.pt").is_file()
    if resuming:
        policy, tokenizer, is_seq2seq = load_policy(replace(args, init_from=str(checkpoint_dir)), task, device)
        reference = type(policy).from_pretrained(checkpoint_dir / "reference").to(device)
    else:
        policy, tokenizer, is_seq2seq = load_policy(args, task, device)
        reference = copy.deepcopy(policy)
    early_eos = (tokenizer.eos_token_id, lengths["min_new_tokens"])  # generation's min_new_tokens, in the log-probs too
    policy.eval()  # dropout off throughout: rollout and update log-probs must agree
    reference.eval().requires_grad_(False)
    value_head = nn.Linear(policy.config.hidden_size, 1).to(device)
    nn.init.zeros_(value_head.weight)
    nn.init.zeros_(value_head.bias)
    parameters = list(policy.parameters()) + list(value_head.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=args.learning_rate, eps=1e-5)
    kl_coef = args.kl_coef
    first_iteration, curves, elapsed_before = 1, [], 0.0  # elapsed_before: wall time of resumed runs
    if resuming:
        state = torch.load(checkpoint_dir / "trainer_state.pt", weights_only=False)
        value_head.load_state_dict(state["value_head"])
        optimizer.load_state_dict(state["optimizer"])
        kl_coef, first_iteration, curves = state["kl_coef"], state["iteration"] + 1, state["curves"]
        elapsed_before = state["wall_time_s"]
        initial_eval = state["initial_eval"]
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])

    if args.track:
        import wandb

        wandb.init(project=args.wandb_project, config=asdict(args), dir=str(out_dir), name=f"ppo-{args.env_id.split('/')[-1]}-{args.seed}")

    def save_checkpoint(iteration: int) -> None:
        """Replaced atomically: a run killed while saving resumes from the previous checkpoint."""
        tmp, old = checkpoint_dir.with_name("checkpoint.tmp"), checkpoint_dir.with_name("checkpoint.old")
        shutil.rmtree(tmp, ignore_errors=True)
        policy.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if (checkpoint_dir / "reference").is_dir():  # the frozen reference never changes: hard links, no copy
            shutil.copytree(checkpoint_dir / "reference", tmp / "reference", copy_function=os.link)
        else:
            reference.save_pretrained(tmp / "reference", safe_serialization=True)
        rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
        state = {"value_head": value_head.state_dict(), "optimizer": optimizer.state_dict(), "kl_coef": kl_coef, "iteration": iteration, "curves": curves, "initial_eval": initial_eval, "rng": rng, "wall_time_s": elapsed_before + time.time() - start_time}
        torch.save(state, tmp / "trainer_state.pt")
        shutil.rmtree(old, ignore_errors=True)
        if checkpoint_dir.exists():
            checkpoint_dir.rename(old)
        tmp.rename(checkpoint_dir)
        shutil.rmtree(old, ignore_errors=True)

    num_parameters = sum(p.numel() for p in policy.parameters())
    print(
        f"ppo on {args.env_id}, seed {args.seed}: {num_parameters / 1e6:.2f}M-parameter policy on {device}, "
        f"{args.num_envs} episodes x {args.iterations} iterations{', resumed at iteration ' + str(first_iteration) if resuming else ''}, "
        f"writing to {out_dir}"
    )
    samples: list[dict] = []  # a few episodes of the latest evaluation, for result.json
    if not resuming:  # the starting policy, evaluated exactly as the final one
        initial_eval, samples = evaluate(eval_env, policy, tokenizer, args, lengths, is_seq2seq, device)
    generated_tokens, rollout_seconds = 0, 0.0
    progress = tqdm(range(first_iteration, args.iterations + 1), desc="ppo", unit="it", initial=first_iteration - 1, total=args.iterations)
    for iteration in progress:
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1) / args.iterations)

        # ---- rollout: one episode per env; every turn is one batched sampling pass + one env step
        iteration_start = time.time()
        segments = []  # one per generated utterance: (env, query, response, log-probs, values, reward, done)

        def record(indices, queries, responses, log_probs, values, rewards, dones):
            segments.extend(zip(indices.tolist(), queries, responses, log_probs, values, rewards.tolist(), dones.tolist(), strict=True))

        with autocast:
            episode_returns, episode_metrics, _ = play_episodes(
                train_env, policy, tokenizer, args.num_envs, args.seed * 1_000_003 + iteration * args.num_envs,
                lengths, is_seq2seq, False, args.temperature, device, on_turn=record, value_head=value_head,
            )
        envs, queries, responses, sampled_log_probs, sampled_values, scores, dones = zip(*segments, strict=True)
        query_ids, query_mask = pad(list(queries), tokenizer.pad_token_id, "right" if is_seq2seq else "left", device)
        response_ids, response_mask = pad(list(responses), tokenizer.pad_token_id, "right", device)
        generated_tokens += int(response_mask.sum())
        # the sampling policy's log-probs and values, kept from sampling (no forward pass recomputes them)
        old_log_probs, old_values = torch.zeros(response_ids.shape, device=device), torch.zeros(response_ids.shape, device=device)
        for s, (row_log_probs, row_values) in enumerate(zip(sampled_log_probs, sampled_values, strict=True)):
            old_log_probs[s, : len(row_log_probs)] = torch.tensor(row_log_probs, device=device)
            old_values[s, : len(row_values)] = torch.tensor(row_values, device=device)

        # ---- reference log-probs: single forward passes over the finished sequences,
        # a minibatch at a time so that no rollout-sized (B, T, vocabulary) buffer exists
        minibatch_size = max(1, len(segments) // args.num_minibatches)
        chunks = [slice(begin, begin + minibatch_size) for begin in range(0, len(segments), minibatch_size)]
        with torch.no_grad(), autocast:
            ref_log_probs = torch.cat([forward(reference, None, query_ids[c], query_mask[c], response_ids[c], response_mask[c], is_seq2seq, args.temperature, early_eos)[0] for c in chunks])
        mask = response_mask.float()
        kl = (old_log_probs - ref_log_probs) * mask
        rewards = -kl_coef * kl
        last = mask.sum(1).long() - 1
        rewards[torch.arange(len(segments)), last] += torch.tensor(scores, device=device, dtype=rewards.dtype)

        # ---- GAE over each episode's tokens, turns processed last to first
        token_rewards, values = rewards.cpu().numpy(), old_values.float().cpu().numpy()
        advantages = np.zeros_like(token_rewards)
        next_value, next_advantage = np.zeros(args.num_envs), np.zeros(args.num_envs)
        for s in reversed(range(len(segments))):
            env_index = envs[s]
            value, advantage = (0.0, 0.0) if dones[s] else (next_value[env_index], next_advantage[env_index])
            for t in reversed(range(int(last[s]) + 1)):
                delta = token_rewards[s, t] + args.gamma * value - values[s, t]
                advantage = delta + args.gamma * args.gae_lambda * advantage
                advantages[s, t] = advantage
                value = values[s, t]
            next_value[env_index], next_advantage[env_index] = value, advantage
        advantages = torch.tensor(advantages, device=device)
        returns = advantages + old_values
        valid = mask.bool()
        advantages = (advantages - advantages[valid].mean()) / (advantages[valid].std() + 1e-8) * mask
        iteration_rollout_seconds = time.time() - iteration_start  # generation, scoring, forward passes, advantages
        rollout_seconds += iteration_rollout_seconds

        # ---- PPO update (the policy stays in eval mode: dropout off, so log-probs match the rollout's)
        stats = {"pg_loss": [], "vf_loss": [], "entropy": [], "approx_kl": [], "clipfrac": []}
        stop = False
        for _ in range(args.update_epochs):
            order = torch.randperm(len(segments))
            for begin in range(0, len(segments), minibatch_size):
                mb = order[begin : begin + minibatch_size].to(device)
                with autocast:
                    new_log_probs, entropy, new_values = forward(
                        policy, value_head, query_ids[mb], query_mask[mb], response_ids[mb], response_mask[mb], is_seq2seq, args.temperature, early_eos,
                        entropy_grad=args.ent_coef != 0,
                    )
                m, count = mask[mb], mask[mb].sum()
                log_ratio = new_log_probs - old_log_probs[mb]
                ratio = log_ratio.exp()
                pg_loss = (torch.max(-advantages[mb] * ratio, -advantages[mb] * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)) * m).sum() / count
                if args.clip_vloss:
                    clipped = old_values[mb] + (new_values - old_values[mb]).clamp(-args.clip_coef, args.clip_coef)
                    vf_loss = 0.5 * (torch.max((new_values - returns[mb]) ** 2, (clipped - returns[mb]) ** 2) * m).sum() / count
                else:
                    vf_loss = 0.5 * (((new_values - returns[mb]) ** 2) * m).sum() / count
                entropy_mean = (entropy * m).sum() / count
                loss = pg_loss + args.vf_coef * vf_loss - args.ent_coef * entropy_mean
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(parameters, args.max_grad_norm)
                optimizer.step()
                with torch.no_grad():
                    approx_kl = (((ratio - 1) - log_ratio) * m).sum() / count
                    stats["pg_loss"].append(pg_loss.item())
                    stats["vf_loss"].append(vf_loss.item())
                    stats["entropy"].append(entropy_mean.item())
                    stats["approx_kl"].append(approx_kl.item())
                    stats["clipfrac"].append((((ratio - 1).abs() > args.clip_coef).float() * m).sum().item() / count.item())
                if args.target_kl is not None and approx_kl.item() > args.target_kl:
                    stop = True
                    break
            if stop:
                break

        # ---- adaptive KL controller
        mean_kl = float(kl.sum(1).mean())
        if args.kl_target is not None:
            error = float(np.clip(mean_kl / args.kl_target - 1.0, -0.2, 0.2))
            kl_coef *= 1.0 + error * args.num_envs / args.kl_horizon

        row = {
            "step": iteration,
            "mean_return": float(episode_returns.mean()),
            "kl": mean_kl,
            "kl_coef": kl_coef,
            "learning_rate": optimizer.param_groups[0]["lr"],
            "response_tokens": float(mask.sum(1).mean()),
            "seconds": time.time() - iteration_start,  # rollout and update, without evaluation
            "rollout_seconds": iteration_rollout_seconds,
            **{key: float(np.mean(values)) for key, values in stats.items()},
        }
        for key in episode_metrics[0] if episode_metrics else []:
            row[f"mean_{key}"] = float(np.mean([m_[key] for m_ in episode_metrics]))
        out_of_time = args.time_limit_minutes is not None and time.time() - start_time > 60 * args.time_limit_minutes
        last_iteration = iteration == args.iterations or out_of_time
        if (args.eval_every and iteration % args.eval_every == 0) or last_iteration:
            evaluation, samples = evaluate(eval_env, policy, tokenizer, args, lengths, is_seq2seq, device)
            row.update({f"eval/{key}": value for key, value in evaluation.items()})
        curves.append(row)
        progress.set_postfix(ret=f"{row['mean_return']:.3f}", kl=f"{mean_kl:.2f}")
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
        algorithm="ppo",
        seed=args.seed,
        config=asdict(args),
        initial_eval=initial_eval,
        final_eval=final_eval,
        curves=curves,
        wall_time_s=elapsed_before + time.time() - start_time,
        tokens_per_s=generated_tokens / max(rollout_seconds, 1e-9),
        episodes_per_s=args.num_envs * len(curves) / max(sum(row["seconds"] for row in curves), 1e-9),
        peak_memory_mb=peak_memory_mb,
        checkpoint=checkpoint_dir.name,
        device=device,
        samples=samples,
    )
    write_result(out_dir, result)
    print(f"{args.env_id} ppo seed {args.seed}: final evaluation {format_eval(final_eval)} (start {format_eval(initial_eval)})")
    if args.track:
        wandb.finish()
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
