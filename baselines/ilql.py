"""Implicit Language Q-Learning (ILQL, Snell et al. 2022) on offline trajectories of an lm-gym task.

Offline RL per token: the policy never plays during training. It learns from trajectories in
``lm_gym.offline``'s format (``--dataset``: Wordle games of ``lm_gym.tasks.wordle.offline_data``,
recorded games of any policy, ...; without it, the task's references scored by its reward).

Every turn of a trajectory is one causal sequence ``observation + utterance + EOS``. The
observation's tokens are the environment's, not actions: only the utterance's tokens (and
its EOS) are actions. On the trunk's last hidden state before each action token sit

* two Q heads ``Q1, Q2`` (one value per vocabulary token) with Polyak-averaged target copies,
* a V head, and the policy's own LM head (the behaviour-cloning policy ``pi``).

Per action token ``a`` in state ``s`` (the tokens so far), with the next state ``s'``:

* Q loss: ``(Qi(s, a) - y)^2`` for both heads, ``y = r + gamma * V(s')`` (V detached). The
  turn's reward ``r`` lands on its last token (EOS); the other tokens get 0. After the last
  token ``s'`` is the first state of the next turn, so multi-turn episodes bootstrap across
  turns; a turn that ends the episode has ``y = r``. (A time-limit truncation is also
  treated as an end: the format keeps no observation after it.)
* V loss, expectile regression: ``|tau - 1(u < 0)| * u^2`` with ``u = min(Q1', Q2')(s, a) - V(s)``
  (target heads), so V tracks an upper expectile of the data's Q values.
* CQL term, weight ``--cql-weight`` (the paper's alpha): ``logsumexp_a' Qi(s, a') - Qi(s, a)``,
  pushing Q down on tokens the data never took.
* Policy loss, weight ``--awac-weight`` (the ILQL code base's ``awac_weight``): cross-entropy
  of ``pi`` on the data's tokens (``--policy-loss bc``), or weighted by
  ``exp(--awac-beta * (min Q' - V))`` (``awac``, advantage-weighted, capped at ``--max-awac-weight``).

Target heads follow ``Q' <- Q' + polyak * (Q - Q')`` after every optimizer step.

Trunks: by default (as the ILQL code base's Wordle configs, ``seperate_policy``) Q and V sit
on their own copy of the transformer, initialised like the policy, so that value learning
cannot disturb the policy's language model. ``--no-separate-trunk`` puts every head on the
policy's transformer, whose gradients then come from every loss: half the compute.

Inference: the next token is drawn from (or, ``--eval-greedy``, the argmax of)
``log pi(.|s) + beta * (min(Q1', Q2')(s, .) - V(s))``, ``beta`` = ``--beta``; ``beta = 0``
is the behaviour-cloning policy. Evaluation plays the utterance-level env through the batched
vector env. Causal policies only (``--model-name`` of a causal LM or a causal ``--model-config``).

Outputs in ``--out-dir``: ``checkpoint/`` (``save_pretrained`` policy and tokenizer,
``ilql_heads.pt``, ``value_trunk/`` with ``--separate-trunk``, ``trainer_state.pt`` for
``--resume``) and ``result.json`` (``lm_gym.results``).

Examples::

    # Wordle (100 answers): a suboptimal dataset, then ILQL on it
    python -m lm_gym.tasks.wordle.offline_data --dataset mixture --num-games 2000 --num-answers 100 --out data/wordle_mixture.parquet
    python baselines/ilql.py --env-id lm_gym/Wordle-v0 --env-kwargs '{"num_answers": 100}' --dataset data/wordle_mixture.parquet

    # IMDB, offline synthetic reviews: the references scored by the sentiment reward
    python baselines/ilql.py --env-kwargs '{"source": "synthetic"}' --max-steps 200

    # the BC baselines on the same data: sft.py --dataset (all of it) and --top-fraction 0.1 (%BC)
"""

import copy
import inspect
import json
import math
import random
import resource
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium
import numpy as np
import torch
import torch.nn.functional as F
import tyro
from torch import nn
from tqdm.auto import tqdm

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core.registration import resolve_tokenizer
from lm_gym.core.vector import episode_info
from lm_gym.offline import load_trajectories, reference_trajectories
from lm_gym.results import episode_samples, make_result, summarize_episodes, write_result

