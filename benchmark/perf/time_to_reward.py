"""Time to reward: lm-gym's ``grpo.py`` against TRL's ``GRPOTrainer`` (and RLOO against ``RLOOTrainer``) on
the same task, model, data, group size and KL, each trainer as its users run it.

    python benchmark/perf/time_to_reward.py --task prompts --seeds 1 2 3 --minutes 3 --threads 1 --plot
    python benchmark/perf/time_to_reward.py --task imdb --seeds 1 2 3 --minutes 3 --threads 1 --plot --rloo

* ``prompts``: ``lm_gym/Prompts-v0`` with the speed benchmark's workload (``workload.py``: the
  seed-0 GPT-2 of 4 layers, 64-token prompts, exactly 48 new tokens, the ``vowel_words`` reward).
* ``imdb``: ``lm_gym/IMDB-v0`` (synthetic source), from one ``sft.py`` checkpoint (2 epochs, seed
  0) built once, exactly 48 new tokens (RL4LMs' protocol), the env's sentiment reward.

Both sides play 16 prompts x 4 completions per iteration, one epoch of 4 optimizer steps of 16
completions, learning rate 1e-3 (prompts: the random model barely moves at 1e-4 in 24 iterations; 1e-4
for imdb, from its SFT start), KL weight ``--beta``. lm-gym runs
``baselines/grpo.py``; TRL runs with ``lm_gym.integrations.trl`` (``prompt_dataset`` and
``reward_function``: the env's reward). Each run is its own process with ``--minutes`` of
training; the curve is the mean reward of each iteration's completions against the training
wall-clock (lm-gym: the curves' per-iteration seconds, evaluation excluded; TRL: time since
``on_train_begin``). Printed: per contender the time the curve (a moving mean over 5 iterations)
first reaches each of ``--targets`` (the mean over seeds; a run that never reaches it counts as its
whole budget, so the mean is a lower bound, marked ``>``), and the ratio; ``--plot`` writes a PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
import workload  # noqa: E402

from lm_gym.results import load_result  # noqa: E402

PROMPTS, GROUP_SIZE, MINIBATCHES, NEW_TOKENS = 16, workload.GROUP_SIZE, workload.MINIBATCHES, workload.NEW_TOKENS
TASKS = {
    "prompts": {"env_id": "lm_gym/Prompts-v0", "env_kwargs": {}, "learning_rate": 1e-3, "targets": [0.3, 0.4, 0.5]},
    "imdb": {
        "env_id": "lm_gym/IMDB-v0",
        "env_kwargs": {"source": "synthetic"},
        "learning_rate": 1e-4,
        "targets": [0.6, 0.65, 0.7],
    },
}
WINDOW = 5  # iterations in the moving mean that decides when a target is reached


def starting_model(task: str, work_dir: Path) -> Path:
    """The model both trainers start from, built once in ``work_dir``."""
    if task == "prompts":
        return workload.build(work_dir)
    checkpoint = work_dir / "imdb-sft" / "checkpoint"
    if not (checkpoint / "config.json").is_file():
        settings = TASKS[task]
        command = [sys.executable, str(ROOT / "baselines" / "sft.py"), "--env-id", settings["env_id"]]
        command += ["--env-kwargs", json.dumps(settings["env_kwargs"]), "--epochs", "2", "--seed", "0"]
        command += ["--eval-episodes", "0", "--out-dir", str(checkpoint.parent)]
        subprocess.run(command, check=True)
    return checkpoint


def run_ours(task: str, model: Path, seed: int, minutes: float, beta: float, rloo: bool, threads: int) -> list:
    settings = TASKS[task]
    with tempfile.TemporaryDirectory() as out_dir:
        command = [sys.executable, str(ROOT / "baselines" / "grpo.py"), "--env-id", settings["env_id"]]
        command += ["--env-kwargs", json.dumps(settings["env_kwargs"]), "--init-from", str(model)]
        command += ["--seed", str(seed), "--num-prompts", str(PROMPTS), "--group-size", str(GROUP_SIZE)]
        command += ["--num-minibatches", str(MINIBATCHES), "--update-epochs", "1", "--beta", str(beta)]
        command += ["--learning-rate", str(settings["learning_rate"]), "--no-anneal-lr", "--temperature", "1.0"]
        command += ["--min-new-tokens", str(NEW_TOKENS), "--iterations", "100000", "--time-limit-minutes", str(minutes)]
        command += ["--eval-episodes", "1", "--eval-batch-size", "1", "--eval-every", "0", "--save-every", "0"]
        command += ["--torch-threads", str(threads), "--out-dir", out_dir, *(["--rloo"] if rloo else [])]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        rows = load_result(out_dir)["curves"]
    clock, curve = 0.0, []
    for row in rows:
        clock += row["seconds"]
        curve.append((clock, row["mean_return"]))
    return curve


def run_trl(task: str, model: Path, seed: int, minutes: float, beta: float, rloo: bool, threads: int) -> list:
    """TRL's trainer in this process (called in a child process by :func:`main`)."""
    import torch
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

    from lm_gym.integrations.trl import prompt_dataset, reward_function

    torch.set_num_threads(threads)
    settings = TASKS[task]
    tokenizer = AutoTokenizer.from_pretrained(model)
    curve, started = [], [0.0]

    class Curve(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            started[0] = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "reward" in logs:
                curve.append((time.perf_counter() - started[0], float(logs["reward"])))
            if time.perf_counter() - started[0] > 60 * minutes:
                control.should_training_stop = True

    common = dict(
        output_dir=tempfile.mkdtemp(),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        report_to="none",
        save_strategy="no",
        seed=seed,
        learning_rate=settings["learning_rate"],
        lr_scheduler_type="constant",
        per_device_train_batch_size=PROMPTS * GROUP_SIZE // MINIBATCHES,
        steps_per_generation=MINIBATCHES,  # one generation of 64 completions, 4 optimizer steps of 16
        num_iterations=1,
        num_generations=GROUP_SIZE,
        max_completion_length=NEW_TOKENS,
        temperature=1.0,
        generation_kwargs={"min_new_tokens": NEW_TOKENS},
        beta=beta,
        logging_steps=MINIBATCHES,  # one log per iteration: its completions' mean reward
        max_steps=10**6,
        disable_tqdm=True,
        disable_dropout=True,  # as lm-gym, which samples and trains in eval mode (the IMDB SFT model has dropout)
    )
    config, trainer_class = (RLOOConfig, RLOOTrainer) if rloo else (GRPOConfig, GRPOTrainer)
    trainer = trainer_class(
        model=str(model),
        reward_funcs=reward_function(settings["env_id"], **settings["env_kwargs"]),
        args=config(**common),
        train_dataset=prompt_dataset(settings["env_id"], "train", **settings["env_kwargs"]),
        processing_class=tokenizer,
        callbacks=[Curve()],
    )
    trainer.train()
    return curve


def time_to(curve: list, target: float) -> float | None:
    """Seconds until the moving mean of ``WINDOW`` iterations' rewards first reaches ``target``."""
    for end in range(WINDOW, len(curve) + 1):
        if sum(reward for _, reward in curve[end - WINDOW : end]) / WINDOW >= target:
            return curve[end - 1][0]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="prompts")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--minutes", type=float, default=3.0, help="training wall-clock of every run")
    parser.add_argument("--beta", type=float, default=workload.KL_COEF, help="KL weight of both trainers")
    parser.add_argument("--rloo", action="store_true", help="RLOO (lm-gym --rloo, TRL's RLOOTrainer) instead of GRPO")
    parser.add_argument("--targets", type=float, nargs="+", help="the rewards to reach (default: the task's)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--work-dir", default="runs/time_to_reward", help="the starting models, the curves")
    parser.add_argument("--plot", action="store_true", help="write <work-dir>/<task>-<algorithm>.png")
    parser.add_argument("--child", choices=["trl"], help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    work_dir = Path(args.work_dir)
    model = starting_model(args.task, work_dir)
    if args.child == "trl":  # one TRL run, its curve as the last line of stdout
        print(json.dumps(run_trl(args.task, model, args.seed, args.minutes, args.beta, args.rloo, args.threads)))
        return
    algorithm = "rloo" if args.rloo else "grpo"
    targets = args.targets or TASKS[args.task]["targets"]
    curves_file = work_dir / f"{args.task}-{algorithm}.json"
    curves = json.loads(curves_file.read_text()) if curves_file.is_file() else {}  # finished runs are kept
    for seed in args.seeds:
        for contender in ("lm-gym", "trl"):
            key = f"{contender}/{seed}"
            if key in curves:
                continue
            if contender == "lm-gym":
                curves[key] = run_ours(args.task, model, seed, args.minutes, args.beta, args.rloo, args.threads)
            else:
                command = [sys.executable, __file__, "--child", "trl", "--task", args.task, "--seed", str(seed)]
                command += ["--minutes", str(args.minutes), "--beta", str(args.beta), "--threads", str(args.threads)]
                command += ["--work-dir", str(work_dir), *(["--rloo"] if args.rloo else [])]
                done = subprocess.run(command, check=True, capture_output=True, text=True)
                curves[key] = json.loads(done.stdout.strip().splitlines()[-1])
            curves_file.write_text(json.dumps(curves))
            print(f"{key}: {len(curves[key])} iterations, reward {curves[key][0][1]:.3f} -> {curves[key][-1][1]:.3f}")

    print(f"\n{args.task}, {algorithm}, {args.minutes:g} min per run, seeds {args.seeds}; seconds of training")
    print(f"until the moving mean of {WINDOW} iterations' rewards reaches the target (mean over seeds, reached/runs)\n")
    print("| target | lm-gym | TRL | TRL / lm-gym |\n|---|---|---|---|")
    for target in targets:
        cells, means = [], []
        for contender in ("lm-gym", "trl"):
            times = [time_to(curves[f"{contender}/{seed}"], target) for seed in args.seeds]
            reached = [t for t in times if t is not None]
            # a run that never reached the target counts as its whole training time: a lower bound
            mean = sum(
                t if t is not None else curves[f"{contender}/{seed}"][-1][0] for t, seed in zip(times, args.seeds)
            )
            means.append((mean / len(times), len(reached) < len(times)))
            bound = ">" if len(reached) < len(times) else ""
            cells.append(f"{bound}{means[-1][0]:.0f} s ({len(reached)}/{len(times)})")
        (ours, ours_bound), (trl, trl_bound) = means
        ratio = "?" if ours_bound else f"{'>' if trl_bound else ''}{trl / ours:.1f}x"
        print(f"| {target:g} | {cells[0]} | {cells[1]} | {ratio} |")
    if args.plot:
        plot(curves, args.seeds, targets, work_dir / f"{args.task}-{algorithm}.png", f"{args.task}, {algorithm}")


def plot(curves: dict, seeds: list[int], targets: list[float], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for contender, color in (("lm-gym", "tab:blue"), ("trl", "tab:orange")):
        for k, seed in enumerate(seeds):
            times, rewards = zip(*curves[f"{contender}/{seed}"])
            axes.plot([t / 60 for t in times], rewards, color=color, alpha=0.7, label=contender if k == 0 else None)
    for target in targets:
        axes.axhline(target, color="gray", linestyle="--", linewidth=0.8)
    axes.set(xlabel="training wall-clock (minutes)", ylabel="mean reward of the iteration", title=title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
