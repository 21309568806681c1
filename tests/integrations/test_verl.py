"""lm_gym.integrations.verl with verl 0.9's own classes: the parquet files read by verl's ``RLHFDataset``,
batches played by verl's ``AgentLoopWorker`` (the agent loop of multi-turn tasks, verl's
``single_turn_agent`` for single-turn ones) and scored by verl's reward manager loading
``compute_score`` as the trainer does. verl cannot generate on a CPU, so the generation is stubbed
at verl's server boundary: a server manager whose ``generate`` returns the token ids of a fixed
policy's replies. Everything else is verl's code and lm-gym's envs; the rewards are the local env's
for the same seeds and replies.

verl 0.9 pins its own transformers, tokenizers and omegaconf, so it lives in its own venv
(``/work/venv-verl``); elsewhere this module is skipped.
"""

import json
import os
import re

import gymnasium
import pytest

pytest.importorskip("verl", reason="verl 0.9 is installed in its own venv (pip install 'lm-gym[verl]')")

import user_tasks  # noqa: E402,F401  (registers the user tasks)
from hydra import compose, initialize_config_dir  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config  # noqa: E402
from verl.experimental.agent_loop import AgentLoopWorker  # noqa: E402
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as agent_loop_registry  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402
from verl.utils.ray_utils import get_event_loop  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from lm_gym.core.chat import ChatTranscript  # noqa: E402
from lm_gym.core.errors import ConfigurationError  # noqa: E402
from lm_gym.core.registration import split_kwargs  # noqa: E402
from lm_gym.integrations.verl import (  # noqa: E402
    AGENT_LOOP_CONFIG,
    AGENT_NAME,
    ENDED_KEY,
    RETURN_KEY,
    compute_score,
    main,
    parquet_rows,
    write_parquet,
)

WORDLE = ("lm_gym/Wordle-v0", {"num_answers": 20})
COUNT_UP = ("user/CountUp-v0", {})
SAY_THE_WORD = ("user/SayTheWord-v0", {})
VISDIAL = ("lm_gym/VisDial-v0", {"source": "synthetic"})
COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})
ECHO = ("user/Echo-v0", {"num_samples": 6})
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Wordle's guesses: a word, a reply that is not a word, one longer than the action space, then words
WORDLE_GUESSES = ["crane", "zzzzz", "slate" * 20, "about", "pious", "moody"]


def wordle_policy(chat: str, turn: int) -> str:
    return WORDLE_GUESSES[turn]


def visdial_policy(chat: str, turn: int) -> str:
    return ["what color is it?", "is there a dog?", "how many people are there?", "is it sunny?"][turn % 4]


def count_up_policy(chat: str, turn: int) -> str:
    """The next number, except on the second turn: a word the task scores 0."""
    number = int(re.findall(r"Count on from (\d+):", chat)[-1])
    return "seven" if turn == 1 else str(number + 1)


def say_the_word_policy(chat: str, turn: int) -> str:
    word = re.findall(r"Say (\w+)\.", chat)[-1]
    return f"I say {word}"


def single_turn_policy(chat: str, turn: int) -> str:
    """The prompt's last two words: different prompts get different replies and rewards."""
    prompt = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", chat, re.DOTALL)[-1]
    return " ".join(re.findall(r"\w+", prompt)[-2:])


class PolicyServer:
    """verl's server manager (``LLMServerClient.generate``) with a fixed policy instead of a model: the reply
    to the chat of ``prompt_ids`` on its ``turn``-th assistant turn, as token ids ending with ``<|im_end|>``."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.policy = None
        self.requests = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.requests.append((request_id, sampling_params))
        chat = self.tokenizer.decode(prompt_ids)
        turn = chat.count("<|im_start|>assistant") - 1
        reply = self.tokenizer.encode(self.policy(chat, turn), add_special_tokens=False)
        limit = sampling_params.get("max_tokens", len(reply) + 1)  # verl's single-turn loop leaves it to the server
        return TokenOutput(token_ids=reply[: limit - 1] + [self.tokenizer.eos_token_id])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A Qwen2 model's config and a byte-level ChatML tokenizer (every text round-trips), as verl loads them."""
    path = tmp_path_factory.mktemp("qwen2-tiny")
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={char: i for i, char in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHATML
    )
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tokenizer.save_pretrained(path)
    Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        architectures=["Qwen2ForCausalLM"],
    ).save_pretrained(path)
    return path


