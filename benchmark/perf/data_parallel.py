"""One PPO run on 1 and on P processes (``torchrun``), the standard workload: throughput side by side.

    python benchmark/perf/data_parallel.py                       # CPU: 1 process x 2 threads vs 2 x 1
    python benchmark/perf/data_parallel.py --device cuda --processes 1 2 4 8   # one GPU per process

Every run is ``baselines/ppo.py`` on ``lm_gym/Prompts-v0`` with the speed benchmark's workload
(``workload.py``: 64 episodes of 48 tokens per iteration, 4 minibatches), launched as a user
launches it (``python -m torch.distributed.run --standalone --nproc_per_node P``). On CPU the
processes share the machine's cores (``--threads`` in all, split between them), so the
comparison shows what splitting the same cores costs or gains, not more hardware. Reported per
process count: the median iteration seconds after the warm-up, episodes per second, and the
communication share: the time rank 0 spent in collectives (gradient all-reduce, statistics,
waiting for the other processes) over the iteration time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import workload
from ours import baseline_args

from lm_gym.results import load_result

BASELINE = Path(__file__).resolve().parents[2] / "baselines" / "ppo.py"


def run(processes: int, model_dir: Path, iterations: int, threads: int, device: str, bf16: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as out_dir:
        flags = baseline_args(
            "ppo", model_dir, workload.WARMUP_ITERATIONS + iterations, out_dir, 0.0, device, bf16, threads
        )
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        subprocess.run(
            [sys.executable, *(launcher if processes > 1 else []), str(BASELINE), *flags],
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": str(threads)},
            stdout=subprocess.DEVNULL,
        )
        rows = load_result(out_dir)["curves"][workload.WARMUP_ITERATIONS :]
    seconds = [row["seconds"] for row in rows]
    return {
        "iteration_s": statistics.median(seconds),
        "episodes_per_s": workload.SEQUENCES_PER_ITERATION / statistics.median(seconds),
        "communication_share": sum(row.get("communication_seconds", 0.0) for row in rows) / sum(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="process counts to compare")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations, after the warm-up ones")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads in all, split over processes")
    parser.add_argument("--workload-dir", default="runs/perf", help="where the workload's model is saved")
    parser.add_argument("--size", choices=sorted(workload.MODEL_CONFIGS), default="standard")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: one GPU per process (--threads split too)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast")
    args = parser.parse_args()

    model_dir = workload.build(args.workload_dir, args.size)
    results = {}
    for processes in args.processes:
        threads = max(1, args.threads // processes)
        results[processes] = run(processes, model_dir, args.iterations, threads, args.device, args.bf16)
        r = results[processes]
        print(
            f"{processes} process(es) x {threads} thread(s): {r['iteration_s']:.2f} s/iteration, "
            f"{r['episodes_per_s']:.1f} episodes/s, communication {100 * r['communication_share']:.1f}% of the time",
            flush=True,
        )
    base = results[args.processes[0]]["episodes_per_s"]
    for processes, r in results.items():
        print(f"throughput {processes} / {args.processes[0]} process(es): {r['episodes_per_s'] / base:.2f}x")


if __name__ == "__main__":
    main()
