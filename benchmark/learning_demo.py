"""Learning demonstration: SFT warm start, then PPO / NLPO, on a task's offline source.

Tasks: IMDB, CommonGen, CNN/DailyMail, DailyDialog (``source="synthetic"``) and Wordle.
For each seed: ``baselines/sft.py`` trains a small LM (causal by default, seq2seq with
``--model-config '{"model_type": "t5", ...}'``) on the task's demonstrations (the
references; Wordle: information-gain games), then
each RL baseline starts from that checkpoint with a wall-time budget. Both RL baselines
evaluate the starting policy and the final one with the same protocol (samples of the
policy on the same validation episodes with the same random numbers), so the table shows
the reward gain, with the final KL to the reference. Runs the baselines as processes, as the harness does.

    python benchmark/learning_demo.py --task imdb --seeds 1 2 3 --algos ppo nlpo --minutes 15
    python benchmark/learning_demo.py --task wordle --env-kwargs '{"num_answers": 100}' --sft-epochs 10 \\
        --seeds 1 --algos ppo --minutes 8
    python benchmark/learning_demo.py --task commongen --seeds 1 2 --algos ppo --sft-epochs 3 --minutes 7
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

from lm_gym.results import load_result

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC = '{"source": "synthetic"}'
TASKS = {
    "imdb": ("lm_gym/IMDB-v0", SYNTHETIC),
    "commongen": ("lm_gym/CommonGen-v0", SYNTHETIC),
    "cnn_dailymail": ("lm_gym/CNNDailyMail-v0", SYNTHETIC),
    "dailydialog": ("lm_gym/DailyDialog-v0", SYNTHETIC),
    "wordle": ("lm_gym/Wordle-v0", "{}"),
}


def run(script: str, *arguments: str) -> dict:
    out_dir = arguments[arguments.index("--out-dir") + 1]
    result_path = Path(out_dir) / "result.json"
    if not result_path.is_file():  # finished runs are reused: the demo resumes where it stopped
        subprocess.run([sys.executable, str(ROOT / "baselines" / script), *arguments], check=True)
    return load_result(result_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="imdb")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--algos", nargs="+", default=["ppo", "nlpo"], choices=["ppo", "nlpo"])
    parser.add_argument("--minutes", type=float, default=15.0, help="wall-time budget of each RL run")
    parser.add_argument("--sft-epochs", type=int, default=2)
    parser.add_argument(
        "--env-kwargs", help="JSON env arguments instead of the task's default, e.g. '{\"num_answers\": 100}'"
    )
    parser.add_argument("--out-dir", default="runs/learning_demo")
    parser.add_argument(
        "--rl-args", default="", help="extra arguments for the RL baselines, e.g. '--learning-rate 2e-4'"
    )
    parser.add_argument("--sft-args", default="", help="extra arguments for sft.py, e.g. '--learning-rate 2e-3'")
    parser.add_argument(
        "--model-config", help="JSON model config for sft.py instead of its default small GPT-2, e.g. a T5"
    )
    args = parser.parse_args()

    env_id, env_kwargs = TASKS[args.task]
    env_kwargs = args.env_kwargs or env_kwargs
    out_dir = f"{args.out_dir}/{args.task}"
    gains: dict[str, list[tuple[float, float, float, float]]] = {algo: [] for algo in args.algos}
    for seed in args.seeds:
        sft_dir = f"{out_dir}/sft-seed{seed}"
        model = ["--model-config", args.model_config] if args.model_config else []
        run(
            "sft.py",
            "--env-id",
            env_id,
            "--env-kwargs",
            env_kwargs,
            "--seed",
            str(seed),
            "--epochs",
            str(args.sft_epochs),
            "--out-dir",
            sft_dir,
            *model,
            *args.sft_args.split(),
        )
        for algo in args.algos:
            result = run(
                f"{algo}.py",
                "--env-id",
                env_id,
                "--env-kwargs",
                env_kwargs,
                "--seed",
                str(seed),
                "--init-from",
                f"{sft_dir}/checkpoint",
                "--time-limit-minutes",
                str(args.minutes),
                "--iterations",
                "10000",
                "--eval-every",
                "0",
                "--eval-episodes",
                "128",
                "--out-dir",
                f"{out_dir}/{algo}-seed{seed}",
                *args.rl_args.split(),
            )
            start, end = result["initial_eval"]["mean_return"], result["final_eval"]["mean_return"]
            gains[algo].append((start, end, result["curves"][-1]["kl"], result["wall_time_s"] / 60))
            print(
                f"{algo} seed {seed}: validation reward {start:.3f} -> {end:.3f} (+{end - start:.3f}), "
                f"KL {result['curves'][-1]['kl']:.2f}, {len(result['curves'])} iterations, "
                f"{result['wall_time_s'] / 60:.1f} min"
            )

    print(
        f"\n{'algo':<6}{'SFT start':>16}{'after RL':>16}{'gain':>16}{'KL':>12}{'minutes':>9}  gain > 0 for every seed"
    )
    for algo, rows in gains.items():
        start, end, kl, minutes = (np.array(column) for column in zip(*rows))
        gain = end - start
        cells = [f"{x.mean():.3f} +- {x.std():.3f}" for x in (start, end, gain)]
        print(
            f"{algo:<6}{cells[0]:>16}{cells[1]:>16}{cells[2]:>16}"
            f"{kl.mean():>12.2f}{minutes.mean():>9.1f}  {bool((gain > 0).all())}"
        )


if __name__ == "__main__":
    main()
