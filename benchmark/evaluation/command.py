"""``python -m benchmark evaluate``: a model's scores on a task, or on a suite's tasks, as ``result.json``.

The model is a local one (``--model NAME_OR_DIR``: a hub name, a checkpoint such as a baseline's
``runs/ppo/checkpoint``) sampled with the baselines' batched sampler, or one behind any
OpenAI-compatible server (``--base-url URL --model NAME``: vLLM, SGLang, llama.cpp, Ollama, a hosted
API). Each task is played on its validation split, episode ``j`` reset with seed ``--seed + j`` (as
the board scores), ``--samples K`` times each; its evaluation goes through the baselines' own path
(``lm_gym.results.evaluation.evaluate_episodes``: the per-episode means, the task's corpus metrics, each
task's on a mixture), with the statistics of K samples added (``lm_gym.results.samples_per_episode``:
``mean@K``, ``best@K``, ``spread``, ``pass@k`` on a task with a success metric).

Written: ``<out>/<task>/result.json`` per task (``algorithm`` ``"eval"``, no training curve, the model,
the server or the checkpoint's digest and the sampling settings in ``config``), a table on the console,
and with ``--report`` the harness's report of them. With the defaults, a checkpoint of ``ppo.py``
evaluated on as many episodes (``--episodes``, ``--batch-size``, ``--seed``, ``--temperature`` as its
``--eval-*`` flags) gives its own ``result.json``'s ``final_eval`` numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from lm_gym.core.errors import LMGymError
from lm_gym.results import make_result, write_result
from lm_gym.results.evaluation import evaluate_episodes
from lm_gym.results.run_result import EVALUATION_ALGORITHM
from lm_gym.results.samples_per_episode import sample_statistics

#: The prompt length of a chat (system message, turns, template) unless ``--max-prompt-length`` says otherwise.
CHAT_PROMPT_LENGTH = 2048


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``python -m benchmark evaluate``'s arguments."""
    tasks = parser.add_argument_group("tasks")
    tasks.add_argument("--env-id", help="one task's registered id (yours, lm_gym/Mixture-v0 included)")
    tasks.add_argument("--env-kwargs", default="{}", help="the task's keyword arguments as JSON (with --env-id)")
    tasks.add_argument("--suite", help="a suite's tasks instead: smoke, grue, ... or a suite .toml file")
    tasks.add_argument("--tasks", nargs="+", metavar="NAME", help="with --suite: only these of its tasks")
    model = parser.add_argument_group("model")
    model.add_argument("--model", required=True, help="a hub name or local directory; with --base-url the served name")
    model.add_argument("--base-url", help="an OpenAI-compatible server's API root, e.g. http://localhost:8000/v1")
    model.add_argument("--api", choices=("chat", "completions"), default="chat", help="the server's API (chat)")
    model.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="the variable holding the server's key (unset: EMPTY)"
    )
    model.add_argument("--concurrency", type=int, default=32, help="requests in flight at once (32)")
    model.add_argument("--timeout", type=float, default=60.0, help="seconds one request may take (60)")
    model.add_argument("--max-retries", type=int, default=5, help="retries of a request on 429/5xx/timeouts (5)")
    model.add_argument(
        "--cache-dir", help="the server completions' cache (default: <out>/completion-cache); a rerun resumes"
    )
    model.add_argument(
        "--chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="prompt with the episode's chat (default: a local model whose tokenizer has a chat template; "
        "always with --api chat)",
    )
    model.add_argument("--device", help="a local model's torch device (default: cuda when available, else cpu)")
    model.add_argument(
        "--merge-lora",
        action="store_true",
        help="a LoRA checkpoint (adapter_config.json): merge its adapters into the base weights before playing "
        "(default: play them through peft)",
    )
    model.add_argument(
        "--dtype", choices=("float32", "bfloat16", "float16"), default="float32", help="a local model's dtype"
    )
    sampling = parser.add_argument_group("sampling")
    sampling.add_argument("--episodes", type=int, default=64, help="validation episodes per task (64)")
    sampling.add_argument("--samples", type=int, default=1, help="samples (episodes) per starting state, K (1)")
    sampling.add_argument("--seed", type=int, default=0, help="episode j is reset with seed SEED + j (0)")
    sampling.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (1.0)")
    sampling.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling: a server's top_p (1.0)")
    sampling.add_argument("--greedy", action="store_true", help="greedy decoding (temperature 0 for a server)")
    sampling.add_argument("--max-tokens", type=int, help="longest reply in tokens (default: the task's)")
    sampling.add_argument(
        "--max-prompt-length",
        type=int,
        help=f"a local model's prompt in tokens (the task's; a chat: {CHAT_PROMPT_LENGTH})",
    )
    sampling.add_argument("--batch-size", type=int, default=32, help="episodes played at once (32)")
    sampling.add_argument("--success-metric", help="the 0/1 metric of pass@k (default: the task's success_metric)")
    sampling.add_argument("--perplexity-model", help="a causal LM for the perplexity corpus metrics")
    output = parser.add_argument_group("output")
    output.add_argument("--out", default="runs/evaluate", help="folder of <task>/result.json (runs/evaluate)")
    output.add_argument("--report", action="store_true", help="also write the report of the results (report.md)")


