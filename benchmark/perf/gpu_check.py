"""The GPU check: lm-gym's speed, a learning check and the smoke suite on one GPU, in one command
that fits the few minutes a lent GPU machine gives (9 minutes of wall time by default).

    # 1. on a CPU machine with PyPI: the wheels the GPU machine lacks, for its Python (3.12, x86_64),
    #    and copies of the word lists lm-gym derives from wordfreq (whose 57 MB wheel stays behind)
    python benchmark/perf/gpu_check.py --download-wheels .whl
    # 2. on the GPU machine, no network: installs from .whl only, then measures
    python3 benchmark/perf/gpu_check.py --wheels .whl
    # the CPU dry run of the same code paths, in minutes (the deep tests run it)
    python benchmark/perf/gpu_check.py --device cpu --tiny

With ``--wheels`` the check first makes its environment in ``--work-dir`` (``gpu_check_setup.py``:
a venv that sees the machine's packages, lm-gym's requirements installed offline into it, the
word lists, the TRL venvs of the speed benchmark), then runs itself again inside that venv.

The parts, each in its own time box (a share of what is left of ``--minutes``):

* ``speed``: ``run.py``'s contenders on the GPT-2-small-sized random model with bf16
  (``--size gpt2-small --device cuda --bf16``): the ``generate`` limit, lm-gym's PPO, GRPO,
  RLOO and NLPO, TRL's PPOTrainer, GRPOTrainer and RLOOTrainer, one process each, one round;
  each lm-gym contender twice, its sampler's decode steps eager and replayed as CUDA graphs
  (``NAME+graphs``: ``LM_GYM_CUDA_GRAPHS=1``, ``lm_toolkit.static_decoding``). Each contender's
  last warm-up iteration (not timed) is profiled (``profiling.py``): its results row's
  ``profile`` says where the time goes (kernels and launches per iteration, host syncs, time on
  the device against wall time, the ops that took the most), so the next change can be planned
  from the file without a GPU. On the CPU dry run the device is the CPU (ops, not kernels).
* ``cnn_dailymail``: ``sft.py`` then ``ppo.py`` on CNN/DailyMail's synthetic source with a
  policy larger than the CPU runs' (GPT-2, 6 layers, width 384); PPO's validation ROUGE-1 at
  its start (the SFT checkpoint) and at its end.
* ``smoke``: ``python -m benchmark run --suite smoke --gpus 0 --jobs-per-gpu 8 --report
  --board``: every job on the GPU, the report and the board written.

The results file ``<results-dir>/gpu-<device>-<date>.json`` (device, torch and CUDA versions,
every figure, the goals met or not, what was skipped and why) is rewritten after every part,
so a later part's failure, or the machine going back, keeps what finished. A Markdown table of
the figures and the file's path end the output. ``--results-dir`` is ``benchmark/perf/results``
(what is published) for the check itself; a dry run (``--device cpu`` or ``--tiny``) writes into
a new temporary folder unless it is given, so the checkout stays as it was.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# run.py and workload.py import lm_gym, which the GPU machine can import only after the setup: the parts
# import them, these two do not
import gpu_check_setup
import trl_envs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

PARTS = ("speed", "cnn_dailymail", "smoke")
#: Each part's share of the time left after the setup.
SHARES = {"speed": 0.55, "cnn_dailymail": 0.20, "smoke": 0.25}
SPEED_GOAL = 3.0  #: lm-gym's PPO, GRPO and RLOO over TRL's trainers, episodes/s
ROLLOUT_GOAL = 1.0  #: every lm-gym sampler's rollout against the ``generate`` limit
#: The CNN/DailyMail part's policy: larger than the CPU runs' on the GPU, tiny in the dry run.
CNN_POLICY = {
    "gpu": '{"model_type": "gpt2", "n_layer": 6, "n_embd": 384, "n_head": 6}',
    "tiny": '{"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2}',
}
SETUP_ENV = "LM_GYM_GPU_CHECK_SETUP"  #: set in the re-run inside the check's venv: the setup's record
RESULTS_DIR_ENV = "LM_GYM_GPU_CHECK_RESULTS_DIR"  #: set in that re-run too: where the results go


# ---------------------------------------------------------------- the check's environment (GPU machine)


def subprocess_env(work_dir: Path) -> dict[str, str]:
    """The environment of every step: lm-gym from this checkout, its own cache, no hub."""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "LM_GYM_CACHE": os.environ.get("LM_GYM_CACHE") or str(work_dir / "cache"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    }


# ---------------------------------------------------------------- running steps in time boxes


def run_boxed(command: list[str], env: dict[str, str], deadline: float, log: Path) -> tuple[int | None, str]:
    """Run ``command`` (its output to ``log``) until it ends or ``deadline``; then its whole process
    group is killed (the harness's jobs too). Returns (exit status or None when stopped, log tail)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
        )
        try:
            status = process.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            status = None
    return status, log.read_text(errors="replace")[-3000:]


