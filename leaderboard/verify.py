"""Verifying an entry by re-running its recipe: ``python -m leaderboard verify``.

Command line::

    python -m leaderboard verify ENTRY.json [--seeds N] [--tasks T...] [--suite FILE] [--out DIR]
                                 [--record-into DIR] [--boards FILE]

An entry's ``recipe`` (``leaderboard/README.md``, "Verification") names the benchmark suite, the suite's
algorithm and task labels and every job's command line. :func:`verify_entry` re-runs the jobs of the entry's
first ``N`` seeds (default 1) on its tasks (``--tasks``: env ids or the suite's task labels; default all) with
the harness, ``python -m benchmark run --suite <suite> --tasks ... --algos <algorithm> --start-seed <seed>
--num-seeds 1`` (the jobs they need, such as SFT warm starts, run too), and compares:

* **the jobs**: ``verify`` never runs a command an entry holds: it runs the jobs of the checkout's suite
  (``benchmark/suites/<the recipe's suite>.toml``, a name, never a path; or the verifier's ``--suite``), and
  each re-run job's command line (``harness_job.json``) must be the recipe's, paths of the runs
  folder aside; a suite that runs a job otherwise cannot verify the entry (``not verified``);
* **the numbers**: every key of the re-run's ``final_eval`` against the entry's run of the same seed: equal
  within :data:`EXACT_TOLERANCE` (relative) where the runs are deterministic, on the same kind of device with
  the same torch and lm-gym versions as the recipe states and the entry's lm-gym commit; otherwise within the
  entry's seed spread of that key (the largest minus the smallest over its runs) plus that tolerance.

An evaluation entry (``leaderboard.evaluations``) has no recipe: :func:`verify_entry` re-runs its evaluation of a
local model, ``python -m benchmark evaluate --suite <the checkout's suite file> ...`` with the flags of its recorded
command that set the model and the sampling (:data:`RERUN_FLAGS`; a command with others, which name files,
servers or keys, is not re-run), checks that the checkpoint's digest is the entry's (other weights: refused)
and compares every task's ``final_eval`` and K-sample statistics as above (one run: its spread is nothing). An
evaluation of a server's model is not re-run: nothing ties the weights a URL answers with to those it answered
with (``not verified``).

The command prints ``ENTRY: verified (N seeds re-run: ...)``, ``ENTRY: refused: the re-run disagrees: ...``
(each key named, with both numbers) or ``ENTRY: not verified: <reason>``; exit status 0 only when verified.
``--record-into DIR`` writes the outcome to ``DIR/<entry file name>`` (:func:`write_record`), which
``compile`` reads (``--verifications``) to mark entries "verified (n seeds re-run)" or "not verified", and to
leave out an entry whose re-run disagrees.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaderboard.boards import add_boards_argument, boards, load_boards_files
from leaderboard.entry import check_entry_file, entry_file_name
from leaderboard.entry_schema import EntryError, canonical_json
from leaderboard.evaluations import command_flags
from leaderboard.messages import field_path
from leaderboard.recipe import CHECKOUT, recipe_argument, use_suite_files
from lm_gym.core.errors import LMGymError
from lm_gym.results import git_commit, library_versions
from lm_gym.results.harness_job import HARNESS_JOB_FILE, read_harness_job

EXACT_TOLERANCE = 1e-6  #: relative difference allowed between a deterministic re-run and the entry
#: the flags of an evaluation's command that verify passes on: the tasks, the model and its sampling
RERUN_FLAGS = (
    "--tasks", "--model", "--episodes", "--samples", "--seed", "--temperature", "--top-p", "--greedy",
    "--max-tokens", "--max-prompt-length", "--batch-size", "--success-metric", "--chat", "--no-chat", "--dtype",
    "--device",
)  # fmt: skip
SUITES_DIR = CHECKOUT / "benchmark" / "suites"


@dataclass
class Verification:
    """The outcome: ``agrees`` True (verified), False (the re-run disagrees) or None (not verified: ``reason``)."""

    agrees: bool | None
    seeds: list[int] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    exact: bool = False  #: compared exactly (same device kind and versions) rather than within the seed spread
    problems: list[str] = field(default_factory=list)
    reason: str = ""

    def summary(self) -> str:
        if self.agrees is None:
            return f"not verified: {self.reason}"
        how = "exactly" if self.exact else "within the entry's seed spread"
        seeds = f"{len(self.seeds)} seed{'s' if len(self.seeds) != 1 else ''} re-run: {', '.join(map(str, self.seeds))}"
        if self.agrees:
            return f"verified ({seeds}; {len(self.tasks)} tasks, {how})"
        shown = "; ".join(self.problems[:5]) + ("; ..." if len(self.problems) > 5 else "")
        return f"refused: the re-run disagrees ({seeds}, compared {how}): {shown}"


def verify_entry(
    entry: dict[str, Any],
    *,
    seeds: int = 1,
    tasks: list[str] | None = None,
    suite: str | Path | None = None,
    out: str | Path | None = None,
    extra_args: list[str] | None = None,
) -> Verification:
    """Re-run the recipe of ``entry`` (valid) for its first ``seeds`` seeds on ``tasks``, and compare (see above)."""
    if "evaluation" in entry:
        return _verify_evaluation(entry, suite, out)
    recipe = entry.get("recipe")
    if recipe is None:
        return Verification(None, reason="the entry has no recipe (it was not built from harness runs)")
    # the entry names a suite of the checkout, never a path (the schema's pattern; checked again here): a suite
    # file names the scripts the harness runs, so only the checkout's or the verifier's own (--suite) is used
    suite_file = Path(suite) if suite is not None else SUITES_DIR / f"{recipe['suite']}.toml"
    if suite is None and suite_file.resolve().parent != SUITES_DIR.resolve():
        return Verification(None, reason=f"the recipe's suite {recipe['suite']!r} is not a suite of benchmark/suites/")
    if not suite_file.is_file():
        return Verification(None, reason=f"no suite file {suite_file} (pass --suite FILE)")
    labels = recipe["tasks"]
    chosen = list(entry["tasks"]) if not tasks else []
    for task in tasks or []:
        env_id = task if task in entry["tasks"] else next((e for e, label in labels.items() if label == task), None)
        if env_id is None or env_id not in entry["tasks"]:
            return Verification(None, reason=f"{task!r} is not a task of the entry")
        chosen.append(env_id)
    missing = [env_id for env_id in chosen if env_id not in labels]
    if missing:
        return Verification(None, reason=f"the recipe names no suite task for {', '.join(missing)}")
    entry_seeds = sorted({run["seed"] for env_id in chosen for run in entry["tasks"][env_id]["runs"]})[: max(1, seeds)]
    recipe_jobs = {job["name"]: job["argv"] for job in recipe["jobs"]}
    here = git_commit(CHECKOUT)  # the code the jobs re-run with
    exact = _same_setup(recipe, same_code=entry["git_commit"] is not None and entry["git_commit"] == here)
    result = Verification(True, seeds=entry_seeds, tasks=chosen, exact=exact)
    with tempfile.TemporaryDirectory(prefix="lm-gym-verify-") as scratch:
        out_dir = Path(out) if out is not None else Path(scratch)
        for seed in entry_seeds:
            command = [
                sys.executable,
                "-m",
                "benchmark",
                "run",
                "--suite",
                str(suite_file),
                "--tasks",
                *sorted({labels[env_id] for env_id in chosen}),
                "--algos",
                recipe["algorithm"],
                "--start-seed",
                str(seed),
                "--num-seeds",
                "1",
                "--out",
                str(out_dir),
                *(["--gpus", "none"] if recipe.get("device", "cpu").startswith("cpu") else []),
                *(extra_args or []),
            ]
            done = subprocess.run(command, cwd=CHECKOUT, capture_output=True, text=True, env=_environment())
            suite_dir = out_dir / _suite_name(suite_file)
            for env_id in chosen:
                name = f"{labels[env_id]}/{recipe['algorithm']}/seed{seed}"
                run_dir = suite_dir / name
                if not (run_dir / "result.json").is_file():
                    tail = (done.stdout + done.stderr)[-1500:]
                    return Verification(None, reason=f"the re-run of {name} wrote no result.json: {tail}")
                difference = _job_difference(suite_dir, name, recipe_jobs)
                if difference:
                    return Verification(None, reason=difference)
                stated = next((run for run in entry["tasks"][env_id]["runs"] if run["seed"] == seed), None)
                if stated is None:
                    continue
                index = entry["tasks"][env_id]["runs"].index(stated)
                rerun = json.loads((run_dir / "result.json").read_text())["final_eval"] or {}
                result.problems += _disagreements(entry, env_id, index, stated["final_eval"], rerun, exact)
    result.agrees = not result.problems
    if result.problems and entry["git_commit"] and here != entry["git_commit"]:  # context, not an excuse
        result.problems.insert(
            0,
            f"(the entry's runs came from lm-gym {entry['git_commit']}, this checkout is {here}: "
            "a change of the code since also makes a re-run differ)",
        )
    return result


def _verify_evaluation(entry: dict[str, Any], suite: str | Path | None, out: str | Path | None) -> Verification:
    """Re-run the evaluation of ``entry`` (valid, an evaluation entry's) and compare (see above)."""
    evaluation = entry["evaluation"]
    if evaluation["base_url"] is not None:
        return Verification(
            None,
            reason=f"the entry evaluated {evaluation['model']!r} served at {evaluation['base_url']}: a server's model "
            "is not re-run (nothing ties the weights it answers with now to those it answered with)",
        )
    flags = command_flags(evaluation["argv"])
    others = sorted(set(flags) - set(RERUN_FLAGS) - {"--suite", "--out"})
    if others:
        return Verification(
            None, reason=f"the evaluation's command passes {', '.join(others)}, which verify does not re-run"
        )
    model = Path(evaluation["model"])
    if evaluation["model_digest"] is not None and not model.is_dir():
        return Verification(None, reason=f"no checkpoint at {model}, the model the entry evaluated")
    suite_file = Path(suite) if suite is not None else SUITES_DIR / f"{evaluation['suite']}.toml"
    if not suite_file.is_file():
        return Verification(None, reason=f"no suite file {suite_file} (pass --suite FILE)")
    device = [] if "--device" in flags or not evaluation["device"].startswith("cpu") else ["--device", "cpu"]
    passed = [part for flag in RERUN_FLAGS if flag in flags for part in (flag, *flags[flag])]
    exact = _same_setup(
        evaluation, same_code=entry["git_commit"] is not None and entry["git_commit"] == git_commit(CHECKOUT)
    )
    result = Verification(True, seeds=[evaluation["sampling"]["seed"]], tasks=list(entry["tasks"]), exact=exact)
    with tempfile.TemporaryDirectory(prefix="lm-gym-verify-") as scratch:
        out_dir = Path(out) if out is not None else Path(scratch)
        command = [sys.executable, "-m", "benchmark", "evaluate", "--suite", str(suite_file), *passed, *device]
        done = subprocess.run(
            [*command, "--out", str(out_dir)], cwd=CHECKOUT, capture_output=True, text=True, env=_environment()
        )
        for env_id, label in evaluation["tasks"].items():
            path = out_dir / label / "result.json"
            if not path.is_file():
                tail = (done.stdout + done.stderr)[-1500:]
                return Verification(None, reason=f"the re-run of {label} wrote no result.json: {tail}")
            rerun = json.loads(path.read_text())
            digest = rerun["config"].get("model_digest")
            if digest != evaluation["model_digest"]:
                result.problems.append(
                    f"evaluation.model_digest: the checkpoint at {model} is {digest}, not the entry's "
                    f"{evaluation['model_digest']}: other weights"
                )
                break
            stated = entry["tasks"][env_id]["runs"][0]
            result.problems += _disagreements(entry, env_id, 0, stated["final_eval"], rerun["final_eval"], exact)
            result.problems += [
                f"{field_path(('tasks', env_id, 'runs', 0, 'sampling', 'statistics', key))}: {value!r}, the re-run "
                f"{rerun['sampling']['statistics'].get(key)!r}"
                for key, value in stated["sampling"]["statistics"].items()
                if not math.isclose(
                    rerun["sampling"]["statistics"].get(key, math.nan), value, rel_tol=EXACT_TOLERANCE, abs_tol=1e-9
                )
            ]
    result.agrees = not result.problems
    return result


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), environment.get("PYTHONPATH")]))
    return environment


