"""Supervised warm start (behaviour cloning) of a language-model policy on an lm-gym task.

The policy is trained with the cross-entropy loss on the task's demonstrations
(``env.unwrapped.demonstrations()``: ``(observation, utterance)`` pairs; the references of
single-turn tasks, expert games for Wordle), then evaluated on the validation split through
the batched vector env (samples of the policy, or greedy decoding with ``--eval-greedy``),
exactly as the RL baselines evaluate. The checkpoint it writes is what ``--init-from`` of the
RL baselines (``ppo.py``, ``nlpo.py``, ``grpo.py``) loads, and their starting evaluation is
this run's final one.

Behaviour cloning on offline data: ``--dataset`` clones the turns of trajectories in
``lm_gym.offline``'s format instead (BC, ``algorithm`` ``"bc"`` in ``result.json``), and
``--top-fraction p`` only those of the best fraction p of trajectories by return (the ILQL
paper's %BC, ``"filtered_bc"``), the baselines ``ilql.py`` is compared with.

* Causal LM: input ``prompt + target + EOS``, loss on ``target + EOS`` only.
* Seq2seq LM (any encoder-decoder config, e.g. T5): encoder ``prompt``, labels ``target + EOS``.

Prompts are cut as ``lm_gym``'s token-level envs cut them; targets are the utterance's first
``max_new_tokens - 1`` tokens and EOS. Both lengths default to the task's
``token_level_defaults``. Without ``--model-name`` the policy is a small randomly initialised
transformer (``--model-config``) on the BPE tokenizer lm-gym trains offline on the task's text.
``--lora-r`` trains LoRA adapters (peft) instead of every weight: the checkpoint is then the adapters with
their base in ``base_model/``, which ``--init-from`` of the RL baselines and ``python -m benchmark evaluate``
load (merged into the base). Data-parallel under ``torchrun --nproc_per_node N``: each process takes every
N-th example of a batch, the loss is the mean over every process's target tokens. The plumbing (loading, sampling,
evaluation, checkpoints, ``result.json``, processes) is ``baselines/lm_toolkit``.

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

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import gymnasium
import tyro

from lm_gym.core.task_setup import policy_tokenizer
from lm_toolkit import distributed
from lm_toolkit.arguments import LoraArgs, OfflineArgs, Rule, check_args, integer, optional, within
from lm_toolkit.lora import policy_to_train, trainable_parameters
from lm_toolkit.models import check_positions
from lm_toolkit.offline import load_offline_dataset
from lm_toolkit.optimization import adamw, batch_indices, optimizer_step, warmup_schedule
from lm_toolkit.rollouts import TextPolicy, evaluator
from lm_toolkit.runs import Run, due, setup
from lm_toolkit.tasks import task_lengths, vector_env_for_split
from lm_toolkit.tokens import encode_prompts, encode_targets, supervised_batch
from lm_toolkit.training_stats import Stats


@dataclass
class Args(LoraArgs, OfflineArgs):
    out_dir: str = "runs/sft"
    """where checkpoint/ and result.json are written"""
    dataset: str | None = None
    """offline trajectories (lm_gym.offline's format: .parquet, .jsonl or a save_to_disk directory) to clone
    instead of the task's demonstrations: every turn is an (observation, utterance) pair"""
    top_fraction: float = 1.0
    """%BC: clone only this fraction of --dataset's trajectories, those with the highest returns (1: all, plain BC)"""
    agent: str | None = None
    """clone the turns of this agent of a multi-agent --dataset (lm_gym.multiagent.demonstrations); --env-id then
    names the task whose tokenizer and evaluation the run uses (--eval-episodes 0 when no single-agent env fits)"""
    max_examples: int | None = None
    """use only the first N demonstrations (quick runs)"""
    warmup_ratio: float = 0.1
    """fraction of the steps with linear warmup; the learning rate then decays linearly to 0"""


def demonstrations(args: Args, env_kwargs: dict) -> tuple[list[tuple[str, str]], object]:
    """The (observation, utterance) pairs to clone, and the task (for its tokenizer corpus)."""
    task = gymnasium.make(args.env_id, **env_kwargs).unwrapped
    if args.dataset is None:
        pairs = task.demonstrations()
    else:
        rows = load_offline_dataset(args.dataset, args.env_id, args.top_fraction, args.agent)
        rows = rows.select_columns(["observations", "actions"])
        pairs = [pair for row in rows for pair in zip(row["observations"], row["actions"], strict=True)]
    pairs = pairs[: args.max_examples]
    if not pairs:
        raise ValueError(f"{args.env_id} gave no demonstrations")
    return pairs, task


def main(args: Args) -> dict:
    env_kwargs, model_config = check_args(
        args,
        "sft.py",
        top_fraction=within(0, 1, open_low=True),
        max_examples=optional(integer(1)),
        warmup_ratio=Rule(lambda v: 0 <= v < 1, "in [0, 1)"),
    )
    if (args.top_fraction < 1 or args.agent) and args.dataset is None:
        raise ValueError("--top-fraction and --agent select --dataset's trajectories; pass --dataset")
    lengths = task_lengths(args.env_id, args.max_prompt_length, args.max_new_tokens)
    device, autocast = setup(args)
    algorithm = "sft" if args.dataset is None else ("bc" if args.top_fraction == 1 else "filtered_bc")
    if args.agent:  # one agent's warm start: a run of its own beside the other agent's (a report must not merge them)
        algorithm += f"-{args.agent}"
    run = Run(args, algorithm)

    # ---- demonstrations as token ids, the model, its optimizer and schedule
    pairs, task = demonstrations(args, env_kwargs)
    tokenizer = policy_tokenizer(task, run.source(args.model_name))
    prompts = encode_prompts(tokenizer, [observation for observation, _ in pairs], lengths)
    targets = encode_targets(tokenizer, [utterance for _, utterance in pairs], lengths)
    model = policy_to_train(args, run.source(args.model_name), model_config, tokenizer, device, run.resuming).train()
    is_seq2seq = bool(model.config.is_encoder_decoder)
    check_positions(model, lengths.max_prompt_length, lengths.max_new_tokens)
    optimizer = adamw([model], args.learning_rate, args.weight_decay)  # its trainable weights (LoRA: adapters)
    parameters = trainable_parameters(model)
    steps_per_epoch = math.ceil(len(prompts) / args.batch_size)
    total_steps = min(args.epochs * steps_per_epoch, args.max_steps or math.inf)
    scheduler = warmup_schedule(optimizer, int(args.warmup_ratio * total_steps), total_steps, decay=True)
    if run.resuming:
        state = run.restore()
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])  # keeps its step; the schedule spans this run's total_steps

    # ---- evaluation on the validation split, as the RL baselines evaluate
    eval_env = (
        vector_env_for_split(args.env_id, env_kwargs, "validation", min(args.eval_batch_size, args.eval_episodes))
        if args.eval_episodes
        else None
    )
    actor = TextPolicy(model, tokenizer, lengths, args.temperature)

    evaluation = evaluator(eval_env, actor, args, autocast)

    def save() -> None:
        run.save(model, tokenizer, {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()})

    run.begin(
        [model],
        f"{len(prompts)} demonstrations, {'seq2seq' if is_seq2seq else 'causal'} model, {total_steps} steps",
        total_steps,
    )
    if distributed.is_main() and not run.resuming:
        run.initial = evaluation()
    losses = Stats()
    for step in range(run.step + 1, total_steps + 1):
        step_start = time.time()
        index = distributed.shard_indices(
            batch_indices(args.seed, step, steps_per_epoch, args.batch_size, len(prompts))
        )
        batch = supervised_batch(
            [prompts[i] for i in index], [targets[i] for i in index], tokenizer.pad_token_id, is_seq2seq, device
        )
        with autocast:
            loss = model(**batch).loss  # the mean over the target tokens
        targets_count = (batch["labels"] if is_seq2seq else batch["labels"][:, 1:]).ne(-100).sum()
        optimizer_step(optimizer, loss * distributed.weight(targets_count), parameters, args.grad_clip)
        learning_rate = scheduler.get_last_lr()[0]
        scheduler.step()

        tokens = int(batch["attention_mask"].sum()) + (int((batch["labels"] != -100).sum()) if is_seq2seq else 0)
        seconds = time.time() - step_start
        run.count(tokens=tokens, token_seconds=seconds, episodes=len(index), episode_seconds=seconds)
        losses.add(loss=loss)
        row = run.window_row(losses, step, total_steps, lr=learning_rate, tokens=run.counters["tokens"])
        # ---- evaluation and checkpoint when due, and at the last step (or past --time-limit-minutes)
        last = run.out_of_time() or step == total_steps
        if distributed.is_main() and (due(step, args.eval_every) or last):
            run.final = evaluation()
            row |= run.final.curve_entries() if run.final else {}
        run.log(step, row, show=("loss",))
        if distributed.is_main() and (due(step, args.save_every) or last):
            save()
        if last:
            break
    return run.finish(device)


if __name__ == "__main__":
    main(tyro.cli(Args))