def device_info(device: str) -> dict:
    import torch
    import transformers

    info = {
        "device": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": ".".join(map(str, sys.version_info[:3])),
        "cpu_count": os.cpu_count(),
    }
    if device.startswith("cuda"):
        properties = torch.cuda.get_device_properties(0)
        info.update(name=properties.name, memory_gib=round(properties.total_memory / 2**30, 1))
    else:
        info["name"] = "cpu"
    return info


# ---------------------------------------------------------------- the parts


def speed_part(args: argparse.Namespace, deadline: float) -> dict:
    """run.py's contenders, one process each, until the box ends; the ratios the goals are stated in."""
    import run
    import workload

    betas = [workload.KL_COEF]
    profile_dir = args.work_dir / "perf" / "profiles"
    placement = argparse.Namespace(
        size=args.size, device=args.device, bf16=args.bf16, workload_dir=str(args.work_dir / "perf"),
        iterations=args.iterations, threads=args.threads, betas=betas, rloo=True, only=None,
        cuda_graphs=True, profile_dir=str(profile_dir),
    )  # fmt: skip
    table = run.contenders(placement)
    order = ["generate-limit", "lm-gym-ppo", "trl-ppo"]
    order += [
        f"{who}-{algorithm}-beta{workload.KL_COEF:g}" for algorithm in ("grpo", "rloo") for who in ("lm-gym", "trl")
    ]
    order += ["lm-gym-nlpo"]
    if args.contenders:
        order = args.contenders
    elif args.tiny:  # one contender of each kind: the limit, lm-gym's, TRL's
        order = ["generate-limit", "lm-gym-ppo", "trl-ppo"]
        order += [f"{who}-grpo-beta{workload.KL_COEF:g}" for who in ("lm-gym", "trl")]
    if not args.contenders:  # the new decode paths on and off: then each lm-gym contender with CUDA graphs, last
        order += [f"{name}+graphs" for name in order if f"{name}+graphs" in table]  # (the goals' figures come first)
    skipped = {
        f"trl-{trainer}" + ("" if trainer == "ppo" else f"-beta{workload.KL_COEF:g}"): (
            f"no interpreter with trl=={version} (benchmark/perf/trl_envs.py --create makes its venv)"
        )
        for trainer, version in run.TRL_VERSIONS.items()
        if trl_envs.trl_python(version) is None
    }
    runs, failed, process_seconds = {}, {}, {}
    for name in order:
        if name not in table:
            continue
        if deadline - time.time() < 10:
            failed[name] = "not started: the part's time box ran out"
            continue
        started = time.time()
        try:
            runs[name] = run.run_contender(name, table[name], args.threads, timeout=deadline - time.time())
        except RuntimeError as error:
            failed[name] = str(error)[-2000:]
        process_seconds[name] = round(time.time() - started, 1)
        print(f"[gpu_check] speed: {name} {'done' if name in runs else 'failed'}", file=sys.stderr)
    # the raw timings beside the medians: on a GPU, iterations of under a second vary between machines
    summary = {
        name: run.summarize([result]) | {key: result[key] for key in ("iteration_seconds", "rollout_seconds")}
        for name, result in runs.items()
    }
    for name, row in summary.items():  # where the time goes: the profiled (untimed) last warm-up iteration
        profile = profile_dir / f"{name}.json"
        if profile.is_file():
            row["profile"] = json.loads(profile.read_text())
            # the device's share of a timed iteration (the profiled one ran slower, under the profiler)
            row["profile"]["device_share_of_timed_iteration"] = round(
                row["profile"]["device_s"] / row["iteration_s"], 3
            )
    ratios = run.speed_ratios(summary, betas)
    goals = {}
    for trainer in ("ppo", "grpo", "rloo"):
        kind = trainer if trainer == "ppo" else f"{trainer}-beta{workload.KL_COEF:g}"
        key = f"lm-gym-{kind} / trl-{kind} episodes/s"
        goals[key] = {"goal": SPEED_GOAL, "value": ratios.get(key), "met": _met(ratios.get(key), SPEED_GOAL)}
    for key, value in ratios.items():
        if key.endswith("rollout / generate limit tokens/s"):
            goals[key] = {"goal": ROLLOUT_GOAL, "value": value, "met": _met(value, ROLLOUT_GOAL)}
    return {
        "status": "done" if runs and not failed else ("failed" if not runs else "partial"),
        "workload": {"size": args.size, "bf16": args.bf16, "iterations": args.iterations, "rounds": 1},
        "contenders": summary,
        "ratios": ratios,
        "goals": goals,
        "failed": failed,
        "process_seconds": process_seconds,
        "skipped": skipped,
    }