def run(args: argparse.Namespace) -> int:
    """The ``evaluate`` command; returns the exit status (2: bad arguments, 1: a server or model failed)."""
    from benchmark import report

    try:
        tasks = task_list(args)
        check_numbers(args)
        out = Path(args.out)
        rows = []
        for name, env_id, env_kwargs in tasks:
            result = evaluate_task(args, env_id, env_kwargs, out)
            write_result(out / name, result)
            rows.append((name, result))
    except ConnectionError as error:  # before LMGymError: a server's errors are both
        print(f"error: {error}\nwhat was answered is cached: the same command resumes", file=sys.stderr)
        return 1
    except (LMGymError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(results_table(rows))
    if args.report:
        return report.report_runs(out)
    return 0


def task_list(args: argparse.Namespace) -> list[tuple[str, str, dict[str, Any]]]:
    """``(folder name, env id, env kwargs)`` of each task: ``--env-id``'s, or ``--suite``'s (``--tasks`` of them)."""
    from benchmark.suite import load_suite

    if (args.env_id is None) == (args.suite is None):
        raise ValueError("pass one of --env-id (one task) or --suite (its tasks)")
    if args.env_id is not None:
        if args.tasks:
            raise ValueError("--tasks picks a suite's tasks: pass it with --suite")
        try:
            env_kwargs = json.loads(args.env_kwargs)
        except json.JSONDecodeError as error:
            raise ValueError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r} ({error})") from None
        if not isinstance(env_kwargs, dict):
            raise ValueError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
        return [(args.env_id.rpartition(":")[2].replace("/", "_"), args.env_id, env_kwargs)]
    suite = load_suite(args.suite)
    chosen = args.tasks or list(suite.tasks)
    unknown = sorted(set(chosen) - set(suite.tasks))
    if unknown:
        raise ValueError(f"--tasks {unknown} are not tasks of suite {suite.name}: {sorted(suite.tasks)}")
    return [(name, suite.tasks[name]["env_id"], dict(suite.tasks[name].get("env_kwargs", {}))) for name in chosen]


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse counts and settings out of range, naming the flag."""
    for flag, value, low in (
        ("--episodes", args.episodes, 1), ("--samples", args.samples, 1), ("--batch-size", args.batch_size, 1),
        ("--concurrency", args.concurrency, 1), ("--max-retries", args.max_retries, 0),
    ):  # fmt: skip
        if value < low:
            raise ValueError(f"{flag} must be at least {low}, got {value}")
    for flag, value in (("--max-tokens", args.max_tokens), ("--max-prompt-length", args.max_prompt_length)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    if not args.temperature > 0 and not args.greedy:
        raise ValueError(f"--temperature must be > 0 (or pass --greedy), got {args.temperature}")
    if not 0 < args.top_p <= 1:
        raise ValueError(f"--top-p must be in (0, 1], got {args.top_p}")
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.base_url is None and args.api != "chat":
        raise ValueError("--api picks a server's API: pass --base-url too")


def evaluate_task(args: argparse.Namespace, env_id: str, env_kwargs: dict[str, Any], out: Path) -> dict[str, Any]:
    """The ``result.json`` of the model's evaluation on one task."""
    import torch

    from lm_gym.core.task_setup import set_up_task
    from lm_toolkit.runs import peak_memory_mb
    from lm_toolkit.tasks import is_remote

    start = time.perf_counter()
    batch = min(args.batch_size, args.episodes * args.samples)
    local = args.base_url is None
    chat_default = CHAT_PROMPT_LENGTH if args.chat or not local else None  # a local model's: see play_local
    setup = set_up_task(
        env_id,
        env_kwargs,
        {"validation": batch},
        tokenizer=args.model if local else None,
        served=is_remote(env_id),
        max_new_tokens=args.max_tokens,
        max_prompt_length=args.max_prompt_length or chat_default,
    )
    venv = setup.envs["validation"]
    if local:
        played, config = play_local(args, setup)
    else:
        played, config = play_served(args, setup, out)
    seconds = time.perf_counter() - start
    evaluation = evaluate_episodes(venv, played.returns, played.metrics, played.finals, args.perplexity_model)
    sampling = {
        "samples_per_episode": args.samples,
        "statistics": k_sample_statistics(args, setup.task, played),
        "malformed_replies": played.malformed_replies,
    }
    venv.close()
    return make_result(
        env_id=env_id,
        algorithm=EVALUATION_ALGORITHM,
        seed=args.seed,
        config={
            "env_id": env_id,
            "env_kwargs": env_kwargs,
            "episodes": args.episodes,
            "samples": args.samples,
            "temperature": 0.0 if args.greedy else args.temperature,
            "top_p": args.top_p,
            "greedy": args.greedy,
            "batch_size": args.batch_size,
            # the arguments after `python -m benchmark evaluate`: what re-runs this evaluation (a board's recipe)
            "command": args.command_argv[args.command_argv.index("evaluate") + 1 :],
            **config,
        },
        initial_eval=None,
        final_eval=evaluation.summary,
        curves=[],
        wall_time_s=seconds,
        tokens_per_s=0.0,
        episodes_per_s=len(played.returns) / seconds,
        peak_memory_mb=peak_memory_mb(torch.device("cpu" if config["device"] == "server" else config["device"])),
        checkpoint=None,
        device=config["device"],
        samples=evaluation.samples,
        tasks={task: {"initial_eval": None, "final_eval": results} for task, results in evaluation.tasks.items()},
        sampling=sampling,
    )