DEFAULT_MODEL_CONFIG = '{"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4}'
TRAINER_STATE = "trainer_state.pt"
HEADS_FILE = "ilql_heads.pt"
EVAL_MAX_TURNS = 256  # an episode still running after this many turns is a task bug


@dataclass
class Args:
    # ---- task and data ----
    env_id: str = "lm_gym/IMDB-v0"
    """the registered lm-gym env id (evaluation, tokenizer; must match the dataset's env_id)"""
    env_kwargs: str = "{}"
    """JSON dict of arguments for gymnasium.make, e.g. '{"source": "synthetic"}'"""
    dataset: str | None = None
    """offline trajectories in lm_gym.offline's format (.parquet, .jsonl or a save_to_disk directory); None: the task's train-split references scored by its reward (single-turn tasks)"""
    max_trajectories: int | None = None
    """use only the first N trajectories (quick runs)"""
    seed: int = 1
    """seed of python, numpy and torch (model init, data order, sampling)"""

    # ---- model ----
    model_name: str | None = None
    """hub name or local path of a pretrained causal LM (and its tokenizer), e.g. an sft.py checkpoint; None: a random model from --model-config"""
    model_config: str = DEFAULT_MODEL_CONFIG
    """JSON for transformers.AutoConfig.for_model (when --model-name is None); vocabulary and special tokens come from the tokenizer"""
    separate_trunk: bool = True
    """Q and V heads on their own copy of the transformer (--no-separate-trunk: on the policy's)"""
    max_prompt_length: int | None = None
    """observation tokens kept (the task's truncation side); None: the task's token_level_defaults"""
    max_new_tokens: int | None = None
    """utterance length limit in tokens, EOS included; None: the task's token_level_defaults"""

    # ---- ILQL ----
    gamma: float = 0.99
    """discount per token"""
    tau: float = 0.7
    """expectile of the V loss (0.5: V is the mean of Q; towards 1: the max)"""
    cql_weight: float = 0.005
    """weight of the CQL term (the ILQL code base's cql_loss_weight: 1e-4 in its Wordle configs, 1.0 Visual Dialogue, 0.25 Reddit)"""
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
    """inference: weight of the advantage min(Q1', Q2') - V added to the policy's log-probabilities (0: behaviour cloning)"""

    # ---- optimization ----
    learning_rate: float = 1e-3
    """AdamW learning rate, constant after warmup as in the ILQL code base (1e-3 suits small models from scratch, as sft.py's default; pretrained ones want ~1e-5)"""
    warmup_steps: int = 100
    """linear warmup steps"""
    batch_size: int = 64
    """turns per optimizer step"""
    epochs: int = 1
    """passes over the turns of the dataset"""
    max_steps: int | None = None
    """stop after this many optimizer steps"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    grad_clip: float = 1.0
    """max global gradient norm; 0 disables clipping"""
    bf16: bool = False
    """bfloat16 autocast (weights stay float32)"""
    device: str | None = None
    """torch device; None: cuda if available, else cpu"""

    # ---- evaluation ----
    eval_episodes: int = 64
    """episodes played in the validation setting (0: no evaluation)"""
    eval_batch_size: int = 32
    """episodes played at once (sub-envs of the vector env)"""
    eval_every: int = 0
    """evaluate every N optimizer steps (0: only at the start and the end)"""
    eval_seed: int = 0
    """evaluation episode j is reset with seed eval_seed + j (the same episodes for every run); sampling draws from this seed too"""
    eval_greedy: bool = False
    """greedy decoding instead of sampling"""
    temperature: float = 1.0
    """sampling temperature of evaluation"""

    # ---- logging and checkpoints ----
    out_dir: str = "runs/ilql"
    """where checkpoint/ and result.json are written"""
    log_every: int = 10
    """record the mean losses in the curves (and wandb) every N steps"""
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
        raise ValueError(f"--model-config needs a 'model_type' (e.g. 'gpt2'), got {args.model_config!r}")
    if env_kwargs.get("action_level", "utterance") != "utterance":
        raise ValueError("--env-kwargs: ilql.py plays the utterance-level env; drop 'action_level'")

    def integer(name: str, low: int, allow_none: bool = False) -> None:
        value = getattr(args, name)
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"--{name.replace('_', '-')} must be an int >= {low}, got {value!r}")

    for name in ("batch_size", "epochs", "eval_batch_size", "log_every"):
        integer(name, 1)
    for name in ("eval_episodes", "eval_every", "save_every", "warmup_steps"):
        integer(name, 0)
    for name in ("max_steps", "max_trajectories", "max_prompt_length"):
        integer(name, 1, allow_none=True)
    integer("max_new_tokens", 2, allow_none=True)  # a token and EOS

    def number(name: str, low: float, high: float = math.inf, low_open: bool = False) -> None:
        value = getattr(args, name)
        inside = isinstance(value, (int, float)) and not isinstance(value, bool) and (low < value if low_open else low <= value) and value <= high
        if not inside:
            raise ValueError(f"--{name.replace('_', '-')} must be a number in {'(' if low_open else '['}{low}, {high}], got {value!r}")

    number("gamma", 0, 1)
    number("tau", 0, 1, low_open=True)
    number("polyak", 0, 1, low_open=True)
    number("learning_rate", 0, low_open=True)
    number("temperature", 0, low_open=True)
    number("max_awac_weight", 0, low_open=True)
    for name in ("cql_weight", "awac_weight", "awac_beta", "beta", "weight_decay", "grad_clip"):
        number(name, 0)
    if args.policy_loss not in ("bc", "awac"):
        raise ValueError(f"--policy-loss must be 'bc' or 'awac', got {args.policy_loss!r}")
    return env_kwargs, model_config


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


# ---------------------------------------------------------------------------------------------
# data: trajectories -> turns -> token ids
# ---------------------------------------------------------------------------------------------
@dataclass
class Turns:
    """Every turn of the dataset, tokenized: its observation, its utterance + EOS, its reward, whether
    the episode ended there and, when it did not, the next turn's observation (the state to bootstrap from)."""

    prompts: list[list[int]]
    actions: list[list[int]]
    rewards: np.ndarray
    dones: np.ndarray
    next_prompts: list[list[int] | None]


