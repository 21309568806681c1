"""``python -m benchmark run``: a suite's tasks x algorithms x seeds, on CPUs, GPUs, Ray or Slurm.

Examples::

    python -m benchmark run --suite smoke --report --board       # every task and baseline, offline, minutes on 2 cores
    python -m benchmark run --suite offline --tasks imdb wordle --workers 2
    python -m benchmark run --suite grue --gpus 0,1,2,3 --jobs-per-gpu 2 --track --auto-tag
    python -m benchmark run --suite grue --backend ray --address auto
    python -m benchmark run --suite grue --backend slurm --gpus-per-job 1 --slurm-partition gpu
    python -m benchmark run --suite grue --dry-run               # the jobs and their command lines

Every job is a process (a baseline file, or a data module), never an import. Results go to
``<out>/<suite>/<task>/<algorithm>/seed<k>/result.json``; running the same command again
resumes (see ``benchmark.scheduler``). ``python -m benchmark report <out>/<suite>`` makes
the tables (``--report`` does it after the run), ``python -m leaderboard compile`` the board
(``--board``); both cover the jobs that finished even when others failed, and the exit status
still says that some failed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from benchmark.attempt import job_finished
from benchmark.placement import launcher, parse_gpus, plan_slots
from benchmark.report import report_runs
from benchmark.scheduler import Scheduler
from benchmark.suite import ROOT, SUITES_DIR, expand_jobs, load_suite, suite_names
from lm_gym.core.errors import ConfigurationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``run`` command's arguments (``python -m benchmark``'s parser)."""
    parser.add_argument(
        "--suite",
        required=True,
        help=f"a suite of benchmark/suites/ ({', '.join(suite_names())}) or a path to a .toml file",
    )
    parser.add_argument("--tasks", nargs="+", help="only these task labels of the suite (default: all)")
    parser.add_argument(
        "--algos",
        nargs="+",
        help="only these algorithm labels (default: all); jobs they need (SFT warm starts, datasets) run too",
    )
    parser.add_argument(
        "--num-seeds", type=int, help="run seeds start-seed .. start-seed + num-seeds - 1 instead of the suite's seeds"
    )
    parser.add_argument("--start-seed", type=int, default=1, help="first seed with --num-seeds (default: 1)")
    parser.add_argument(
        "--out", default="runs", help="runs folder; the suite's jobs go to <out>/<suite>/ (default: runs)"
    )
    parser.add_argument(
        "--backend", choices=["local", "ray", "slurm"], default="local", help="where jobs run (default: local)"
    )
    parser.add_argument(
        "--gpus",
        help=(
            "GPU ids for local (and local Ray) jobs, e.g. 0,1; 'none': CPU only; "
            "default: CUDA_VISIBLE_DEVICES or all GPUs nvidia-smi lists"
        ),
    )
    parser.add_argument("--jobs-per-gpu", type=int, default=1, help="jobs sharing one GPU at a time (default: 1)")
    parser.add_argument(
        "--procs-per-job",
        type=int,
        default=1,
        help=(
            "processes of each baseline job (data-parallel, torchrun --standalone on one node): "
            "that many GPUs per job, or that many times the CPU threads (default: 1)"
        ),
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="CPU-only: jobs at once (default: cores / the suite's threads_per_job); each gets cores / workers threads",
    )
    parser.add_argument(
        "--retries",
        type=int,
        help="attempts after a failed one before a job counts as failed (default: the suite's, else 1)",
    )
    parser.add_argument(
        "--timeout-minutes", type=float, help="kill an attempt after this long (default: the suite's, else none)"
    )
    parser.add_argument("--dry-run", action="store_true", help="list the jobs and their command lines, run nothing")
    parser.add_argument(
        "--report",
        action="store_true",
        help=(
            "then write the report of every finished job (<out>/<suite>/report.md, as python -m benchmark report), "
            "even when some failed"
        ),
    )
    parser.add_argument(
        "--board",
        action="store_true",
        help=(
            "then compile the leaderboard of every finished job (<out>/<suite>/board/index.html, "
            "as python -m leaderboard compile), even when some failed"
        ),
    )
    parser.add_argument(
        "--track", action="store_true", help="log every baseline job to Weights & Biases, grouped per suite run"
    )
    parser.add_argument("--wandb-project", help="W&B project with --track (default: the baselines' lm-gym)")
    parser.add_argument(
        "--auto-tag", action="store_true", help="with --track: tag the runs with the checkout's git describe and branch"
    )
    parser.add_argument(
        "--address",
        help="Ray: address of an existing cluster (e.g. auto, ray://host:10001); default: start a local instance",
    )
    parser.add_argument(
        "--gpus-per-job",
        type=float,
        help=(
            "Ray/Slurm: GPUs each job requests (Ray default: 1/jobs-per-gpu if there are GPUs, else 0; Slurm default 0)"
        ),
    )
    parser.add_argument("--slurm-partition", help="Slurm partition")
    parser.add_argument(
        "--slurm-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra #SBATCH parameter (repeatable), e.g. account=myproj or qos=high",
    )
    parser.add_argument(
        "--slurm-array-parallelism", type=int, default=64, help="Slurm: array tasks running at once (default: 64)"
    )
    parser.add_argument(
        "--submitit-cluster",
        choices=["slurm", "local", "debug"],
        default="slurm",
        help="submitit executor for --backend slurm: slurm (default), or local/debug to try a suite on this machine",
    )


