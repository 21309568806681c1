"""What ``lm_gym/Mixture-v0`` costs per step over its tasks' own native vector envs.

    python benchmark/perf/mixture_overhead.py [--num-envs 64] [--steps 40] [--rounds 3] [--levels utterance token]

Offline tasks (``source="synthetic"``), the same total copies N in every env, the same actions:

* **one task**: the mixture of IMDB alone (weight 1) against IMDB's own vector env: the mixture's
  bookkeeping (the task draw, the query's task tag, the routing reward, ``info["task"]``, at token
  level each copy's protocol) and nothing else;
* **two tasks**: the mixture of IMDB and CommonGen (weights 1:1) against the weighted mean of the
  two tasks' own vector envs' time per step: the bookkeeping plus one reward call per task instead
  of one for all.

Utterance level: steps of one utterance per copy, autoreset ``"SameStep"`` (every step ends
each copy's one-step episode and starts the next, so every step does the same work). Token
level: random non-EOS tokens, every copy's utterance ended by its task's ``max_new_tokens``, with
the mixture's tokenizer (a BPE trained on both tasks' corpora, cached) for every env; a copy then
spends 49 steps on an IMDB episode and 21 on a CommonGen one (``"NextStep"`` autoreset), so the
two tasks' times per step are weighted 49:21. Each env
is timed in ``--rounds`` interleaved rounds of ``--steps`` steps (token level: that many tokens x
the longest utterance) after a warm-up; the median round counts. Prints steps per second and the
ratio of the mixture's time per step to its reference (goal: at most 1.05).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium
import numpy as np
import torch

import lm_gym  # noqa: F401  (registers the envs)

IMDB, COMMONGEN = "lm_gym/IMDB-v0", "lm_gym/CommonGen-v0"
SYNTHETIC = {"source": "synthetic"}
SENTENCES = [
    "a wonderful film with a brilliant cast",
    "the dog catches a frisbee in the park",
    "boring and far too long, I left early",
    "a man rides a horse along the beach at sunset",
    "the best movie of the year, moving and funny",
    "children play football on the green grass",
]


def task_env(env_id: str, num_envs: int, level: str, tokenizer):
    kwargs = {"action_level": "token", "tokenizer": tokenizer} if level == "token" else {"autoreset_mode": "SameStep"}
    return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **SYNTHETIC, **kwargs)


def mixture_env(weights: dict[str, float], num_envs: int, level: str, tokenizer):
    kwargs = {"action_level": "token", "tokenizer": tokenizer} if level == "token" else {"autoreset_mode": "SameStep"}
    return gymnasium.make_vec(
        "lm_gym/Mixture-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", tasks=weights,
        task_kwargs={task: SYNTHETIC for task in weights}, **kwargs,
    )  # fmt: skip


def utterance_round(venv, steps: int, rng: np.random.Generator) -> float:
    """Seconds per step of ``steps`` steps of random sentences."""
    actions = [[SENTENCES[k] for k in rng.integers(len(SENTENCES), size=venv.num_envs)] for _ in range(steps)]
    start = time.perf_counter()
    for action in actions:
        venv.step(action)
    return (time.perf_counter() - start) / steps


def token_round(venv, steps: int, rng: np.random.Generator) -> float:
    """Seconds per step of ``steps`` steps of random tokens other than EOS (``"NextStep"`` autoreset)."""
    tokens = rng.integers(0, venv.vocab_size - 1, size=(steps, venv.num_envs))
    tokens[tokens >= venv.eos_token_id] += 1  # never EOS: utterances end at their max_new_tokens
    start = time.perf_counter()
    for action in tokens:
        venv.step(action)
    return (time.perf_counter() - start) / steps


def measure(envs: dict[str, object], level: str, steps: int, rounds: int) -> dict[str, float]:
    """Median seconds per step of each env, timed in interleaved rounds after a warm-up round."""
    play = utterance_round if level == "utterance" else token_round
    times: dict[str, list[float]] = {name: [] for name in envs}
    for venv in envs.values():
        venv.reset(seed=0)
        play(venv, max(2, steps // 4), np.random.default_rng(0))
    for round_index in range(rounds):
        for name, venv in envs.items():
            times[name].append(play(venv, steps, np.random.default_rng(round_index)))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=40, help="steps per round (token level: x 48 tokens)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--levels", nargs="+", default=["utterance", "token"], choices=["utterance", "token"])
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the reward models")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = None
    if "token" in args.levels:  # one tokenizer for every env: the two-task mixture's
        two_tasks = gymnasium.make("lm_gym/Mixture-v0", tasks=[IMDB, COMMONGEN], action_level="token",
                                   task_kwargs={IMDB: SYNTHETIC, COMMONGEN: SYNTHETIC})  # fmt: skip
        tokenizer = two_tasks.unwrapped.tokenizer
    n = args.num_envs
    print(f"N = {n} copies in every env; median of {args.rounds} rounds; steps/s of the vector env")
    for level in args.levels:
        steps = args.steps if level == "utterance" else args.steps * 48
        envs = {
            "IMDB": task_env(IMDB, n, level, tokenizer),
            "CommonGen": task_env(COMMONGEN, n, level, tokenizer),
            "Mixture(IMDB)": mixture_env({IMDB: 1.0}, n, level, tokenizer),
            "Mixture(IMDB, CommonGen)": mixture_env({IMDB: 1.0, COMMONGEN: 1.0}, n, level, tokenizer),
        }
        seconds = measure(envs, level, steps, args.rounds)
        # the share of a copy's steps each task takes: 1:1 by episode, times the steps of an episode
        shares = {"IMDB": 1.0, "CommonGen": 1.0} if level == "utterance" else {"IMDB": 49.0, "CommonGen": 21.0}
        total = sum(shares.values())
        weighted = sum(share / total * seconds[name] for name, share in shares.items())
        print(f"\n{level} level ({steps} steps per round)")
        for name, value in seconds.items():
            print(f"  {name:<26} {1 / value:>10.1f} steps/s")
        weights = ":".join(f"{share:g}" for share in shares.values())
        print(f"  {'mean of IMDB and CommonGen':<26} {1 / weighted:>10.1f} steps/s (time per step weighted {weights})")
        print(f"  ratio Mixture(IMDB) / IMDB:                        {seconds['Mixture(IMDB)'] / seconds['IMDB']:.3f}")
        print(
            f"  ratio Mixture(IMDB, CommonGen) / weighted mean:    {seconds['Mixture(IMDB, CommonGen)'] / weighted:.3f}"
        )
        for venv in envs.values():
            venv.close()


if __name__ == "__main__":
    main()