def cnn_dailymail_part(args: argparse.Namespace, deadline: float) -> dict:
    """SFT, then PPO from it until the box nearly ends; ROUGE-1 at PPO's start and end."""
    out = args.work_dir / "cnn_dailymail"
    common = ["--env-id", "lm_gym/CNNDailyMail-v0", "--env-kwargs", '{"source": "synthetic"}', "--seed", "1"]
    common += ["--device", args.device, *(["--bf16"] if args.bf16 else [])]
    common += ["--eval-episodes", "16" if args.tiny else "128", "--eval-batch-size", "16" if args.tiny else "64"]
    if args.tiny:
        sft = ["--model-config", CNN_POLICY["tiny"], "--max-examples", "64", "--batch-size", "16"]
        ppo = ["--num-envs", "8", "--iterations", "2", "--update-epochs", "1", "--num-minibatches", "2"]
    else:
        box = deadline - time.time()
        sft = ["--model-config", CNN_POLICY["gpu"], "--epochs", "4", "--learning-rate", "1e-3", "--batch-size", "64"]
        sft += ["--time-limit-minutes", f"{0.35 * box / 60:.2f}"]
        ppo = ["--iterations", "100000", "--learning-rate", "2e-5"]
    sft_status, sft_log = run_boxed(
        [sys.executable, "baselines/sft.py", *common, *sft, "--out-dir", str(out / "sft"), "--save-every", "0"],
        subprocess_env(args.work_dir), deadline, out / "sft.log",
    )  # fmt: skip
    if sft_status != 0:
        return {"status": "failed", "reason": f"sft.py {_ended(sft_status)}", "log_tail": sft_log}
    if not args.tiny:  # PPO trains until a minute before the box ends: its final evaluation follows
        ppo += ["--time-limit-minutes", f"{max(0.2, (deadline - time.time() - 60) / 60):.2f}"]
    ppo_status, ppo_log = run_boxed(
        [sys.executable, "baselines/ppo.py", *common, *ppo, "--init-from", str(out / "sft" / "checkpoint")]
        + ["--eval-every", "0", "--save-every", "0", "--out-dir", str(out / "ppo")],
        subprocess_env(args.work_dir), deadline, out / "ppo.log",
    )  # fmt: skip
    if ppo_status != 0:
        return {"status": "failed", "reason": f"ppo.py {_ended(ppo_status)}", "log_tail": ppo_log}
    result = json.loads((out / "ppo" / "result.json").read_text())
    start, end = result["initial_eval"]["mean_rouge1"], result["final_eval"]["mean_rouge1"]
    return {
        "status": "done",
        "policy": CNN_POLICY["tiny" if args.tiny else "gpu"],
        "sft_start_rouge1": start,
        "ppo_rouge1": end,
        "ppo_iterations": len(result["curves"]),
        "ppo_minutes": round(result["wall_time_s"] / 60, 2),
        "device": result["device"],
        "goals": {"PPO's validation ROUGE-1 above its SFT start": {"goal": start, "value": end, "met": end > start}},
    }


