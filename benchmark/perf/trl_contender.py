"""One TRL contender of the speed benchmark, run inside that TRL version's venv (see trl_envs.py).

    <venv python> benchmark/perf/trl_contender.py --trainer ppo|grpo|rloo [--beta B] \
        --workload-dir DIR --iterations N [--threads 2]

It trains on the standard workload (``workload.py``) for ``WARMUP_ITERATIONS + N`` iterations
of 64 completions of exactly 48 new tokens each, with TRL's own trainer configured to match it:

* ``ppo`` (trl 1.12, ``trl.experimental.ppo.PPOTrainer``): 64 pre-tokenized prompts per
  iteration, one PPO epoch over 4 minibatches of 16 (``per_device_train_batch_size=64,
  gradient_accumulation_steps=1, num_mini_batches=4``: with 16 x 4, accelerate would make one
  optimizer step per epoch, not four), ``kl_coef=beta``, a separate value model (TRL's design),
  the reward function behind an ``nn.Module`` (PPOTrainer takes no callable).
* ``grpo`` / ``rloo`` (trl 1.16): 16 prompts x ``GROUP_SIZE`` (4) completions per iteration,
  4 optimizer steps of 16 (``per_device_train_batch_size=16, gradient_accumulation_steps=1,
  steps_per_generation=4, num_iterations=1``), ``beta`` as given (0: no reference model).

Everything runs in fp32 without gradient checkpointing (TRL's configs default to bf16 and
gradient checkpointing), EOS and PAD are suppressed so every completion has 48 tokens, and the
lengths are asserted on every reward call. The last line of stdout is one JSON object with
the per-iteration seconds (warm-up iterations dropped); TRL's own output goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import sys
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainer", choices=("ppo", "grpo", "rloo"), required=True)
    parser.add_argument(
        "--beta",
        type=float,
        default=None,
        help="KL coefficient (default: workload.KL_COEF). PPO: kl_coef; GRPO/RLOO: beta, 0 = no reference model",
    )
    parser.add_argument(
        "--workload-dir", required=True, help="where workload.build() keeps the seed-0 model and tokenizer"
    )
    parser.add_argument("--iterations", type=int, required=True, help="timed iterations (after the warm-up ones)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--size", default="standard", help="workload.MODEL_CONFIGS key (gpt2-small: the GPU comparison's)"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument(
        "--bf16", action="store_true", help="TRL's bf16 mixed precision (its default; off for the CPU workload)"
    )
    parser.add_argument(
        "--output-dir", default=None, help="TRL's output_dir (default: <workload-dir>/trl-out/<contender>)"
    )
    parser.add_argument(
        "--profile-out", help="profile the last warm-up iteration (profiling.py); its summary to this JSON file"
    )
    return parser.parse_args(argv)


class _Clock:
    """Per-iteration stamps (the callback) and rollout spans (the wrapped generation)."""

    def __init__(self):
        self.begin = None
        self.ends: list[float] = []
        self.rollout_starts: list[float] = []
        self.rollout_ends: list[float] = []
        self.reward_calls: list[int] = []  # completions scored per call

    def iteration_seconds(self, warmup: int) -> list[float]:
        stamps = [self.begin] + self.ends
        return [b - a for a, b in itertools.pairwise(stamps)][warmup:]

    def rollout_seconds(self, warmup: int) -> list[float] | None:
        if not self.rollout_starts or len(self.rollout_starts) != len(self.rollout_ends):
            return None
        return [b - a for a, b in zip(self.rollout_starts, self.rollout_ends)][warmup:]


def _timer_callback(clock: _Clock, every: int):
    from transformers import TrainerCallback

    class IterationTimer(TrainerCallback):
        """Stamps the end of every iteration: every ``every`` optimizer steps (GRPO/RLOO), or at
        every ``on_step_end`` (PPOTrainer calls it once per PPO iteration)."""

        def on_train_begin(self, args, state, control, **kwargs):
            clock.begin = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % every == 0:
                clock.ends.append(time.perf_counter())

    return IterationTimer()


def _check_completions(completion_ids, texts, special_ids, eos_id, pad_id, new_tokens):
    """Exactly ``new_tokens`` tokens each, no EOS/PAD; the word-level tokenizer decodes one word
    per non-special token (UNK may be sampled and is skipped by ``skip_special_tokens``)."""
    for ids, text in zip(completion_ids, texts):
        ids = [int(i) for i in ids]
        assert len(ids) == new_tokens, f"completion of {len(ids)} tokens, expected {new_tokens}"
        assert eos_id not in ids and pad_id not in ids, "EOS or PAD was sampled despite suppress_tokens"
        expected_words = new_tokens - sum(i in special_ids for i in ids)
        assert len(text.split()) == expected_words, f"{len(text.split())} words decoded, expected {expected_words}"


def run_ppo(args, workload, model_dir, tok, clock, out_dir):
    import torch
    from datasets import Dataset
    from torch import nn
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
    from trl.experimental.ppo import PPOConfig, PPOTrainer
    from trl.experimental.ppo import ppo_trainer as ppo_module

    prompt_len, new_tokens, batch = workload.PROMPT_TOKENS, workload.NEW_TOKENS, workload.SEQUENCES_PER_ITERATION
    special_ids = set(tok.all_special_ids)

    class _PassIds(nn.Module):
        """The reward model's "backbone": hands the token ids on as the last hidden state."""

        def forward(self, input_ids, **kwargs):
            return SimpleNamespace(hidden_states=(input_ids,))

    class TextReward(nn.Module):
        """A Python reward function of the text in the shape TRL's ``get_reward`` expects:
        ``getattr(m, m.base_model_prefix)(...)`` then ``m.score(hidden)`` -> (B, T, 1)."""

        base_model_prefix = "backbone"

        def __init__(self):
            super().__init__()
            self.backbone = _PassIds()

        def score(self, ids):
            assert ids.shape == (batch, prompt_len + new_tokens), f"reward model got {tuple(ids.shape)}"
            responses = ids[:, prompt_len:].tolist()
            texts = tok.batch_decode(responses, skip_special_tokens=True)
            prompts = tok.batch_decode(ids[:, :prompt_len].tolist(), skip_special_tokens=True)
            _check_completions(responses, texts, special_ids, tok.eos_token_id, tok.pad_token_id, new_tokens)
            scores = torch.tensor(
                workload.reward(prompts=prompts, completions=texts), dtype=torch.float32, device=ids.device
            )
            clock.reward_calls.append(len(texts))
            clock.rollout_ends.append(time.perf_counter())
            return scores[:, None, None].expand(ids.shape[0], ids.shape[1], 1)

    # Rollout = TRL's batched generate + log-probs + ref and value forwards + reward (ends in score above).
    original_generation = ppo_module.batch_generation

    def timed_batch_generation(*a, **kw):
        clock.rollout_starts.append(time.perf_counter())
        return original_generation(*a, **kw)

    ppo_module.batch_generation = timed_batch_generation

    prompt_ids = tok(workload.prompts(batch), add_special_tokens=False)["input_ids"]
    assert all(len(p) == prompt_len for p in prompt_ids), "every prompt must be exactly 64 tokens"
    policy = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    policy.generation_config.suppress_tokens = [
        tok.eos_token_id,
        tok.pad_token_id,
    ]  # merged into TRL's GenerationConfig
    ref = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    value = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=1, dtype=torch.float32)
    total_iterations = workload.WARMUP_ITERATIONS + args.iterations
    config = PPOConfig(
        output_dir=str(out_dir),
        report_to="none",
        use_cpu=args.device == "cpu",
        seed=0,
        bf16=args.bf16,
        fp16=False,
        gradient_checkpointing=False,  # TRL defaults: bf16=True, gradient_checkpointing=True
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=1,
        num_mini_batches=workload.MINIBATCHES,
        num_ppo_epochs=1,
        local_rollout_forward_batch_size=batch,
        total_episodes=batch * total_iterations,
        response_length=new_tokens,
        temperature=1.0,
        stop_token=None,
        missing_eos_penalty=None,
        kl_coef=args.beta,
        learning_rate=workload.LEARNING_RATE,
        lr_scheduler_type="constant",
        num_sample_generations=0,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = PPOTrainer(
        args=config,
        processing_class=tok,
        model=policy,
        ref_model=ref,
        reward_model=TextReward(),
        value_model=value,
        train_dataset=Dataset.from_dict({"input_ids": prompt_ids}),
        callbacks=[_timer_callback(clock, every=1)],
    )
    assert (
        config.local_mini_batch_size == 16
        and config.local_batch_size == batch
        and config.num_total_batches == total_iterations
    )
    trainer.train()
    return {
        "kl_coef": config.kl_coef,
        "kl_estimator": config.kl_estimator,
        "num_ppo_epochs": config.num_ppo_epochs,
        "mini_batch_size": config.local_mini_batch_size,
        "optim": getattr(config.optim, "value", str(config.optim)),
        "value_model": "separate",
        "rollout_measures": (
            "TRL batch_generation start .. reward scored (generate, log-probs, ref and value forwards, reward)"
        ),
    }


def run_group(args, workload, model_dir, tok, clock, out_dir, peft_config=None):
    """GRPO or RLOO on ``workload`` (this module's workload, or another with its constants and ``prompts``);
    ``peft_config``: TRL's own LoRA (peft), whose KL reference is the adapters switched off."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM

    if args.trainer == "grpo":
        from trl import GRPOConfig as Config
        from trl import GRPOTrainer as Trainer
    else:
        from trl import RLOOConfig as Config
        from trl import RLOOTrainer as Trainer

    group, new_tokens = workload.GROUP_SIZE, workload.NEW_TOKENS
    per_iteration = workload.SEQUENCES_PER_ITERATION
    minibatch = per_iteration // workload.MINIBATCHES
    special_ids = set(tok.all_special_ids)

    def text_reward(prompts, completions, completion_ids, **kwargs):
        assert len(completions) == per_iteration, (
            f"{len(completions)} completions scored at once, expected {per_iteration}"
        )
        assert all(len(p.split()) == workload.PROMPT_TOKENS for p in prompts)
        _check_completions(completion_ids, completions, special_ids, tok.eos_token_id, tok.pad_token_id, new_tokens)
        clock.reward_calls.append(len(completions))
        return workload.reward(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)

    prompts = workload.prompts(per_iteration)
    assert all(len(tok(p, add_special_tokens=False)["input_ids"]) == workload.PROMPT_TOKENS for p in prompts)
    # A model object loaded from the directory keeps config._name_or_path, from which TRL reloads the
    # reference model when beta > 0.
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    total_iterations = workload.WARMUP_ITERATIONS + args.iterations
    config = Config(
        output_dir=str(out_dir),
        report_to="none",
        use_cpu=args.device == "cpu",
        seed=0,
        bf16=args.bf16,
        fp16=False,
        gradient_checkpointing=False,  # TRL defaults: bf16=True, gradient_checkpointing=True
        num_generations=group,
        per_device_train_batch_size=minibatch,
        gradient_accumulation_steps=1,
        steps_per_generation=workload.MINIBATCHES,
        num_iterations=1,
        max_steps=workload.MINIBATCHES * total_iterations,
        max_completion_length=new_tokens,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        generation_kwargs={"suppress_tokens": [tok.eos_token_id, tok.pad_token_id]},
        beta=args.beta,
        learning_rate=workload.LEARNING_RATE,
        lr_scheduler_type="constant",
        disable_dropout=True,
        save_strategy="no",
        disable_tqdm=True,
        logging_steps=workload.MINIBATCHES,
    )
    trainer = Trainer(
        model=model,
        reward_funcs=text_reward,
        args=config,
        processing_class=tok,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        callbacks=[_timer_callback(clock, every=workload.MINIBATCHES)],
        peft_config=peft_config,
    )
    assert config.generation_batch_size == per_iteration, config.generation_batch_size
    assert (trainer.ref_model is None) == (args.beta == 0.0 or peft_config is not None)

    # Rollout = TRL's _generate_and_score_completions: generate, reward, old (and ref) log-probs.
    generate_and_score = trainer._generate_and_score_completions

    def timed(*a, **kw):
        clock.rollout_starts.append(time.perf_counter())
        out = generate_and_score(*a, **kw)
        clock.rollout_ends.append(time.perf_counter())
        return out

    trainer._generate_and_score_completions = timed
    trainer.train()
    extra = {
        "beta": config.beta,
        "num_generations": config.num_generations,
        "steps_per_generation": config.steps_per_generation,
        "generation_batch_size": config.generation_batch_size,
        "optim": getattr(config.optim, "value", str(config.optim)),
        "reference_model": trainer.ref_model is not None,
        "lora": None
        if peft_config is None
        else {
            "r": peft_config.r,
            "lora_alpha": peft_config.lora_alpha,
            "lora_dropout": peft_config.lora_dropout,
            "target_modules": sorted(peft_config.target_modules),
        },
        "rollout_measures": "TRL _generate_and_score_completions (generate, reward, old"
        + (" and ref" if args.beta else "")
        + " log-probs)",
    }
    if args.trainer == "grpo":
        extra["loss_type"], extra["scale_rewards"] = config.loss_type, config.scale_rewards
    else:
        extra["normalize_advantages"] = config.normalize_advantages
    return extra


def main(argv=None) -> int:
    args = parse_args(argv)
    # Keep stdout for the final JSON line: everything else printed (TRL, transformers, accelerate) goes to stderr.
    json_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    import transformers
    import trl
    import workload
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    if args.beta is None:
        args.beta = workload.KL_COEF
    beta_name = f"{args.beta:g}"
    if args.trainer == "ppo":
        contender = "trl-ppo" if args.beta == workload.KL_COEF else f"trl-ppo-kl{beta_name}"
    else:
        contender = f"trl-{args.trainer}-beta{beta_name}"
    model_dir = workload.build(args.workload_dir, args.size)
    out_dir = Path(args.output_dir) if args.output_dir else Path(args.workload_dir) / "trl-out" / contender
    tok = AutoTokenizer.from_pretrained(model_dir)
    assert tok.pad_token_id is not None and tok.eos_token_id is not None

    clock = _Clock()
    if args.profile_out:  # the last warm-up iteration's optimizer steps, as ours.py counts the baselines'
        import profiling

        warmup_steps = (workload.WARMUP_ITERATIONS - 1) * workload.MINIBATCHES
        profiling.Window(args.profile_out, warmup_steps, workload.MINIBATCHES).on_optimizer_steps()
    run = run_ppo if args.trainer == "ppo" else run_group
    extra = run(args, workload, model_dir, tok, clock, out_dir)

    total = workload.WARMUP_ITERATIONS + args.iterations
    assert len(clock.ends) == total, f"{len(clock.ends)} iterations stamped, expected {total}"
    assert clock.reward_calls == [workload.SEQUENCES_PER_ITERATION] * total, clock.reward_calls
    result = {
        "contender": contender,
        "trainer": args.trainer,
        "trl_version": trl.__version__,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "iteration_seconds": clock.iteration_seconds(workload.WARMUP_ITERATIONS),
        "rollout_seconds": clock.rollout_seconds(workload.WARMUP_ITERATIONS),
        "warmup_iterations": workload.WARMUP_ITERATIONS,
        "sequences_per_iteration": workload.SEQUENCES_PER_ITERATION,
        "new_tokens_per_sequence": workload.NEW_TOKENS,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "threads": torch.get_num_threads(),
        "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if args.device.startswith("cuda") else None,
        "config": extra,
    }
    json_out.write(json.dumps(result) + "\n")
    json_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