def load_dataset(args: Args, env_kwargs: dict[str, Any]):
    """``--dataset``, checked to hold the env's trajectories, or the task's scored references."""
    if args.dataset is None:
        dataset = reference_trajectories(args.env_id, split="train", env_kwargs=env_kwargs, max_samples=args.max_trajectories)
    else:
        dataset = load_trajectories(args.dataset)
        other = sorted(set(dataset.unique("env_id")) - {args.env_id})
        if other:
            raise ValueError(f"--dataset {args.dataset!r} holds trajectories of {other}, not of --env-id {args.env_id!r}")
    if args.max_trajectories is not None:
        dataset = dataset.select(range(min(args.max_trajectories, len(dataset))))
    if len(dataset) == 0:
        raise ValueError(f"the dataset of {args.env_id} is empty")
    return dataset


def encode_prompts(tokenizer, texts: list[str], max_length: int, side: str = "left") -> list[list[int]]:
    """Observation tokens cut to ``max_length`` as TokenLevel does (``left`` keeps the last ones); never empty."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
    return [list(x[-max_length:] if side == "left" else x[:max_length]) or [tokenizer.eos_token_id] for x in ids]


def encode_turns(dataset, tokenizer, max_prompt_length: int, max_new_tokens: int, side: str) -> Turns:
    observations, actions, rewards, dones, next_observations = [], [], [], [], []
    for row in dataset.select_columns(["observations", "actions", "rewards", "dones"]):
        for t in range(len(row["actions"])):
            observations.append(row["observations"][t])
            actions.append(row["actions"][t])
            rewards.append(row["rewards"][t])
            dones.append(row["dones"][t])
            next_observations.append(None if row["dones"][t] else row["observations"][t + 1])
    action_ids = tokenizer(actions, add_special_tokens=False)["input_ids"]
    following = [text for text in next_observations if text is not None]
    following_ids = iter(encode_prompts(tokenizer, following, max_prompt_length, side))
    return Turns(
        prompts=encode_prompts(tokenizer, observations, max_prompt_length, side),
        actions=[list(ids[: max_new_tokens - 1]) + [tokenizer.eos_token_id] for ids in action_ids],
        rewards=np.asarray(rewards, dtype=np.float32),
        dones=np.asarray(dones, dtype=bool),
        next_prompts=[None if text is None else next(following_ids) for text in next_observations],
    )


def pad(rows: list[list[int]], value: int, side: str) -> torch.Tensor:
    width = max(len(row) for row in rows)
    return torch.tensor([([value] * (width - len(row)) + row) if side == "left" else (row + [value] * (width - len(row))) for row in rows])


def left_padded(prompts: list[list[int]], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Left-padded prompts with explicit positions (absolute-position models count from the first real token)."""
    mask = pad([[1] * len(p) for p in prompts], 0, "left").to(device)
    return {"input_ids": pad(prompts, pad_id, "left").to(device), "attention_mask": mask, "position_ids": (mask.cumsum(1) - 1).clamp(min=0)}


