# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""lm-gym's baselines and the TRL integration play a served task (``--env-id lm_gym/Remote-v0``):
the same seeds give the same episodes, the same tokenizer and the same evaluation as the local task;
the server's ``/lm-gym`` routes (task, tokenizer corpus, corpus metrics) answer as the local env."""

from __future__ import annotations

import http.client
import json
import urllib.request

import gymnasium
import pytest

from lm_gym.core.errors import ConfigurationError

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from conftest import load_baseline  # noqa: E402
from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

from lm_gym.results import load_result  # noqa: E402

IMDB_KWARGS = {"source": "synthetic"}
WORDLE_KWARGS = {"num_answers": 100}
SPLITS = ("train", "validation")
GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2}'


def post(url, path, body):
    request = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_grpo_on_a_served_task_plays_and_evaluates_as_the_local_run(start_server, tmp_path):
    """baselines/grpo.py with --env-id lm_gym/Remote-v0: the same curves and evaluations as on the local task."""
    grpo = load_baseline("grpo")
    url, _, _ = start_server("lm_gym/Wordle-v0", env_kwargs=WORDLE_KWARGS)
    settings = {
        "model_config": GPT2_CONFIG,
        "num_prompts": 2,
        "group_size": 2,
        "iterations": 2,
        "num_minibatches": 1,
        "eval_episodes": 4,
        "eval_batch_size": 4,
        "eval_every": 0,
        "save_every": 0,
        "seed": 3,
    }
    local = grpo.main(
        grpo.Args(
            env_id="lm_gym/Wordle-v0", env_kwargs=json.dumps(WORDLE_KWARGS), out_dir=str(tmp_path / "l"), **settings
        )
    )
    remote = grpo.main(
        grpo.Args(
            env_id="lm_gym/Remote-v0", env_kwargs=json.dumps({"url": url}), out_dir=str(tmp_path / "r"), **settings
        )
    )
    saved = load_result(tmp_path / "r")  # validates against lm_gym.results' schema
    assert saved["env_id"] == "lm_gym/Remote-v0"
    assert remote["initial_eval"] == local["initial_eval"] and remote["final_eval"] == local["final_eval"]
    assert remote["samples"] == local["samples"]
    for row_r, row_l in zip(remote["curves"], local["curves"], strict=True):
        assert row_r["mean_return"] == row_l["mean_return"] and row_r["pg_loss"] == row_l["pg_loss"]


def test_ppo_on_a_served_mixture_one_server_per_split_evaluates_each_task_as_local(start_server, tmp_path):
    """baselines/ppo.py with url={"train": ..., "validation": ...}: each task's evaluation, corpus metrics
    included (computed by the server per task), equals the local run's."""
    ppo = load_baseline("ppo")
    mixture = {
        "tasks": {"lm_gym/IMDB-v0": 1.0, "lm_gym/Wordle-v0": 1.0},
        "task_kwargs": {"lm_gym/IMDB-v0": IMDB_KWARGS},
    }
    urls = {split: start_server("lm_gym/Mixture-v0", env_kwargs={**mixture, "split": split})[0] for split in SPLITS}
    settings = {
        "model_config": GPT2_CONFIG,
        "num_envs": 4,
        "update_epochs": 1,
        "iterations": 1,
        "num_minibatches": 1,
        "eval_episodes": 6,
        "eval_batch_size": 6,
        "eval_every": 0,
        "save_every": 0,
    }
    local = ppo.main(
        ppo.Args(env_id="lm_gym/Mixture-v0", env_kwargs=json.dumps(mixture), out_dir=str(tmp_path / "l"), **settings)
    )
    remote = ppo.main(
        ppo.Args(
            env_id="lm_gym/Remote-v0", env_kwargs=json.dumps({"url": urls}), out_dir=str(tmp_path / "r"), **settings
        )
    )
    assert remote["final_eval"] == local["final_eval"] and remote["tasks"] == local["tasks"]
    assert "corpus_distinct_2" in remote["tasks"]["lm_gym/IMDB-v0"]["final_eval"]
    assert remote["curves"][0]["mean_return"] == local["curves"][0]["mean_return"]


