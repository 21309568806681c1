"""One contender of the speed benchmark in its own process: lm-gym's PPO, NLPO or GRPO/RLOO baseline
on the standard workload, or the limit (plain ``model.generate`` of the same batch).

    python benchmark/perf/ours.py --contender ppo --workload-dir runs/perf --iterations 5

The baselines run as users run them, on ``lm_gym/Prompts-v0`` (the workload's prompts and
reward) through the native vector env, with no evaluation. The last stdout line is a JSON
object: per-iteration seconds (warm-up iterations dropped), rollout seconds, sequences per
iteration and peak RSS. ``--cuda-graphs``: the baseline samples with ``LM_GYM_CUDA_GRAPHS=1``
(``lm_toolkit.static_decoding``). ``--profile-out FILE``: the last warm-up iteration (not timed)
is profiled (``profiling.py``) and its summary written to FILE.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import profiling
import workload

from lm_gym.results import load_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def baseline_args(
    algorithm: str,
    model_dir: Path,
    iterations: int,
    out_dir: str,
    beta: float,
    device: str = "cpu",
    bf16: bool = False,
    threads: int | None = None,
) -> list[str]:
    """The baseline's command line for the standard workload (``threads``: torch's, default ``OMP_NUM_THREADS``)."""
    common = [
        "--env-id",
        "lm_gym/Prompts-v0",
        "--model-name",
        str(model_dir),
        "--iterations",
        str(iterations),
        "--num-minibatches",
        str(workload.MINIBATCHES),
        "--learning-rate",
        str(workload.LEARNING_RATE),
        "--no-anneal-lr",
        "--min-new-tokens",
        str(workload.NEW_TOKENS),
        "--temperature",
        "1.0",
        "--eval-every",
        "0",
        "--eval-episodes",
        "1",
        "--eval-batch-size",
        "1",
        "--save-every",
        "0",
        "--out-dir",
        out_dir,
        "--torch-threads",
        str(threads or torch_threads()),
        "--device",
        device,
        *(["--bf16"] if bf16 else []),
    ]
    if algorithm in ("ppo", "nlpo"):
        return [
            *common,
            "--num-envs",
            str(workload.SEQUENCES_PER_ITERATION),
            "--update-epochs",
            "1",
            "--kl-coef",
            str(workload.KL_COEF),
            "--kl-target",
            "None",
        ]
    return [
        *common,
        "--num-prompts",
        str(workload.SEQUENCES_PER_ITERATION // workload.GROUP_SIZE),
        "--group-size",
        str(workload.GROUP_SIZE),
        "--update-epochs",
        "1",
        "--beta",
        str(beta),
        *(["--rloo"] if algorithm == "rloo" else []),
    ]


def torch_threads() -> int:
    return int(os.environ.get("OMP_NUM_THREADS", "2"))


#: The profiled window of a training contender, in optimizer steps (``workload.MINIBATCHES`` an iteration): the
#: last warm-up iteration, which is not timed.
PROFILE_WINDOW = ((workload.WARMUP_ITERATIONS - 1) * workload.MINIBATCHES, workload.MINIBATCHES)


def run_baseline(
    algorithm: str,
    model_dir: Path,
    iterations: int,
    beta: float,
    device: str,
    bf16: bool,
    cuda_graphs: bool = False,
    profile_out: str | None = None,
) -> dict:
    """The baseline run as users run it, ``python baselines/<script>.py FLAGS`` (through ``profiling.py``
    with ``profile_out``); its iteration times from its ``result.json``. Its output goes to stderr: this
    contender's JSON is stdout's last line."""
    script = ROOT / "baselines" / f"{algorithm if algorithm in ('ppo', 'nlpo') else 'grpo'}.py"
    env = {**os.environ, "LM_GYM_CUDA_GRAPHS": "1" if cuda_graphs else "0"}
    command = [sys.executable, str(script)]
    if profile_out:  # the script's folder on the path, as `python SCRIPT` puts it
        paths = [str(script.parent), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        command = [sys.executable, str(HERE / "profiling.py"), profile_out, *map(str, PROFILE_WINDOW), str(script)]
    with tempfile.TemporaryDirectory() as out_dir:
        flags = baseline_args(
            algorithm, model_dir, workload.WARMUP_ITERATIONS + iterations, out_dir, beta, device, bf16
        )
        subprocess.run([*command, *flags], check=True, stdout=sys.stderr, env=env)
        result = load_result(out_dir)
    timed = result["curves"][workload.WARMUP_ITERATIONS :]
    return {
        "iteration_seconds": [row["seconds"] for row in timed],
        "rollout_seconds": [row["rollout_seconds"] for row in timed],
    }


def run_limit(model_dir: Path, iterations: int, device: str, bf16: bool, profile_out: str | None = None) -> dict:
    """``generate`` with the KV cache, sampling exactly 48 tokens for the iteration's 64 prompts; with
    ``profile_out``, the last warm-up iteration profiled."""

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).to(device).eval()
    autocast = torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16)
    prompts = workload.prompts(workload.SEQUENCES_PER_ITERATION * (workload.WARMUP_ITERATIONS + iterations))
    seconds = []
    for i in range(workload.WARMUP_ITERATIONS + iterations):
        batch = prompts[i * workload.SEQUENCES_PER_ITERATION : (i + 1) * workload.SEQUENCES_PER_ITERATION]
        profiled = profile_out and i == workload.WARMUP_ITERATIONS - 1
        window = profiling.Window(profile_out) if profiled else contextlib.nullcontext()
        start = time.perf_counter()
        with window:
            ids = torch.tensor(tokenizer(batch, add_special_tokens=False)["input_ids"], device=device)
            with torch.no_grad(), autocast:
                out = model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    do_sample=True,
                    temperature=1.0,
                    top_k=0,
                    top_p=1.0,
                    max_new_tokens=workload.NEW_TOKENS,
                    min_new_tokens=workload.NEW_TOKENS,
                    suppress_tokens=[tokenizer.eos_token_id, tokenizer.pad_token_id],
                    use_cache=True,
                )
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
        assert out.shape == (workload.SEQUENCES_PER_ITERATION, workload.PROMPT_TOKENS + workload.NEW_TOKENS), out.shape
    timed = seconds[workload.WARMUP_ITERATIONS :]
    return {"iteration_seconds": timed, "rollout_seconds": timed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contender", choices=("ppo", "nlpo", "grpo", "rloo", "limit"), required=True)
    parser.add_argument(
        "--beta", type=float, default=workload.KL_COEF, help="grpo/rloo: KL coefficient (0: no reference model)"
    )
    parser.add_argument("--workload-dir", default="runs/perf", help="where the workload's model is saved")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations, after the warm-up ones")
    parser.add_argument(
        "--size",
        choices=sorted(workload.MODEL_CONFIGS),
        default="standard",
        help="the model (gpt2-small: the GPU comparison's)",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast")
    parser.add_argument(
        "--cuda-graphs", action="store_true", help="the baseline samples with LM_GYM_CUDA_GRAPHS=1 (not the limit)"
    )
    parser.add_argument("--profile-out", help="profile the last warm-up iteration; its summary to this JSON file")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(torch_threads())
    model_dir = workload.build(args.workload_dir, args.size)
    if args.contender == "limit":
        timings = run_limit(model_dir, args.iterations, args.device, args.bf16, args.profile_out)
        name = "generate-limit"
    else:
        timings = run_baseline(
            args.contender, model_dir, args.iterations, args.beta, args.device, args.bf16, args.cuda_graphs,
            args.profile_out,
        )  # fmt: skip
        name = f"lm-gym-{args.contender}" + ("" if args.contender in ("ppo", "nlpo") else f"-beta{args.beta:g}")
        name += "+graphs" if args.cuda_graphs else ""
    import transformers

    print(
        json.dumps(
            {
                "contender": name,
                **timings,
                "sequences_per_iteration": workload.SEQUENCES_PER_ITERATION,
                "new_tokens_per_sequence": workload.NEW_TOKENS,
                # the baseline's own process for lm-gym's contenders, this one for the limit
                "peak_rss_mb": max(
                    resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                )
                / 1024,
                "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if args.device.startswith("cuda") else None,
                "threads": torch.get_num_threads(),
                "torch_version": torch.__version__,
                "transformers_version": transformers.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
