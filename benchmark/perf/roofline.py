"""The floor of the speed benchmark: how fast each contender's arithmetic alone runs on this machine.

    python benchmark/perf/roofline.py                                   # against the newest results/cpu-*.json
    python benchmark/perf/roofline.py --results runs/perf/results.json  # against a run of run.py

One iteration of each contender's work on the standard workload (``workload.py``) is run with
the toolkit functions the baselines call (the KV-cache sampler, the teacher-forced passes, the
update's forward and backward), and every matrix product and attention kernel it calls is
recorded with its shapes. Each recorded call is then replayed by itself on random tensors of
the same shapes, best of 10: the sum is the time the contender's arithmetic takes with this
machine's kernels, every other op and all of Python counted as free. No implementation that
does the same arithmetic with the same kernels can be faster than that floor.

The report sets each contender's floor beside its measured time (``run.py``'s medians) and
turns the speed goals into what they require: a ratio against TRL or the ``generate`` limit
cannot exceed the measured time of the other side over this contender's floor. It prints a
table and writes ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import workload
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count

from lm_toolkit.models import fuse_activation
from lm_toolkit.sampling import Prefix, response_log_probs, sample
from lm_toolkit.tasks import Lengths

HERE = Path(__file__).resolve().parent

aten = torch.ops.aten
ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: "forward",
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: "backward",
}
PRODUCTS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
#: NLPO's mask model runs in the iterations when it is not a copy of the policy: 4 in 5 by default.
MASK_PASS_SHARE = 4 / 5
REPEATS = 10


class TensorSpec(NamedTuple):
    """A recorded call's tensor argument: what a replay makes a random one of."""

    shape: tuple[int, ...]
    dtype: torch.dtype