def test_the_served_task_and_its_routes(start_server):
    from lm_gym.core.task_setup import task_env
    from lm_gym.serve.client import RemoteVectorEnv
    from lm_toolkit.tasks import Lengths, task_lengths, task_setup, vector_env_for_split

    url, _, _ = start_server("lm_gym/IMDB-v0", env_kwargs=IMDB_KWARGS)
    task = json.load(urllib.request.urlopen(f"{url}/lm-gym/task", timeout=10))
    local = gymnasium.make("lm_gym/IMDB-v0", **IMDB_KWARGS).unwrapped
    assert task["env_id"] == "lm_gym/IMDB-v0" and task["split"] == "train" and task["single_turn"] is True
    assert task["token_level_defaults"] == local.token_level_defaults
    assert task["generation_defaults"] == local.generation_defaults and task["num_samples"] == len(local.samples)

    venv = vector_env_for_split("lm_gym/Remote-v0", {"url": url}, "train", 2)
    assert isinstance(venv, RemoteVectorEnv) and task_env(venv) is venv and venv.split == "train"
    venv.close()
    played = task_setup("lm_gym/Remote-v0", {"url": url}, {"train": 1})
    assert isinstance(played.envs["train"], RemoteVectorEnv) and played.task is played.envs["train"]
    assert Lengths.of(played.token_settings) == task_lengths("lm_gym/IMDB-v0")  # the server's defaults
    played.task.close()
    with pytest.raises(ValueError, match="come from its server: use task_setup"):
        task_lengths("lm_gym/Remote-v0")

    # the split: a plain url serves one; another is refused, naming both and the way out
    with pytest.raises(ConfigurationError, match=r"'validation'.*serves the split 'train'.*url=\{'train'"):
        vector_env_for_split("lm_gym/Remote-v0", {"url": url}, "validation", 2)
    with pytest.raises(ConfigurationError, match=r"only the splits \['train'\]"):
        vector_env_for_split("lm_gym/Remote-v0", {"url": {"train": url}}, "validation", 2)
    with pytest.raises(ConfigurationError, match="pass split="):
        gymnasium.make_vec("lm_gym/Remote-v0", 2, vectorization_mode="vector_entry_point", url={"train": url})
    vector_env_for_split(
        "lm_gym/Remote-v0", {"url": {"train": url, "validation": "http://127.0.0.1:9"}}, "train", 1
    ).close()
    scalar = gymnasium.make("lm_gym/Remote-v0", url={"train": url}, split="train")
    assert scalar.unwrapped.token_level_defaults == local.token_level_defaults
    scalar.close()

    # bad corpus-metrics requests get typed errors, and the server goes on
    for body, error_type in (
        (b"{not json", "ProtocolError"),
        (b'{"episodes": []}', "ProtocolError"),
        (b'{"episodes": [{"utterance": "x"}]}', "ProtocolError"),
        (b'{"episodes": [{}], "code": "import os"}', "ProtocolError"),
        (b'{"episodes": [{}], "task": "lm_gym/Wordle-v0"}', "ConfigurationError"),
    ):
        status, reply = post(url, "/lm-gym/corpus-metrics", body)
        assert (status, reply["error_type"]) == (400, error_type), reply
    # a body over --max-message-bytes is refused on its Content-Length, before it is read
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    connection.putrequest("POST", "/lm-gym/corpus-metrics")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(2 << 20))
    connection.endheaders()
    reply = connection.getresponse()
    assert reply.status == 413 and json.loads(reply.read())["error_type"] == "LimitExceededError"
    connection.close()
    assert post(url, "/lm-gym/corpus-metrics", b'{"episodes": [{}]}')[0] == 400  # the server goes on


def test_corpus_metrics_of_a_served_single_turn_task_are_the_local_ones(start_server):
    """The evaluation's corpus metrics (lm_gym.metrics.corpus_metrics) of a served task, by its server."""
    from lm_gym.metrics import corpus_metrics
    from lm_toolkit.tasks import vector_env_for_split

    url, _, _ = start_server("lm_gym/IMDB-v0", env_kwargs={**IMDB_KWARGS, "split": "validation"})
    finals = {}
    for env_id, kwargs in (("lm_gym/IMDB-v0", IMDB_KWARGS), ("lm_gym/Remote-v0", {"url": url})):
        venv = vector_env_for_split(env_id, kwargs, "validation", 4)
        venv.reset(seed=5)
        _, _, _, _, infos = venv.step(("a fine film", "bad", "moving and warm, a joy", ""))
        finals[env_id] = [{key: infos[key][i] for key in ("prompt", "utterance", "references")} for i in range(4)]
        if env_id == "lm_gym/Remote-v0":
            remote = corpus_metrics(venv, finals[env_id])
        else:
            local = corpus_metrics(venv, finals[env_id])
        venv.close()
    assert [f["prompt"] for f in finals["lm_gym/Remote-v0"]] == [f["prompt"] for f in finals["lm_gym/IMDB-v0"]]
    assert remote == local and remote


