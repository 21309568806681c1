"""A baseline run's bookkeeping: seeding and device, curves and W&B, the time limit, atomic
checkpoint/resume and ``result.json``. The loop, and when it evaluates and saves, is the algorithm
file's own; this module gives it plain helpers (:func:`due`, :meth:`Run.out_of_time`, :meth:`Run.log`,
:meth:`Run.save`, :meth:`Run.finish`).

In a data-parallel run (``torchrun``, :mod:`lm_toolkit.distributed`) every process runs the
loop; rank 0 alone evaluates, saves and writes ``result.json``, and the time limit is its clock's.

A checkpoint is a folder ``out_dir/checkpoint``: the policy and tokenizer (``save_pretrained``; a LoRA
policy's adapters with its base weights in ``base_model/``, :func:`lm_toolkit.lora.save_model`),
named sub-models (the frozen reference, a mask model, a value trunk; none for a LoRA policy's reference
and snapshots, which are its own weights), extra files, and
``trainer_state.pt`` with the algorithm's state (optimizer, ...), the run's own (step, curves,
starting and latest evaluations, wall time, throughput counters) and every RNG state. It is written beside
and swapped in, so a run killed while saving resumes from the previous one.
"""

from __future__ import annotations

import contextlib
import os
import random
import resource
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import set_seed

from lm_gym.results import make_result, write_result
from lm_gym.results.evaluation import Evaluation
from lm_toolkit import distributed
from lm_toolkit.lora import SharedWeights, save_model
from lm_toolkit.rollouts import mean_metrics

TRAINER_STATE = "trainer_state.pt"


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
    set_seed(distributed.process_seed(args.seed))  # Python's, NumPy's and torch's RNGs
    if args.bf16 and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(f"--bf16: device {device} does not support bfloat16")
    return device, torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.bf16)


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def format_eval(evaluation: Mapping[str, float] | None) -> str:
    return "not evaluated" if not evaluation else ", ".join(f"{key} {value:.4g}" for key, value in evaluation.items())


def due(step: int, every: int) -> bool:
    """Whether a ``--eval-every`` / ``--save-every`` / ``--log-every`` schedule falls on ``step`` (0: never)."""
    return every > 0 and step % every == 0


