"""NLPO for language models on lm-gym environments (RL4LMs' NLPO, written CleanRL style).

NLPO is PPO with action masking (Ramamurthy et al., 2023). A *mask model*, a copy of the
policy refreshed every ``mask_update_every`` iterations (here it really is refreshed;
RL4LMs' never was), keeps only its top-``top_p`` tokens at every step:

* rollouts sample from the policy restricted to that set (a logits processor runs the mask
  model alongside ``generate``, with its own KV cache);
* the PPO ratio uses the policy's log-probs under the same masked, renormalised
  distribution. The rollout's top-p sets come from one forward pass of the mask model over
  the finished sequences and are kept bit-packed (vocabulary / 8 bytes per token) for the
  update epochs;
* evaluation plays the masked policy too, as RL4LMs' NLPO policy generates: that is the
  policy the training optimised.

Everything else is ``baselines/ppo.py``:

* Rollouts: each of ``num_envs`` copies of the env (the native batched vector env) plays one
  episode per iteration. Every turn, the policy generates the utterances of all active envs
  in one batched ``generate`` call with the KV cache, and the env scores them with one
  batched reward call. Multi-turn tasks (Wordle) are episodes of several utterances, with
  the env's reward at the end of each.
* Per-token log-probs, values and the frozen reference model's log-probs come from single
  forward passes over the finished sequences (query + response), not from generation, a
  minibatch of sequences at a time. The task's generation protocol holds in both
  (``generation_defaults``; IMDB: EOS is impossible before 48 tokens, as in RL4LMs).
* Per-token reward: ``-kl_coef * (log pi - log pi_ref)`` on every generated token, plus the
  env's reward on the utterance's last token. GAE runs over the tokens of a whole episode.
* Adaptive KL controller (Ziegler et al., 2019): after each rollout, with ``kl`` the mean
  over utterances of the summed per-token KL estimate,
  ``kl_coef *= 1 + clip(kl / kl_target - 1, -0.2, 0.2) * num_envs / kl_horizon``;
  ``--kl-target None`` keeps the coefficient fixed.
* Value function: a linear head on the policy's last hidden states (shared trunk), so the
  only model copies are the policy, the reference and (NLPO's own) the mask model.
* Works with causal and seq2seq policies: ``--model-name`` (hub name or path),
  ``--model-config`` (JSON for a small randomly initialised one) or ``--init-from`` (an
  SFT checkpoint from ``baselines/sft.py``).

Examples::

    python baselines/sft.py --env-kwargs '{"source": "synthetic"}' --out-dir runs/sft-imdb
    python baselines/nlpo.py --env-kwargs '{"source": "synthetic"}' --init-from runs/sft-imdb/checkpoint
    python baselines/nlpo.py --env-id lm_gym/Wordle-v0 --init-from runs/sft-wordle/checkpoint
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
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer, LogitsProcessor, LogitsProcessorList

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
    top_p: float = 0.9
    """the mask model keeps its smallest set of tokens with this much probability"""
    mask_update_every: int = 5
    """iterations between copies of the policy into the mask model (RL4LMs' mu)"""
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
    out_dir: str = "runs/nlpo"
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
        ("top_p", 0 < args.top_p <= 1, "in (0, 1]"),
        ("mask_update_every", args.mask_update_every >= 1, ">= 1"),
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


def load_policy(args: Args, env: gymnasium.Env, device: str):
    """The policy, its tokenizer and whether it is an encoder-decoder model."""
    source = args.init_from or args.model_name
    if source is not None:
        tokenizer = AutoTokenizer.from_pretrained(source) if args.init_from else resolve_tokenizer(env.unwrapped, source)
        config = AutoConfig.from_pretrained(source)
        model_class = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        model = model_class.from_pretrained(source)
    else:
        tokenizer = resolve_tokenizer(env.unwrapped, None)
        config = AutoConfig.for_model(**parse_json("model_config", args.model_config))
        config.vocab_size = len(tokenizer)
        config.pad_token_id, config.eos_token_id, config.bos_token_id = tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.eos_token_id
        if config.is_encoder_decoder:
            config.decoder_start_token_id = tokenizer.pad_token_id
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


def cut_at_eos(tokens: torch.Tensor, eos_id: int) -> list[list[int]]:
    """Each row's tokens up to and including its first EOS (all of them if there is none)."""
    rows = []
    for row in tokens.tolist():
        rows.append(row[: row.index(eos_id) + 1] if eos_id in row else row)
    return rows


def no_early_eos(logits: torch.Tensor, early_eos: tuple[int, int], first_position: int = 0) -> torch.Tensor:
    """``logits`` (B, T, V) of response positions ``first_position``.. with EOS at -inf where generation forbids it.

    ``early_eos = (eos_id, n)``: EOS cannot be generated at the first ``n`` positions (``min_new_tokens``).
    """
    eos_id, min_new_tokens = early_eos
    forbidden = min_new_tokens - first_position
    if forbidden <= 0:
        return logits
    logits = logits.clone()
    logits[:, :forbidden, eos_id] = float("-inf")
    return logits


BIT_WEIGHTS = 2 ** torch.arange(8, dtype=torch.uint8)


def pack_bits(keep: torch.Tensor) -> torch.Tensor:
    """(..., V) booleans as (..., ceil(V / 8)) bytes."""
    keep = torch.nn.functional.pad(keep.to(torch.uint8), (0, -keep.shape[-1] % 8))
    return (keep.view(*keep.shape[:-1], -1, 8) * BIT_WEIGHTS.to(keep.device)).sum(-1, dtype=torch.uint8)


def unpack_bits(packed: torch.Tensor, size: int) -> torch.Tensor:
    """The inverse of ``pack_bits``: (..., size) booleans."""
    bits = packed.unsqueeze(-1) & BIT_WEIGHTS.to(packed.device)
    return bits.view(*packed.shape[:-1], -1)[..., :size].bool()


def top_p_keep(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Boolean mask of the smallest set of tokens holding ``top_p`` of the probability (the top token always)."""
    sorted_logits, order = logits.float().sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    keep_sorted = probs.cumsum(-1) - probs < top_p  # mass before the token is still below top_p
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


class MaskModelProcessor(LogitsProcessor):
    """Masks the policy's next-token scores to the mask model's top-p tokens, step by step with its KV cache."""

    def __init__(self, mask_model, query_ids: torch.Tensor, query_mask: torch.Tensor, is_seq2seq: bool, top_p: float, early_eos: tuple[int, int]):
        self.mask_model, self.is_seq2seq, self.top_p, self.early_eos = mask_model, is_seq2seq, top_p, early_eos
        self.query_ids, self.attention_mask = query_ids, query_mask
        self.start_width = 1 if is_seq2seq else query_ids.shape[1]  # input_ids width before the first new token
        self.past = None
        if is_seq2seq:
            self.encoder_outputs = mask_model.get_encoder()(input_ids=query_ids, attention_mask=query_mask)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        new_tokens = input_ids if self.past is None else input_ids[:, -1:]
        if self.is_seq2seq:
            out = self.mask_model(
                encoder_outputs=self.encoder_outputs, attention_mask=self.attention_mask,
                decoder_input_ids=new_tokens, past_key_values=self.past, use_cache=True,
            )
        else:
            if self.past is not None:
                self.attention_mask = torch.cat([self.attention_mask, torch.ones_like(new_tokens)], 1)
            positions = (self.attention_mask.cumsum(-1) - 1).clamp(min=0)[:, -new_tokens.shape[1] :]
            out = self.mask_model(input_ids=new_tokens, attention_mask=self.attention_mask, position_ids=positions, past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        position = input_ids.shape[1] - self.start_width
        keep = top_p_keep(no_early_eos(out.logits[:, -1:], self.early_eos, position)[:, 0], self.top_p)
        return scores.masked_fill(~keep, float("-inf"))


@torch.no_grad()
def generate(model, tokenizer, queries: list[list[int]], lengths: dict, is_seq2seq: bool, sample: bool, temperature: float, device: str, mask_model=None, top_p: float = 1.0) -> list[list[int]]:
    """Batched generation with the KV cache, masked by ``mask_model`` when given; responses up to and including EOS."""
    ids, mask = pad(queries, tokenizer.pad_token_id, "right" if is_seq2seq else "left", device)
    options = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0} if sample else {"do_sample": False}
    if mask_model is not None:
        early_eos = (tokenizer.eos_token_id, lengths["min_new_tokens"])
        options["logits_processor"] = LogitsProcessorList([MaskModelProcessor(mask_model, ids, mask, is_seq2seq, top_p, early_eos)])
    out = model.generate(
        input_ids=ids, attention_mask=mask, max_new_tokens=lengths["max_new_tokens"], min_new_tokens=lengths["min_new_tokens"], use_cache=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **options,
    )
    new_tokens = out[:, 1:] if is_seq2seq else out[:, ids.shape[1] :]
    return cut_at_eos(new_tokens, tokenizer.eos_token_id)


def response_logits(model, queries: torch.Tensor, query_mask: torch.Tensor, responses: torch.Tensor, response_mask: torch.Tensor, is_seq2seq: bool, with_hidden: bool):
    """Logits (B, T, V) predicting each response token, and the matching last hidden states."""
    if is_seq2seq:
        start = torch.full_like(responses[:, :1], model.config.decoder_start_token_id)
        out = model(
            input_ids=queries, attention_mask=query_mask,
            decoder_input_ids=torch.cat([start, responses[:, :-1]], 1),
            decoder_attention_mask=torch.cat([torch.ones_like(start), response_mask[:, :-1]], 1),
            output_hidden_states=with_hidden,
        )
        return out.logits, out.decoder_hidden_states[-1] if with_hidden else None
    input_ids = torch.cat([queries, responses], 1)
    attention_mask = torch.cat([query_mask, response_mask], 1)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # left padding
    # the logits at position i predict token i + 1: only the last length + 1 positions are needed
    length = responses.shape[1]
    keep = {"logits_to_keep": length + 1} if takes_logits_to_keep(type(model)) else {}
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, output_hidden_states=with_hidden, **keep)
    return out.logits[:, -length - 1 : -1], out.hidden_states[-1][:, -length - 1 : -1] if with_hidden else None


def forward(model, value_head, queries, query_mask, responses, response_mask, is_seq2seq: bool, temperature: float, early_eos: tuple[int, int], keep=None):
    """Per-token log-probs, entropies and (with a value head) values of ``responses``, shape (B, T).

    EOS is impossible where generation forbade it (``early_eos``). With ``keep`` (B, T, V
    booleans: the mask model's top-p sets) the distribution is restricted to the kept tokens
    and renormalised.
    """
    logits, hidden = response_logits(model, queries, query_mask, responses, response_mask, is_seq2seq, value_head is not None)
    logits = no_early_eos(logits.float() / temperature, early_eos)
    if keep is not None:
        # The token taken always counts as kept: padding after EOS, and a sampled token on the
        # top-p boundary that the full forward pass ranks a hair differently, stay finite.
        keep = keep.scatter(-1, responses.unsqueeze(-1), True)
        logits = logits.masked_fill(~keep, float("-inf"))
    log_probs_all = torch.log_softmax(logits, dim=-1)
    log_probs = log_probs_all.gather(-1, responses.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs_all.exp() * log_probs_all.masked_fill(log_probs_all.isinf(), 0.0)).sum(-1)
    values = value_head(hidden.float()).squeeze(-1) if value_head is not None else None
    return log_probs, entropy, values


@torch.no_grad()
def mask_of(mask_model, queries, query_mask, responses, response_mask, is_seq2seq: bool, top_p: float, early_eos: tuple[int, int]) -> torch.Tensor:
    """The mask model's top-p sets (B, T, V booleans) at every response position, as during generation."""
    logits, _ = response_logits(mask_model, queries, query_mask, responses, response_mask, is_seq2seq, with_hidden=False)
    return top_p_keep(no_early_eos(logits, early_eos), top_p)


# ---- evaluation ----------------------------------------------------------------------------


def play_episodes(venv, model, tokenizer, num_episodes: int, seed: int, lengths: dict, is_seq2seq: bool, sample: bool, temperature: float, device: str, on_turn=None, mask_model=None, top_p: float = 1.0):
    """Each sub-env plays one episode per round until ``num_episodes``; returns (returns, metrics dicts, final infos).

    ``on_turn(env_indices, queries, responses, rewards, dones)`` sees every generated turn.
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
            responses = generate(model, tokenizer, queries, lengths, is_seq2seq, sample, temperature, device, mask_model, top_p)
            texts = tokenizer.batch_decode(responses, skip_special_tokens=True)
            actions = [""] * venv.num_envs  # finished envs: NextStep autoreset ignores their action
            for k, i in enumerate(indices):
                actions[i] = texts[k]
            observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
            dones = terminations | truncations
            if on_turn is not None:
                on_turn(indices, queries, responses, rewards[indices], dones[indices])
            totals[indices] += rewards[indices]
            for i in indices[dones[indices]]:
                active[i] = False
                returns.append(float(totals[i]))
                finals.append({**episode_info(infos, i), "observation": observations[i]})
                if "metrics" in infos:
                    metrics.append({key: float(values[i]) for key, values in infos["metrics"].items() if not key.startswith("_")})
    return np.array(returns[:num_episodes]), metrics[:num_episodes], finals[:num_episodes]


def evaluate(eval_env, model, mask_model, tokenizer, args: Args, lengths: dict, is_seq2seq: bool, device: str) -> tuple[dict, list[dict]]:
    """Episodes of the validation split played by the masked policy (the policy within the mask
    model's top-p sets): the evaluation and a few sample episodes. Every evaluation of a run plays the same episodes with the same random
    numbers (a fixed seed in a forked RNG, so training's random streams are untouched)."""
    with torch.random.fork_rng(devices=[device] if device.startswith("cuda") else []):
        torch.manual_seed(args.seed)
        returns, metrics, finals = play_episodes(
            eval_env, model, tokenizer, args.eval_episodes, 10_000 + args.seed, lengths, is_seq2seq,
            sample=not args.eval_greedy, temperature=args.temperature, device=device, mask_model=mask_model, top_p=args.top_p,
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
        mask_model = type(policy).from_pretrained(checkpoint_dir / "mask_model").to(device)
    else:
        policy, tokenizer, is_seq2seq = load_policy(args, task, device)
        reference = copy.deepcopy(policy)
        mask_model = copy.deepcopy(policy)
    early_eos = (tokenizer.eos_token_id, lengths["min_new_tokens"])  # generation's min_new_tokens, in the log-probs too
    policy.eval()  # dropout off throughout: rollout and update log-probs must agree
    reference.eval().requires_grad_(False)
    mask_model.eval().requires_grad_(False)
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

        wandb.init(project=args.wandb_project, config=asdict(args), dir=str(out_dir), name=f"nlpo-{args.env_id.split('/')[-1]}-{args.seed}")

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
        mask_model.save_pretrained(tmp / "mask_model", safe_serialization=True)
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
        f"nlpo on {args.env_id}, seed {args.seed}: {num_parameters / 1e6:.2f}M-parameter policy on {device}, "
        f"{args.num_envs} episodes x {args.iterations} iterations{', resumed at iteration ' + str(first_iteration) if resuming else ''}, "
        f"writing to {out_dir}"
    )
    samples: list[dict] = []  # a few episodes of the latest evaluation, for result.json
    if not resuming:  # the starting policy, evaluated exactly as the final one
        initial_eval, samples = evaluate(eval_env, policy, mask_model, tokenizer, args, lengths, is_seq2seq, device)
    generated_tokens, rollout_seconds = 0, 0.0
    progress = tqdm(range(first_iteration, args.iterations + 1), desc="nlpo", unit="it", initial=first_iteration - 1, total=args.iterations)
    for iteration in progress:
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1) / args.iterations)

        # ---- rollout: one episode per env; every turn is one batched generate + one env step
        iteration_start = time.time()
        segments = []  # one per generated utterance: (env, query, response, reward, done)

        def record(indices, queries, responses, rewards, dones):
            segments.extend(zip(indices.tolist(), queries, responses, rewards.tolist(), dones.tolist(), strict=True))

        with autocast:
            episode_returns, episode_metrics, _ = play_episodes(
                train_env, policy, tokenizer, args.num_envs, args.seed * 1_000_003 + iteration * args.num_envs,
                lengths, is_seq2seq, True, args.temperature, device, on_turn=record,
                mask_model=mask_model, top_p=args.top_p,
            )
        envs, queries, responses, scores, dones = zip(*segments, strict=True)
        query_ids, query_mask = pad(list(queries), tokenizer.pad_token_id, "right" if is_seq2seq else "left", device)
        response_ids, response_mask = pad(list(responses), tokenizer.pad_token_id, "right", device)
        generated_tokens += int(response_mask.sum())

        # ---- log-probs, values and reference log-probs: single forward passes over the finished sequences,
        # a minibatch at a time so that no rollout-sized (B, T, vocabulary) buffer exists
        # (the policy's log-probs are those of the masked distribution it sampled from)
        minibatch_size = max(1, len(segments) // args.num_minibatches)
        chunks = [slice(begin, begin + minibatch_size) for begin in range(0, len(segments), minibatch_size)]
        policy_out, ref_out, packed_keep = [], [], []
        with torch.no_grad(), autocast:
            for c in chunks:
                keep = mask_of(mask_model, query_ids[c], query_mask[c], response_ids[c], response_mask[c], is_seq2seq, args.top_p, early_eos)
                packed_keep.append(pack_bits(keep))
                policy_out.append(forward(policy, value_head, query_ids[c], query_mask[c], response_ids[c], response_mask[c], is_seq2seq, args.temperature, early_eos, keep))
                ref_out.append(forward(reference, None, query_ids[c], query_mask[c], response_ids[c], response_mask[c], is_seq2seq, args.temperature, early_eos)[0])
        vocab_size = keep.shape[-1]
        del keep
        old_log_probs, old_values = torch.cat([out[0] for out in policy_out]), torch.cat([out[2] for out in policy_out])
        ref_log_probs, packed_keep = torch.cat(ref_out), torch.cat(packed_keep)
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
        rollout_seconds += time.time() - iteration_start

        # ---- PPO update (the policy stays in eval mode: dropout off, so log-probs match the rollout's)
        stats = {"pg_loss": [], "vf_loss": [], "entropy": [], "approx_kl": [], "clipfrac": []}
        stop = False
        for _ in range(args.update_epochs):
            order = torch.randperm(len(segments))
            for begin in range(0, len(segments), minibatch_size):
                mb = order[begin : begin + minibatch_size].to(device)
                with autocast:
                    keep = unpack_bits(packed_keep[mb], vocab_size)
                    new_log_probs, entropy, new_values = forward(
                        policy, value_head, query_ids[mb], query_mask[mb], response_ids[mb], response_mask[mb], is_seq2seq, args.temperature, early_eos, keep
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

        # ---- the mask model really is refreshed: a copy of the policy every mask_update_every iterations
        if iteration % args.mask_update_every == 0:
            mask_model.load_state_dict(policy.state_dict())

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
            **{key: float(np.mean(values)) for key, values in stats.items()},
        }
        for key in episode_metrics[0] if episode_metrics else []:
            row[f"mean_{key}"] = float(np.mean([m_[key] for m_ in episode_metrics]))
        out_of_time = args.time_limit_minutes is not None and time.time() - start_time > 60 * args.time_limit_minutes
        last_iteration = iteration == args.iterations or out_of_time
        if (args.eval_every and iteration % args.eval_every == 0) or last_iteration:
            evaluation, samples = evaluate(eval_env, policy, mask_model, tokenizer, args, lengths, is_seq2seq, device)
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
        algorithm="nlpo",
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
    print(f"{args.env_id} nlpo seed {args.seed}: final evaluation {format_eval(final_eval)} (start {format_eval(initial_eval)})")
    if args.track:
        wandb.finish()
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
