"""Supervised warm start (behaviour cloning) of a language-model policy on an lm-gym task.

The policy is trained with the cross-entropy loss on the task's demonstrations
(``env.unwrapped.demonstrations()``: ``(observation, utterance)`` pairs; the references of
single-turn tasks, expert games for Wordle), then evaluated on the validation setting
through the batched vector env (samples of the policy, or greedy decoding with
``--eval-greedy``). The checkpoint it writes is what ``--init-from`` of the RL baselines
(``ppo.py``, ``nlpo.py``) loads.

Behaviour cloning on offline data: ``--dataset`` clones the turns of trajectories in
``lm_gym.offline``'s format instead (BC, ``algorithm`` ``"bc"`` in ``result.json``), and
``--top-fraction p`` only those of the best fraction p of trajectories by return (the ILQL
paper's %BC, ``"filtered_bc"``), the baselines ``ilql.py`` is compared with.

* Causal LM: input ``prompt + target + EOS``, loss on ``target + EOS`` only.
* Seq2seq LM (any encoder-decoder config, e.g. T5): encoder ``prompt``, labels ``target + EOS``.

Prompts are the observation's tokens without special tokens, cut to their last
``max_prompt_length`` tokens (as ``lm_gym.core.TokenLevel`` does); targets are the utterance's
first ``max_new_tokens - 1`` tokens and EOS. Both lengths default to the task's
``token_level_defaults``. Without ``--model-name`` the policy is a small randomly initialised
transformer (``--model-config``) on the BPE tokenizer lm-gym trains offline on the task's text.

Outputs in ``--out-dir``: ``checkpoint/`` (``save_pretrained`` model and tokenizer, plus
``trainer_state.pt`` for ``--resume``) and ``result.json`` (env, algorithm, seed, config,
final eval, curves, wall time, tokens/s, peak memory, checkpoint path).

Examples::

    # IMDB, offline synthetic reviews, a tiny GPT-2 from scratch (CPU friendly)
    python baselines/sft.py --env-kwargs '{"source": "synthetic"}' --max-examples 256 --out-dir /tmp/sft_imdb

    # Wordle (100 answers), a tiny T5
    python baselines/sft.py --env-id lm_gym/Wordle-v0 --env-kwargs '{"num_answers": 100}' \\
        --model-config '{"model_type": "t5", "d_model": 128, "d_ff": 256, "d_kv": 32, "num_layers": 2, "num_heads": 4}'

    # a pretrained model (hub name or local path), bf16 on a GPU, evaluation every 500 steps
    python baselines/sft.py --model-name gpt2 --bf16 --epochs 3 --eval-every 500 --track

    # %BC: the 10% best Wordle games of an offline dataset (lm_gym.tasks.wordle.offline_data)
    python baselines/sft.py --env-id lm_gym/Wordle-v0 --env-kwargs '{"num_answers": 100}' \\
        --dataset data/wordle_mixture.parquet --top-fraction 0.1

    # continue an interrupted run (same --out-dir)
    python baselines/sft.py --env-kwargs '{"source": "synthetic"}' --save-every 100 --resume
"""

import inspect
import json
import math
import random
import resource
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
import tyro
from tqdm.auto import tqdm

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core.registration import resolve_tokenizer
from lm_gym.core.vector import episode_info
from lm_gym.results import episode_samples, make_result, summarize_episodes, write_result

DEFAULT_MODEL_CONFIG = '{"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4}'
TRAINER_STATE = "trainer_state.pt"
EVAL_MAX_TURNS = 256  # an episode still running after this many turns is a task bug