def play_local(args: argparse.Namespace, setup) -> tuple[Any, dict[str, Any]]:
    """Play the task with the local model ``--model`` (the baselines' sampler and evaluation episodes)."""
    import torch
    from tqdm.auto import tqdm

    from benchmark.evaluation.server_play import PlayedEpisodes
    from lm_toolkit.models import check_positions, is_adapter_checkpoint, load_policy
    from lm_toolkit.rollouts import TextPolicy, play_episodes
    from lm_toolkit.tasks import Lengths

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    lengths = Lengths.of(setup.token_settings)
    model = load_policy(args.model, {}, setup.tokenizer, args.seed, merge_adapters=args.merge_lora)
    chat = bool(getattr(setup.tokenizer, "chat_template", None)) if args.chat is None else args.chat
    if chat and args.max_prompt_length is None:  # a chat's rules and turns need room; the model's positions cap it
        positions = (
            getattr(model.config, "max_position_embeddings", None) or CHAT_PROMPT_LENGTH + lengths.max_new_tokens
        )
        room = positions - (0 if model.config.is_encoder_decoder else lengths.max_new_tokens)
        lengths = dataclasses.replace(
            lengths, max_prompt_length=max(lengths.max_prompt_length, min(CHAT_PROMPT_LENGTH, room))
        )
    check_positions(model, lengths.max_prompt_length, lengths.max_new_tokens)
    model.to(device=device, dtype=getattr(torch, args.dtype))
    policy = TextPolicy(model, setup.tokenizer, lengths, args.temperature)
    per_sample = []
    with torch.no_grad(), tqdm(total=args.samples, desc="samples", unit="sample", file=sys.stderr) as progress:
        for sample in range(args.samples):
            venv = setup.envs["validation"]
            per_sample.append(play_episodes(venv, policy, args.episodes, args.seed, args.greedy, sample, chat))
            progress.update()
    played = PlayedEpisodes()
    for episode in range(args.episodes):  # episode-major, as a server's evaluation orders them
        for returns, metrics, finals in per_sample:
            played.returns.append(returns[episode])
            played.metrics.append(metrics[episode])
            played.finals.append(finals[episode])
    config = {"model": args.model, "model_digest": model_digest(args.model), "chat": chat, "device": str(device)}
    config["merge_lora"] = bool(args.merge_lora and is_adapter_checkpoint(args.model))
    return played, {**config, "dtype": args.dtype, "max_new_tokens": lengths.max_new_tokens}