def smoke_part(args: argparse.Namespace, deadline: float) -> dict:
    """The smoke suite through the harness on the GPU, then its report and board."""
    out = args.work_dir / "runs"
    placement = ["--gpus", "none"] if args.device == "cpu" else ["--gpus", "0", "--jobs-per-gpu", "8"]
    subset = ["--tasks", "imdb", "--algos", "sft", "ppo"] if args.tiny else []
    command = [sys.executable, "-m", "benchmark", "run", "--suite", "smoke", "--out", str(out), *placement, *subset]
    listing = subprocess.run(
        [*command, "--dry-run"],
        capture_output=True,
        text=True,
        env=subprocess_env(args.work_dir),
        cwd=ROOT,
        check=False,
    )
    jobs = re.findall(r"^\[\w+\] (\S+)", listing.stdout, flags=re.MULTILINE)
    env = subprocess_env(args.work_dir)
    reserve = min(30.0, 0.2 * (deadline - time.time()))  # to write the report and board of a stopped run
    status, log = run_boxed([*command, "--report", "--board"], env, deadline - reserve, out / "smoke.log")
    if status is None:  # stopped at its box: the report and the board of the jobs that finished
        suite_dir = str(out / "smoke")
        run_boxed([sys.executable, "-m", "benchmark", "report", suite_dir], env, deadline, out / "report.log")
        board = [sys.executable, "-m", "leaderboard", "compile", suite_dir, "--out", f"{suite_dir}/board"]
        run_boxed(board, env, deadline, out / "board.log")
    results = {}
    for job in jobs:
        path = out / "smoke" / job / "result.json"
        if path.is_file():
            results[job] = json.loads(path.read_text())["device"]
    baseline_runs = [job for job in jobs if "/data." not in job]
    not_done = [job for job in baseline_runs if job not in results]
    off_device = sorted(job for job, device in results.items() if not device.startswith(args.device))
    report, board = out / "smoke" / "report.md", out / "smoke" / "board" / "index.html"
    every_job = not not_done and not off_device
    return {
        "status": "done" if status == 0 else ("stopped at the time box" if status is None else "failed"),
        "jobs": len(baseline_runs),
        "done": len(results),
        "not_done": not_done,
        "not_on_the_device": off_device,
        "report_written": report.is_file(),
        "board_written": board.is_file(),
        "goals": {
            f"every smoke job done on {args.device}": {
                "goal": len(baseline_runs),
                "value": len(results),
                "met": every_job,
            }
        },
        **({} if status == 0 else {"log_tail": log}),
    }


PART_FUNCTIONS: dict[str, Callable[[argparse.Namespace, float], dict]] = {
    "speed": speed_part,
    "cnn_dailymail": cnn_dailymail_part,
    "smoke": smoke_part,
}


def _met(value: float | None, goal: float) -> bool | None:
    return None if value is None else value >= goal


def _ended(status: int | None) -> str:
    return "was stopped at the part's time box" if status is None else f"failed (exit {status})"


# ---------------------------------------------------------------- the results


def default_results_dir(args: argparse.Namespace) -> Path:
    """``benchmark/perf/results`` for the check itself (a GPU, full sizes): what is published; a dry run's
    results are not, so they go to a new temporary folder outside the checkout."""
    if args.device.startswith("cuda") and not args.tiny:
        return HERE / "results"
    return Path(tempfile.mkdtemp(prefix="gpu-check-dry-run-"))


def results_path(args: argparse.Namespace, info: dict) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "-", info["name"].lower()).strip("-")
    return args.results_dir / f"gpu-{slug}-{datetime.date.today().isoformat()}.json"