def run(args: argparse.Namespace) -> int:
    """The ``run`` command; returns the exit status."""
    console = Console(highlight=False)
    try:
        return _run_suite(args, console)
    except ConfigurationError as error:  # SuiteError included: a message, not a traceback
        console.print(f"[red]error:[/] {error}")
        return 2


def _run_suite(args: argparse.Namespace, console: Console) -> int:
    suite = load_suite(args.suite)
    if args.num_seeds is not None and args.num_seeds < 1:
        raise ConfigurationError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    seeds = None if args.num_seeds is None else list(range(args.start_seed, args.start_seed + args.num_seeds))
    out_root = Path(args.out).resolve() / suite.name
    jobs = expand_jobs(suite, out_root, tasks=args.tasks, algorithms=args.algos, seeds=seeds)
    retries = suite.retries if args.retries is None else args.retries
    if retries < 0:
        raise ConfigurationError(f"--retries must be >= 0, got {retries}")
    timeout_minutes = args.timeout_minutes or suite.timeout_minutes
    if timeout_minutes is not None and timeout_minutes <= 0:
        raise ConfigurationError(f"--timeout-minutes must be positive, got {timeout_minutes}")

    if args.dry_run:
        _print_jobs(suite, jobs, console)
        return 0

    console.print(f"suite {suite.name}: {suite.description}\n{len(jobs)} jobs -> {out_root} (backend {args.backend})")
    if args.procs_per_job < 1:
        raise ConfigurationError(f"--procs-per-job must be >= 1, got {args.procs_per_job}")
    backend = _make_backend(args, suite, out_root, timeout_minutes, console)
    extra_flags, extra_env = _tracking(args, suite, out_root)
    # a task of the user's own ("my_tasks:my/Task-v0") is imported by the jobs from beside the suite
    # file or from where the harness was started, as it would be by a baseline started there
    user_paths = [str(suite.path.resolve().parent), os.getcwd(), os.environ.get("PYTHONPATH", "")]
    extra_env["PYTHONPATH"] = os.pathsep.join(filter(None, user_paths))
    scheduler = Scheduler(
        jobs,
        backend,
        out_root,
        retries=retries,
        timeout_s=None if timeout_minutes is None else 60 * timeout_minutes,
        extra_flags=extra_flags,
        extra_env=extra_env,
        baseline_launcher=launcher(args.procs_per_job),
        console=console,
    )
    counts = scheduler.run()
    if counts.get("interrupted"):
        return 130
    status = 1 if counts.get("failed") or counts.get("skipped") else 0
    if args.report:
        status = max(status, _write_report(out_root, console))
    else:
        console.print(f"report: python -m benchmark report {out_root}")
    if args.board:
        status = max(status, _compile_board(out_root, console, suite.path))
    return status


def _write_report(out_root: Path, console: Console) -> int:
    console.print(f"\n[bold]report[/] of the finished jobs: {out_root / 'report.md'}")
    return report_runs(out_root)


def _compile_board(out_root: Path, console: Console, suite_file: Path) -> int:
    """The leaderboard of the finished jobs, compiled by its own command (the harness imports no leaderboard code).

    A suite file of your own (not one of benchmark/suites/) with ``[boards.<name>]`` tables defines its boards."""
    board = out_root / "board"
    console.print(f"\n[bold]leaderboard[/] of the finished jobs: {board / 'index.html'}")
    command = [sys.executable, "-m", "leaderboard", "compile", str(out_root), "--out", str(board)]
    suite_file = suite_file.resolve()
    if suite_file.parent != SUITES_DIR and "boards" in tomllib.loads(suite_file.read_text()):
        command += ["--boards", str(suite_file)]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