@dataclass
class Args:
    # ---- task ----
    env_id: str = "lm_gym/IMDB-v0"
    """the registered lm-gym env id"""
    env_kwargs: str = "{}"
    """JSON dict of arguments for gymnasium.make, e.g. '{"source": "synthetic"}'"""
    seed: int = 1
    """seed of python, numpy and torch (model init, data order, dropout)"""
    dataset: str | None = None
    """offline trajectories (lm_gym.offline's format: .parquet, .jsonl or a save_to_disk directory) to clone instead of the task's demonstrations: every turn is an (observation, utterance) pair"""
    top_fraction: float = 1.0
    """%BC: clone only this fraction of --dataset's trajectories, those with the highest returns (1: all, plain BC)"""

    # ---- model ----
    model_name: str | None = None
    """hub name or local path of a pretrained causal or seq2seq LM (and its tokenizer); None: a random model from --model-config"""
    model_config: str = DEFAULT_MODEL_CONFIG
    """JSON for transformers.AutoConfig.for_model (used when --model-name is None); vocabulary and special token ids come from the tokenizer; an encoder-decoder model_type (e.g. "t5") gives a seq2seq policy"""
    max_prompt_length: int | None = None
    """prompt tokens kept (the last ones); None: the task's token_level_defaults"""
    max_new_tokens: int | None = None
    """utterance length limit in tokens, EOS included; None: the task's token_level_defaults"""

    # ---- training ----
    learning_rate: float = 1e-3
    """peak learning rate of AdamW"""
    batch_size: int = 32
    """demonstrations per optimizer step"""
    epochs: int = 1
    """passes over the demonstrations"""
    max_steps: int | None = None
    """stop after this many optimizer steps (the schedule then spans max_steps)"""
    max_examples: int | None = None
    """use only the first N demonstrations (quick runs)"""
    weight_decay: float = 0.0
    """AdamW weight decay (not applied to biases and norm weights)"""
    warmup_ratio: float = 0.1
    """fraction of the steps with linear warmup; the learning rate then decays linearly to 0"""
    grad_clip: float = 1.0
    """max global gradient norm; 0 disables clipping"""
    bf16: bool = False
    """bfloat16 autocast for training and generation (weights stay float32)"""
    perplexity_model: str | None = None
    """causal LM (hub name or local path, e.g. an sft.py checkpoint) that evaluations report corpus_perplexity_generations/_references under; None: not reported"""
    device: str | None = None
    """torch device; None: cuda if available, else cpu"""

    # ---- evaluation ----
    eval_episodes: int = 64
    """episodes played greedily in the validation setting (0: no evaluation)"""
    eval_batch_size: int = 32
    """episodes played at once (sub-envs of the vector env)"""
    eval_every: int = 0
    """evaluate every N optimizer steps (0: only at the end)"""
    eval_seed: int = 0
    """evaluation episode j is reset with seed eval_seed + j (the same episodes for every run); sampling draws from this seed too"""
    eval_greedy: bool = False
    """evaluate greedy decoding instead of samples of the policy (as the RL baselines)"""

    # ---- logging and checkpoints ----
    out_dir: str = "runs/sft"
    """where checkpoint/ and result.json are written"""
    log_every: int = 1
    """record the mean training loss in the curves (and wandb) every N steps"""
    save_every: int = 0
    """also write the checkpoint every N steps (0: only at the end)"""
    resume: bool = False
    """continue from out_dir/checkpoint when it holds a trainer state (else start fresh)"""
    track: bool = False
    """log to Weights & Biases"""
    wandb_project: str = "lm-gym"
    """wandb project name"""


