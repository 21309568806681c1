"""Offline RL demonstration, the shape of the ILQL paper's tables: BC, %BC and ILQL trained on
the same suboptimal dataset of a multi-turn task, each evaluated on the same seeded games.

``--task wordle`` (ILQL's Wordle table): the dataset (``lm_gym.tasks.wordle.offline_data``,
default ``adversarial``, the ILQL paper's section 5 data) holds expert (information-gain)
games; for every expert game of three or more guesses, games that copy its first two guesses
and then repeat one of them; and games of the suboptimal mixture policy. At a third-turn state
the expert's move and a useless repeat are equally common, so cloning the data repeats
guesses; a Q function learns that repeating costs a turn.

``--task visdial`` (ILQL's Visual Dialogue, synthetic world): the ``mixture`` dataset of
``lm_gym.tasks.visdial.offline_data``, the "human-like" questioners: each game draws a skill
and asks, each turn, the informative question with that probability, else a random or a
yes/no one. Cloning copies the average questioner; a Q function learns which questions bring
the target closer.

``%BC`` clones the trajectories with the best returns only. For each seed: ``sft.py
--dataset`` (BC), ``sft.py --dataset --top-fraction`` (%BC) and ``ilql.py --dataset``: the
same small GPT-2 from scratch, data, batch size and number of optimizer steps, each evaluated
with the same protocol (samples of the policy on ``--eval-games`` validation games reset with
seeds 0, 1, ...). Runs the baselines as processes, as the harness does; finished runs are
reused.

    python benchmark/offline_rl.py --task wordle --seeds 1 2 3
    python benchmark/offline_rl.py --task visdial --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from lm_gym.offline import save_trajectories
from lm_gym.results import load_result
from lm_gym.tasks.visdial.offline_data import scripted_dialogues

ROOT = Path(__file__).resolve().parents[1]
#: task -> (env id, the final evaluation's success metric, its label)
TASKS = {
    "wordle": ("lm_gym/Wordle-v0", "mean_solved", "solved"),
    "visdial": ("lm_gym/VisDial-v0", "mean_reached_cutoff", "reached cutoff"),
}


def run(script: str, *arguments: str) -> dict:
    out_dir = arguments[arguments.index("--out-dir") + 1]
    result_path = Path(out_dir) / "result.json"
    config = load_result(result_path)["config"] if result_path.is_file() else None
    if config is None or (script == "ilql.py" and config["beta"] != float(arguments[arguments.index("--beta") + 1])):
        subprocess.run([sys.executable, str(ROOT / "baselines" / script), *arguments], check=True)
    return load_result(result_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="wordle")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--dataset", help="the task's offline_data dataset; default: wordle adversarial, visdial mixture"
    )
    parser.add_argument(
        "--num-games", type=int, default=2000, help="wordle: expert games the dataset starts from; visdial: games"
    )
    parser.add_argument(
        "--num-answers", type=int, default=100, help="wordle: seeded subset of the answers (env and data)"
    )
    parser.add_argument(
        "--env-kwargs",
        default="{}",
        help='visdial: JSON env arguments of the data and the evaluation, e.g. \'{"yn_reward_kind": "hard"}\'',
    )
    parser.add_argument(
        "--top-fraction", type=float, default=0.3, help="%%BC: fraction of trajectories kept, by return"
    )
    parser.add_argument(
        "--steps", type=int, default=1192, help="optimizer steps of every method (1192: 4 passes over the default data)"
    )
    parser.add_argument("--batch-size", type=int, default=64, help="turns per optimizer step (every method)")
    parser.add_argument(
        "--eval-games", type=int, default=256, help="evaluation games (seeds 0 .. N-1), the same for every run"
    )
    parser.add_argument("--beta", type=float, default=1.0, help="ILQL's advantage weight at inference")
    parser.add_argument(
        "--ilql-args", default="", help="extra ilql.py arguments, joined to the flag by '=': --ilql-args='--tau 0.9'"
    )
    parser.add_argument("--out-dir", help="default: runs/offline_<task>")
    args = parser.parse_args()

    env_id, success_metric, success_label = TASKS[args.task]
    out_dir = Path(args.out_dir or f"runs/offline_{args.task}")
    if args.task == "wordle":
        dataset_name, env_kwargs = args.dataset or "adversarial", {"num_answers": args.num_answers}
    else:
        dataset_name, env_kwargs = args.dataset or "mixture", {"source": "synthetic", **json.loads(args.env_kwargs)}
    dataset = out_dir / f"{args.task}_{dataset_name}_{args.num_games}.parquet"
    if not dataset.is_file() and args.task == "wordle":
        subprocess.run(
            [
                sys.executable,
                "-m",
                "lm_gym.tasks.wordle.offline_data",
                "--dataset",
                dataset_name,
                "--num-games",
                str(args.num_games),
                "--num-answers",
                str(args.num_answers),
                "--workers",
                "2",
                "--out",
                str(dataset),
            ],
            check=True,
        )
    elif not dataset.is_file():  # the env's own rewards: the data are played through the env of the evaluation
        save_trajectories(scripted_dialogues(dataset_name, args.num_games, seed=0, env_kwargs=env_kwargs), dataset)
    env_kwargs = json.dumps(env_kwargs)
    # the same data, optimizer steps, batch size and evaluation games for every method; --resume: an interrupted
    # demo goes on, and a finished ILQL run is only evaluated again when --beta changes
    common = [
        "--env-id",
        env_id,
        "--env-kwargs",
        env_kwargs,
        "--dataset",
        str(dataset),
        "--epochs",
        "1000",
        "--max-steps",
        str(args.steps),
        "--batch-size",
        str(args.batch_size),
        "--eval-episodes",
        str(args.eval_games),
        "--eval-batch-size",
        "64",
        "--resume",
    ]
    methods = {
        "BC": ("sft.py", []),
        f"%BC ({args.top_fraction:g})": ("sft.py", ["--top-fraction", str(args.top_fraction)]),
        f"ILQL (beta {args.beta:g})": ("ilql.py", ["--beta", str(args.beta), *args.ilql_args.split()]),
    }
    table: dict[str, list[tuple[float, float, float]]] = {name: [] for name in methods}
    for seed in args.seeds:
        for (name, (script, extra)), tag in zip(methods.items(), ("bc", "pct_bc", "ilql"), strict=True):
            result = run(script, *common, *extra, "--seed", str(seed), "--out-dir", str(out_dir / f"{tag}-seed{seed}"))
            final = result["final_eval"]
            table[name].append(
                (final["mean_return"], final.get(success_metric, float("nan")), result["wall_time_s"] / 60)
            )
            print(
                f"{name} seed {seed}: mean return {final['mean_return']:.3f} over {final['num_episodes']} games, "
                f"{success_label} {final.get(success_metric, float('nan')):.3f}, {result['wall_time_s'] / 60:.1f} min"
            )

    print(f"\ndataset: {dataset.name}; {args.eval_games} evaluation games per run; seeds {args.seeds}")
    print(f"{'method':<18}{'mean return':>18}{success_label:>16}{'minutes':>9}  per seed")
    for name, rows in table.items():
        returns, solved, minutes = (np.array(column) for column in zip(*rows))
        print(
            f"{name:<18}{returns.mean():>10.3f} +- {returns.std():.3f}{solved.mean():>16.3f}{minutes.mean():>9.1f}  "
            + " ".join(f"{r:.3f}" for r in returns)
        )
    ilql, bc = np.array([row[0] for row in table[list(methods)[2]]]), np.array([row[0] for row in table["BC"]])
    print(f"ILQL beats BC for every seed: {bool((ilql > bc).all())}")


if __name__ == "__main__":
    main()
