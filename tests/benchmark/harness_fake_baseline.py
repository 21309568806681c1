"""A stand-in baseline for the harness tests: the harness's side of the protocol, in seconds.

It takes the flags the harness gives a baseline (``--env-id --env-kwargs --seed --out-dir
--resume --track``), "trains" for ``--steps`` steps of ``--step-seconds``, saving a
checkpoint after every step, resumes from it with ``--resume``, and writes a valid
``result.json``. Its config records what the harness gave it (GPU, threads, W&B variables,
where it resumed), ``finishes.txt`` gets one line per result written and ``pids.txt`` the
process ids, so tests can check placement, resume, duplicates and orphans.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import lm_gym
from lm_gym.core.errors import DataUnavailableError
from lm_gym.results import evaluation_ranges, make_result, write_result

parser = argparse.ArgumentParser()
parser.add_argument("--env-id", required=True)
parser.add_argument("--env-kwargs", required=True)
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--out-dir", required=True)
parser.add_argument("--resume", action="store_true")
parser.add_argument("--track", action="store_true")
parser.add_argument("--init-from")
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--step-seconds", type=float, default=0.0)
parser.add_argument("--fail-seeds", type=int, nargs="*", default=[], help="these seeds always exit 1")
parser.add_argument("--fail-first-attempt", action="store_true", help="exit 1 after one step on the first attempt")
parser.add_argument(
    "--unavailable-seeds",
    type=int,
    nargs="*",
    default=[],
    help="these seeds raise DataUnavailableError (a retry cannot fix it)",
)
args = parser.parse_args()

out_dir = Path(args.out_dir)
out_dir.mkdir(parents=True, exist_ok=True)
with open(out_dir / "pids.txt", "a") as pids:
    pids.write(f"{os.getpid()}\n")
if args.seed in args.fail_seeds:
    sys.exit("failing on purpose")
if args.seed in args.unavailable_seeds:
    print("loading the dataset ...")
    raise DataUnavailableError(f"no dataset for seed {args.seed} [fake]: pass source='synthetic'")
if args.init_from and not Path(args.init_from).is_dir():
    sys.exit(f"--init-from {args.init_from} does not exist")

started = time.time()
state_file = out_dir / "checkpoint" / "state.json"
start = json.loads(state_file.read_text())["step"] if args.resume and state_file.is_file() else 0
for step in range(start, args.steps):
    time.sleep(args.step_seconds)
    state_file.parent.mkdir(exist_ok=True)
    tmp = state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"step": step + 1}))
    os.replace(tmp, state_file)
    if args.fail_first_attempt and not (out_dir / "failed_once").exists():
        (out_dir / "failed_once").touch()
        sys.exit("first attempt fails on purpose")

config = {
    "env_kwargs": args.env_kwargs,
    "lm_gym_file": lm_gym.__file__,
    "resumed_from": start,
    "started": started,
    "ended": time.time(),
    "init_from": args.init_from,
    "track": args.track,
    **{
        name.lower(): os.environ.get(name)
        for name in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "WANDB_RUN_GROUP", "WANDB_TAGS")
    },
}
# a return the task can have (IMDB's are in [0, 1], Wordle's and VisDial's negative), distinct per seed
returns = evaluation_ranges(args.env_id, json.loads(args.env_kwargs))["mean_return"]
mean_return = 0.1 * args.seed if returns.contains(0.1 * args.seed) else -0.1 * args.seed
evaluation = {"num_episodes": 4, "mean_return": mean_return, "std_return": 0.0}
write_result(
    out_dir,
    make_result(
        env_id=args.env_id,
        algorithm="fake",
        seed=args.seed,
        config=config,
        initial_eval=evaluation,
        final_eval=evaluation,
        curves=[{"step": args.steps}],
        wall_time_s=1.0,
        tokens_per_s=1.0,
        episodes_per_s=1.0,
        peak_memory_mb=1.0,
        checkpoint="checkpoint",
        device="cpu",
    ),
)
with open(out_dir / "finishes.txt", "a") as finishes:
    finishes.write(f"{time.time()}\n")
