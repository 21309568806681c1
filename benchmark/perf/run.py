"""Speed benchmark: lm-gym's PPO and GRPO against TRL's trainers and the plain-``generate``
limit, on the standard workload (``workload.py``), side by side in one run.

    python benchmark/perf/run.py                      # TRL contenders too, if their envs exist
    python benchmark/perf/run.py --create-trl-envs    # make them first (pip, about 40 MB each)

Every contender runs in its own process (``ours.py``, or ``trl_contender.py`` in its TRL
env) for 2 warm-up and ``--iterations`` timed iterations; the contenders take turns, round
after round, so a slow spell of the machine hits all of them. Reported per contender: the
median iteration's episodes/s (64 completions per iteration) and generated tokens/s (x 48),
the rollout's tokens/s, peak RSS, and the ratios that the goals are stated in. Without TRL
envs it prints lm-gym's contenders and the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import trl_envs
import workload

HERE = Path(__file__).resolve().parent

#: TRL release of each trainer: PPOTrainer's last release, and the current one.
TRL_VERSIONS = {"ppo": "1.12.0", "grpo": "1.16.0", "rloo": "1.16.0"}


def contenders(args: argparse.Namespace) -> dict[str, list[str]]:
    """Name -> command line, in the order they take turns."""
    placement = ["--size", args.size, "--device", args.device, *(["--bf16"] if args.bf16 else [])]
    profile_dir = getattr(args, "profile_dir", None)

    def profiled(name: str, command: list[str] | None) -> list[str] | None:
        if command is None or not profile_dir:
            return command
        return [*command, "--profile-out", str(Path(profile_dir) / f"{name}.json")]

    ours = [
        sys.executable,
        str(HERE / "ours.py"),
        "--workload-dir",
        args.workload_dir,
        "--iterations",
        str(args.iterations),
        *placement,
    ]
    table = {
        "generate-limit": [*ours, "--contender", "limit"],
        "lm-gym-ppo": [*ours, "--contender", "ppo"],
        "lm-gym-nlpo": [*ours, "--contender", "nlpo"],
    }
    trl = {trainer: trl_envs.trl_python(version) for trainer, version in TRL_VERSIONS.items()}

    def trl_command(trainer: str, beta: float | None = None) -> list[str] | None:
        if trl[trainer] is None:
            return None
        command = [
            str(trl[trainer]),
            str(HERE / "trl_contender.py"),
            "--trainer",
            trainer,
            "--workload-dir",
            args.workload_dir,
            "--iterations",
            str(args.iterations),
            "--threads",
            str(args.threads),
            *placement,
        ]
        return command if beta is None else [*command, "--beta", str(beta)]

    table["trl-ppo"] = trl_command("ppo")
    for beta in args.betas:
        table[f"lm-gym-grpo-beta{beta:g}"] = [*ours, "--contender", "grpo", "--beta", str(beta)]
        table[f"trl-grpo-beta{beta:g}"] = trl_command("grpo", beta)
    if args.rloo:
        table[f"lm-gym-rloo-beta{workload.KL_COEF:g}"] = [*ours, "--contender", "rloo", "--beta", str(workload.KL_COEF)]
        table[f"trl-rloo-beta{workload.KL_COEF:g}"] = trl_command("rloo", workload.KL_COEF)
    if getattr(args, "cuda_graphs", False):  # each lm-gym contender again, sampling through CUDA graphs
        table |= {f"{name}+graphs": [*command, "--cuda-graphs"] for name, command in table.items() if "lm-gym" in name}
    table = {name: profiled(name, command) for name, command in table.items()}
    chosen = {
        name: command
        for name, command in table.items()
        if command is not None and (not args.only or any(o in name for o in args.only))
    }
    missing = [name for name, command in table.items() if command is None]
    if missing:
        print(f"no TRL env for {missing}: run with --create-trl-envs to include them", file=sys.stderr)
    return chosen


def run_contender(name: str, command: list[str], threads: int, timeout: float | None = None) -> dict:
    """One contender process's timings (its last stdout line); ``timeout``: seconds before it is killed."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
    }
    try:
        completed = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{name} did not finish in {timeout:.0f} s and was stopped") from None
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"{name} failed (exit {completed.returncode}):\n{completed.stderr[-3000:]}")
    return json.loads(lines[-1])


def summarize(runs: list[dict]) -> dict:
    seconds = [s for run in runs for s in run["iteration_seconds"]]
    rollout = [s for run in runs for s in (run.get("rollout_seconds") or []) if s is not None]
    sequences, tokens = (
        runs[0]["sequences_per_iteration"],
        runs[0]["sequences_per_iteration"] * runs[0]["new_tokens_per_sequence"],
    )
    median = statistics.median(seconds)
    return {
        "iteration_s": median,
        "episodes_per_s": sequences / median,
        "tokens_per_s": tokens / median,
        "rollout_tokens_per_s": tokens / statistics.median(rollout) if rollout else None,
        "peak_rss_mb": max(run["peak_rss_mb"] for run in runs),
        "iterations": len(seconds),
        "versions": {key: runs[0][key] for key in runs[0] if key.endswith("_version")},
    }


