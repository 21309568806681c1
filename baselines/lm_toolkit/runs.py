"""A baseline run's bookkeeping: seeding and device, the step loop's schedule (evaluation, curves,
W&B, time limit, checkpoints), atomic checkpoint/resume and ``result.json``.

In a data-parallel run (``torchrun``, :mod:`lm_toolkit.distributed`) every process runs the
loop; rank 0 alone evaluates, logs, saves and writes ``result.json``, and the time limit is its clock's.

A checkpoint is a folder ``out_dir/checkpoint``: the policy and tokenizer (``save_pretrained``),
named sub-models (the frozen reference, a mask model, a value trunk), extra files, and
``trainer_state.pt`` with the algorithm's state (optimizer, ...), the run's own (step, curves,
starting evaluation, wall time, throughput counters) and every RNG state. It is written beside
and swapped in, so a run killed while saving resumes from the previous one.
"""

from __future__ import annotations

import contextlib
import os
import random
import resource
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from lm_gym.results import make_result, task_evaluations, write_result
from lm_toolkit import distributed
from lm_toolkit.rollouts import mean_metrics

TRAINER_STATE = "trainer_state.pt"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """Every global RNG state, in types ``torch.load(weights_only=True)`` accepts."""
    numpy_state = np.random.get_state(legacy=False)
    return {
        "python": random.getstate(),
        "numpy": {
            **numpy_state,
            "state": {"key": numpy_state["state"]["key"].tolist(), "pos": numpy_state["state"]["pos"]},
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    numpy_state = state["numpy"]
    numpy_state["state"]["key"] = np.asarray(numpy_state["state"]["key"], dtype=np.uint32)
    np.random.set_state(numpy_state)
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def setup(args) -> tuple[torch.device, contextlib.AbstractContextManager]:
    """Threads, the process group under ``torchrun``, seeds (each process its own), the device
    (``--device``, else cuda when available; a process's own GPU under ``torchrun``) and the bf16
    autocast context."""
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    device = distributed.join(args.device)
    seed_everything(distributed.process_seed(args.seed))
    if args.bf16 and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(f"--bf16: device {device} does not support bfloat16")
    return device, torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.bf16)


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def format_eval(evaluation: Mapping[str, float] | None) -> str:
    return "not evaluated" if not evaluation else ", ".join(f"{key} {value:.4g}" for key, value in evaluation.items())


def eval_entries(row: Mapping[str, Any]) -> dict[str, float]:
    """The evaluation recorded in a curves row (its ``eval/`` keys)."""
    return {key.removeprefix("eval/"): value for key, value in row.items() if key.startswith("eval/")}


class Run:
    """One baseline run in ``args.out_dir``: its step counter, curves, schedule, checkpoints and result.

    The loop of an algorithm file::

        run = Run(args, "ppo")
        state = run.restore() if run.resuming else None      # the algorithm's saved state
        run.begin(description, evaluate)                     # W&B, the starting policy's evaluation
        for step in run.steps(total):
            ...                                              # the algorithm
            if run.end_step(row, evaluate=..., save=...):   # evaluation, curves, checkpoint when due
                break
        return run.finish(device)                            # result.json
    """

    def __init__(self, args, algorithm: str):
        self.args, self.algorithm = args, algorithm
        self.start_time = time.time()
        self.out_dir = Path(args.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir = self.out_dir / "checkpoint"
        self.resuming = bool(args.resume) and (self.checkpoint_dir / TRAINER_STATE).is_file()
        if args.resume and not self.resuming:
            print(f"--resume: no trainer state in {self.checkpoint_dir}, starting fresh")
        self.step = 0
        self.curves: list[dict[str, Any]] = []
        self.initial_eval: dict[str, float] | None = None
        self.samples: list[dict[str, Any]] = []  # a few episodes of the latest evaluation
        self.elapsed_before = 0.0  # wall time of the runs this one resumes
        self.counters = {"tokens": 0, "token_seconds": 0.0, "episodes": 0, "episode_seconds": 0.0}
        self.tracker = None
        self.progress = None
        self.total = 0
        self.communicated = 0.0  # distributed.communication_seconds() at the last rollout row

    def source(self, name: str | None) -> str | None:
        """Where to load the policy from: the checkpoint when resuming, else ``name``."""
        return str(self.checkpoint_dir) if self.resuming else name

    def restore(self) -> dict[str, Any]:
        """Restore the run's bookkeeping and every RNG from the checkpoint; return the algorithm's saved state."""
        saved = torch.load(self.checkpoint_dir / TRAINER_STATE, map_location="cpu", weights_only=True)
        own = saved.pop("run")
        self.step, self.curves, self.initial_eval = own["step"], own["curves"], own["initial_eval"]
        self.elapsed_before, self.counters = own["wall_time_s"], own["counters"]
        set_rng_state(saved.pop("rng"))
        return saved

    def begin(
        self, trained: Sequence[Any], description: str, evaluate: Callable[[], tuple[dict | None, list[dict]]]
    ) -> None:
        """Give every process rank 0's ``trained`` modules, announce the run (their size, ``description``),
        start W&B (``--track``) and evaluate the starting policy exactly as the final one."""
        distributed.broadcast_modules(trained)
        if not distributed.is_main():
            return
        parameters = sum(
            p.numel() for module in trained if module is not None for p in module.parameters() if p.requires_grad
        )
        device = next(trained[0].parameters()).device
        resumed = f", resumed at step {self.step}" if self.resuming else ""
        processes = f" x {distributed.world_size()} processes" if distributed.world_size() > 1 else ""
        print(
            f"{self.algorithm} on {self.args.env_id}, seed {self.args.seed}: {parameters / 1e6:.2f}M trainable "
            f"parameters on {device}{processes}, {description}{resumed}, writing to {self.out_dir}"
        )
        if self.args.track:
            import wandb

            name = f"{self.algorithm}-{self.args.env_id.split('/')[-1]}-{self.args.seed}"
            self.tracker = wandb.init(
                project=self.args.wandb_project, config=asdict(self.args), dir=str(self.out_dir), name=name
            )
        if not self.resuming:
            self.initial_eval, self.samples = evaluate()

    def steps(self, total: int) -> Iterator[int]:
        """Step numbers from after the last saved one up to ``total``, with a progress bar."""
        self.total = total
        self.progress = tqdm(
            total=total,
            initial=min(self.step, total),
            desc=self.algorithm,
            dynamic_ncols=True,
            disable=not distributed.is_main(),
        )
        for step in range(self.step + 1, total + 1):
            self.step = step
            yield step
        self.progress.close()

    def count(
        self, *, tokens: int = 0, token_seconds: float = 0.0, episodes: int = 0, episode_seconds: float = 0.0
    ) -> None:
        """Add to the throughput counters (``tokens_per_s`` and ``episodes_per_s`` of ``result.json``):
        tokens and episodes of every process, seconds of this one."""
        if distributed.world_size() > 1:
            tokens, episodes = distributed.all_sum(np.array([tokens, episodes], dtype=float)).tolist()
        for key, value in (
            ("tokens", tokens),
            ("token_seconds", token_seconds),
            ("episodes", episodes),
            ("episode_seconds", episode_seconds),
        ):
            self.counters[key] += value

    def rollout_row(
        self, rollout, token_mask: torch.Tensor, optimizer, started: float, rollout_seconds: float
    ) -> dict[str, Any]:
        """The curves entries every on-policy iteration reports (returns, response length, learning rate,
        times, the episodes' metrics) over every process's ``rollout`` (a ``rollouts.Round``), counted
        into the throughput too."""
        seconds = time.time() - started  # rollout and update, without evaluation
        tokens, turns = distributed.all_sum(np.array([float(token_mask.sum()), len(token_mask)])).tolist()
        everyone = distributed.gather((rollout.returns, rollout.metrics))
        returns = np.concatenate([returns for returns, _ in everyone])
        metrics = mean_metrics([m for _, episodes in everyone for m in episodes])
        self.counters["tokens"] += tokens
        self.counters["token_seconds"] += rollout_seconds
        self.counters["episodes"] += len(returns)
        self.counters["episode_seconds"] += seconds
        communication = {}
        if distributed.world_size() > 1:  # this process's time in collectives during the iteration
            communication = {"communication_seconds": distributed.communication_seconds() - self.communicated}
            self.communicated += communication["communication_seconds"]
        return {
            "mean_return": float(returns.mean()),
            "response_tokens": tokens / turns,
            "learning_rate": optimizer.param_groups[0]["lr"],
            "seconds": seconds,
            "rollout_seconds": rollout_seconds,
            **metrics,
            **communication,
        }

    def window_row(self, stats, **extra: float) -> dict[str, Any]:
        """Every ``--log-every`` steps and at the last: the means of ``stats``' window (emptied) and ``extra``."""
        if self.step % self.args.log_every and self.step < self.total:
            return {}
        return {**stats.means(), **extra}

    def end_step(
        self, row: dict[str, Any], *, evaluate: Callable, save: Callable[[], None], show: Sequence[str] = ()
    ) -> bool:
        """After a step: evaluate when due (``--eval-every``), at the last step or past ``--time-limit-minutes``;
        record ``row`` (when it or the evaluation has entries) in the curves and W&B; save when due
        (``--save-every``) or at the end. Returns whether the run stops here."""
        args, step, main = self.args, self.step, distributed.is_main()
        out_of_time = distributed.agree(
            args.time_limit_minutes is not None and time.time() - self.start_time > 60 * args.time_limit_minutes
        )
        last = step >= self.total or out_of_time
        if main and ((args.eval_every and step % args.eval_every == 0) or last):
            evaluation, samples = evaluate()
            if evaluation is not None:
                row = {**row, **{f"eval/{key}": value for key, value in evaluation.items()}}
                self.samples = samples
        if row:
            self.curves.append({"step": step, **row})
            if self.tracker is not None:
                self.tracker.log(row, step=step)
        self.progress.update(1)
        self.progress.set_postfix({key: f"{row[key]:.4g}" for key in show if key in row})
        if main and ((args.save_every and step % args.save_every == 0) or last):
            save()
        if last:
            self.progress.close()
        return last

    def save(
        self,
        policy,
        tokenizer,
        state: Mapping[str, Any],
        models: Mapping[str, Any] | None = None,
        frozen: Sequence[str] = (),
        files: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the checkpoint: ``policy`` and ``tokenizer``; each of ``models`` with the tokenizer in a sub-folder
        of its name, so that each loads on its own (those named in ``frozen`` never change: hard links to the
        previous checkpoint's files); each of ``files`` with ``torch.save``; and the trainer state (``state``, the
        run's own, the RNGs)."""
        directory = self.checkpoint_dir
        tmp, old = directory.with_name(directory.name + ".tmp"), directory.with_name(directory.name + ".old")
        shutil.rmtree(tmp, ignore_errors=True)
        policy.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        for name, model in (models or {}).items():
            if name in frozen and (directory / name).is_dir():
                shutil.copytree(directory / name, tmp / name, copy_function=os.link)
            else:
                model.save_pretrained(tmp / name, safe_serialization=True)
                tokenizer.save_pretrained(tmp / name)
        for name, value in (files or {}).items():
            torch.save(value, tmp / name)
        own = {
            "step": self.step,
            "curves": self.curves,
            "initial_eval": self.initial_eval,
            "wall_time_s": self.wall_time(),
            "counters": self.counters,
        }
        torch.save({**state, "run": own, "rng": rng_state()}, tmp / TRAINER_STATE)
        shutil.rmtree(old, ignore_errors=True)
        if directory.exists():
            directory.rename(old)
        tmp.rename(directory)
        shutil.rmtree(old, ignore_errors=True)

    def wall_time(self) -> float:
        return self.elapsed_before + time.time() - self.start_time

    def finish(self, device: torch.device) -> dict[str, Any]:
        """Write ``result.json`` (``lm_gym.results``; the final evaluation is the last step's) and return it;
        leave the process group. The other processes of a data-parallel run write nothing and return ``{}``."""
        main, world_size = distributed.is_main(), distributed.world_size()
        distributed.leave()
        if not main:
            return {}
        final_eval, final_tasks = task_evaluations(eval_entries(self.curves[-1]) if self.curves else {})
        initial_eval, initial_tasks = task_evaluations(self.initial_eval)
        tasks = {  # a run on several tasks: each task's results (its evaluation entries "<task id>/<metric>")
            task: {"initial_eval": initial_tasks.get(task), "final_eval": final_tasks.get(task)}
            for task in sorted({*initial_tasks, *final_tasks})
        }
        counters = self.counters
        result = make_result(
            env_id=self.args.env_id,
            algorithm=self.algorithm,
            seed=self.args.seed,
            config=asdict(self.args),
            initial_eval=initial_eval,
            final_eval=final_eval or None,
            curves=self.curves,
            wall_time_s=self.wall_time(),
            tokens_per_s=counters["tokens"] / counters["token_seconds"] if counters["token_seconds"] > 0 else 0.0,
            episodes_per_s=counters["episodes"] / counters["episode_seconds"]
            if counters["episode_seconds"] > 0
            else 0.0,
            peak_memory_mb=peak_memory_mb(device),
            checkpoint=self.checkpoint_dir.name,
            device=str(device),
            samples=self.samples,
            world_size=world_size,
            tasks=tasks,
        )
        write_result(self.out_dir, result)
        print(
            f"{self.args.env_id} {self.algorithm} seed {self.args.seed}: final evaluation {format_eval(final_eval)} "
            f"(start {format_eval(initial_eval)})"
        )
        for task, evaluations in tasks.items():
            print(f"  {task}: final evaluation {format_eval(evaluations['final_eval'])}")
        if self.tracker is not None:
            self.tracker.finish()
        return result