def verl_config(model_dir, *overrides):
    """verl's PPO trainer config (its own YAML files) for the tiny model."""
    import verl.trainer.config

    with initialize_config_dir(config_dir=os.path.dirname(verl.trainer.config.__file__), version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_dir}",
                "actor_rollout_ref.rollout.name=vllm",
                "data.max_prompt_length=1024",  # byte-level tokens: VisDial's rules are long
                "data.max_response_length=1024",
                *overrides,
            ],
        )


@pytest.fixture(scope="module")
def config(model_dir):
    return verl_config(model_dir, "reward.custom_reward_function.path=pkg://lm_gym.integrations.verl")


@pytest.fixture(scope="module")
def server(model_dir):
    return PolicyServer(AutoTokenizer.from_pretrained(model_dir))


@pytest.fixture(scope="module")
def worker(config, server):
    return AgentLoopWorker(config, server)


def rollout(worker, config, server, parquet, policy, rows, group_size=2):
    """verl's rollout of ``rows`` of ``parquet`` (each ``group_size`` times, as GRPO repeats a prompt)."""
    server.policy = policy
    dataset = RLHFDataset([str(parquet)], worker.tokenizer, config.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[row] for row in rows]))
    return run(worker.generate_sequences(batch.repeat(repeat_times=group_size, interleave=True)))


def run(coroutine):
    """Run ``coroutine`` on verl's event loop (its workers and reward managers schedule work on it)."""
    return get_event_loop().run_until_complete(coroutine)


def trajectory(output, tokenizer, row):
    """Row ``row`` of verl's output: its token ids (prompt and response, unpadded), the response's mask, and the
    replies (the runs of masked-in tokens, decoded as the agent loop decodes them)."""
    prompt = output.batch["prompts"][row][output.batch["attention_mask"][row][: output.batch["prompts"].shape[1]] == 1]
    length = int(output.batch["attention_mask"][row][output.batch["prompts"].shape[1] :].sum())
    response = output.batch["responses"][row][:length].tolist()
    mask = output.batch["response_mask"][row][:length].tolist()
    runs, current = [], []
    for token, masked_in in zip(response, mask):
        if masked_in:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    runs += [current] if current else []
    replies = [tokenizer.decode(run, skip_special_tokens=True) for run in runs]
    return prompt.tolist() + response, mask, runs, replies


def local_episode(env_id, env_kwargs, seed, replies, split="train"):
    """The local env's episode of ``seed`` on ``split`` played with ``replies`` (cut to the action space): its
    rewards and chat."""
    env = gymnasium.make(env_id, **split_kwargs(env_id, env_kwargs, split))
    observation, _ = env.reset(seed=seed)
    chat = ChatTranscript.start(env, observation)
    rewards = []
    for reply in replies:
        action = reply[: env.action_space.max_length]
        observation, reward, terminated, truncated, _ = env.step(action)
        chat.record(action, observation, terminated, truncated)
        rewards.append(float(reward))
    return rewards, chat