# ---------------------------------------------------------------------------------------------
# arguments, seeding
# ---------------------------------------------------------------------------------------------
def parse_json_dict(name: str, text: str) -> dict[str, Any]:
    """``text`` parsed as a JSON object; a ``ValueError`` naming the argument otherwise."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError) as error:
        raise ValueError(f"--{name.replace('_', '-')} must be a JSON object, got {text!r}: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"--{name.replace('_', '-')} must be a JSON object (a dict), got {type(value).__name__}: {text!r}")
    return value


def check_args(args: Args) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate ``args``; return the parsed env kwargs and model config."""
    env_kwargs = parse_json_dict("env_kwargs", args.env_kwargs)
    model_config = parse_json_dict("model_config", args.model_config)
    if args.model_name is None and "model_type" not in model_config:
        raise ValueError(f"--model-config needs a 'model_type' (e.g. 'gpt2' or 't5'), got {args.model_config!r}")
    if env_kwargs.get("action_level", "utterance") != "utterance":
        raise ValueError("--env-kwargs: sft.py trains on the utterance-level env; drop 'action_level'")
    if not (isinstance(args.top_fraction, (int, float)) and 0 < args.top_fraction <= 1):
        raise ValueError(f"--top-fraction must be in (0, 1], got {args.top_fraction!r}")
    if args.top_fraction < 1 and args.dataset is None:
        raise ValueError("--top-fraction filters --dataset's trajectories by return; pass --dataset")

    def positive(name: str, allow_none: bool = False, allow_zero: bool = False) -> None:
        value = getattr(args, name)
        if value is None and allow_none:
            return
        low = 0 if allow_zero else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"--{name.replace('_', '-')} must be an int >= {low}, got {value!r}")

    for name in ("batch_size", "epochs", "eval_batch_size", "log_every"):
        positive(name)
    for name in ("max_steps", "max_examples", "max_prompt_length"):
        positive(name, allow_none=True)
    for name in ("eval_episodes", "eval_every", "save_every"):
        positive(name, allow_zero=True)
    if args.max_new_tokens is not None:
        positive("max_new_tokens")
        if args.max_new_tokens < 2:
            raise ValueError(f"--max-new-tokens must be >= 2 (a token and EOS), got {args.max_new_tokens}")
    if not args.learning_rate > 0:
        raise ValueError(f"--learning-rate must be > 0, got {args.learning_rate!r}")
    if not 0 <= args.warmup_ratio < 1:
        raise ValueError(f"--warmup-ratio must be in [0, 1), got {args.warmup_ratio!r}")
    if args.weight_decay < 0 or args.grad_clip < 0:
        raise ValueError(f"--weight-decay and --grad-clip must be >= 0, got {args.weight_decay!r}, {args.grad_clip!r}")
    return env_kwargs, model_config


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """Every global RNG state, in types ``torch.load(weights_only=True)`` accepts."""
    numpy_state = np.random.get_state(legacy=False)
    return {
        "python": random.getstate(),
        "numpy": {**numpy_state, "state": {"key": numpy_state["state"]["key"].tolist(), "pos": numpy_state["state"]["pos"]}},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    numpy_state = state["numpy"]
    numpy_state["state"]["key"] = np.asarray(numpy_state["state"]["key"], dtype=np.uint32)
    np.random.set_state(numpy_state)
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------------------------------------
# data: demonstrations -> token ids -> padded batches
# ---------------------------------------------------------------------------------------------
def dataset_demonstrations(path: str, env_id: str, top_fraction: float) -> list[tuple[str, str]]:
    """Every turn of the trajectories in ``path`` as an (observation, utterance) pair; with ``top_fraction``
    < 1 only the trajectories with the highest returns (ties kept in dataset order), the ILQL paper's %BC."""
    from lm_gym.offline import load_trajectories

    trajectories = load_trajectories(path)
    other = sorted(set(trajectories.unique("env_id")) - {env_id})
    if other:
        raise ValueError(f"--dataset {path!r} holds trajectories of {other}, not of --env-id {env_id!r}")
    keep = max(1, math.ceil(top_fraction * len(trajectories)))
    best = np.argsort(-np.asarray(trajectories["return"]), kind="stable")[:keep]
    rows = trajectories.select(np.sort(best)).select_columns(["observations", "actions"])
    return [pair for row in rows for pair in zip(row["observations"], row["actions"], strict=True)]


def encode_prompts(tokenizer, texts: list[str], max_prompt_length: int, side: str = "left") -> list[list[int]]:
    """Observation tokens (no special tokens) cut to ``max_prompt_length`` as TokenLevel does: ``side="left"``
    keeps the last tokens, ``"right"`` the first (the task's ``prompt_truncation_side``, CNN/DailyMail: right).

    An empty prompt becomes ``[EOS]`` so that a causal model always has a token to start from.
    """
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
    return [list(x[-max_prompt_length:] if side == "left" else x[:max_prompt_length]) or [tokenizer.eos_token_id] for x in ids]


def encode_targets(tokenizer, texts: list[str], max_new_tokens: int) -> list[list[int]]:
    """The utterance's first ``max_new_tokens - 1`` tokens, then EOS."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
    return [list(x[: max_new_tokens - 1]) + [tokenizer.eos_token_id] for x in ids]


def pad(sequences: list[list[int]], value: int, side: str) -> torch.Tensor:
    width = max(len(s) for s in sequences)
    rows = [([value] * (width - len(s)) + s) if side == "left" else (s + [value] * (width - len(s))) for s in sequences]
    return torch.tensor(rows, dtype=torch.long)


def collate(prompts: list[list[int]], targets: list[list[int]], pad_id: int, is_seq2seq: bool) -> dict[str, torch.Tensor]:
    """A training batch; ``labels`` are -100 wherever no loss is taken."""
    if is_seq2seq:
        input_ids = pad(prompts, pad_id, "left")
        attention_mask = pad([[1] * len(p) for p in prompts], 0, "left")
        labels = pad(targets, -100, "right")
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
    sequences = [p + t for p, t in zip(prompts, targets, strict=True)]
    input_ids = pad(sequences, pad_id, "right")
    attention_mask = pad([[1] * len(s) for s in sequences], 0, "right")
    labels = pad([[-100] * len(p) + t for p, t in zip(prompts, targets, strict=True)], -100, "right")
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def epoch_order(seed: int, epoch: int, n: int) -> np.ndarray:
    """The shuffled example order of ``epoch``: a function of (seed, epoch) only, so resuming replays it."""
    return np.random.default_rng([seed, epoch]).permutation(n)


# ---------------------------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------------------------
def build_model(args: Args, model_config: dict[str, Any], tokenizer, source: str | None):
    """The policy: from ``source`` (a checkpoint or pretrained name/path) or a random ``model_config``."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    if source is not None:
        try:
            config = AutoConfig.from_pretrained(source)
            auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
            model = auto.from_pretrained(source, dtype=torch.float32)
        except OSError as error:
            raise ValueError(
                f"could not load model {source!r} ({error}). Offline, pass a local directory or leave --model-name unset "
                "to train a small model from --model-config."
            ) from error
        if model.get_input_embeddings().num_embeddings < len(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
        return model

    special = {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    try:
        config = AutoConfig.for_model(**{**model_config, **special})
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"--model-config {args.model_config!r} is not a valid transformers config: {error}") from error
    if config.is_encoder_decoder:
        # T5 convention: the decoder starts from the pad token (unless the config says otherwise).
        config.decoder_start_token_id = model_config.get("decoder_start_token_id", tokenizer.pad_token_id)
        return AutoModelForSeq2SeqLM.from_config(config)
    return AutoModelForCausalLM.from_config(config)


def check_positions(model, max_prompt_length: int, max_new_tokens: int) -> None:
    """Absolute-position models must fit prompt + utterance."""
    limit = getattr(model.config, "max_position_embeddings", None)
    needed = max_prompt_length + (0 if model.config.is_encoder_decoder else max_new_tokens)
    if isinstance(limit, int) and 0 < limit < needed:
        raise ValueError(
            f"the model has {limit} positions but max_prompt_length + max_new_tokens = {needed}; "
            "pass a larger position limit in --model-config or smaller --max-prompt-length/--max-new-tokens"
        )


# ---------------------------------------------------------------------------------------------
# generation and evaluation
# ---------------------------------------------------------------------------------------------
@torch.no_grad()
def generate_utterances(
    model, tokenizer, observations: list[str], max_prompt_length: int, max_new_tokens: int, min_new_tokens: int = 0,
    sample: bool = False, bf16: bool = False, truncation_side: str = "left",
) -> list[str]:
    """Sampled (temperature 1) or greedy utterances for a batch of observation texts (left-padded prompts, KV cache).

    ``min_new_tokens``: the task's generation protocol (``generation_defaults``), EOS suppressed before then.
    """
    device = next(model.parameters()).device
    prompts = encode_prompts(tokenizer, observations, max_prompt_length, truncation_side)
    input_ids = pad(prompts, tokenizer.pad_token_id, "left").to(device)
    attention_mask = pad([[1] * len(p) for p in prompts], 0, "left").to(device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        output = model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=max_new_tokens,
            min_new_tokens=min_new_tokens,
            **({"do_sample": True, "top_k": 0, "top_p": 1.0} if sample else {"do_sample": False}),
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    # causal: the prompt comes first; seq2seq: the decoder start token does
    new_tokens = output[:, 1:] if model.config.is_encoder_decoder else output[:, input_ids.shape[1] :]
    utterances = []
    for row in new_tokens.tolist():
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id)]
        utterances.append(tokenizer.decode(row, skip_special_tokens=True))
    return utterances


def evaluate(model, tokenizer, venv, num_episodes: int, seed: int, max_prompt_length: int, max_new_tokens: int, min_new_tokens: int, sample: bool, bf16: bool, truncation_side: str = "left", perplexity_model: str | None = None) -> tuple[dict[str, float], list[dict]]:
    """Play ``num_episodes`` episodes (sampled or greedy), each sub-env one episode per round.

    Episode j is reset with seed ``seed + j``. Returns ``mean_return``, ``std_return``,
    ``num_episodes``, ``mean_<key>`` of every numeric key of ``info["metrics"]`` and ``corpus_<key>`` of the
    task's corpus metrics (``env.corpus_metrics``: BLEU, CIDEr, diversity, ...; see ``lm_gym.results``),
    and a few sample episodes (``lm_gym.results.episode_samples``).
    """
    was_training = model.training
    model.eval()
    max_chars = venv.single_action_space.max_length
    returns: list[float] = []
    metrics: list[dict[str, float]] = []
    finals: list[dict] = []  # each counted episode's final info, for the task's corpus metrics
    for first in range(0, num_episodes, venv.num_envs):
        observations, _ = venv.reset(seed=seed + first)
        counted = min(venv.num_envs, num_episodes - first)  # sub-envs beyond this play seeds we don't need
        active = np.ones(venv.num_envs, dtype=bool)
        episode_return = np.zeros(venv.num_envs)
        for _ in range(EVAL_MAX_TURNS):
            indices = np.flatnonzero(active)
            texts = generate_utterances(
                model, tokenizer, [observations[i] for i in indices], max_prompt_length, max_new_tokens, min_new_tokens, sample, bf16,
                truncation_side,
            )
            actions = [""] * venv.num_envs  # finished sub-envs: autoreset ignores their action
            for i, text in zip(indices, texts, strict=True):
                actions[i] = text[:max_chars]
            observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
            episode_return[active] += rewards[active]
            finished = active & (terminations | truncations)
            for i in np.flatnonzero(finished):
                if i >= counted:
                    continue
                returns.append(float(episode_return[i]))
                finals.append({**episode_info(infos, i), "observation": observations[i]})
                episode_metrics = infos["metrics"] if "metrics" in infos and infos["_metrics"][i] else {}
                metrics.append({key: values[i] for key, values in episode_metrics.items() if not key.startswith("_") and episode_metrics["_" + key][i]})
            active &= ~finished
            if not active.any():
                break
        else:
            raise RuntimeError(f"evaluation episodes still running after {EVAL_MAX_TURNS} turns")
    model.train(was_training)
    evaluation = summarize_episodes(returns, metrics, venv.envs[0].corpus_metrics(finals, language_model=perplexity_model))
    return evaluation, episode_samples(finals, returns)


# ---------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------
def save_checkpoint(directory: Path, model, tokenizer, optimizer, scheduler, state: dict[str, Any]) -> None:
    """Model and tokenizer (``save_pretrained``) plus ``trainer_state.pt``, replaced atomically."""
    tmp = directory.with_name(directory.name + ".tmp")
    old = directory.with_name(directory.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    torch.save(
        {**state, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": rng_state()},
        tmp / TRAINER_STATE,
    )
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


def format_eval(evaluation: dict[str, float] | None) -> str:
    return "not evaluated" if evaluation is None else ", ".join(f"{key} {value:.4g}" for key, value in evaluation.items())


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def main(args: Args) -> dict[str, Any]:
    start_time = time.time()
    env_kwargs, model_config = check_args(args)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if args.bf16 and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(f"--bf16: device {device} does not support bfloat16")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    checkpoint_dir = out_dir / "checkpoint"
    resuming = args.resume and (checkpoint_dir / TRAINER_STATE).is_file()
    if args.resume and not resuming:
        print(f"--resume: no trainer state in {checkpoint_dir}, starting fresh")
    seed_everything(args.seed)

    # ---- task, demonstrations, tokenizer ----
    env = gymnasium.make(args.env_id, **env_kwargs)
    task = env.unwrapped
    demonstrations = task.demonstrations() if args.dataset is None else dataset_demonstrations(args.dataset, args.env_id, args.top_fraction)
    if args.max_examples is not None:
        demonstrations = demonstrations[: args.max_examples]
    if not demonstrations:
        raise ValueError(f"{args.env_id} gave no demonstrations")
    tokenizer = resolve_tokenizer(task, str(checkpoint_dir) if resuming else args.model_name)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    max_prompt_length = args.max_prompt_length or task.token_level_defaults["max_prompt_length"]
    max_new_tokens = args.max_new_tokens or task.token_level_defaults["max_new_tokens"]
    min_new_tokens = min(task.generation_defaults.get("min_new_tokens", 0), max_new_tokens)  # for evaluation
    truncation_side = task.token_level_defaults.get("prompt_truncation_side", "left")
    prompts = encode_prompts(tokenizer, [obs for obs, _ in demonstrations], max_prompt_length, truncation_side)
    targets = encode_targets(tokenizer, [utterance for _, utterance in demonstrations], max_new_tokens)

    # ---- model, optimizer, schedule ----
    seed_everything(args.seed)  # again: building the env may or may not have used the RNGs (caches)
    model = build_model(args, model_config, tokenizer, str(checkpoint_dir) if resuming else args.model_name).to(device)
    model.train()
    is_seq2seq = bool(model.config.is_encoder_decoder)
    check_positions(model, max_prompt_length, max_new_tokens)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.learning_rate,
    )
    steps_per_epoch = math.ceil(len(prompts) / args.batch_size)
    total_steps = args.epochs * steps_per_epoch
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)
    warmup_steps = int(args.warmup_ratio * total_steps)

    def lr_multiplier(step: int) -> float:  # step = optimizer updates done so far
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_multiplier)

    state: dict[str, Any] = {
        "step": 0, "curves": [], "train_tokens": 0, "train_examples": 0, "train_time_s": 0.0, "wall_time_s": 0.0, "initial_eval": None,
    }
    if resuming:
        saved = torch.load(checkpoint_dir / TRAINER_STATE, map_location="cpu", weights_only=True)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])  # keeps its step; the schedule spans this run's total_steps
        set_rng_state(saved["rng"])
        state = {key: saved.get(key, default) for key, default in state.items()}
        print(f"resumed from {checkpoint_dir} at step {state['step']}")

    # ---- evaluation env: the validation split when the task has one ----
    eval_kwargs = dict(env_kwargs)
    if "split" in inspect.signature(type(task).__init__).parameters:
        eval_kwargs["split"] = "validation"
    venv = None

    def run_eval() -> tuple[dict[str, float] | None, list[dict]]:
        nonlocal venv
        if args.eval_episodes == 0:
            return None, []
        if venv is None:
            num_envs = min(args.eval_batch_size, args.eval_episodes)
            venv = gymnasium.make_vec(args.env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **eval_kwargs)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):  # training's random streams stay untouched
            torch.manual_seed(args.eval_seed)
            return evaluate(
                model, tokenizer, venv, args.eval_episodes, args.eval_seed, max_prompt_length, max_new_tokens, min_new_tokens,
                not args.eval_greedy, args.bf16, truncation_side, args.perplexity_model,
            )

    writer = None
    if args.track:
        import wandb

        run_name = f"{args.env_id.replace('/', '_')}__sft__{args.seed}__{int(start_time)}"
        writer = wandb.init(project=args.wandb_project, config=asdict(args), dir=str(out_dir), name=run_name)

    def snapshot() -> dict[str, Any]:
        return {**state, "wall_time_s": state["wall_time_s"] + time.time() - start_time, "config": asdict(args)}

    # ---- training loop ----
    print(
        f"sft on {args.env_id}: {len(prompts)} demonstrations, {'seq2seq' if is_seq2seq else 'causal'} model with "
        f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, {total_steps} steps on {device}"
    )
    if not resuming:  # the starting policy, evaluated exactly as the final one
        state["initial_eval"], _ = run_eval()
    window_losses: list[float] = []
    progress = tqdm(total=total_steps, initial=min(state["step"], total_steps), desc="sft", dynamic_ncols=True)
    while state["step"] < total_steps:
        step_start = time.time()
        epoch, position = divmod(state["step"], steps_per_epoch)
        order = epoch_order(args.seed, epoch, len(prompts))
        index = order[position * args.batch_size : (position + 1) * args.batch_size]
        batch = collate([prompts[i] for i in index], [targets[i] for i in index], tokenizer.pad_token_id, is_seq2seq)
        batch = {key: value.to(device) for key, value in batch.items()}
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        lr = scheduler.get_last_lr()[0]
        scheduler.step()

        num_tokens = int(batch["attention_mask"].sum()) + (int((batch["labels"] != -100).sum()) if is_seq2seq else 0)
        state["step"] += 1
        state["train_tokens"] += num_tokens
        state["train_examples"] += len(index)
        state["train_time_s"] += time.time() - step_start
        window_losses.append(loss.item())
        if not math.isfinite(window_losses[-1]):
            raise FloatingPointError(f"non-finite loss {window_losses[-1]} at step {state['step']}")
        progress.update(1)
        progress.set_postfix(loss=f"{window_losses[-1]:.4f}", lr=f"{lr:.2e}")

        step = state["step"]
        entry: dict[str, Any] = {}
        if step % args.log_every == 0 or step == total_steps:
            entry = {"step": step, "loss": float(np.mean(window_losses)), "lr": lr, "tokens": state["train_tokens"]}
            window_losses = []
        if args.eval_every and step % args.eval_every == 0 and step < total_steps:
            metrics, _ = run_eval()
            progress.write(f"step {step}: eval {json.dumps(metrics)}")
            entry = {"step": step, **entry, **{f"eval/{key}": value for key, value in metrics.items()}}
        if entry:
            state["curves"].append(entry)
            if writer is not None:
                writer.log({("train/" + k if not k.startswith("eval/") else k): v for k, v in entry.items() if k != "step"}, step=step)
        if args.save_every and step % args.save_every == 0 and step < total_steps:
            save_checkpoint(checkpoint_dir, model, tokenizer, optimizer, scheduler, snapshot())
    progress.close()

    # ---- final evaluation, checkpoint, result.json ----
    final_eval, samples = run_eval()
    if final_eval:
        if state["curves"] and state["curves"][-1]["step"] == state["step"]:
            state["curves"][-1].update({f"eval/{key}": value for key, value in final_eval.items()})
        else:
            state["curves"].append({"step": state["step"], **{f"eval/{key}": value for key, value in final_eval.items()}})
        if writer is not None:
            writer.log({f"eval/{key}": value for key, value in final_eval.items()}, step=state["step"])
    save_checkpoint(checkpoint_dir, model, tokenizer, optimizer, scheduler, snapshot())

    result = make_result(
        env_id=args.env_id,
        algorithm="sft" if args.dataset is None else ("bc" if args.top_fraction == 1 else "filtered_bc"),
        seed=args.seed,
        config=asdict(args),
        initial_eval=state["initial_eval"],
        final_eval=final_eval,
        curves=state["curves"],
        wall_time_s=state["wall_time_s"] + time.time() - start_time,
        tokens_per_s=state["train_tokens"] / state["train_time_s"] if state["train_time_s"] > 0 else 0.0,
        episodes_per_s=state["train_examples"] / state["train_time_s"] if state["train_time_s"] > 0 else 0.0,
        peak_memory_mb=peak_memory_mb(device),
        checkpoint=checkpoint_dir.name,
        device=str(device),
        samples=samples,
    )
    write_result(out_dir, result)
    print(f"{args.env_id} {result['algorithm']} seed {args.seed}: final evaluation {format_eval(final_eval)} (start {format_eval(state['initial_eval'])})")
    if writer is not None:
        writer.finish()
    if venv is not None:
        venv.close()
    env.close()
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