def speed_ratios(summary: dict[str, dict], betas: list[float]) -> dict[str, float]:
    """The ratios the goals are stated in, for the contenders ``summary`` holds: lm-gym over TRL
    (episodes/s), NLPO over PPO (s/iteration), each lm-gym sampler over the ``generate`` limit."""
    ratios = {}
    for ours, theirs in [("lm-gym-ppo", "trl-ppo")] + [
        (f"lm-gym-{a}-beta{b:g}", f"trl-{a}-beta{b:g}") for a in ("grpo", "rloo") for b in betas
    ]:
        if ours in summary and theirs in summary:
            ratios[f"{ours} / {theirs} episodes/s"] = (
                summary[ours]["episodes_per_s"] / summary[theirs]["episodes_per_s"]
            )
    if "lm-gym-nlpo" in summary and "lm-gym-ppo" in summary:  # NLPO's mask costs this much over PPO on the same sampler
        ratios["lm-gym-nlpo / lm-gym-ppo s/iteration"] = (
            summary["lm-gym-nlpo"]["iteration_s"] / summary["lm-gym-ppo"]["iteration_s"]
        )
    for name in summary:  # the CUDA-graph path against the default one
        if name.endswith("+graphs") and name.removesuffix("+graphs") in summary:
            ratios[f"{name} / {name.removesuffix('+graphs')} episodes/s"] = (
                summary[name]["episodes_per_s"] / summary[name.removesuffix("+graphs")]["episodes_per_s"]
            )
    if "generate-limit" in summary:
        limit = summary["generate-limit"]["rollout_tokens_per_s"]
        for name, row in summary.items():
            if name.startswith("lm-gym") and row["rollout_tokens_per_s"]:
                ratios[f"{name} rollout / generate limit tokens/s"] = row["rollout_tokens_per_s"] / limit
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations", type=int, default=5, help="timed iterations per contender process (after 2 warm-up ones)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of turns: every contender runs once per round")
    parser.add_argument(
        "--betas",
        type=float,
        nargs="+",
        default=[workload.KL_COEF, 0.0],
        help="GRPO KL weights (0: no reference model)",
    )
    parser.add_argument("--rloo", action="store_true", help="also RLOO (lm-gym's --rloo and TRL's RLOOTrainer)")
    parser.add_argument("--only", nargs="+", help="run only contenders whose name contains one of these")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every contender")
    parser.add_argument(
        "--size",
        choices=sorted(workload.MODEL_CONFIGS),
        default="standard",
        help="the model: standard (CPU), gpt2-small (the GPU comparison) or tiny (a dry run of the code paths)",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (every contender)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 for every contender (the GPU comparison)")
    parser.add_argument("--workload-dir", default="runs/perf", help="where the workload's model is saved")
    parser.add_argument(
        "--create-trl-envs", action="store_true", help="create the TRL envs first (pip install from PyPI)"
    )
    parser.add_argument("--out", default="runs/perf/results.json", help="all timings and the summary, as JSON")
    parser.add_argument(
        "--cuda-graphs", action="store_true", help="also each lm-gym contender with LM_GYM_CUDA_GRAPHS=1 (NAME+graphs)"
    )
    parser.add_argument(
        "--profile-dir", help="profile each contender's last warm-up iteration (profiling.py): DIR/NAME.json"
    )
    args = parser.parse_args()

    if args.create_trl_envs:
        for version in sorted(set(TRL_VERSIONS.values())):
            trl_envs.trl_python(version, create=True)
    workload.build(args.workload_dir, args.size)
    table = contenders(args)
    runs: dict[str, list[dict]] = {name: [] for name in table}
    for round_index in range(args.rounds):
        for name, command in table.items():
            runs[name].append(run_contender(name, command, args.threads))
            print(
                f"round {round_index + 1}/{args.rounds} {name}: "
                f"median {statistics.median(runs[name][-1]['iteration_seconds']):.2f} s/iteration",
                file=sys.stderr,
            )

    summary = {name: summarize(rs) for name, rs in runs.items()}
    print(
        f"\nstandard workload: {workload.SEQUENCES_PER_ITERATION} completions x {workload.NEW_TOKENS} tokens "
        "per iteration, "
        f"{args.threads} threads, {args.rounds} rounds x {args.iterations} timed iterations"
    )
    print(
        f"{'contender':<24}{'s/iteration':>12}{'episodes/s':>12}{'tokens/s':>10}"
        f"{'rollout tok/s':>15}{'peak RSS MB':>13}"
    )
    for name, row in summary.items():
        rollout = f"{row['rollout_tokens_per_s']:.0f}" if row["rollout_tokens_per_s"] else "-"
        print(
            f"{name:<24}{row['iteration_s']:>12.2f}{row['episodes_per_s']:>12.1f}{row['tokens_per_s']:>10.0f}"
            f"{rollout:>15}{row['peak_rss_mb']:>13.0f}"
        )
    ratios = speed_ratios(summary, args.betas)
    print()
    for label, value in ratios.items():
        print(f"{label:<62}{value:>6.2f}x")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps({"summary": summary, "ratios": ratios, "runs": runs, "settings": vars(args)}, indent=1)
    )
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