@pytest.mark.parametrize(
    ("task", "policy"),
    [
        (WORDLE, wordle_policy),
        (VISDIAL, visdial_policy),
        (COUNT_UP, count_up_policy),
        (SAY_THE_WORD, say_the_word_policy),
    ],
    ids=["wordle", "visdial", "count-up", "say-the-word"],
)
def test_the_agent_loop_plays_the_local_envs_episodes(worker, config, server, tmp_path, task, policy):
    env_id, env_kwargs = task
    paths = write_parquet(env_id, tmp_path, env_kwargs, splits=["train"], num_prompts=3, imports=["user_tasks"])
    assert [path.name for path in paths] == ["train.parquet", AGENT_LOOP_CONFIG]
    output = rollout(worker, config, server, paths[0], policy, rows=[0, 1, 2])
    tokenizer = worker.tokenizer
    trajectories = []
    for row in range(6):
        seed = row // 2  # a GRPO group: the rollouts of one row play its episode
        tokens, mask, runs, replies = trajectory(output, tokenizer, row)
        rewards, chat = local_episode(env_id, env_kwargs, seed, replies)
        assert chat.done  # the env ended every episode, none ran out of response tokens
        assert list(output.non_tensor_batch["turn_scores"][row]) == rewards
        assert float(output.batch["rm_scores"][row].sum()) == pytest.approx(sum(rewards))
        assert output.non_tensor_batch[RETURN_KEY][row] == pytest.approx(sum(rewards))
        assert output.non_tensor_batch[ENDED_KEY][row] == 1.0
        # the tokens are the chat template of the local env's chat with the model's replies as it wrote them
        # (the env plays an over-long one cut), the last reply ending at its <|im_end|>
        written = iter(replies)
        messages = [
            {**message, "content": next(written)} if message["role"] == "assistant" else message
            for message in chat.messages
        ]
        assert tokens == tokenizer.apply_chat_template(messages, tokenize=True)["input_ids"][:-1]
        # the model's tokens (its replies with their <|im_end|>) are masked in, the env's answers out
        eos = [tokenizer.eos_token_id]
        assert runs == [tokenizer.encode(reply, add_special_tokens=False) + eos for reply in replies]
        assert sum(mask) == sum(map(len, runs))
        trajectories.append((tokens, mask))
    assert trajectories[0] == trajectories[1] and trajectories[2] == trajectories[3]


def test_wordle_bad_guesses_get_the_envs_penalty(worker, config, server, tmp_path):
    env_id, env_kwargs = WORDLE
    paths = write_parquet(env_id, tmp_path, env_kwargs, splits=["validation"], num_prompts=2)
    output = rollout(worker, config, server, paths[0], wordle_policy, rows=[1], group_size=1)
    _, _, _, replies = trajectory(output, worker.tokenizer, 0)
    assert replies == WORDLE_GUESSES  # the over-long reply is the model's; the env plays its first 64 characters
    rewards, chat = local_episode(env_id, env_kwargs, 1, replies, split="validation")
    assert len(replies[2]) > gymnasium.make(env_id, **env_kwargs).action_space.max_length
    assert rewards[1] == rewards[2] == -1.0  # Wordle's penalty of a guess that is not a word
    assert list(output.non_tensor_batch["turn_scores"][0]) == rewards


def test_a_group_shares_its_seed_and_seeds_differ(worker, config, server, tmp_path):
    env_id, env_kwargs = WORDLE
    paths = write_parquet(env_id, tmp_path, env_kwargs, splits=["train"], num_prompts=8)
    output = rollout(worker, config, server, paths[0], wordle_policy, rows=list(range(8)), group_size=3)
    feedback = [worker.tokenizer.decode(trajectory(output, worker.tokenizer, row)[0]) for row in range(24)]
    for group in range(8):
        assert len(set(feedback[3 * group : 3 * group + 3])) == 1
    assert len(set(feedback)) > 1  # the seeds pick different hidden words
    assert [info["lm_gym_seed"] for info in output.non_tensor_batch["extra_info"][::3]] == list(range(8))


def yaml_worker(config, server, monkeypatch):
    """verl's worker for ``config``, whose agent_loop.yaml registers the agent loop in verl's (process-wide)
    registry: the registry's entry is put back after the test."""
    monkeypatch.setitem(agent_loop_registry, AGENT_NAME, agent_loop_registry[AGENT_NAME])
    return AgentLoopWorker(config, server)


