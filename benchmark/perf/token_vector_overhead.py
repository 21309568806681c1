"""The native token-level vector env's step next to the policy's work on the same batch.

    python benchmark/perf/token_vector_overhead.py [--num-envs 64] [--workload-dir DIR] [--threads 2]

The standard perf workload (``benchmark/perf/workload.py``): ``lm_gym/Prompts-v0`` at token
level with the workload's 4,000-word tokenizer, 64-token prompts, exactly 48 new tokens
(``min_new_tokens=48``), N = 64 copies, and the workload's GPT-2 (4 layers x 256). It prints
the mean wall time of

* an env step where every copy only appends a token (steps 1-47 of an utterance),
* the hand-over step (48th token: 64 decodes, one batched reward call, 64 episode ends) and
  the next step (``"NextStep"`` autoreset: 64 resets and prompt encodings),
* the env step amortised over a whole utterance (those 49 steps / 48 tokens),

against (a) one forward pass of the policy over the batch of observations (64 x 112 tokens,
no cache: what an SB3-style policy does at each step) and (b) one KV-cached decode step
(64 x 1 new token over a cache of about 100 tokens), and their ratios. The goal: the env
step costs at most 10% of one policy forward on the same batch.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium
import numpy as np
import torch
import workload  # noqa: E402  (beside this script)

import lm_gym  # noqa: F401  (registers the envs)


def make_env(model_dir: Path, num_envs: int):
    return gymnasium.make_vec(
        "lm_gym/Prompts-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", action_level="token",
        tokenizer=str(model_dir), max_prompt_length=workload.PROMPT_TOKENS, max_new_tokens=workload.NEW_TOKENS,
        min_new_tokens=workload.NEW_TOKENS,
    )  # fmt: skip


def time_env(venv, utterances: int, seed: int = 0) -> dict[str, list[float]]:
    """Wall times (s) of each kind of step over ``utterances`` whole utterances of random tokens."""
    rng = np.random.default_rng(seed)
    first_word = 3  # ids 0-2 are EOS, PAD and UNK: the workload never samples them
    times: dict[str, list[float]] = {"append": [], "hand_over": [], "autoreset": [], "utterance": []}
    venv.reset(seed=seed)
    for _ in range(utterances):
        actions = rng.integers(first_word, venv.vocab_size, size=(workload.NEW_TOKENS + 1, venv.num_envs))
        start = time.perf_counter()
        for step, tokens in enumerate(actions):
            t0 = time.perf_counter()
            _, _, terminations, _, _ = venv.step(tokens)
            elapsed = time.perf_counter() - t0
            if step < workload.NEW_TOKENS - 1:
                times["append"].append(elapsed)
            elif step == workload.NEW_TOKENS - 1:
                assert terminations.all()
                times["hand_over"].append(elapsed)
            else:
                times["autoreset"].append(elapsed)
        times["utterance"].append((time.perf_counter() - start) / workload.NEW_TOKENS)
    return times


def time_policy(model, observations: dict[str, np.ndarray], repeats: int) -> dict[str, list[float]]:
    """Wall times (s) of (a) a full forward over the observations and (b) one cached decode step."""
    ids = torch.from_numpy(np.concatenate([observations["prompt_ids"], observations["context_ids"]], axis=1))
    mask = torch.from_numpy(np.concatenate([observations["prompt_mask"], observations["context_mask"]], axis=1))
    mask[:] = 1  # a full batch of 64 x 112 tokens, as at the last token of an utterance
    prefix = ids.shape[1] - 12  # a cache of 100 tokens, then 12 decode steps up to 112
    # the cache's name in forward and its output: ``cache`` where transformers has it (``past_key_values`` is
    # deprecated there, removed in 5.40), ``past_key_values`` in earlier 5.x releases
    cache = "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"
    times: dict[str, list[float]] = {"forward": [], "decode": []}
    with torch.inference_mode():
        for _ in range(repeats):
            t0 = time.perf_counter()
            model(input_ids=ids, attention_mask=mask)
            times["forward"].append(time.perf_counter() - t0)
            past = getattr(model(input_ids=ids[:, :prefix], attention_mask=mask[:, :prefix], use_cache=True), cache)
            for position in range(prefix, ids.shape[1]):
                t0 = time.perf_counter()
                out = model(
                    input_ids=ids[:, position : position + 1],
                    attention_mask=mask[:, : position + 1],
                    use_cache=True,
                    **{cache: past},
                )
                past = getattr(out, cache)
                times["decode"].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=workload.SEQUENCES_PER_ITERATION)
    parser.add_argument(
        "--workload-dir",
        type=Path,
        default=None,
        help="where workload.build saves the model (default: a temporary directory)",
    )
    parser.add_argument("--utterances", type=int, default=20, help="whole utterances of env steps to time")
    parser.add_argument("--repeats", type=int, default=10, help="policy forwards (and 12 decode steps each) to time")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as scratch:
        model_dir = workload.build(args.workload_dir or scratch)
        from transformers import GPT2LMHeadModel

        model = GPT2LMHeadModel.from_pretrained(model_dir).eval()
        venv = make_env(model_dir, args.num_envs)
        time_env(venv, 2)  # warm-up
        env = time_env(venv, args.utterances)
        observations, _ = venv.reset(seed=1)
        time_policy(model, observations, 1)  # warm-up
        policy = time_policy(model, observations, args.repeats)

    mean = {name: statistics.fmean(values) for name, values in {**env, **policy}.items()}
    median = {name: statistics.median(values) for name, values in {**env, **policy}.items()}
    print(
        f"N={args.num_envs} copies, {workload.PROMPT_TOKENS}-token prompts, {workload.NEW_TOKENS} new tokens, "
        f"torch threads={args.threads}"
    )
    print(f"{'':44s} {'mean':>10s} {'median':>10s}")
    rows = [
        ("env step, tokens only appending", "append"),
        ("env step, 48th token (decode + reward)", "hand_over"),
        ("env step after it (NextStep autoreset)", "autoreset"),
        ("env step amortised over an utterance", "utterance"),
        ("(a) policy forward, 64 x 112 tokens", "forward"),
        ("(b) policy KV-cached decode step, 64 x 1", "decode"),
    ]
    for label, name in rows:
        print(f"{label:44s} {mean[name] * 1e3:8.3f} ms {median[name] * 1e3:7.3f} ms")
    print("ratios of the mean env step to the mean policy step (goal <= 10%):")
    for env_name in ("append", "utterance"):
        for policy_name, label in (("forward", "(a) forward"), ("decode", "(b) cached decode")):
            print(f"  {env_name:>9s} / {label:18s} {100 * mean[env_name] / mean[policy_name]:7.2f}%")


if __name__ == "__main__":
    main()