def test_the_tokenizer_trained_on_the_served_corpus_is_the_local_one(start_server, monkeypatch, tmp_path):
    """The same BPE tokenizer, trained apart (two caches), also when the corpus is strided."""
    import lm_gym.core.tokenizer
    from lm_gym.core.task_setup import policy_tokenizer, task_env
    from lm_toolkit.tasks import vector_env_for_split

    monkeypatch.setattr(lm_gym.core.tokenizer, "MAX_TRAINING_CHARS", 20_000)  # the corpus is strided
    url, _, _ = start_server("lm_gym/IMDB-v0", env_kwargs=IMDB_KWARGS)
    local_env = gymnasium.make("lm_gym/IMDB-v0", **IMDB_KWARGS).unwrapped
    _, corpus = local_env.tokenizer_corpus()
    assert lm_gym.core.tokenizer.training_texts(corpus).stride > 1
    tokenizers = []
    for name, task in (("local", local_env), ("remote", None)):
        monkeypatch.setenv("LM_GYM_CACHE", str(tmp_path / name))
        if task is None:
            venv = vector_env_for_split("lm_gym/Remote-v0", {"url": url}, "train", 1)
            task = task_env(venv)
        tokenizers.append(policy_tokenizer(task, None))
    assert sorted((tmp_path / "local").rglob("tokenizer.json"))[0].relative_to(tmp_path / "local") == sorted(
        (tmp_path / "remote").rglob("tokenizer.json")
    )[0].relative_to(tmp_path / "remote")
    local, remote = tokenizers
    assert remote.get_vocab() == local.get_vocab() and len(remote.get_vocab()) > 300
    assert remote.backend_tokenizer.to_str() == local.backend_tokenizer.to_str()
    venv.close()


def test_trl_prompts_and_rewards_of_a_served_task(start_server):
    """lm_gym.integrations.trl with env_id lm_gym/Remote-v0: the local task's dataset and rewards."""
    pytest.importorskip("datasets")
    from lm_gym.integrations.trl import prompt_dataset, reward_function, rollout_function

    url, _, _ = start_server("lm_gym/IMDB-v0", env_kwargs=IMDB_KWARGS)
    local = prompt_dataset("lm_gym/IMDB-v0", "train", num_prompts=5, **IMDB_KWARGS)
    remote = prompt_dataset("lm_gym/Remote-v0", "train", num_prompts=5, url=url)
    assert remote.to_list() == local.to_list()
    completions = ["a fine film", "bad", "moving and warm", "", "awful, dull"]
    columns = {"lm_gym_index": local["lm_gym_index"]}
    rewards_l = reward_function("lm_gym/IMDB-v0", "train", **IMDB_KWARGS)(local["prompt"], completions, **columns)
    rewards_r = reward_function("lm_gym/Remote-v0", "train", url=url)(remote["prompt"], completions, **columns)
    assert rewards_r == rewards_l
    with pytest.raises(ConfigurationError, match="serves the split 'train'"):
        prompt_dataset("lm_gym/Remote-v0", "validation", num_prompts=2, url=url)

    url, _, _ = start_server("lm_gym/Wordle-v0", env_kwargs=WORDLE_KWARGS)
    local = prompt_dataset("lm_gym/Wordle-v0", num_prompts=3, **WORDLE_KWARGS)
    remote = prompt_dataset("lm_gym/Remote-v0", num_prompts=3, url=url)
    assert remote.to_list() == local.to_list()
    rollout_l = rollout_function("lm_gym/Wordle-v0", num_prompts=3, **WORDLE_KWARGS)
    rollout_r = rollout_function("lm_gym/Remote-v0", num_prompts=3, url=url)
    assert (rollout_r.starts, rollout_r.max_new_tokens) == (rollout_l.starts, rollout_l.max_new_tokens)
    columns = {"lm_gym_seed": [0, 1, 2], "lm_gym_return": [1.0, -2.0, 0.5]}
    assert reward_function("lm_gym/Remote-v0", url=url)(remote["prompt"], ["a", "b", "c"], **columns) == [
        1.0,
        -2.0,
        0.5,
    ]