def test_an_episode_stops_when_the_response_is_full(model_dir, server, tmp_path, monkeypatch):
    env_id, env_kwargs = WORDLE
    paths = write_parquet(env_id, tmp_path, env_kwargs, splits=["train"], num_prompts=1)
    # the agent loop as verl's workers find it in a training run: from the agent_loop.yaml written beside the rows
    config = verl_config(
        model_dir, "data.max_response_length=40", f"actor_rollout_ref.rollout.agent.agent_loop_config_path={paths[1]}"
    )
    worker = yaml_worker(config, server, monkeypatch)
    output = rollout(worker, config, server, paths[0], wordle_policy, rows=[0], group_size=1)
    _, mask, _, replies = trajectory(output, worker.tokenizer, 0)
    rewards, chat = local_episode(env_id, env_kwargs, 0, replies)
    assert len(mask) <= 40 and len(replies) == 2 and not chat.done
    assert output.non_tensor_batch[ENDED_KEY][0] == 0.0
    assert float(output.batch["rm_scores"][0].sum()) == pytest.approx(sum(rewards))  # the return so far
    second_reply = mask.index(1, mask.index(0))  # the env's answer counts against the response length too
    assert [params["max_tokens"] for _, params in server.requests[-2:]] == [40, 40 - second_reply]


def test_the_agent_loop_config_caps_the_replies(model_dir, server, tmp_path, monkeypatch):
    env_id, env_kwargs = WORDLE
    paths = write_parquet(env_id, tmp_path, env_kwargs, splits=["train"], num_prompts=1)
    paths[1].write_text(paths[1].read_text() + "  max_new_tokens: 4\n")
    config = verl_config(model_dir, f"actor_rollout_ref.rollout.agent.agent_loop_config_path={paths[1]}")
    worker = yaml_worker(config, server, monkeypatch)
    output = rollout(worker, config, server, paths[0], wordle_policy, rows=[0], group_size=1)
    _, _, runs, replies = trajectory(output, worker.tokenizer, 0)
    assert replies == [guess[:3] for guess in WORDLE_GUESSES]  # 3 letters and <|im_end|>: not words
    assert all(len(run) == 4 for run in runs) and {params["max_tokens"] for _, params in server.requests[-6:]} == {4}
    rewards, _ = local_episode(env_id, env_kwargs, 0, replies)
    assert list(output.non_tensor_batch["turn_scores"][0]) == rewards == [-1.0] * 6


@pytest.mark.parametrize("task", [COMMONGEN, ECHO], ids=["commongen", "echo"])
def test_single_turn_rows_are_scored_as_the_env_scores(worker, config, server, tmp_path, task):
    env_id, env_kwargs = task
    paths = write_parquet(env_id, tmp_path, env_kwargs, splits=["train", "validation"], num_prompts=4,
                          imports=["user_tasks"])  # fmt: skip
    assert [path.name for path in paths] == ["train.parquet", "validation.parquet"]
    output = rollout(worker, config, server, paths[1], single_turn_policy, rows=[0, 3])
    assert "rm_scores" not in output.batch.keys()  # verl's reward manager scores single-turn rollouts
    manager = load_reward_manager(config, worker.tokenizer)  # compute_score from reward.custom_reward_function
    env = gymnasium.make(env_id, **split_kwargs(env_id, env_kwargs, "validation"))
    scores = []
    for row, index in enumerate([0, 0, 3, 3]):
        result = run(manager.run_single(output[row : row + 1]))
        scores.append(result["reward_score"])
        _, _, _, replies = trajectory(output, worker.tokenizer, row)
        env.reset(options={"index": index})
        assert result["reward_score"] == env.step(replies[0][: env.action_space.max_length])[1]
        assert list(output.non_tensor_batch["reward_model"][row]["ground_truth"]) == list(
            env.unwrapped.samples[index].references
        )
    assert scores[0] == scores[1] and scores[2] == scores[3]  # a group: one sample, one policy
    assert env_id != COMMONGEN[0] or scores[0] != scores[2]


