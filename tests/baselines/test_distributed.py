"""Data-parallel baselines under torchrun (gloo on CPU): two processes update as one does on the whole batch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import BASELINES
from safetensors.torch import load_file

from lm_gym.core.task_setup import policy_tokenizer
from lm_gym.results import load_result
from lm_toolkit import distributed
from lm_toolkit.models import load_policy
from lm_toolkit.rollouts import TextPolicy, episode_uniforms
from lm_toolkit.tasks import task_lengths

# dropout off: the one-process and the two-process runs then compute the same function
GPT2 = json.dumps(
    {"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}
    | dict.fromkeys(("resid_pdrop", "embd_pdrop", "attn_pdrop"), 0.0)
)
PROMPTS = ["--env-id", "lm_gym/Prompts-v0", "--model-config", GPT2, "--torch-threads", "1", "--seed", "3"]


def launch(script: str, out_dir: Path, processes: int, *flags: str) -> dict:
    """``python baselines/<script>`` (1 process) or ``torchrun --standalone --nproc_per_node N`` on it."""
    runner = [sys.executable]
    if processes > 1:
        runner += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    done = subprocess.run(
        [*runner, str(BASELINES / script), *flags, "--out-dir", str(out_dir)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return load_result(out_dir)


def weights(out_dir: Path, model: str = "") -> dict[str, torch.Tensor]:
    return load_file(out_dir / "checkpoint" / model / "model.safetensors")


def largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[key] - b[key]).abs().max()) for key in a)


@pytest.mark.parametrize(
    ("script", "flags"),
    [
        ("ppo.py", ["--num-envs", "8", "--num-minibatches", "1", "--learning-rate", "1e-3"]),
        pytest.param(  # GRPO's: the deep run (54 s, four processes start); PPO's keeps torchrun in the default run
            "grpo.py",
            ["--num-prompts", "4", "--group-size", "2", "--num-minibatches", "1", "--learning-rate", "1e-3"],
            marks=pytest.mark.slow,
        ),
    ],
)
def test_two_processes_update_as_one_on_the_whole_batch(script, flags, tmp_path):
    common = [*PROMPTS, *flags, "--iterations", "1", "--update-epochs", "1", "--eval-episodes", "0"]
    alone = launch(script, tmp_path / "one", 1, *common)
    together = launch(script, tmp_path / "two", 2, *common)

    assert (alone.get("world_size", 1), together["world_size"]) == (1, 2)
    # the same episodes, sampled alike: row i of the batch is row i whichever process plays it
    first, second = alone["curves"][0], together["curves"][0]
    assert first["mean_return"] == pytest.approx(second["mean_return"], abs=1e-6)
    assert first["response_tokens"] == second["response_tokens"] and first["kl"] == pytest.approx(
        second["kl"], abs=1e-5
    )
    # the same update: the gradients of the whole batch's mean loss, averaged over the processes (Adam's
    # first step is about lr * sign(gradient) per weight: a gradient of another direction moves weights apart)
    moved = largest_difference(weights(tmp_path / "one"), weights(tmp_path / "one", "reference"))
    apart = largest_difference(weights(tmp_path / "one"), weights(tmp_path / "two"))
    assert moved > 5e-4 and apart < moved * 1e-2, (moved, apart)


@pytest.mark.parametrize(
    ("script", "flags"),
    [  # SFT's: the deep run (80 s, four processes start); ILQL's keeps an offline baseline's split in the default run
        pytest.param("sft.py", ["--max-examples"], marks=pytest.mark.slow),
        ("ilql.py", ["--warmup-steps", "0", "--max-trajectories"]),
    ],
)
def test_offline_baselines_split_each_batch(script, flags, tmp_path):
    imdb = ["--env-id", "lm_gym/IMDB-v0", "--env-kwargs", '{"source": "synthetic"}', *flags, "64"]
    steps = ["--max-steps", "2", "--batch-size", "8", "--eval-episodes", "0", "--learning-rate", "1e-3"]
    alone = launch(script, tmp_path / "one", 1, *imdb, *PROMPTS[2:], *steps)
    together = launch(script, tmp_path / "two", 2, *imdb, *PROMPTS[2:], *steps)
    assert together["world_size"] == 2
    assert alone["curves"][-1]["loss"] == pytest.approx(together["curves"][-1]["loss"], rel=1e-4)
    assert largest_difference(weights(tmp_path / "one"), weights(tmp_path / "two")) < 1e-5


@pytest.mark.slow
def test_resume_at_another_world_size(tmp_path):
    flags = [*PROMPTS, "--num-envs", "4", "--num-minibatches", "2", "--eval-episodes", "4", "--eval-batch-size", "4"]
    launch("ppo.py", tmp_path, 2, *flags, "--iterations", "1")
    resumed = launch("ppo.py", tmp_path, 1, *flags, "--iterations", "2", "--resume")
    assert [row["step"] for row in resumed["curves"]] == [1, 2] and resumed["world_size"] == 1
    assert resumed["final_eval"]["num_episodes"] == 4


@pytest.mark.slow
def test_one_job_across_two_nodes(tmp_path):
    """Two "nodes" on this machine: torchrun --nnodes 2 with a c10d rendezvous on 127.0.0.1, one process each."""
    port = str(29500 + int.from_bytes(os.urandom(2), "little") % 10000)
    flags = [*PROMPTS, "--num-envs", "4", "--num-minibatches", "1", "--iterations", "1", "--eval-episodes", "2"]
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes=2",
                f"--node_rank={node}",
                "--nproc_per_node=1",
                "--rdzv_backend=c10d",
                f"--rdzv_endpoint=127.0.0.1:{port}",
                "--rdzv_id=lm-gym-test",
                str(BASELINES / "ppo.py"),
                *flags,
                "--out-dir",
                str(tmp_path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        for node in (0, 1)
    ]
    outputs = [node.communicate(timeout=900)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], "\n".join(output[-3000:] for output in outputs)
    assert load_result(tmp_path)["world_size"] == 2


@pytest.mark.slow  # two processes start to refuse (22 s); test_one_process_is_the_identity checks the message
def test_a_batch_the_processes_cannot_share_is_refused(tmp_path):
    runner = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    done = subprocess.run(
        [*runner, str(BASELINES / "ppo.py"), *PROMPTS, "--num-envs", "3", "--num-minibatches", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=tmp_path,
    )
    assert done.returncode != 0 and "--num-envs (3) must be divisible by the number of processes (2)" in done.stderr


def test_a_row_is_sampled_alike_in_any_batch():
    """Sampling draws from random numbers keyed by (episode seed, row, turn): a row's response does not
    depend on the other rows of its batch, so a process's shard samples what the whole batch would."""
    import gymnasium

    env = gymnasium.make("lm_gym/Prompts-v0").unwrapped
    lengths = task_lengths("lm_gym/Prompts-v0")
    tokenizer = policy_tokenizer(env, None)
    model = load_policy(None, json.loads(GPT2), tokenizer, seed=0).eval()
    policy = TextPolicy(model, tokenizer, lengths)
    queries = policy.queries(["a short prompt", "another, longer prompt with more words", "x", "the last one"])
    width = lengths.max_new_tokens
    whole = policy.sample(queries, uniforms=episode_uniforms([10, 11, 12, 13], [0, 1, 2, 3], 0, width))
    part = policy.sample(queries[2:], uniforms=episode_uniforms([12, 13], [2, 3], 0, width))
    assert part.responses == whole.responses[2:]
    np.testing.assert_allclose(part.log_probs[0], whole.log_probs[2], atol=1e-5)
    other = policy.sample(queries[2:], uniforms=episode_uniforms([12, 13], [2, 3], 1, width))  # the next turn
    assert other.responses != part.responses


def test_one_process_is_the_identity(monkeypatch):
    assert distributed.world_size() == 1 and distributed.is_main()
    assert distributed.shard(6, "--num-envs") == (0, 6) and distributed.weight(torch.tensor(5)) == 1.0
    assert distributed.gather({"a": 1}) == [{"a": 1}] and distributed.all_sum(2.5) == 2.5
    mean, std = distributed.masked_moments(torch.tensor([1.0, 2.0, 9.0]), torch.tensor([True, True, False]))
    assert float(mean) == 1.5 and float(std) == pytest.approx(2**-0.5)
    monkeypatch.setattr(distributed, "world_size", lambda: 4)
    with pytest.raises(ValueError, match=r"--num-prompts \(6\) must be divisible by the number of processes \(4\)"):
        distributed.shard(6, "--num-prompts")