def _suite_name(suite_file: Path) -> str:
    """The runs folder's name of a suite: its file's stem (the harness's ``<out>/<suite>/``)."""
    return suite_file.stem


def _same_setup(recipe: dict[str, Any], same_code: bool) -> bool:
    """Whether this machine runs the recipe as its runs ran: the same kind of device, torch and lm-gym
    versions, and (``same_code``) the entry's lm-gym commit: a change of the code between releases, a
    faster optimizer say, moves the numbers by float rounding, which sampling can grow."""
    versions = library_versions()
    stated = recipe.get("versions", {})
    device = recipe.get("device", "")
    same_device = device.split(":")[0] == ("cuda" if _cuda() else "cpu")
    return same_device and same_code and all(stated.get(key) == versions.get(key) for key in ("torch", "lm_gym"))


def _cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover
        return False


def _job_difference(suite_dir: Path, name: str, recipe_jobs: dict[str, list[str]]) -> str:
    """Why the re-run's job ``name`` (and the jobs it needed) differ from the recipe's, or ``""``."""
    for job_file in sorted(suite_dir.rglob(HARNESS_JOB_FILE)):
        record = read_harness_job(job_file.parent)
        job = record.job
        if job != name and not name.startswith(record.task + "/"):
            continue
        argv = [recipe_argument(argument, suite_dir.resolve()) for argument in record.argv]
        if job not in recipe_jobs:
            if job == name:
                return f"the recipe has no job {name}"
            continue  # a job the suite runs now that the runs did not need
        if argv != recipe_jobs[job]:
            differing = [
                f"{mine!r} (recipe: {theirs!r})" for mine, theirs in zip(argv, recipe_jobs[job]) if mine != theirs
            ] or [f"{len(argv)} arguments (recipe: {len(recipe_jobs[job])})"]
            return f"the suite runs {job} otherwise than the recipe: {differing[0]}"
    return ""