def write(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n")
    tmp.replace(path)


def markdown(record: dict) -> str:
    """The figures as a Markdown table: part, figure, value, goal, met."""
    rows = ["| part | figure | value | goal | met |", "|---|---|---|---|---|"]
    for part, result in record["parts"].items():
        for name, row in result.get("contenders", {}).items():
            rows.append(f"| {part} | {name} episodes/s | {row['episodes_per_s']:.1f} | | |")
            if "profile" in row:
                profile, kernels = row["profile"], row["profile"]["kernels_per_iteration"]
                launched = (
                    f"{kernels:.0f} kernels" if kernels is not None else f"{profile['aten_ops_per_iteration']:.0f} ops"
                )
                syncs, busy = profile["host_syncs_per_iteration"], profile["device_busy"]
                rows.append(
                    f"| {part} | {name} per iteration | {launched}, {syncs:.0f} host syncs,"
                    f" device busy {busy} of {profile['wall_s']:.2f} s | | |"
                )
        for key, goal in result.get("goals", {}).items():
            value = goal["value"]
            shown = "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)
            target = f"{goal['goal']:.3f}" if isinstance(goal["goal"], float) else str(goal["goal"])
            met = {True: "yes", False: "no", None: "not measured"}[goal["met"]]
            rows.append(f"| {part} | {key} | {shown} | {target} | {met} |")
        if result.get("status") != "done":
            reason = result.get("reason") or result.get("status")
            rows.append(f"| {part} | status | {reason} | | |")
        for name, why in {**result.get("skipped", {}), **result.get("failed", {})}.items():
            rows.append(f"| {part} | {name} | skipped: {why.splitlines()[-1] if why else ''} | | |")
    return "\n".join(rows)


def measure(args: argparse.Namespace, setup: dict | None, deadline: float) -> dict:
    info = device_info(args.device)
    record = {
        "device": info,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "settings": {"minutes": args.minutes, "tiny": args.tiny, "parts": args.parts},
        "setup": setup,
        "parts": {},
    }
    path = results_path(args, info)
    write(path, record)
    print(f"[gpu_check] results: {path}", file=sys.stderr)
    for index, part in enumerate(args.parts):
        left = deadline - time.time()
        share = SHARES[part] / sum(SHARES[p] for p in args.parts[index:])
        box_end = time.time() + share * left
        started = time.time()
        print(f"[gpu_check] {part}: {share * left:.0f} s box", file=sys.stderr)
        try:
            result = PART_FUNCTIONS[part](args, box_end)
        except Exception as error:  # a part's failure must not cost the others theirs
            result = {"status": "failed", "reason": f"{type(error).__name__}: {error}"[-3000:]}
        record["parts"][part] = {**result, "seconds": round(time.time() - started, 1)}
        write(path, record)
    print(markdown(record))
    print(f"\nwritten to {path}")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--download-wheels", type=Path, metavar="DIR", help="fetch the wheels for the GPU machine, then stop"
    )
    parser.add_argument(
        "--python-version", default=gpu_check_setup.GPU_PYTHON, help="with --download-wheels: the GPU machine's Python"
    )
    parser.add_argument("--wheels", type=Path, metavar="DIR", help="set up from these wheels (no network) first")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for the dry run")
    parser.add_argument(
        "--tiny", action="store_true", help="the dry run's sizes: a tiny model, a few steps, a part of the suite"
    )
    parser.add_argument("--minutes", type=float, default=9.0, help="the whole check's wall time, the setup included")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="the parts to run, in order")
    parser.add_argument("--iterations", type=int, help="speed: timed iterations per contender (default: 6; tiny: 1)")
    parser.add_argument(
        "--contenders", nargs="+", metavar="NAME", help="speed: these of run.py's contenders, in this order"
    )
    parser.add_argument("--threads", type=int, default=4, help="speed: torch threads of every contender")
    parser.add_argument("--work-dir", type=Path, default=Path("runs/gpu_check"), help="the venvs, runs and logs")
    parser.add_argument(
        "--results-dir",
        type=Path,
        help="where the results file goes (default: benchmark/perf/results; a dry run's: a new temporary folder)",
    )
    args = parser.parse_args(argv)
    if args.download_wheels:
        manifest = gpu_check_setup.download_wheels(args.download_wheels, args.python_version)
        print(f"{len(manifest['wheels'])} wheels, {manifest['megabytes']} MB, in {args.download_wheels}")
        return 0
    args.work_dir = args.work_dir.resolve()
    # the re-run inside the check's venv writes where the first run chose
    args.results_dir = (
        args.results_dir or Path(os.environ.get(RESULTS_DIR_ENV) or default_results_dir(args))
    ).resolve()
    args.size = "tiny" if args.tiny else "gpt2-small"
    args.bf16 = args.device.startswith("cuda")
    args.iterations = args.iterations or (1 if args.tiny else 6)
    deadline = float(os.environ.get("LM_GYM_GPU_CHECK_DEADLINE") or time.time() + 60 * args.minutes)
    env = subprocess_env(args.work_dir)
    os.environ.update(env)  # this process's steps (run.py's contenders) see the same
    if args.wheels and SETUP_ENV not in os.environ:
        setup = gpu_check_setup.set_up(args.wheels, args.work_dir, env)
        setup_file = args.work_dir / "setup.json"
        setup_file.write_text(json.dumps(setup, indent=1) + "\n")
        if setup["python"] is None:
            print(json.dumps(setup, indent=1), file=sys.stderr)
            print("[gpu_check] the setup failed: nothing measured", file=sys.stderr)
            write(args.results_dir / f"gpu-setup-failed-{datetime.date.today().isoformat()}.json", setup)
            return 1
        os.environ.update(
            {
                SETUP_ENV: str(setup_file),
                "LM_GYM_GPU_CHECK_DEADLINE": str(deadline),
                RESULTS_DIR_ENV: str(args.results_dir),
            }
        )
        os.execv(setup["python"], [setup["python"], str(Path(__file__).resolve()), *(argv or sys.argv[1:])])
    setup = json.loads(Path(os.environ[SETUP_ENV]).read_text()) if SETUP_ENV in os.environ else None
    record = measure(args, setup, deadline)
    return 0 if all(part.get("status") == "done" for part in record["parts"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
