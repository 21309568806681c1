"""``python -m benchmark evaluate``'s speed with a local model, next to the baselines' own evaluation and
to ``model.generate`` in a loop.

    python -m benchmark.perf.evaluate_throughput [--episodes 128] [--batch-size 64] [--threads 2] [--repeats 2]

The standard perf workload (``benchmark/perf/workload.py``): ``lm_gym/Prompts-v0``'s 64-word synthetic
prompts, exactly 48 new tokens at temperature 1, the workload's GPT-2 (4 layers x 256, its 4,000-word
tokenizer). Three contenders play the same validation episodes, each timed from its set-up (the env, the
tokenizer, the model loaded from its directory) to its numbers:

* ``evaluate``: ``python -m benchmark evaluate --env-id lm_gym/Prompts-v0 --model DIR`` (in this process);
* ``baselines' evaluation``: what a baseline's ``--eval-episodes`` runs: ``lm_toolkit.tasks.task_setup``,
  ``load_policy`` and ``lm_toolkit.rollouts.evaluate`` (the same sampler);
* ``generate loop``: one episode at a time, ``model.generate(do_sample=True)`` then ``env.step``, as a script
  without lm-gym's batched sampler would evaluate.

It prints episodes per second and the ratios, with the goals: ``evaluate`` at least 0.9x the baselines'
evaluation (it is the same sampler) and at least 2x the ``generate`` loop. Each contender's best of
``--repeats`` runs counts (all in this one process, so each contender's later runs are warm alike).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import gymnasium
import torch

from benchmark.__main__ import main as benchmark_main
from benchmark.perf import workload
from lm_gym.core.registration import token_settings
from lm_gym.core.task_setup import policy_tokenizer
from lm_toolkit.models import load_policy
from lm_toolkit.rollouts import TextPolicy, evaluate
from lm_toolkit.tasks import Lengths, task_setup

ENV_ID = "lm_gym/Prompts-v0"
GOALS = {"baselines' evaluation": 0.9, "generate loop": 2.0}


def run_evaluate_command(model_dir: Path, episodes: int, batch_size: int, out: Path) -> float:
    start = time.perf_counter()
    flags = ["--env-id", ENV_ID, "--model", str(model_dir), "--episodes", str(episodes)]
    status = benchmark_main(["evaluate", *flags, "--batch-size", str(batch_size), "--out", str(out)])
    if status != 0:
        raise RuntimeError(f"python -m benchmark evaluate exited with {status}")
    return time.perf_counter() - start


def run_baselines_evaluation(model_dir: Path, episodes: int, batch_size: int) -> float:
    start = time.perf_counter()
    played = task_setup(ENV_ID, {}, {"validation": batch_size}, str(model_dir))
    model = load_policy(str(model_dir), {}, played.tokenizer, seed=0)
    policy = TextPolicy(model, played.tokenizer, Lengths.of(played.token_settings))
    with torch.no_grad():
        evaluation = evaluate(played.envs["validation"], policy, episodes, seed=0, greedy=False)
    assert evaluation.summary["num_episodes"] == episodes
    return time.perf_counter() - start


def run_generate_loop(model_dir: Path, episodes: int) -> float:
    start = time.perf_counter()
    env = gymnasium.make(ENV_ID, split="validation")
    tokenizer = policy_tokenizer(env.unwrapped, str(model_dir))
    lengths = Lengths.of(token_settings(env.unwrapped, {}))
    model = load_policy(str(model_dir), {}, tokenizer, seed=0).eval()
    with torch.no_grad():
        for episode in range(episodes):
            observation, _ = env.reset(seed=episode)
            ids = tokenizer(observation, return_tensors="pt").input_ids[:, -lengths.max_prompt_length :]
            output = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                top_k=0,
                max_new_tokens=lengths.max_new_tokens,
                min_new_tokens=lengths.min_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
            env.step(tokenizer.decode(output[0, ids.shape[1] :], skip_special_tokens=True))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=128, help="validation episodes each contender plays (128)")
    parser.add_argument("--batch-size", type=int, default=64, help="episodes played at once, batched (64)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (2)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each contender; the best counts (2)")
    parser.add_argument("--workload-dir", help="where the workload's model is kept (default: a temporary folder)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = workload.build(args.workload_dir or scratch)
        contenders = {
            "evaluate": lambda: run_evaluate_command(model_dir, args.episodes, args.batch_size, Path(scratch) / "out"),
            "baselines' evaluation": lambda: run_baselines_evaluation(model_dir, args.episodes, args.batch_size),
            "generate loop": lambda: run_generate_loop(model_dir, args.episodes),
        }
        seconds = {name: min(run() for _ in range(args.repeats)) for name, run in contenders.items()}
    rate = {name: args.episodes / value for name, value in seconds.items()}
    print(f"{args.episodes} episodes of {ENV_ID}, batches of {args.batch_size}, {args.threads} torch threads")
    print(f"{'contender':<24}{'seconds':>10}{'episodes/s':>12}   evaluate's ratio (goal)")
    for name, value in seconds.items():
        ratio = "" if name == "evaluate" else f"   {rate['evaluate'] / rate[name]:.2f}x (>= {GOALS[name]:g}x)"
        print(f"{name:<24}{value:>10.2f}{rate[name]:>12.1f}{ratio}")


if __name__ == "__main__":
    main()