def test_compute_score_is_the_envs_step(tmp_path):
    env_id, env_kwargs = COMMONGEN
    rows = parquet_rows(env_id, "train", env_kwargs, num_prompts=3)
    env = gymnasium.make(env_id, split="train", **env_kwargs)
    max_chars = env.action_space.max_length
    for row, completion in zip(rows, ["a dog runs in the park", "", "x" * (max_chars + 50)]):
        index = row["extra_info"]["lm_gym_index"]
        env.reset(options={"index": index})
        expected = env.step(completion[:max_chars])[1]
        assert compute_score(env_id, completion, row["reward_model"]["ground_truth"], row["extra_info"]) == expected
    wordle = parquet_rows(*WORDLE[:1], "train", WORDLE[1], num_prompts=1)[0]
    with pytest.raises(ConfigurationError, match=AGENT_NAME):
        compute_score(WORDLE[0], "crane", "", wordle["extra_info"])
    with pytest.raises(ConfigurationError, match="extra_info must hold"):
        compute_score(env_id, "a dog", "", {"index": 0})


def test_the_rows_are_the_chat_view(tmp_path):
    env_id, env_kwargs = WORDLE
    rows = parquet_rows(env_id, "train", env_kwargs, num_prompts=2)
    env = gymnasium.make(env_id, **env_kwargs)
    observation, _ = env.reset(seed=1)
    assert rows[1]["prompt"] == ChatTranscript.start(env, observation).messages
    assert rows[1]["extra_info"]["lm_gym_seed"] == 1 and json.loads(rows[1]["extra_info"]["lm_gym_env_kwargs"]) == {
        "num_answers": 20
    }
    echo = parquet_rows(ECHO[0], "train", ECHO[1], imports=["user_tasks"])
    assert len(echo) == 6 and echo[2]["prompt"][-1] == {"role": "user", "content": "Repeat: word2"}
    assert echo[2]["agent_name"] == "single_turn_agent" and echo[2]["extra_info"]["lm_gym_imports"] == ["user_tasks"]


def test_a_row_that_is_not_the_episode_is_refused(worker, config, server, tmp_path):
    from datasets import Dataset

    rows = parquet_rows(*COUNT_UP[:1], "train", COUNT_UP[1], num_prompts=1)
    rows[0]["prompt"][-1]["content"] = "Count on from 99:"  # not episode 0's first observation
    Dataset.from_list(rows).to_parquet(str(tmp_path / "train.parquet"))
    with pytest.raises(ConfigurationError, match="not the chat of episode 0"):
        rollout(worker, config, server, tmp_path / "train.parquet", count_up_policy, rows=[0], group_size=1)


def test_the_command_line_writes_the_files(tmp_path, capsys):
    assert main(["parquet", "lm_gym/Wordle-v0", str(tmp_path), "--env-kwargs", '{"num_answers": 20}',
                 "--num-prompts", "4"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert f"agent_loop_config_path={tmp_path / AGENT_LOOP_CONFIG}" in printed
    assert (tmp_path / AGENT_LOOP_CONFIG).read_text() == (
        f"- name: {AGENT_NAME}\n  _target_: lm_gym.integrations.verl.LMGymAgentLoop\n"
    )
    assert main(["parquet", "lm_gym/Wordle-v0", str(tmp_path), "--env-kwargs", "[1]"]) == 2
    assert "--env-kwargs must be a JSON object" in capsys.readouterr().err
    assert main(["parquet", "user/Echo-v0", str(tmp_path / "echo"), "--import", "user_tasks", "--splits", "test"]) == 0
    printed = capsys.readouterr().out
    assert f"data.val_files={tmp_path / 'echo' / 'test.parquet'}" in printed
    assert "reward.custom_reward_function.path=pkg://lm_gym.integrations.verl" in printed