def _disagreements(
    entry: dict[str, Any], env_id: str, index: int, stated: dict[str, Any], rerun: dict[str, Any], exact: bool
) -> list[str]:
    runs = entry["tasks"][env_id]["runs"]
    problems = []
    for key, value in stated.items():
        where = field_path(("tasks", env_id, "runs", index, "final_eval", key))
        if key not in rerun:
            problems.append(f"{where}: the re-run has no {key}")
            continue
        tolerance = EXACT_TOLERANCE * max(1.0, abs(value))
        if not exact:
            values = [run["final_eval"][key] for run in runs if key in run["final_eval"]]
            tolerance += max(values) - min(values)
        if not abs(rerun[key] - value) <= tolerance or not math.isfinite(rerun[key]):
            problems.append(f"{where}: {value!r}, the re-run {rerun[key]!r} (tolerance {tolerance:.3g})")
    return problems


def record_name(entry: dict[str, Any]) -> str:
    """The file name of an entry's verification record: the entry's own file name."""
    return entry_file_name(entry)


def write_record(entry: dict[str, Any], verification: Verification, folder: str | Path) -> Path:
    """Write the outcome of verifying ``entry`` to ``folder/<entry file name>``; returns the path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "entry": entry_file_name(entry),
        "agrees": verification.agrees,
        "seeds": verification.seeds,
        "tasks": verification.tasks,
        "exact": verification.exact,
        "summary": verification.summary(),
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
    }
    path = folder / record_name(entry)
    path.write_text(canonical_json(record) + "\n")
    return path


def read_record(entry: dict[str, Any], folder: str | Path | None) -> dict[str, Any] | None:
    """The verification record of ``entry`` in ``folder``, or None (no folder, no record, an unreadable one)."""
    if folder is None:
        return None
    path = Path(folder) / record_name(entry)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("entry") == record_name(entry) else None


def verification_label(record: dict[str, Any] | None) -> str:
    """How the board marks an entry: ``verified (n seeds re-run)`` or ``not verified``."""
    if record is None or record.get("agrees") is not True:
        return "not verified"
    count = len(record.get("seeds", []))
    return f"verified ({count} seed{'s' if count != 1 else ''} re-run)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``verify`` command's arguments."""
    parser.add_argument("entry", type=Path, metavar="ENTRY.json", help="the entry to verify")
    parser.add_argument("--seeds", type=int, default=1, help="how many of the entry's seeds to re-run (default: 1)")
    parser.add_argument("--tasks", nargs="+", help="only these tasks (env ids or the suite's task labels)")
    parser.add_argument(
        "--suite", type=Path, help="the suite file (default: benchmark/suites/<the recipe's suite>.toml)"
    )
    parser.add_argument("--out", type=Path, help="keep the re-run's folders here (default: a temporary folder)")
    parser.add_argument("--record-into", type=Path, metavar="DIR", help="write the outcome to DIR/<entry file name>")
    add_boards_argument(parser)


def run(args: argparse.Namespace) -> int:
    """The ``verify`` command; returns the exit status."""
    try:
        load_boards_files(args.boards)
        use_suite_files([args.suite] if args.suite is not None else [])  # validating the entry checks its recipe
    except LMGymError as error:
        print(f"python -m leaderboard verify: error: {error}")
        return 2
    if args.seeds < 1:
        print("python -m leaderboard verify: error: --seeds must be at least 1")
        return 2
    try:
        entry, _ = check_entry_file(args.entry)
    except EntryError as error:
        print(f"{args.entry}: refused: {error}")
        return 1
    if entry["board"] not in boards():  # pragma: no cover (the schema checks it)
        return 1
    verification = verify_entry(entry, seeds=args.seeds, tasks=args.tasks, suite=args.suite, out=args.out)
    if args.record_into is not None:
        write_record(entry, verification, args.record_into)
    print(f"{args.entry}: {verification.summary()}")
    return 0 if verification.agrees else 1