# ---------------------------------------------------------------------------------------------
# model: the policy (trunk + LM head) and the ILQL heads
# ---------------------------------------------------------------------------------------------
class ILQLHeads(nn.Module):
    """Q1, Q2 (a value per vocabulary token), their Polyak-averaged targets and V, on a trunk's hidden states.

    Two-layer MLPs of width 2 x hidden, as the ILQL code base's heads.
    """

    def __init__(self, hidden_size: int, vocab_size: int):
        super().__init__()

        def mlp(outputs: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.ReLU(), nn.Linear(2 * hidden_size, outputs))

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


def polyak_update(source: nn.Module, target: nn.Module, rate: float) -> None:
    """``target <- target + rate * (source - target)``, parameter by parameter."""
    with torch.no_grad():
        for param, target_param in zip(source.parameters(), target.parameters(), strict=True):
            target_param.lerp_(param, rate)


def hidden_states(trunk, inputs: dict[str, torch.Tensor], cache=None) -> torch.Tensor:
    """The trunk's last hidden states (after its final norm); ``cache``: a KV cache to read and extend."""
    return trunk(**inputs, past_key_values=cache, use_cache=cache is not None).last_hidden_state


def set_training(mode: bool, *trunks) -> None:
    for trunk in trunks:
        if trunk is not None:
            trunk.train(mode)


