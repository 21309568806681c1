"""The flags every baseline shares, and range checks whose errors name the flag.

An algorithm's ``Args`` subclasses :class:`BaselineArgs` (or :class:`OnlineArgs`) and adds its own
flags; ``tyro`` lists the inherited ones first. A subclass may redeclare a field to change its
default (``out_dir``, ``learning_rate``).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_MODEL_CONFIG = '{"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4}'


@dataclass
class BaselineArgs:
    env_id: str = "lm_gym/IMDB-v0"
    """registered env id"""
    env_kwargs: str = "{}"
    """JSON dict of env arguments, e.g. '{"source": "synthetic"}'"""
    seed: int = 1
    """seed of python, numpy, torch (model init, data order, sampling) and the envs"""
    model_name: str | None = None
    """hub name or local path of a pretrained LM and its tokenizer (e.g. an sft.py checkpoint);
    None: a random model from --model-config"""
    model_config: str = DEFAULT_MODEL_CONFIG
    """JSON for transformers.AutoConfig.for_model (when no model is loaded); vocabulary and special tokens
    come from the tokenizer; an encoder-decoder model_type (e.g. "t5") gives a seq2seq policy"""
    temperature: float = 1.0
    """sampling temperature of rollouts and evaluation (log-probs use the same)"""
    eval_episodes: int = 64
    """validation episodes per evaluation (0: no evaluation)"""
    eval_batch_size: int = 32
    """episodes played together during evaluation (the eval vector env's size)"""
    eval_every: int = 10
    """iterations (optimizer steps for sft/ilql) between evaluations (0: only at the start and the end)"""
    eval_seed: int = 0
    """validation episode j is reset with seed eval_seed + j and sampling draws from this seed: the same
    episodes and random numbers for every run and every evaluation"""
    eval_greedy: bool = False
    """evaluate greedy decoding instead of samples of the policy (sampling, RL4LMs' IMDB protocol,
    measures the return RL optimises)"""
    perplexity_model: str | None = None
    """causal LM (hub name or local path, e.g. an sft.py checkpoint) that evaluations report
    corpus_perplexity_generations/_references under; None: not reported"""
    out_dir: str = "runs/baseline"
    """where checkpoint/ and result.json are written"""
    save_every: int = 10
    """iterations (optimizer steps for sft/ilql) between checkpoints (0: only at the end)"""
    resume: bool = False
    """continue from out_dir/checkpoint when it holds a trainer state (else start fresh)"""
    time_limit_minutes: float | None = None
    """stop after the iteration (step) that passes this wall time, then evaluate and save"""
    track: bool = False
    """log to Weights & Biases (WANDB_MODE=offline works)"""
    wandb_project: str = "lm-gym"
    """Weights & Biases project of --track"""
    device: str | None = None
    """torch device; None: cuda when available, else cpu"""
    bf16: bool = False
    """bfloat16 autocast for sampling and forward passes (weights stay float32)"""
    torch_threads: int | None = None
    """torch.set_num_threads for the run; None: torch's default"""


@dataclass
class LoraArgs:
    """The flags of training at the users' model sizes (sft and the online baselines): LoRA adapters (peft) and
    gradient checkpointing."""

    lora_r: int = 0
    """rank of the LoRA adapters (peft) trained instead of every weight; the KL reference is then the same
    weights with the adapters off (no second copy); 0: full fine-tuning"""
    lora_alpha: float | None = None
    """LoRA's scale numerator: an adapter adds alpha / r x its product; None: 2 x --lora-r"""
    lora_dropout: float | None = None
    """dropout on the adapters' input while the model is in training mode (sft; the online baselines train in
    eval mode, dropout off); None: 0"""
    lora_target_modules: tuple[str, ...] = ()
    """names of the modules that get adapters (e.g. q_proj v_proj), or all-linear; empty: peft's default for the
    architecture (GPT-2: c_attn; Llama, Qwen2: q_proj v_proj), all-linear where peft has none"""
    gradient_checkpointing: bool = False
    """recompute the transformer layers' activations in the backward pass instead of keeping them (less memory,
    about a third more compute); the update's forward passes then run each whole sequence without a KV cache"""


@dataclass
class OnlineArgs(LoraArgs, BaselineArgs):
    """The flags of the RL baselines that play the env while they learn (ppo, nlpo, grpo)."""

    init_from: str | None = None
    """checkpoint directory written by baselines/sft.py (policy and tokenizer)"""
    iterations: int = 100
    """iterations (rollout + update)"""
    learning_rate: float = 1e-4
    """AdamW learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the iterations"""
    update_epochs: int = 4
    """epochs over each rollout batch per update"""
    num_minibatches: int = 4
    """minibatches per epoch (the rollout batch split evenly)"""
    clip_coef: float = 0.2
    """PPO ratio clipping range"""
    max_grad_norm: float = 1.0
    """gradient norm clipping"""
    min_new_tokens: int | None = None
    """EOS is not generated before this many tokens; None: the task's generation_defaults (IMDB: 48, as RL4LMs)"""


@dataclass
class OfflineArgs(BaselineArgs):
    """The flags of the baselines that learn from a fixed dataset by optimizer steps (sft, ilql)."""

    max_prompt_length: int | None = None
    """prompt tokens kept (the task's truncation side); None: the task's token_level_defaults"""
    max_new_tokens: int | None = None
    """utterance length limit in tokens, EOS included; None: the task's token_level_defaults"""
    learning_rate: float = 1e-3
    """peak learning rate of AdamW (1e-3 suits small models from scratch; pretrained ones want ~1e-5)"""
    batch_size: int = 32
    """examples (turns) per optimizer step"""
    epochs: int = 1
    """passes over the data"""
    max_steps: int | None = None
    """stop after this many optimizer steps (the schedule then spans max_steps)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    grad_clip: float = 1.0
    """max global gradient norm; 0 disables clipping"""
    log_every: int = 1
    """record the mean training losses in the curves (and W&B) every N steps"""
    eval_every: int = 0
    """optimizer steps between evaluations (0: only at the start and the end)"""
    save_every: int = 0
    """optimizer steps between checkpoints (0: only at the end)"""


# ---- checks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A test of a flag's value and the words for what it expects."""

    test: Callable[[Any], bool]
    expected: str


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def is_number(value: Any, *, finite: bool) -> bool:
    """A real number (numpy's scalars included), not a bool (Python's ``True`` is an ``int``).

    ``finite=True`` refuses NaN and infinities too: a flag's range check (``inf`` would pass ``>= 0``).
    ``finite=False`` keeps them: an env's metrics and infos are taken as they are (a NaN metric shows in the
    means instead of vanishing)."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.timedelta64))  # numpy counts a timedelta as an integer
        and (not finite or math.isfinite(value))
    )


def at_least(low: float) -> Rule:
    return Rule(lambda v: is_number(v, finite=True) and v >= low, f">= {low:g}")


def above(low: float) -> Rule:
    return Rule(lambda v: is_number(v, finite=True) and v > low, f"> {low:g}")


def within(low: float, high: float, *, open_low: bool = False, text: str | None = None) -> Rule:
    if open_low:
        return Rule(lambda v: is_number(v, finite=True) and low < v <= high, text or f"in ({low:g}, {high:g}]")
    return Rule(lambda v: is_number(v, finite=True) and low <= v <= high, text or f"in [{low:g}, {high:g}]")


def integer(low: int) -> Rule:
    return Rule(lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low, f"an int >= {low}")


def one_of(*choices: str) -> Rule:
    return Rule(lambda v: v in choices, " or ".join(repr(choice) for choice in choices))


def optional(rule: Rule) -> Rule:
    return Rule(lambda v: v is None or rule.test(v), f"{rule.expected} or None")


def check_flags(args: Any, **rules: Rule) -> None:
    """A ``ValueError`` naming the first flag whose value breaks its rule."""
    for name, rule in rules.items():
        value = getattr(args, name)
        if not rule.test(value):
            raise ValueError(f"{flag(name)} must be {rule.expected}, got {value!r}")


def common_rules(args: BaselineArgs) -> dict[str, Rule]:
    """The rules of :class:`BaselineArgs` (and :class:`OnlineArgs` / :class:`OfflineArgs`) flags."""
    rules = {
        "temperature": above(0),
        "eval_episodes": integer(0),
        "eval_batch_size": integer(1),
        "eval_every": integer(0),
        "save_every": integer(0),
        "time_limit_minutes": optional(at_least(0)),
    }
    if isinstance(args, LoraArgs):
        rules |= lora_rules(args)
    if isinstance(args, OnlineArgs):
        rules |= {
            "iterations": integer(1),
            "update_epochs": integer(1),
            "learning_rate": above(0),
            "clip_coef": above(0),
            "min_new_tokens": optional(integer(0)),
        }
    if isinstance(args, OfflineArgs):
        rules |= {
            "batch_size": integer(1),
            "epochs": integer(1),
            "log_every": integer(1),
            "max_steps": optional(integer(1)),
            "max_prompt_length": optional(integer(1)),
            "max_new_tokens": optional(Rule(lambda v: isinstance(v, int) and v >= 2, ">= 2 (a token and EOS)")),
            "learning_rate": above(0),
            "weight_decay": at_least(0),
            "grad_clip": at_least(0),
        }
    return rules


def lora_rules(args: LoraArgs) -> dict[str, Rule]:
    """The LoRA flags' rules: a rank >= 0; with rank 0 (no LoRA) no other LoRA flag set."""
    if args.lora_r == 0:
        unset = Rule(lambda v: v in (None, ()), "left unset without --lora-r > 0 (LoRA is off at rank 0)")
        return {"lora_r": integer(0), "lora_alpha": unset, "lora_dropout": unset, "lora_target_modules": unset}
    return {
        "lora_r": integer(0),
        "lora_alpha": optional(above(0)),
        "lora_dropout": optional(Rule(lambda v: is_number(v, finite=True) and 0 <= v < 1, "in [0, 1)")),
        "lora_target_modules": Rule(
            lambda v: all(isinstance(name, str) and name for name in v), "module names (non-empty strings)"
        ),
    }


def parse_json(name: str, text: str) -> dict[str, Any]:
    """``text`` parsed as a JSON object; a ``ValueError`` naming the flag otherwise."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError) as error:
        raise ValueError(f"{flag(name)} must be a JSON object, got {text!r}: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag(name)} must be a JSON object, got {text!r}")
    return value


def check_args(args: BaselineArgs, action_level_note: str, **rules: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check the common flags and the algorithm's ``rules``; return the parsed env kwargs and model config.

    ``action_level_note`` names the script in the error when ``--env-kwargs`` asks for another
    action level than the utterance level the baselines play.
    """
    env_kwargs = parse_json("env_kwargs", args.env_kwargs)
    model_config = parse_json("model_config", args.model_config)
    if args.model_name is None and getattr(args, "init_from", None) is None and "model_type" not in model_config:
        raise ValueError(f"--model-config needs a 'model_type' (e.g. 'gpt2' or 't5'), got {args.model_config!r}")
    if env_kwargs.get("action_level", "utterance") != "utterance":
        raise ValueError(f"--env-kwargs: {action_level_note} plays the utterance-level env; drop 'action_level'")
    check_flags(args, **common_rules(args), **rules)
    return env_kwargs, model_config