class Run:
    """One baseline run in ``args.out_dir``: its step counter, curves, evaluations, checkpoints and result.

    The loop is the algorithm file's; it calls these helpers::

        run = Run(args, "ppo")
        state = run.restore() if run.resuming else None      # the algorithm's saved state
        run.begin(trained, description, total)               # rank 0's weights everywhere, W&B, progress
        if distributed.is_main() and not run.resuming:
            run.initial = evaluate()                         # the starting policy, as the final one
        for step in range(run.step + 1, total + 1):
            ...                                              # the algorithm
            last = run.out_of_time() or step == total
            if distributed.is_main() and (due(step, args.eval_every) or last):
                run.final = evaluate()
                row |= run.final.curve_entries() if run.final else {}
            run.log(step, row)                               # curves, W&B, progress bar
            if distributed.is_main() and (due(step, args.save_every) or last):
                save()                                       # run.save(models, state)
            if last:
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
        self.step = 0  # the last step logged
        self.curves: list[dict[str, Any]] = []
        self.initial: Evaluation | None = None  # the starting policy's evaluation
        self.final: Evaluation | None = None  # the latest evaluation: the final one once the loop ends
        self.elapsed_before = 0.0  # wall time of the runs this one resumes
        self.counters = {"tokens": 0, "token_seconds": 0.0, "episodes": 0, "episode_seconds": 0.0}
        self.tracker = None
        self.progress = None
        self.communicated = 0.0  # distributed.communication_seconds() at the last rollout row
        self.saved = False  # whether this run has written a checkpoint

    def source(self, name: str | None) -> str | None:
        """Where to load the policy from: the checkpoint when resuming, else ``name``."""
        return str(self.checkpoint_dir) if self.resuming else name

    def restore(self) -> dict[str, Any]:
        """Restore the run's bookkeeping and every RNG from the checkpoint; return the algorithm's saved state."""
        saved = torch.load(self.checkpoint_dir / TRAINER_STATE, map_location="cpu", weights_only=True)
        own = saved.pop("run")
        self.step, self.curves = own["step"], own["curves"]
        self.initial, self.final = Evaluation.of_state(own["initial"]), Evaluation.of_state(own["final"])
        self.elapsed_before, self.counters = own["wall_time_s"], own["counters"]
        set_rng_state(saved.pop("rng"))
        return saved

    def begin(self, trained: Sequence[Any], description: str, total: int) -> None:
        """Give every process rank 0's ``trained`` modules, announce the run (their size, ``description``),
        start W&B (``--track``) and the progress bar over ``total`` steps."""
        distributed.broadcast_modules(trained)
        self.progress = tqdm(
            total=total,
            initial=min(self.step, total),
            desc=self.algorithm,
            dynamic_ncols=True,
            disable=not distributed.is_main(),
        )
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

    def out_of_time(self) -> bool:
        """Whether ``--time-limit-minutes`` has passed (rank 0's clock; every process must ask, and all agree)."""
        limit = self.args.time_limit_minutes
        return distributed.agree(limit is not None and time.time() - self.start_time > 60 * limit)

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

    def window_row(self, stats, step: int, total: int, **extra: float) -> dict[str, Any]:
        """Every ``--log-every`` steps and at step ``total``: the means of ``stats``' window (emptied) and
        ``extra``; ``{}`` at other steps."""
        if not (due(step, self.args.log_every) or step >= total):
            return {}
        return {**stats.means(), **extra}

    def log(self, step: int, row: dict[str, Any], show: Sequence[str] = ()) -> None:
        """Step ``step`` is done: ``row`` (when it has entries) goes into the curves and W&B; the progress bar
        moves on, showing ``row``'s ``show`` entries."""
        self.step = step
        if row:
            self.curves.append({"step": step, **row})
            if self.tracker is not None:
                self.tracker.log(row, step=step)
        self.progress.update(1)
        self.progress.set_postfix({key: f"{row[key]:.4g}" for key in show if key in row})

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
        of its name, so that each loads on its own (those named in ``frozen`` never change: hard links to this run's
        previous checkpoint's files); each of ``files`` with ``torch.save``; and the trainer state (``state``, the
        run's own, the RNGs)."""
        directory = self.checkpoint_dir
        tmp, old = directory.with_name(directory.name + ".tmp"), directory.with_name(directory.name + ".old")
        shutil.rmtree(tmp, ignore_errors=True)
        previous = directory if self.resuming or self.saved else None  # this run's: what never changes is linked
        save_model(policy, tmp, previous)
        tokenizer.save_pretrained(tmp)
        for name, model in (models or {}).items():
            if isinstance(model, SharedWeights):  # a LoRA policy's reference or snapshot: saved with the policy
                continue
            if name in frozen and previous is not None and (previous / name).is_dir():
                shutil.copytree(previous / name, tmp / name, copy_function=os.link)
            else:
                save_model(model, tmp / name, previous / name if previous is not None else None)
                tokenizer.save_pretrained(tmp / name)
        for name, value in (files or {}).items():
            torch.save(value, tmp / name)
        own = {
            "step": self.step,
            "curves": self.curves,
            "initial": self.initial.state() if self.initial else None,
            "final": self.final.state() if self.final else None,
            "wall_time_s": self.wall_time(),
            "counters": self.counters,
        }
        torch.save({**state, "run": own, "rng": rng_state()}, tmp / TRAINER_STATE)
        shutil.rmtree(old, ignore_errors=True)
        if directory.exists():
            directory.rename(old)
        tmp.rename(directory)
        shutil.rmtree(old, ignore_errors=True)
        self.saved = True

    def wall_time(self) -> float:
        return self.elapsed_before + time.time() - self.start_time

    def finish(self, device: torch.device) -> dict[str, Any]:
        """Write ``result.json`` (``lm_gym.results``: the starting and latest evaluations, the curves, the
        bookkeeping) and return it; close the progress bar and W&B; leave the process group. The other
        processes of a data-parallel run write nothing and return ``{}``."""
        self.progress.close()
        main, world_size = distributed.is_main(), distributed.world_size()
        distributed.leave()
        if not main:
            return {}
        counters = self.counters
        result = make_result(
            env_id=self.args.env_id,
            algorithm=self.algorithm,
            seed=self.args.seed,
            config=asdict(self.args),
            curves=self.curves,
            wall_time_s=self.wall_time(),
            tokens_per_s=counters["tokens"] / counters["token_seconds"] if counters["token_seconds"] > 0 else 0.0,
            episodes_per_s=counters["episodes"] / counters["episode_seconds"]
            if counters["episode_seconds"] > 0
            else 0.0,
            peak_memory_mb=peak_memory_mb(device),
            checkpoint=self.checkpoint_dir.name,
            device=str(device),
            world_size=world_size,
            **Evaluation.result_fields(self.initial, self.final),
        )
        write_result(self.out_dir, result)
        summary = self.final.summary if self.final else None
        print(
            f"{self.args.env_id} {self.algorithm} seed {self.args.seed}: final evaluation {format_eval(summary)} "
            f"(start {format_eval(self.initial.summary if self.initial else None)})"
        )
        for task, evaluations in result.get("tasks", {}).items():
            print(f"  {task}: final evaluation {format_eval(evaluations['final_eval'])}")
        if self.tracker is not None:
            self.tracker.finish()
        return result