def build_policy(args: Args, model_config: dict[str, Any], tokenizer, source: str | None):
    from transformers import AutoConfig, AutoModelForCausalLM

    if source is not None:
        try:
            config = AutoConfig.from_pretrained(source)
        except OSError as error:
            raise ValueError(f"could not load model {source!r} ({error}); offline, pass a local directory or leave --model-name unset") from error
        if config.is_encoder_decoder:
            raise ValueError(f"--model-name {source!r} is an encoder-decoder model; ilql.py trains causal LMs")
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
        if model.get_input_embeddings().num_embeddings < len(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
        return model
    special = {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.eos_token_id, "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    try:
        config = AutoConfig.for_model(**{**model_config, **special})
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"--model-config {args.model_config!r} is not a valid transformers config: {error}") from error
    if config.is_encoder_decoder:
        raise ValueError(f"--model-config {args.model_config!r} is an encoder-decoder model; ilql.py trains causal LMs")
    return AutoModelForCausalLM.from_config(config)


# ---------------------------------------------------------------------------------------------
# ILQL's pieces (small functions: tests/test_ilql.py checks them on hand-computed tensors)
# ---------------------------------------------------------------------------------------------
def expectile_loss(diff: torch.Tensor, tau: float) -> torch.Tensor:
    """``|tau - 1(diff < 0)| * diff^2`` elementwise, ``diff = target Q - V``."""
    weight = torch.where(diff < 0, 1.0 - tau, tau)
    return weight * diff.pow(2)


def cql_loss(q_values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``logsumexp_a' Q(s, a') - Q(s, a)`` per row of ``q_values`` (N, vocabulary)."""
    return F.cross_entropy(q_values.float(), actions, reduction="none")


def bellman_targets(values: torch.Tensor, action_mask: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor, next_turn_values: torch.Tensor, gamma: float) -> torch.Tensor:
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


def perturbed_logits(policy_logits: torch.Tensor, target_q: torch.Tensor, value: torch.Tensor, beta: float) -> torch.Tensor:
    """ILQL's decoding distribution: ``log pi(.|s) + beta * (Q(s, .) - V(s))`` (unnormalized log-probabilities)."""
    return F.log_softmax(policy_logits.float(), dim=-1) + beta * (target_q.float() - value.float()[..., None])


def ilql_losses(policy, value_trunk, heads: ILQLHeads, batch: dict[str, torch.Tensor], args: Args) -> tuple[torch.Tensor, dict[str, float]]:
    """The training loss of a batch of turns and its parts."""
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    policy_hidden = hidden_states(policy.base_model, inputs)
    value_hidden = policy_hidden if value_trunk is None else hidden_states(value_trunk, inputs)
    selected = batch["action_mask"][:, 1:]  # position j predicts token j+1: an action?
    actions = batch["input_ids"][:, 1:][selected]
    states_pi, states_q = policy_hidden[:, :-1][selected], value_hidden[:, :-1][selected]

    values = heads.value(value_hidden).float()  # V after every token
    with torch.no_grad():
        next_turn_values = torch.zeros_like(batch["rewards"])
        if batch["next_inputs"] is not None:  # V of the next turn's first state: the next observation's last token
            trunk = policy.base_model if value_trunk is None else value_trunk
            next_hidden = hidden_states(trunk, batch["next_inputs"])
            next_turn_values[batch["has_next"]] = heads.value(next_hidden[:, -1]).float()
        targets = bellman_targets(values.detach(), batch["action_mask"], batch["rewards"], batch["dones"], next_turn_values, args.gamma)[selected]
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
    parts = {"q_loss": q_loss.item(), "v_loss": v_loss.item(), "cql_loss": cql.item(), "policy_loss": policy_term.item(), "mean_q": q1_taken.mean().item(), "mean_v": state_values.mean().item()}
    return loss, parts


def collate(turns: Turns, index: np.ndarray, pad_id: int, device) -> dict[str, Any]:
    """A batch of turns: right-padded ``observation + utterance + EOS`` with the action tokens marked."""
    prompts, actions = [turns.prompts[i] for i in index], [turns.actions[i] for i in index]
    sequences = [p + a for p, a in zip(prompts, actions, strict=True)]
    has_next = torch.tensor([turns.next_prompts[i] is not None for i in index])
    following = [turns.next_prompts[i] for i in index if turns.next_prompts[i] is not None]
    return {
        "input_ids": pad(sequences, pad_id, "right").to(device),
        "attention_mask": pad([[1] * len(s) for s in sequences], 0, "right").to(device),
        "action_mask": pad([[0] * len(p) + [1] * len(a) for p, a in zip(prompts, actions, strict=True)], 0, "right").bool().to(device),
        "rewards": torch.tensor(turns.rewards[index], device=device),
        "dones": torch.tensor(turns.dones[index], device=device),
        "has_next": has_next.to(device),
        "next_inputs": left_padded(following, pad_id, device) if following else None,
    }


# ---------------------------------------------------------------------------------------------
# generation and evaluation
# ---------------------------------------------------------------------------------------------
@torch.no_grad()
def generate(policy, value_trunk, heads: ILQLHeads, prompts: list[list[int]], max_new_tokens: int, min_new_tokens: int, eos_id: int, pad_id: int, beta: float, sample: bool, temperature: float) -> list[list[int]]:
    """Utterance tokens (EOS excluded) decoded from ``perturbed_logits``, one KV-cached step at a time."""
    from transformers import DynamicCache

    device = next(policy.parameters()).device
    inputs = left_padded(prompts, pad_id, device)
    attention_mask, positions = inputs["attention_mask"], inputs["position_ids"]
    step_inputs, policy_cache, value_cache = inputs, DynamicCache(), DynamicCache()
    finished = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    tokens = []
    for t in range(max_new_tokens):
        last_pi = hidden_states(policy.base_model, step_inputs, policy_cache)[:, -1]
        last_v = last_pi if value_trunk is None else hidden_states(value_trunk, step_inputs, value_cache)[:, -1]
        logits = perturbed_logits(policy.get_output_embeddings()(last_pi), heads.target_q(last_v), heads.value(last_v), beta)
        if t < min_new_tokens:
            logits[:, eos_id] = -math.inf
        token = torch.multinomial(F.softmax(logits / temperature, dim=-1), 1).squeeze(1) if sample else logits.argmax(-1)
        token = torch.where(finished, torch.full_like(token, eos_id), token)
        tokens.append(token)
        finished |= token == eos_id
        if finished.all():
            break
        attention_mask = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], dim=1)
        positions = positions[:, -1:] + 1
        step_inputs = {"input_ids": token[:, None], "attention_mask": attention_mask, "position_ids": positions}
    rows = torch.stack(tokens, dim=1).tolist()
    return [row[: row.index(eos_id)] if eos_id in row else row for row in rows]