def spec(x):
    return TensorSpec(tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else x


def shape_of(x) -> tuple[int, ...] | None:
    return x.shape if isinstance(x, TensorSpec) else None


class KernelRecorder(TorchDispatchMode):
    """Records every matrix product and attention kernel called inside it: (op, args with tensors as specs)."""

    def __init__(self):
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in PRODUCTS or func in ATTENTION:
            self.calls.append((func, [spec(a) for a in args], {k: spec(v) for k, v in kwargs.items()}))
        return func(*args, **kwargs)


def flops(call: tuple) -> float:
    func, args, _ = call
    shape = [shape_of(a) for a in args]
    if func in (aten.mm.default, aten.bmm.default):
        a, b = shape[0], shape[1]
    elif func in (aten.addmm.default, aten.baddbmm.default):
        a, b = shape[1], shape[2]
    elif ATTENTION[func] == "forward":
        return sdpa_flop_count(shape[0], shape[1], shape[2])
    else:
        return sdpa_backward_flop_count(shape[0], shape[1], shape[2], shape[3])
    return 2.0 * np.prod(a) * b[-1]


def replay_seconds(calls: list[tuple]) -> float:
    """The calls' time, each distinct call (op and shapes) run by itself on random tensors: its best of
    ``REPEATS`` times as many times as it was called. The best, so that a floor errs low."""

    def make(x):
        if not isinstance(x, TensorSpec):
            return x
        return torch.randn(x.shape, dtype=x.dtype) if x.dtype.is_floating_point else torch.zeros(x.shape, dtype=x.dtype)

    counts = Counter(repr(call) for call in calls)
    distinct = {repr(call): call for call in calls}
    total = 0.0
    for key, (func, args, kwargs) in distinct.items():
        real_args, real_kwargs = [make(a) for a in args], {k: make(v) for k, v in kwargs.items()}
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            func(*real_args, **real_kwargs)
            best = min(best, time.perf_counter() - start)
        total += best * counts[key]
    return total


def recorded(work) -> list[tuple]:
    with KernelRecorder() as recorder:
        work()
    return recorder.calls


def phases(model_dir: Path) -> dict[str, list[tuple]]:
    """The kernels of each phase of one iteration, as the baselines run it."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = workload.tokenizer()
    config = AutoConfig.from_pretrained(model_dir)
    fuse_activation(config)
    policy = AutoModelForCausalLM.from_pretrained(model_dir, config=config).eval()
    value_head = torch.nn.Linear(config.n_embd, 1)
    n, p, t = workload.SEQUENCES_PER_ITERATION, workload.PROMPT_TOKENS, workload.NEW_TOKENS
    lengths = Lengths(max_prompt_length=p, max_new_tokens=t, min_new_tokens=t)
    texts = workload.prompts(n)
    distinct = [tokenizer(x, add_special_tokens=False)["input_ids"] for x in texts]
    grouped = [distinct[i // workload.GROUP_SIZE] for i in range(n)]  # 16 prompts x 4 samples
    ids = {"eos_id": tokenizer.eos_token_id, "pad_id": tokenizer.pad_token_id}
    scoring = {**ids, "temperature": 1.0, "min_new_tokens": t}
    responses = torch.randint(3, len(tokenizer), (n, t))
    mask = torch.ones_like(responses)
    minibatches = np.array_split(np.arange(n), workload.MINIBATCHES)  # PPO: 16 rows; GRPO: 4 whole groups

    def teacher_forced(queries, grad: bool, with_value: bool):
        def run():
            for mb in minibatches:
                with torch.set_grad_enabled(grad):
                    scores = response_log_probs(
                        policy,
                        [queries[i] for i in mb],
                        responses[mb],
                        mask[mb],
                        value_head=value_head if with_value else None,
                        **scoring,
                    )
                if grad:
                    loss = scores.log_probs.sum() + (scores.values.sum() if with_value else 0)
                    loss.backward()

        return run

    def mask_model_pass():  # NLPO's hook: a Prefix of the queries and one extend per sampled token
        with torch.no_grad():
            prefix = Prefix(policy, distinct, tokenizer.pad_token_id, growing=True)
            for k in range(t - 1):
                prefix.extend(responses[:, k : k + 1])

    return {
        "sampling, 64 prompts": recorded(lambda: sample(policy, distinct, lengths, value_head=value_head, **ids)),
        "sampling, 16 prompts x 4": recorded(lambda: sample(policy, grouped, lengths, **ids)),
        "reference pass, 64 prompts": recorded(teacher_forced(distinct, grad=False, with_value=False)),
        "reference pass, 16 prompts x 4": recorded(teacher_forced(grouped, grad=False, with_value=False)),
        "update, 64 prompts, value head": recorded(teacher_forced(distinct, grad=True, with_value=True)),
        "update, 16 prompts x 4": recorded(teacher_forced(grouped, grad=True, with_value=False)),
        "NLPO mask model pass": recorded(mask_model_pass),
    }


#: contender -> its iteration's phases: (phase, share of iterations that run it, part of the rollout)
CONTENDERS = {
    "generate-limit": [("sampling, 64 prompts", 1.0, True)],
    "lm-gym-ppo": [
        ("sampling, 64 prompts", 1.0, True),
        ("reference pass, 64 prompts", 1.0, True),
        ("update, 64 prompts, value head", 1.0, False),
    ],
    "lm-gym-nlpo": [
        ("sampling, 64 prompts", 1.0, True),
        ("NLPO mask model pass", MASK_PASS_SHARE, True),
        ("reference pass, 64 prompts", 1.0, True),
        ("update, 64 prompts, value head", 1.0, False),
    ],
    "lm-gym-grpo-beta0.05": [
        ("sampling, 16 prompts x 4", 1.0, True),
        ("reference pass, 16 prompts x 4", 1.0, True),
        ("update, 16 prompts x 4", 1.0, False),
    ],
    "lm-gym-grpo-beta0": [("sampling, 16 prompts x 4", 1.0, True), ("update, 16 prompts x 4", 1.0, False)],
}
CONTENDERS["lm-gym-rloo-beta0.05"] = CONTENDERS["lm-gym-grpo-beta0.05"]


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def newest_results() -> Path | None:
    found = sorted((HERE / "results").glob("cpu-*.json"), key=lambda f: f.stat().st_mtime)
    return found[-1] if found else None


def report(phase_calls: dict[str, list[tuple]], results: dict) -> dict:
    phase_table = {
        name: {"gflop": sum(map(flops, calls)) / 1e9, "floor_s": replay_seconds(calls), "kernel_calls": len(calls)}
        for name, calls in phase_calls.items()
    }
    measured = results["summary"]
    generated = workload.SEQUENCES_PER_ITERATION * workload.NEW_TOKENS
    rollout_s = {k: generated / v["rollout_tokens_per_s"] for k, v in measured.items()}
    table = {}
    for name, parts in CONTENDERS.items():
        floor = sum(phase_table[p]["floor_s"] * share for p, share, _ in parts)
        rollout_floor = sum(phase_table[p]["floor_s"] * share for p, share, rollout in parts if rollout)
        row = {
            "gflop": sum(phase_table[p]["gflop"] * share for p, share, _ in parts),
            "floor_s": floor,
            "rollout_floor_s": rollout_floor,
        }
        if name in measured:
            row |= {
                "measured_s": measured[name]["iteration_s"],
                "measured_rollout_s": rollout_s[name],
                "floor_share": floor / measured[name]["iteration_s"],
            }
        table[name] = row
    limit = measured["generate-limit"]["iteration_s"]
    goals = {}

    def goal(name: str, target_s: float, floor_s: float, now_s: float, bound: float) -> None:
        """A goal met when the contender takes ``target_s``: the bound the floor puts on its figure, and the
        share of its time its arithmetic must then be (above 100%: out of reach), against today's share."""
        goals[name] = {"bound": bound, "required_floor_share": floor_s / target_s, "floor_share_now": floor_s / now_s}

    # NLPO does PPO's work and the mask model's: the least it adds is the mask pass's floor
    ppo_s, nlpo_extra = measured["lm-gym-ppo"]["iteration_s"], phase_table["NLPO mask model pass"]["floor_s"]
    nlpo_extra *= MASK_PASS_SHARE
    goal(
        "NLPO / PPO s/iteration at most 1.15",
        0.15 * ppo_s,
        nlpo_extra,
        max(measured["lm-gym-nlpo"]["iteration_s"] - ppo_s, 1e-9),
        1 + nlpo_extra / ppo_s,
    )
    for name, row in table.items():
        if name == "generate-limit" or "measured_rollout_s" not in row:
            continue
        target = 1.0 if name == "lm-gym-nlpo" else 1.5
        goal(
            f"{name} rollout at least {target:g}x the generate limit",
            limit / target,
            row["rollout_floor_s"],
            row["measured_rollout_s"],
            limit / row["rollout_floor_s"],
        )
    for trainer in ("grpo-beta0.05", "rloo-beta0.05"):
        ours, trl = table[f"lm-gym-{trainer}"], measured.get(f"trl-{trainer}")
        if trl is not None and "measured_s" in ours:
            goal(
                f"lm-gym-{trainer} at least 3x trl-{trainer}",
                trl["iteration_s"] / 3,
                ours["floor_s"],
                ours["measured_s"],
                trl["iteration_s"] / ours["floor_s"],
            )
    return {"phases": phase_table, "contenders": table, "goal_bounds": goals}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=None, help="run.py's results (default: newest results/cpu-*)")
    parser.add_argument("--workload-dir", default="runs/perf", help="where the workload's model is saved")
    parser.add_argument("--size", choices=sorted(workload.MODEL_CONFIGS), default="standard", help="the model")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (run.py's default: 2)")
    parser.add_argument("--out", type=Path, default=Path("runs/perf/roofline.json"), help="where the JSON goes")
    args = parser.parse_args()
    results_path = args.results or newest_results()
    if results_path is None or not results_path.is_file():
        parser.error(f"--results: no results file at {results_path} (run benchmark/perf/run.py first)")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    out = report(phases(workload.build(args.workload_dir, args.size)), json.loads(results_path.read_text()))
    out["settings"] = {
        "results": str(results_path),
        "threads": args.threads,
        "cpu": cpu_name(),
        "torch_version": torch.__version__,
    }

    print(f"{'phase':34s} {'GFLOP':>7s} {'calls':>6s} {'floor s':>8s}")
    for name, row in out["phases"].items():
        print(f"{name:34s} {row['gflop']:7.1f} {row['kernel_calls']:6d} {row['floor_s']:8.3f}")
    print(f"\n{'contender':22s} {'GFLOP':>7s} {'floor s':>8s} {'measured':>9s} {'share':>6s} {'rollout floor':>14s}")
    for name, row in out["contenders"].items():
        measured = f"{row['measured_s']:9.3f} {row['floor_share']:6.0%}" if "measured_s" in row else f"{'':9s} {'':6s}"
        print(f"{name:22s} {row['gflop']:7.1f} {row['floor_s']:8.3f} {measured} {row['rollout_floor_s']:14.3f}")
    print(f"\n{'goal':58s} {'bound':>6s} {'needs':>6s} {'now':>5s}   (bound: the best figure the floor allows;")
    print(f"{'':58s} {'':6s} {'':6s} {'':5s}    needs/now: the share of the time that is arithmetic)")
    for name, row in out["goal_bounds"].items():
        print(f"{name:58s} {row['bound']:6.2f} {row['required_floor_share']:6.0%} {row['floor_share_now']:5.0%}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
