"""LoRA at the users' model size on the CPU: lm-gym's GRPO and PPO (full and LoRA) and TRL's GRPOTrainer.

Each contender runs in its own process (TRL's with the same LoRA, and full); peak memory and time per iteration
are printed side by side, with the ratios of issue #57's goals.

    python benchmark/perf/lora_scale.py                       # the Qwen2-0.5B-shaped model (about 15 min, 2 cores)
    python benchmark/perf/lora_scale.py --tiny                # a dry run of the code paths (2 layers)
    python benchmark/perf/lora_scale.py --out                 # also results/lora-scale-cpu-<date>.json

The model is a Qwen2 with Qwen2-0.5B's sizes (hidden 896, 24 layers, 14 heads, 2 KV heads,
intermediate 4,864, tied embeddings, RoPE theta 1e6), random weights (seed 0), fp32, and the
4,000-token word-level vocabulary of the speed workload's ``lm_gym/Prompts-v0`` prompts
(``workload.py``): 362M parameters, where Qwen2-0.5B's own 151,936-token embedding makes 494M.
The workload is the speed workload's (64-token prompts, completions of exactly 48 tokens, the
``vowel_words`` reward, a KL penalty of 0.05 against the starting model, learning rate 1e-5, one
epoch over 4 minibatches) at a smaller batch: ``--prompts`` x ``--group-size`` completions (8 x 4)
an iteration; PPO samples as many completions, one a prompt. LoRA: r 16, alpha 32, dropout 0, on
q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj and down_proj (Qwen's usual modules), the KL
reference being the weights with the adapters off; no gradient checkpointing anywhere.

lm-gym's contenders are ``baselines/grpo.py`` and ``baselines/ppo.py`` as ``ours.py`` runs them
(their flags from ``ours.baseline_args``) with the sizes and LoRA flags above; TRL's are
``trl_contender.run_group`` with a ``peft`` ``LoraConfig`` (or none: the full fine-tune), run by this
script in a process of its own. A contender's peak memory is its process's RSS high-water mark
(``ru_maxrss`` of that process, from ``os.wait4``; model loading included), its time the median of
the timed iterations after ``--warmup`` ones (0 by default: at a minute an iteration, one-time costs
are under 1%, and a warm-up would double the run). A contender that fails (one killed for memory)
is reported as failed; the others still run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import ours
import trl_envs
import workload

from lm_gym.results import load_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: Qwen2-0.5B's sizes; ``tiny``: its widths divided by 8 (7 query heads to 1 KV head, as 14 to 2), 2 layers.
MODEL_SIZES = {
    "qwen2-0.5b": {
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
    },
    "tiny": {
        "hidden_size": 112,
        "num_hidden_layers": 2,
        "num_attention_heads": 7,
        "num_key_value_heads": 1,
        "intermediate_size": 608,
    },
}
LORA_R = 16
LORA_ALPHA = 32
LORA_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
#: The contenders, in the order they run (TRL's full fine-tune, the largest, last).
CONTENDERS = (
    "lm-gym-grpo-lora",
    "lm-gym-grpo-full",
    "trl-grpo-lora",
    "lm-gym-ppo-lora",
    "lm-gym-ppo-full",
    "trl-grpo-full",
)


def build_model(directory: str | Path, size: str) -> Path:
    """The seed-0 Qwen2 of ``size`` (``MODEL_SIZES``) with the workload's tokenizer, saved in
    ``directory/model-qwen2-<size>`` once; returns that path."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    model_dir = Path(directory) / f"model-qwen2-{size.removeprefix('qwen2-')}"
    if (model_dir / "config.json").is_file():
        return model_dir
    tok = workload.tokenizer()
    config = Qwen2Config(
        vocab_size=len(tok),
        tie_word_embeddings=True,
        max_position_embeddings=32768,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **MODEL_SIZES[size],
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    tmp = model_dir.with_name(model_dir.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    keep_word_tokenizer(tmp)
    tmp.rename(model_dir)
    return model_dir


def keep_word_tokenizer(model_dir: Path) -> None:
    """Makes ``AutoTokenizer.from_pretrained(model_dir)`` (the baselines' and TRL's loader) give the saved word-level
    tokenizer beside a Qwen2 config. transformers 5 otherwise builds a ``Qwen2Tokenizer`` (a byte-level BPE made
    from the saved vocabulary without merges: 400 tokens for a 64-word prompt) for every ``qwen2`` model type,
    whatever ``tokenizer_config.json`` names; an ``auto_map`` entry is the one thing that skips that override,
    and without remote code trusted it loads the class the config names. Checked here, so that a transformers
    release that changes this fails loudly rather than timing another tokenizer."""
    from transformers import AutoTokenizer

    path = model_dir / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["auto_map"] = {"AutoTokenizer": [None, config["tokenizer_class"]]}
    path.write_text(json.dumps(config, indent=2))
    loaded = AutoTokenizer.from_pretrained(model_dir)
    prompt = workload.prompts(1)[0]
    if len(loaded(prompt, add_special_tokens=False)["input_ids"]) != workload.PROMPT_TOKENS:
        raise RuntimeError(
            f"AutoTokenizer loads {type(loaded).__name__} from {model_dir}, not the workload's word-level tokenizer"
        )


def sizes(args: argparse.Namespace) -> SimpleNamespace:
    """This run's workload in the names of ``workload.py``'s constants, as ``trl_contender.run_group`` reads them."""
    return SimpleNamespace(
        SEQUENCES_PER_ITERATION=args.prompts * args.group_size,
        PROMPT_TOKENS=workload.PROMPT_TOKENS,
        NEW_TOKENS=workload.NEW_TOKENS,
        MINIBATCHES=workload.MINIBATCHES,
        GROUP_SIZE=args.group_size,
        WARMUP_ITERATIONS=args.warmup,
        LEARNING_RATE=workload.LEARNING_RATE,
        reward=workload.reward,
        prompts=workload.prompts,
    )


def lm_gym_command(name: str, args: argparse.Namespace, model_dir: Path, out_dir: str) -> list[str]:
    """``baselines/<ppo|grpo>.py`` with the speed workload's flags (``ours.baseline_args``), then this run's sizes
    (argparse keeps a flag's last value) and, for ``*-lora``, the LoRA flags."""
    algorithm = "ppo" if "-ppo-" in name else "grpo"
    flags = ours.baseline_args(
        algorithm, model_dir, args.warmup + args.iterations, out_dir, args.beta, threads=args.threads
    )
    completions = args.prompts * args.group_size
    flags += ["--eval-episodes", "0"]
    flags += (
        ["--num-envs", str(completions)]
        if algorithm == "ppo"
        else ["--num-prompts", str(args.prompts), "--group-size", str(args.group_size)]
    )
    if name.endswith("-lora"):
        flags += [
            "--lora-r",
            str(LORA_R),
            "--lora-alpha",
            str(LORA_ALPHA),
            "--lora-target-modules",
            *LORA_TARGET_MODULES,
        ]
    return [sys.executable, str(ROOT / "baselines" / f"{algorithm}.py"), *flags]


def trl_command(name: str, args: argparse.Namespace, model_dir: Path) -> list[str] | None:
    """This script's ``--trl-child`` run in the interpreter of TRL 1.16's env (``None``: no such env)."""
    python = trl_envs.trl_python("1.16.0")
    if python is None:
        return None
    return [
        str(python),
        str(Path(__file__).resolve()),
        "--trl-child",
        name.removeprefix("trl-grpo-"),
        "--model-dir",
        str(model_dir),
        *("--prompts", str(args.prompts), "--group-size", str(args.group_size)),
        *("--beta", str(args.beta), "--threads", str(args.threads)),
        *("--warmup", str(args.warmup), "--iterations", str(args.iterations)),
    ]


def run_measured(command: list[str], threads: int, log_path: Path) -> tuple[int, float, str, float]:
    """Runs ``command`` with its output in ``log_path`` (stdout also returned): exit code, the process's
    peak RSS in MB (its own ``ru_maxrss``, not its children's), stdout, wall seconds."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    start = time.perf_counter()
    with open(log_path, "w") as log, tempfile.TemporaryFile("w+") as stdout:
        process = subprocess.Popen(command, stdout=stdout, stderr=log, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        stdout.seek(0)
        output = stdout.read()
    return process.returncode, usage.ru_maxrss / 1024, output, time.perf_counter() - start


def run_contender(name: str, args: argparse.Namespace, model_dir: Path, work_dir: Path) -> dict:
    """One contender's row: peak RSS, iteration and rollout seconds (``error``: why it has none)."""
    with tempfile.TemporaryDirectory(dir=work_dir) as out_dir:
        if name.startswith("lm-gym"):
            command = lm_gym_command(name, args, model_dir, out_dir)
        else:
            command = trl_command(name, args, model_dir)
            if command is None:
                return {"error": "no TRL 1.16 env (python benchmark/perf/trl_envs.py --create)"}
        log_path = work_dir / f"{name}.log"
        code, peak_rss_mb, output, wall_s = run_measured(command, args.threads, log_path)
        row = {"peak_rss_mb": round(peak_rss_mb, 1), "process_s": round(wall_s, 1), "log": str(log_path)}
        if code != 0:
            tail = log_path.read_text(errors="replace")[-2000:]
            killed = " (killed: out of memory?)" if code < 0 else ""
            return {**row, "error": f"exit {code}{killed}; its log ends:\n{tail}"}
        if name.startswith("lm-gym"):
            curves = load_result(out_dir)["curves"][args.warmup :]
            timings = {
                "iteration_seconds": [curve["seconds"] for curve in curves],
                "rollout_seconds": [curve["rollout_seconds"] for curve in curves],
                # the run's final checkpoint: peft's adapter folder when it trained LoRA adapters
                "trained_adapters": (Path(out_dir) / "checkpoint" / "adapter_config.json").is_file(),
            }
        else:
            timings = json.loads(output.strip().splitlines()[-1])
    return {
        **row,
        **timings,
        "iteration_s": statistics.median(timings["iteration_seconds"]),
        "rollout_s": statistics.median(timings["rollout_seconds"]) if timings.get("rollout_seconds") else None,
    }


def ratios(rows: dict[str, dict]) -> list[dict]:
    """The ratios of the rows that have figures: issue #57's goals (``at_most``: the bound, ``met``), and the
    full fine-tunes' times against each other (no goal: ``at_most`` and ``met`` are ``None``)."""

    def ratio(ours: str, theirs: str, key: str, bound: float | None) -> dict | None:
        if any("error" in rows.get(name, {"error": "not run"}) for name in (ours, theirs)):
            return None
        value = rows[ours][key] / rows[theirs][key]
        unit = "peak RSS" if key == "peak_rss_mb" else "s/iteration"
        return {
            "ratio_of": f"{ours} / {theirs} {unit}",
            "ratio": round(value, 3),
            "at_most": bound,
            "met": None if bound is None else value <= bound,
        }

    lora = "lm-gym-grpo-lora"
    found = [
        ratio(lora, "lm-gym-grpo-full", "peak_rss_mb", 0.6),
        ratio("lm-gym-ppo-lora", "lm-gym-ppo-full", "peak_rss_mb", 0.6),
        ratio(lora, "trl-grpo-lora", "peak_rss_mb", 1.0),
        ratio(lora, "trl-grpo-lora", "iteration_s", 1.0),
        ratio("lm-gym-grpo-full", "trl-grpo-full", "peak_rss_mb", None),
        ratio("lm-gym-grpo-full", "trl-grpo-full", "iteration_s", None),
    ]
    return [row for row in found if row is not None]


def trl_child(args: argparse.Namespace) -> int:
    """TRL's GRPOTrainer on this run's workload (``trl_contender.run_group``), LoRA or full; the last stdout line
    is its timings as JSON, everything TRL prints goes to stderr."""
    json_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    import torch
    import trl_contender
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    scale = sizes(args)
    peft_config = None
    if args.trl_child == "lora":
        from peft import LoraConfig, TaskType

        peft_config = LoraConfig(
            r=LORA_R,
            lora_alpha=LORA_ALPHA,
            lora_dropout=0.0,
            target_modules=list(LORA_TARGET_MODULES),
            task_type=TaskType.CAUSAL_LM,
        )
    contender_args = SimpleNamespace(
        trainer="grpo", beta=args.beta, iterations=args.iterations, device="cpu", bf16=False
    )
    clock = trl_contender._Clock()
    with tempfile.TemporaryDirectory() as out_dir:
        tok = AutoTokenizer.from_pretrained(args.model_dir)
        config = trl_contender.run_group(contender_args, scale, args.model_dir, tok, clock, out_dir, peft_config)
    total = args.warmup + args.iterations
    assert clock.reward_calls == [scale.SEQUENCES_PER_ITERATION] * total, clock.reward_calls
    json_out.write(
        json.dumps(
            {
                "iteration_seconds": clock.iteration_seconds(args.warmup),
                "rollout_seconds": clock.rollout_seconds(args.warmup),
                "config": config,
            }
        )
        + "\n"
    )
    json_out.flush()
    return 0


def print_table(rows: dict[str, dict], found: list[dict]) -> None:
    print(f"\n{'contender':<20}{'s/iteration':>12}{'rollout s':>11}{'peak RSS MB':>13}")
    for name, row in rows.items():
        if "error" in row:
            print(f"{name:<20}  failed: {row['error'].splitlines()[0]}")
            continue
        rollout = f"{row['rollout_s']:.1f}" if row["rollout_s"] is not None else "-"
        print(f"{name:<20}{row['iteration_s']:>12.1f}{rollout:>11}{row['peak_rss_mb']:>13.0f}")
    print()
    for row in found:
        goal = (
            "" if row["at_most"] is None else f"  (goal <= {row['at_most']:g}x: {'met' if row['met'] else 'NOT met'})"
        )
        print(f"{row['ratio_of']:<52}{row['ratio']:>7.2f}x{goal}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="a 2-layer Qwen2 of 1/8 the widths: a dry run of the code paths"
    )
    parser.add_argument(
        "--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS), help="which contenders, in this order"
    )
    parser.add_argument("--prompts", type=int, default=8, help="GRPO's prompts an iteration (PPO: x --group-size)")
    parser.add_argument("--group-size", type=int, default=4, help="GRPO's completions a prompt")
    parser.add_argument("--beta", type=float, default=workload.KL_COEF, help="the KL coefficient (PPO's kl-coef)")
    parser.add_argument("--warmup", type=int, default=0, help="untimed iterations before the timed ones")
    parser.add_argument("--iterations", type=int, default=1, help="timed iterations of every contender")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every contender")
    parser.add_argument("--workload-dir", default="runs/perf", help="where the model is saved (model-qwen2-<size>)")
    parser.add_argument(
        "--out",
        nargs="?",
        const="",
        help="write the results as JSON: to this file, or with no value to results/lora-scale-cpu-<date>.json",
    )
    parser.add_argument("--trl-child", choices=("lora", "full"), help="(the script's own) run TRL's contender here")
    parser.add_argument("--model-dir", help="(with --trl-child) the saved model")
    args = parser.parse_args(argv)
    if args.prompts % workload.MINIBATCHES or args.group_size < 2:
        parser.error(
            f"--prompts must be a multiple of {workload.MINIBATCHES} (GRPO's minibatches hold whole groups) "
            "and --group-size at least 2"
        )
    if args.iterations < 1 or args.warmup < 0:
        parser.error("--iterations must be at least 1 and --warmup at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.trl_child:
        return trl_child(args)
    size = "tiny" if args.tiny else "qwen2-0.5b"
    model_dir = build_model(args.workload_dir, size).resolve()
    work_dir = Path(args.workload_dir).resolve() / f"lora-scale-{size}"
    work_dir.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name in args.contenders:
        rows[name] = run_contender(name, args, model_dir, work_dir)
        done = rows[name].get("iteration_s")
        print(f"{name}: " + (f"{done:.1f} s/iteration" if done else "failed"), file=sys.stderr)
    found = ratios(rows)
    print(
        f"{size}: {args.prompts} prompts x {args.group_size} completions x {workload.NEW_TOKENS} new tokens, "
        f"{args.threads} threads, {args.warmup} warm-up and {args.iterations} timed iteration(s)"
    )
    print_table(rows, found)
    if args.out is not None:
        import torch
        import transformers

        out = Path(args.out or HERE / "results" / f"lora-scale-cpu-{datetime.date.today()}.json")
        settings = {key: value for key, value in vars(args).items() if key not in ("trl_child", "model_dir", "out")}
        record = {
            "model": {"size": size, **MODEL_SIZES[size], "vocab_size": len(workload.tokenizer()), "tied": True},
            "lora": {"r": LORA_R, "alpha": LORA_ALPHA, "dropout": 0.0, "target_modules": list(LORA_TARGET_MODULES)},
            "settings": settings,
            "machine": {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()},
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
            "rows": rows,
            "ratios": found,
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1))
        print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