def _make_backend(args, suite, out_root: Path, timeout_minutes: float | None, console: Console):
    if args.backend == "local":
        slots = plan_slots(
            parse_gpus(args.gpus),
            jobs_per_gpu=args.jobs_per_gpu,
            workers=args.workers,
            threads_per_job=suite.threads_per_job,
            procs_per_job=args.procs_per_job,
        )
        gpus = sorted({slot.gpu for slot in slots if slot.gpu is not None})
        processes = f" x {args.procs_per_job} processes" if args.procs_per_job > 1 else ""
        console.print(
            f"{len(slots)} slots{processes}: "
            + (f"GPUs {' '.join(gpus)} x {args.jobs_per_gpu}, " if gpus else "CPU, ")
            + f"{slots[0].threads} threads each"
        )
        from benchmark.local_backend import LocalBackend

        return LocalBackend(slots)
    if args.backend == "ray":
        from benchmark.ray_backend import RayBackend

        return RayBackend(
            address=args.address,
            threads_per_process=suite.threads_per_job,
            procs_per_job=args.procs_per_job,
            num_gpus_per_job=args.gpus_per_job,
            jobs_per_gpu=args.jobs_per_gpu,
            local_gpus=parse_gpus(args.gpus) if args.address is None else [],
        )
    from benchmark.slurm_backend import SlurmBackend, slurm_parameters

    extra = {}
    for item in args.slurm_param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigurationError(f"--slurm-param takes KEY=VALUE (e.g. account=myproj), got {item!r}")
        extra[key.replace("-", "_")] = value
    gpus_per_task = args.gpus_per_job or 0
    if gpus_per_task != int(gpus_per_task):
        raise ConfigurationError(f"--gpus-per-job must be a whole number of GPUs for Slurm, got {args.gpus_per_job}")
    parameters = slurm_parameters(
        suite=suite.name,
        cpus_per_task=suite.threads_per_job * args.procs_per_job,
        gpus_per_task=int(gpus_per_task),
        timeout_minutes=timeout_minutes,
        partition=args.slurm_partition,
        array_parallelism=args.slurm_array_parallelism,
        extra=extra,
    )
    threads = suite.threads_per_job if args.procs_per_job > 1 else 0
    return SlurmBackend(
        folder=out_root / ".submitit", cluster=args.submitit_cluster, parameters=parameters, threads_per_process=threads
    )


def _tracking(args, suite, out_root: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    """``--track``: the baselines' flag, and W&B's group and tags through its environment variables."""
    if not args.track:
        if args.auto_tag or args.wandb_project:
            raise ConfigurationError("--auto-tag and --wandb-project need --track")
        return (), {}
    flags = ("--track",) + (("--wandb-project", args.wandb_project) if args.wandb_project else ())
    group_file = out_root / "wandb_group.txt"  # one group per suite run, kept when it resumes
    if not group_file.is_file():
        out_root.mkdir(parents=True, exist_ok=True)
        group_file.write_text(f"{suite.name}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    tags = [suite.name]
    if args.auto_tag:
        tags += _git_tags()
    return flags, {"WANDB_RUN_GROUP": group_file.read_text().strip(), "WANDB_TAGS": ",".join(tags)}


def _git_tags() -> list[str]:
    """``git describe --tags --always`` and the branch of the checkout (CleanRL's --auto-tag)."""
    tags = []
    for command in (["git", "describe", "--tags", "--always", "--dirty"], ["git", "rev-parse", "--abbrev-ref", "HEAD"]):
        try:
            output = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if output and output != "HEAD":
            tags.append(output[:64])  # W&B's tag limit
    return tags


def _print_jobs(suite, jobs, console: Console) -> None:
    console.print(f"suite {suite.name} ({suite.path}): {suite.description}")
    for job in jobs:
        state = "done" if job_finished(job.out_dir, job.is_baseline) else "todo"
        needs = f"  (after {', '.join(job.needs)})" if job.needs else ""
        console.print(
            f"[{state}] {job.key}{needs}\n    {shlex.join(['python', *[_relative(a) for a in job.argv]])}",
            soft_wrap=True,
            markup=False,
        )
    tasks = sorted({job.task for job in jobs})
    console.print(
        f"{len(jobs)} jobs: {len(tasks)} tasks, {sum(job.is_baseline for job in jobs)} baseline runs, "
        f"{sum(not job.is_baseline for job in jobs)} data jobs"
    )


def _relative(argument: str) -> str:
    return argument.removeprefix(str(ROOT) + "/")