def evaluate(policy, value_trunk, heads, tokenizer, venv, args: Args, lengths: dict[str, Any]) -> tuple[dict[str, float], list[dict]]:
    """``args.eval_episodes`` episodes of the validation setting (episode j reset with seed ``eval_seed + j``):
    the evaluation and a few sample episodes."""
    set_training(False, policy, value_trunk)
    returns, metrics, finals = [], [], []
    max_chars = venv.single_action_space.max_length
    with torch.random.fork_rng(devices=[]):  # training's random streams stay untouched
        torch.manual_seed(args.eval_seed)
        for first in range(0, args.eval_episodes, venv.num_envs):
            observations, _ = venv.reset(seed=args.eval_seed + first)
            counted = min(venv.num_envs, args.eval_episodes - first)
            active = np.ones(venv.num_envs, dtype=bool)
            episode_return = np.zeros(venv.num_envs)
            for _ in range(EVAL_MAX_TURNS):
                indices = np.flatnonzero(active)
                prompts = encode_prompts(tokenizer, [observations[i] for i in indices], lengths["max_prompt_length"], lengths["side"])
                utterances = generate(
                    policy, value_trunk, heads, prompts, lengths["max_new_tokens"], lengths["min_new_tokens"], tokenizer.eos_token_id,
                    tokenizer.pad_token_id, args.beta, not args.eval_greedy, args.temperature,
                )
                actions = [""] * venv.num_envs  # finished sub-envs: autoreset ignores their action
                for i, text in zip(indices, tokenizer.batch_decode(utterances, skip_special_tokens=True), strict=True):
                    actions[i] = text[:max_chars]
                observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
                episode_return[active] += rewards[active]
                finished = active & (terminations | truncations)
                for i in np.flatnonzero(finished[:counted]):
                    returns.append(float(episode_return[i]))
                    finals.append({**episode_info(infos, i), "observation": observations[i]})
                    episode_metrics = infos["metrics"] if "metrics" in infos and infos["_metrics"][i] else {}
                    metrics.append({key: values[i] for key, values in episode_metrics.items() if not key.startswith("_") and episode_metrics["_" + key][i]})
                active &= ~finished
                if not active.any():
                    break
            else:
                raise RuntimeError(f"evaluation episodes still running after {EVAL_MAX_TURNS} turns")
    set_training(True, policy, value_trunk)
    return summarize_episodes(returns, metrics, venv.envs[0].corpus_metrics(finals)), episode_samples(finals, returns)