def play_served(args: argparse.Namespace, setup, out: Path) -> tuple[Any, dict[str, Any]]:
    """Play the task with the model ``--model`` of the server at ``--base-url``."""
    from tqdm.auto import tqdm

    from benchmark.evaluation.completions import CompletionClient
    from benchmark.evaluation.server_play import SamplingSettings, play_with_server

    if args.api == "chat" and args.chat is False:
        raise ValueError("--no-chat needs --api completions (the chat API takes messages)")
    chat = args.api == "chat" or bool(args.chat)
    client = CompletionClient(
        base_url=args.base_url,
        model=args.model,
        api=args.api,
        api_key=os.environ.get(args.api_key_env) or "EMPTY",
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        max_retries=args.max_retries,
        cache_dir=Path(args.cache_dir) if args.cache_dir else out / "completion-cache",
    )
    max_tokens = setup.token_settings["max_new_tokens"]
    settings = SamplingSettings(0.0 if args.greedy else args.temperature, args.top_p, max_tokens)
    venv = setup.envs["validation"]
    total = args.episodes * args.samples
    with client, tqdm(total=total, desc="episodes", unit="episode", file=sys.stderr) as progress:
        played = play_with_server(
            venv, client, args.episodes, args.samples, args.seed, settings, chat, on_episode=progress.update
        )
    config = {"model": args.model, "base_url": args.base_url, "api": args.api, "chat": chat}
    return played, {**config, "max_new_tokens": max_tokens, "device": "server"}


def k_sample_statistics(args: argparse.Namespace, task: Any, played) -> dict[str, float]:
    """``mean@K``, ``best@K``, ``spread`` and (with a success metric) ``pass@k`` of the played episodes."""
    samples = args.samples
    returns = [played.returns[i : i + samples] for i in range(0, len(played.returns), samples)]
    metric = args.success_metric or getattr(task, "success_metric", None)
    if metric is None:
        return sample_statistics(returns)
    values = [episode.get(metric) for episode in played.metrics]
    if any(value not in (0.0, 1.0) for value in values):
        raise ValueError(
            f"--success-metric {metric!r} must be a 0/1 metric of every episode's info['metrics'], "
            f"got {sorted({repr(value) for value in values})[:5]}"
        )
    return sample_statistics(returns, [values[i : i + samples] for i in range(0, len(values), samples)])


def model_digest(source: str) -> str | None:
    """The SHA-256 of a local model directory's weight files (a hub name: ``None``): what an entry names. A LoRA
    checkpoint's are its adapters' and its base's (``base_model/``)."""
    path = Path(source)
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for folder in (path, path / "base_model"):  # lm_toolkit.models.BASE_MODEL (the baselines' toolkit not imported)
        for weights in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
            digest.update(str(weights.relative_to(path)).encode())
            with weights.open("rb") as file:
                for chunk in iter(lambda: file.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def results_table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """The console table: a row per task's result, its mean return and K-sample statistics."""
    from lm_gym.results import stats

    columns = sorted({key for _, result in rows for key in result["sampling"]["statistics"]})
    headers = ["task", "episodes", "mean_return", *columns, "malformed replies"]
    body = []
    for name, result in rows:
        statistics = result["sampling"]["statistics"]
        body.append(
            [
                name,
                str(int(result["final_eval"]["num_episodes"])),
                f"{result['final_eval']['mean_return']:.4g}",
                *(f"{statistics[column]:.4g}" if column in statistics else "-" for column in columns),
                str(result["sampling"]["malformed_replies"]),
            ]
        )
    return "\n".join(stats.markdown_table(headers, body))