def format_eval(evaluation: dict[str, float] | None) -> str:
    return "not evaluated" if evaluation is None else ", ".join(f"{key} {value:.4g}" for key, value in evaluation.items())


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def main(args: Args) -> dict[str, Any]:
    start_time = time.time()
    env_kwargs, model_config = check_args(args)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    checkpoint_dir = out_dir / "checkpoint"
    resuming = args.resume and (checkpoint_dir / TRAINER_STATE).is_file()
    if args.resume and not resuming:
        print(f"--resume: no trainer state in {checkpoint_dir}, starting fresh")
    seed_everything(args.seed)

    # ---- task, tokenizer, offline data ----
    env = gymnasium.make(args.env_id, **env_kwargs)
    task = env.unwrapped
    tokenizer = resolve_tokenizer(task, str(checkpoint_dir) if resuming else args.model_name)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    lengths = {
        "max_prompt_length": args.max_prompt_length or task.token_level_defaults["max_prompt_length"],
        "max_new_tokens": args.max_new_tokens or task.token_level_defaults["max_new_tokens"],
        "side": task.token_level_defaults.get("prompt_truncation_side", "left"),
    }
    lengths["min_new_tokens"] = min(task.generation_defaults.get("min_new_tokens", 0), lengths["max_new_tokens"])
    dataset = load_dataset(args, env_kwargs)
    turns = encode_turns(dataset, tokenizer, lengths["max_prompt_length"], lengths["max_new_tokens"], lengths["side"])

    # ---- models, optimizer ----
    seed_everything(args.seed)  # again: building the env or the data may or may not have used the RNGs
    policy = build_policy(args, model_config, tokenizer, str(checkpoint_dir) if resuming else args.model_name).to(device)
    limit = getattr(policy.config, "max_position_embeddings", None)
    if isinstance(limit, int) and 0 < limit < lengths["max_prompt_length"] + lengths["max_new_tokens"]:
        raise ValueError(f"the model has {limit} positions but max_prompt_length + max_new_tokens = {lengths['max_prompt_length'] + lengths['max_new_tokens']}")
    value_trunk = None
    if args.separate_trunk:
        from transformers import AutoModel

        value_trunk = AutoModel.from_pretrained(checkpoint_dir / "value_trunk") if resuming else copy.deepcopy(policy.base_model)
        value_trunk.to(device)
    heads = ILQLHeads(policy.config.hidden_size, policy.get_output_embeddings().out_features).to(device)
    set_training(True, policy, value_trunk)  # dropout on in training, whether the trunks were built or loaded
    trainable = [p for p in (*policy.parameters(), *heads.parameters(), *(value_trunk.parameters() if value_trunk else ())) if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.learning_rate, weight_decay=args.weight_decay)
    steps_per_epoch = math.ceil(len(turns.rewards) / args.batch_size)
    total_steps = args.epochs * steps_per_epoch if args.max_steps is None else min(args.max_steps, args.epochs * steps_per_epoch)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / max(1, args.warmup_steps)))
    state: dict[str, Any] = {"step": 0, "curves": [], "initial_eval": None, "train_tokens": 0, "train_time_s": 0.0, "wall_time_s": 0.0}
    if resuming:
        heads.load_state_dict(torch.load(checkpoint_dir / HEADS_FILE, map_location=device, weights_only=True))
        saved = torch.load(checkpoint_dir / TRAINER_STATE, map_location="cpu", weights_only=False)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        set_rng_state(saved["rng"])
        state = {key: saved[key] for key in state}
        print(f"resumed from {checkpoint_dir} at step {state['step']}")

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
        with autocast:
            return evaluate(policy, value_trunk, heads, tokenizer, venv, args, lengths)

    def save_checkpoint() -> None:
        """Policy, tokenizer, heads (and value trunk) plus the trainer state, replaced atomically."""
        tmp, old = checkpoint_dir.with_name("checkpoint.tmp"), checkpoint_dir.with_name("checkpoint.old")
        shutil.rmtree(tmp, ignore_errors=True)
        policy.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        torch.save(heads.state_dict(), tmp / HEADS_FILE)
        if value_trunk is not None:
            value_trunk.save_pretrained(tmp / "value_trunk", safe_serialization=True)
        snapshot = {**state, "wall_time_s": state["wall_time_s"] + time.time() - start_time}
        torch.save({**snapshot, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": rng_state()}, tmp / TRAINER_STATE)
        shutil.rmtree(old, ignore_errors=True)
        if checkpoint_dir.exists():
            checkpoint_dir.rename(old)
        tmp.rename(checkpoint_dir)
        shutil.rmtree(old, ignore_errors=True)

    writer = None
    if args.track:
        import wandb

        writer = wandb.init(project=args.wandb_project, config=asdict(args), dir=str(out_dir), name=f"ilql-{args.env_id.split('/')[-1]}-{args.seed}")

    num_parameters = sum(p.numel() for p in trainable)
    print(
        f"ilql on {args.env_id}, seed {args.seed}: {len(dataset)} trajectories, {len(turns.rewards)} turns, "
        f"{num_parameters / 1e6:.2f}M trainable parameters ({'separate' if value_trunk else 'shared'} trunk) on {device}, "
        f"{total_steps} steps{', resumed at step ' + str(state['step']) if resuming else ''}, writing to {out_dir}"
    )
    if not resuming:
        state["initial_eval"], _ = run_eval()

    # ---- training loop ----
    window: dict[str, list[float]] = {}
    progress = tqdm(total=total_steps, initial=min(state["step"], total_steps), desc="ilql", dynamic_ncols=True)
    while state["step"] < total_steps:
        step_start = time.time()
        epoch, position = divmod(state["step"], steps_per_epoch)
        order = np.random.default_rng([args.seed, epoch]).permutation(len(turns.rewards))  # a function of (seed, epoch): resuming replays it
        batch = collate(turns, order[position * args.batch_size : (position + 1) * args.batch_size], tokenizer.pad_token_id, device)
        with autocast:
            loss, parts = ilql_losses(policy, value_trunk, heads, batch, args)
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"non-finite loss {loss.item()} at step {state['step'] + 1}: {parts}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip > 0:
            nn.utils.clip_grad_norm_(trainable, args.grad_clip)
        optimizer.step()
        scheduler.step()
        heads.update_targets(args.polyak)

        state["step"] += 1
        state["train_tokens"] += int(batch["attention_mask"].sum())
        state["train_time_s"] += time.time() - step_start
        for key, value in {"loss": loss.item(), **parts}.items():
            window.setdefault(key, []).append(value)
        progress.update(1)
        progress.set_postfix(loss=f"{loss.item():.4f}", q=f"{parts['mean_q']:.3f}")
        step = state["step"]
        entry: dict[str, Any] = {}
        if step % args.log_every == 0 or step == total_steps:
            entry = {"step": step, **{key: float(np.mean(values)) for key, values in window.items()}, "lr": scheduler.get_last_lr()[0]}
            window = {}
        if args.eval_every and step % args.eval_every == 0 and step < total_steps:
            evaluation, _ = run_eval()
            progress.write(f"step {step}: eval {format_eval(evaluation)}")
            entry = {"step": step, **entry, **{f"eval/{key}": value for key, value in evaluation.items()}}
        if entry:
            state["curves"].append(entry)
            if writer is not None:
                writer.log({key: value for key, value in entry.items() if key != "step"}, step=step)
        if args.save_every and step % args.save_every == 0 and step < total_steps:
            save_checkpoint()
    progress.close()

    # ---- final evaluation, checkpoint, result.json ----
    final_eval, samples = run_eval()
    if final_eval is not None:
        if state["curves"] and state["curves"][-1]["step"] == state["step"]:
            state["curves"][-1].update({f"eval/{key}": value for key, value in final_eval.items()})
        else:
            state["curves"].append({"step": state["step"], **{f"eval/{key}": value for key, value in final_eval.items()}})
        if writer is not None:
            writer.log({f"eval/{key}": value for key, value in final_eval.items()}, step=state["step"])
    save_checkpoint()
    device_peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = make_result(
        env_id=args.env_id,
        algorithm="ilql",
        seed=args.seed,
        config=asdict(args),
        initial_eval=state["initial_eval"],
        final_eval=final_eval,
        curves=state["curves"],
        wall_time_s=state["wall_time_s"] + time.time() - start_time,
        tokens_per_s=state["train_tokens"] / state["train_time_s"] if state["train_time_s"] > 0 else 0.0,
        episodes_per_s=state["step"] * args.batch_size / state["train_time_s"] if state["train_time_s"] > 0 else 0.0,
        peak_memory_mb=device_peak,
        checkpoint=checkpoint_dir.name,
        device=str(device),
        samples=samples,
    )
    write_result(out_dir, result)
    print(f"{args.env_id} ilql seed {args.seed} (beta {args.beta}): final evaluation {format_eval(final_eval)} (start {format_eval(state['initial_eval'])})")
    if writer is not None:
        writer.finish()
    if venv is not None:
        venv.close()
    env.close()
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
