"""lm_gym.integrations.trl_environment: TRL's ``GRPOTrainer(environment_factory=...)`` plays lm-gym tasks through
their named tools, locally and through OpenEnv's client against ``python -m lm_gym.serve``, and every reward it
trains on is the one a local env gives when it replays the same seed and actions."""

from __future__ import annotations

import inspect
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import gymnasium
import pytest

import lm_gym
from lm_gym.core.errors import ConfigurationError
from lm_gym.core.registration import split_kwargs
from lm_gym.integrations.trl import INDEX_COLUMN, SEED_COLUMN, prompt_dataset
from lm_gym.integrations.trl_environment import (
    DEFAULT_TOOL_ARGUMENT,
    DEFAULT_TOOL_NAME,
    environment_dataset,
    environment_factory,
)

WORDLE = ("lm_gym/Wordle-v0", {"num_answers": 20})
# trained on: unknown words cost less than invalid ones, so the games of a group end with different returns
PLAYED_WORDLE = {"num_answers": 20, "unknown_word_penalty": 0.5}
UNKNOWN_WORDS = ["qqqqq", "zzzzz", "xyzzy", "abcde"]
VISDIAL = ("lm_gym/VisDial-v0", {"source": "synthetic"})
COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})
COUNT_UP = ("user/CountUp-v0", {})
TOKEN = "lm-gym-test-token-0123456789"


@pytest.fixture(autouse=True)
def quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


@pytest.fixture(scope="module", autouse=True)
def user_tasks_registered():
    """``user/CountUp-v0`` and friends (tests/user_tasks.py), and a user's task that names its tool."""
    import user_tasks

    class SayNext(user_tasks.CountUp):
        """Count on: the observation shows a number; saying the next one scores 1 a turn."""

        tool_name = "say"
        tool_argument = "number"
        tool_argument_description = "the number after the one shown, in digits"

    before = set(gymnasium.registry)
    lm_gym.register("user_tool/SayNext-v0", SayNext, turns=2)
    yield
    for env_id in set(gymnasium.registry) - before:
        del gymnasium.registry[env_id]


def replay(env_id, env_kwargs, environment):
    """The per-step rewards and whether it ended, of ``environment``'s episode replayed in a fresh local env."""
    env = gymnasium.make(env_id, **env_kwargs)
    env.reset(seed=environment.seed, options=None if environment.index is None else {"index": environment.index})
    rewards, done = [], False
    for action in environment.actions:
        assert not done
        _, reward, terminated, truncated, _ = env.step(action)
        rewards.append(float(reward))
        done = terminated or truncated
    return rewards, done


# ---- the class TRL wants --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "name", "argument"),
    [(WORDLE, "guess", "word"), (VISDIAL, "ask", "question"), (COUNT_UP, DEFAULT_TOOL_NAME, DEFAULT_TOOL_ARGUMENT),
     (("user_tool/SayNext-v0", {}), "say", "number")],
    ids=["wordle", "visdial", "user-default", "user-named"],
)  # fmt: skip
def test_the_task_is_one_named_tool_with_its_schema(task, name, argument):
    from transformers.utils import get_json_schema

    environment = environment_factory(task[0], **task[1])
    instance = environment()  # TRL's no-argument constructor
    public = [member for member, _ in inspect.getmembers(environment, inspect.isfunction) if member[0] != "_"]
    assert sorted(public) == sorted([name, "get_reward", "reset"])  # TRL's tools: all but reset and get_reward
    schema = get_json_schema(getattr(instance, name))["function"]
    assert schema["name"] == name and schema["parameters"]["required"] == [argument]
    assert schema["parameters"]["properties"][argument]["type"] == "string"
    rules = gymnasium.make(task[0], **task[1]).unwrapped.chat_system_message()
    assert rules.split("\n\n")[0] in schema["description"]  # the task's own rules
    if name != DEFAULT_TOOL_NAME:
        described = schema["parameters"]["properties"][argument]["description"]
        assert described == " ".join(gymnasium.make(task[0], **task[1]).unwrapped.tool_argument_description.split())


def test_a_wordle_episode_through_the_tool_is_the_local_envs():
    env_id, kwargs = WORDLE
    dataset = environment_dataset(env_id, num_prompts=4, **kwargs)
    row = dataset[3]
    assert (
        row[SEED_COLUMN] == 3 and row["prompt"][0]["role"] == "system" and "guess(word)" in row["prompt"][0]["content"]
    )
    environment = environment_factory(env_id, **kwargs)()
    assert environment.reset(**row) is None  # the row's prompt already shows the first observation
    first = gymnasium.make(env_id, **kwargs).reset(seed=3)[0]
    # a row of TRL's own kind (an instruction, no observation): the observation is appended after it
    assert environment.reset(**{SEED_COLUMN: 3, "prompt": [{"role": "user", "content": "Play."}]}) == "\n\n" + first
    assert environment.reset(**{SEED_COLUMN: 3}) == first

    assert environment.guess(word="crane") == replay_answer(env_id, kwargs, 3, ["crane"])
    assert environment.guess(word="xx") == "invalid"  # Wordle's invalid guess: its -1, a turn used
    refused = environment.guess(word="a" * 65)  # over the action space: the env refuses, nothing is played
    assert refused.startswith("Invalid word:") and "at most 64" in refused
    assert environment.guess(word=12345).startswith("Invalid word: action must be a str")
    assert environment.guess(guess="crane").startswith("guess takes one argument, word")
    assert environment.guess("sloth", "x").startswith("guess takes one argument, word")
    assert environment.guess("pudgy") == replay_answer(env_id, kwargs, 3, ["crane", "xx", "pudgy"])  # as in Python
    assert environment.actions == ["crane", "xx", "pudgy"] and environment.model_turns == 3
    assert [call["played"] for call in environment.calls] == [True, True, False, False, False, False, True]
    assert environment.rewards == replay(env_id, kwargs, environment)[0] == [-1.0, -1.0, -1.0]
    # the model stops: the three turns it did not take are played as the empty utterance (invalid, -1 each)
    assert environment.get_reward() == -6.0 == environment.get_reward()
    rewards, done = replay(env_id, kwargs, environment)
    assert done and environment.done and environment.actions == ["crane", "xx", "pudgy", "", "", ""]
    assert environment.model_turns == 3 and sum(rewards) == -6.0 and environment.info["metrics"]["num_guesses"] == 6
    assert environment.guess(word="crane") == "The episode has ended: guess plays nothing more."
    assert len(environment.actions) == 6


def replay_answer(env_id, kwargs, seed, actions):
    """What a chat of the local env answers the last of ``actions`` (the tool's answer)."""
    env = gymnasium.make(env_id, **kwargs)
    previous = env.reset(seed=seed)[0]
    for action in actions:
        observation = env.step(action)[0]
        answer = env.unwrapped.chat_user_message(previous, action, observation)
        previous = observation
    return answer


def test_the_turn_that_ends_the_game_says_so_and_the_reward_is_its_return():
    env_id, kwargs = WORDLE
    environment = environment_factory(env_id, **kwargs)()
    environment.reset(**{SEED_COLUMN: 0})
    for word in gymnasium.make(env_id, **kwargs).unwrapped.vocabulary.answers:  # solved, or six guesses
        said = environment.guess(word=word)
        if environment.done:
            break
    assert environment.model_turns == len(environment.actions) <= 6
    assert said.startswith("The episode has ended") and said.endswith(f"Its return: {environment.get_reward():g}.")
    rewards, done = replay(env_id, kwargs, environment)
    assert done and rewards == environment.rewards and environment.get_reward() == sum(rewards)


@pytest.mark.parametrize(
    ("task", "column", "moves"),
    [(COMMONGEN, INDEX_COLUMN, ["a dog runs in the park"]), (("user/Echo-v0", {}), INDEX_COLUMN, ["word3"]),
     (("user/SayTheWord-v0", {}), SEED_COLUMN, ["apple"]), (COUNT_UP, SEED_COLUMN, ["4", "5", "9"]),
     (VISDIAL, SEED_COLUMN, ["what color is the dog?", "is it day?"])],
    ids=["commongen", "user-single-turn", "user-one-step", "user-multi-turn", "visdial"],
)  # fmt: skip
def test_every_kind_of_task_plays_as_its_local_env(task, column, moves):
    env_id, kwargs = task
    dataset = environment_dataset(env_id, "validation", num_prompts=4, **kwargs)
    assert dataset.column_names.count(column) == 1
    environment = environment_factory(env_id, "validation", **kwargs)()
    tool = getattr(environment, environment.tool.name)
    for row in (dataset[2], dataset[3]):  # an instance is reset with row after row, as TRL reuses them
        assert environment.reset(**row) is None
        for move in moves:
            tool(**{environment.tool.argument: move})
        total = environment.get_reward()
        rewards, done = replay(env_id, split_kwargs(env_id, kwargs, "validation"), environment)
        assert done and rewards == environment.rewards and total == pytest.approx(sum(rewards))
        assert environment.actions[: environment.model_turns] == moves[: environment.model_turns]


def test_misuse_is_named():
    env_id, kwargs = WORDLE
    environment = environment_factory(env_id, **kwargs)()
    with pytest.raises(ConfigurationError, match="needs 'lm_gym_seed'.*or 'lm_gym_index'"):
        environment.reset(prompt=[{"role": "user", "content": "Play."}])
    text_rows = prompt_dataset(env_id, num_prompts=1, **kwargs)  # chat=False: text prompts
    with pytest.raises(ConfigurationError, match="chat=True"):
        environment.reset(**text_rows[0])
    with pytest.raises(ConfigurationError, match="before reset"):
        environment_factory(env_id, **kwargs)().get_reward()
    with pytest.raises(ConfigurationError, match="served task: give the server's url"):
        environment_factory("lm_gym/Remote-v0")
    with pytest.raises(ConfigurationError, match="token is a server's"):
        environment_factory(env_id, token=TOKEN)
    with pytest.raises(ConfigurationError, match="kwargs are the server's"):
        environment_factory(env_id, url="http://127.0.0.1:1", num_answers=20)

    import user_tasks

    class Clash(user_tasks.CountUp):
        tool_name = "reset"

    class NotAName(user_tasks.CountUp):
        tool_argument = "two words"

    lm_gym.register("user_tool/Clash-v0", Clash)
    lm_gym.register("user_tool/NotAName-v0", NotAName)
    with pytest.raises(ConfigurationError, match="Clash.tool_name must be a public name other than reset"):
        environment_factory("user_tool/Clash-v0")
    with pytest.raises(ConfigurationError, match="NotAName.tool_argument must be a Python identifier"):
        environment_factory("user_tool/NotAName-v0")


# ---- GRPOTrainer itself ------------------------------------------------------------------------------------

TEMPLATE_FILE = "qwen2_5.jinja"  # TRL's copy of Qwen2.5's chat template: tools, and a parser TRL knows
SPECIAL_TOKENS = ["<|im_end|>", "<|im_start|>", "<|pad|>"]


def chat_tokenizer(corpus, added):
    """A byte-level BPE trained on ``corpus``, with Qwen2.5's chat template and its special tokens, plus ``added``."""
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>")
    tokenizer.add_tokens(added)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / TEMPLATE_FILE).read_text("utf-8")
    return tokenizer


def tool_calling_lm(environment, dataset, moves, steps=40, seed=0):
    """A one-layer GPT-2 and a tokenizer with a tool-calling chat template, built offline (no model hub) and
    trained for a few steps to answer a prompt of ``dataset`` with a call of ``environment``'s tool on one of
    ``moves``: a tiny instruct model that calls the tool from the first GRPO step. The call's fixed text (up to
    the argument's value, and after it) is one token each, so a few steps teach it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tool = environment.tool
    call = [f'<tool_call>\n{{"name": "{tool.name}", "arguments": {{"{tool.argument}": "', '"}}\n</tool_call>']
    tools = [getattr(environment(), tool.name)]
    render = chat_tokenizer([], []).apply_chat_template
    prompts = [render(row["prompt"], tools=tools, add_generation_prompt=True, tokenize=False) for row in dataset]
    tokenizer = chat_tokenizer(prompts + [call[0] + move + call[1] for move in moves], call)
    prompt_ids = [tokenizer(prompt)["input_ids"] for prompt in prompts]
    replies = [tokenizer(call[0] + move + call[1])["input_ids"] + [tokenizer.eos_token_id] for move in moves]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    config = GPT2Config(
        vocab_size=len(tokenizer), n_layer=1, n_embd=32, n_head=2, n_positions=1024,
        bos_token_id=eos, eos_token_id=eos, pad_token_id=pad,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rng = random.Random(seed)
    for _ in range(steps):
        rows = [(rng.choice(prompt_ids), rng.choice(replies)) for _ in range(8)]
        width = max(len(p) + len(r) for p, r in rows)
        ids = [p + r + [pad] * (width - len(p) - len(r)) for p, r in rows]
        labels = [[-100] * len(p) + r + [-100] * (width - len(p) - len(r)) for p, r in rows]
        mask = [[1] * (len(p) + len(r)) + [0] * (width - len(p) - len(r)) for p, r in rows]
        loss = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(labels)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model, tokenizer


@pytest.fixture
def one_thread():
    """One torch thread: on a shared two-core machine the tiny model's steps run several times faster."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class EpisodeRecorder:
    """A reward function that records each rollout's episode (and the tool calls of its completion), returning
    ``None`` so that only the environment's ``get_reward`` scores."""

    __name__ = "recorder"

    def __init__(self):
        self.steps = []

    def __call__(self, prompts, completions, environments, **columns):
        episodes = []
        for completion, environment in zip(completions, environments, strict=True):
            total = environment.get_reward()  # what TRL's get_reward column gives next (it is idempotent)
            called = [
                tool_call["function"]
                for message in completion
                if message["role"] == "assistant"
                for tool_call in message.get("tool_calls") or []
            ]
            answered = [message["content"] for message in completion if message["role"] == "tool"]
            episodes.append(
                {
                    "seed": environment.seed,
                    "index": environment.index,
                    "seed_column": columns[SEED_COLUMN][len(episodes)],
                    "actions": list(environment.actions),
                    "model_turns": environment.model_turns,
                    "rewards": list(environment.rewards),
                    "calls": [dict(call) for call in environment.calls],
                    "return": total,
                    "called": called,
                    "answered": answered,
                    "environment": environment,
                }
            )
        self.steps.append(episodes)
        return [None] * len(completions)


def train_two_steps(tmp_path, environment, dataset, model, tokenizer, max_completion_length):
    from trl import GRPOConfig, GRPOTrainer

    recorder = EpisodeRecorder()
    args = GRPOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=4,
        num_generations=2,  # two groups of two: two games a step, each played twice
        max_completion_length=max_completion_length,
        max_tool_calling_iterations=8,
        max_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        learning_rate=1e-3,
        seed=0,
        disable_dropout=True,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=recorder,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=environment,
    )
    trainer.train()
    return trainer, recorder


def check_training(trainer, recorder, environment, env_id, env_kwargs):
    """Two steps, each of two groups of one game; every reward TRL trained on is the local env's replay."""
    assert trainer.state.global_step == 2 and len(recorder.steps) == 2
    logged = [row for row in trainer.state.log_history if "reward" in row]
    assert len(logged) == 2
    played = 0
    for row, episodes in zip(logged, recorder.steps, strict=True):
        assert len(episodes) == 4
        assert [e["seed"] for e in episodes] == [e["seed_column"] for e in episodes]
        assert episodes[0]["seed"] == episodes[1]["seed"] and episodes[2]["seed"] == episodes[3]["seed"]
        returns = [episode["return"] for episode in episodes]
        assert row[f"rewards/{environment.__name__}/mean"] == pytest.approx(sum(returns) / 4, abs=1e-5)
        assert row["reward"] == pytest.approx(sum(returns) / 4, abs=1e-5)
        for episode in episodes:
            # the tool calls TRL parsed from the completion are the calls the environment got, in order, and the
            # tool messages its answers. At the end they may differ by the last turn's calls: TRL runs a turn's
            # calls before it drops results that would pass max_completion_length, and does not run the calls
            # of a turn past max_tool_calling_iterations
            got = [call["arguments"] for call in episode["calls"]]
            called = [call["arguments"] for call in episode["called"]]
            shorter = min(len(got), len(called))
            assert got[:shorter] == called[:shorter] and abs(len(got) - len(called)) <= 1
            answers = [call["answer"] for call in episode["calls"]]
            assert episode["answered"] == answers[: len(episode["answered"])]
            moves = [call["arguments"][environment.tool.argument] for call in episode["calls"] if call["played"]]
            assert episode["actions"][: episode["model_turns"]] == moves
            assert all(action == "" for action in episode["actions"][episode["model_turns"] :])
            played += episode["model_turns"]
            # the same game replayed in a fresh local env: the same reward at every step, the same end
            env = gymnasium.make(env_id, **env_kwargs)
            env.reset(seed=episode["seed"])
            rewards, done = [], False
            for action in episode["actions"]:
                assert not done
                _, reward, terminated, truncated, _ = env.step(action)
                rewards.append(float(reward))
                done = terminated or truncated
            assert done and rewards == episode["rewards"] and episode["return"] == pytest.approx(sum(rewards))
    assert played > 0  # the model played through the tool, not only get_reward's empty turns
    return played


@pytest.mark.slow
def test_grpo_trainer_trains_on_wordle_through_its_guess_tool(tmp_path, one_thread):
    pytest.importorskip("trl")
    env_id, kwargs = WORDLE[0], PLAYED_WORDLE
    environment = environment_factory(env_id, **kwargs)
    dataset = environment_dataset(env_id, num_prompts=8, **kwargs)
    words = list(gymnasium.make(env_id, **kwargs).unwrapped.vocabulary.answers) + UNKNOWN_WORDS
    model, tokenizer = tool_calling_lm(environment, dataset, words)
    trainer, recorder = train_two_steps(tmp_path, environment, dataset, model, tokenizer, 256)
    check_training(trainer, recorder, environment, env_id, kwargs)
    # every game of a group is the same game: the same seed, different guesses, so GRPO had advantages
    assert any(row["reward_std"] > 0 for row in trainer.state.log_history if "reward_std" in row)


def test_grpo_trainer_trains_on_a_users_multi_turn_task_through_its_tool(tmp_path, one_thread):
    pytest.importorskip("trl")
    env_id, kwargs = COUNT_UP
    environment = environment_factory(env_id, **kwargs)
    dataset = environment_dataset(env_id, num_prompts=8, **kwargs)
    model, tokenizer = tool_calling_lm(environment, dataset, [str(number) for number in range(1, 13)])
    trainer, recorder = train_two_steps(tmp_path, environment, dataset, model, tokenizer, 160)
    check_training(trainer, recorder, environment, env_id, kwargs)


def test_grpo_trainer_offers_a_users_named_tool(tmp_path, one_thread):
    """TRL's own tool discovery on a user's task that names its tool: the schema in the rendered prompt."""
    trl = pytest.importorskip("trl")
    environment = environment_factory("user_tool/SayNext-v0")
    dataset = environment_dataset("user_tool/SayNext-v0", num_prompts=4)
    model, tokenizer = tool_calling_lm(environment, dataset, ["1"], steps=1)
    trainer = trl.GRPOTrainer(
        model=model,
        args=trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", num_generations=2,
                            per_device_train_batch_size=2, max_steps=1),
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=environment,
    )  # fmt: skip
    assert [tool.__name__ for tool in trainer.tools] == ["say"]
    assert trainer.reward_func_names == ["SayNextEnvironment"]  # get_reward: the only reward source
    rendered = tokenizer.apply_chat_template(dataset[0]["prompt"], tools=trainer.tools, tokenize=False)
    assert '"name": "say"' in rendered and "the number after the one shown, in digits" in rendered


# ---- TRL's OpenEnv recipe: the environment wraps OpenEnv's GenericEnvClient, against python -m lm_gym.serve ----


@pytest.fixture(scope="module")
def served_wordle():
    """``python -m lm_gym.serve lm_gym/Wordle-v0`` in a subprocess on a loopback port, with a bearer token."""
    pytest.importorskip("openenv")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {**os.environ, "LM_GYM_SERVE_TOKEN": TOKEN}
    command = [sys.executable, "-m", "lm_gym.serve", "lm_gym/Wordle-v0", "--port", str(port), "--host", "127.0.0.1",
               "--env-kwargs", json.dumps(PLAYED_WORDLE), "--shutdown-grace-s", "1"]  # fmt: skip
    server = subprocess.Popen(command, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        assert server.poll() is None, server.stderr.read().decode()
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                break
        except OSError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
    yield url
    server.terminate()
    server.wait(30)


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_served_wordle_through_openenvs_client_is_the_local_env(served_wordle, monkeypatch):
    from lm_gym.serve.errors import AuthenticationError

    with pytest.raises(AuthenticationError, match="refused"):
        environment_factory("lm_gym/Wordle-v0", url=served_wordle, token="not-the-token-0123456789")
    with pytest.raises(ConfigurationError, match="plays 'lm_gym/Wordle-v0', not env_id='user/CountUp-v0'"):
        environment_factory("user/CountUp-v0", url=served_wordle, token=TOKEN)
    monkeypatch.setenv("LM_GYM_SERVE_TOKEN", TOKEN)  # the token from the environment, as the server reads it
    for env_id in ("lm_gym/Wordle-v0", "lm_gym/Remote-v0"):
        environment = environment_factory(env_id, url=served_wordle)
        assert environment.tool.name == "guess" and environment.tool.argument == "word"
    dataset = environment_dataset("lm_gym/Wordle-v0", num_prompts=3, url=served_wordle)
    assert dataset[2][SEED_COLUMN] == 2 and "guess(word)" in dataset[2]["prompt"][0]["content"]
    instance = environment()
    assert instance.reset(**dataset[2]) is None
    assert instance.guess(word="crane") == replay_answer("lm_gym/Wordle-v0", PLAYED_WORDLE, 2, ["crane"])
    assert instance.guess(word="qqqqq") == "unknown"  # the served task's kwargs: unknown words' penalty
    assert instance.guess(word="xx") == "invalid"
    assert instance.guess(word="a" * 65).startswith("Invalid word:")
    total = instance.get_reward()
    rewards, done = replay("lm_gym/Wordle-v0", PLAYED_WORDLE, instance)
    assert done and rewards == instance.rewards and total == sum(rewards)
    assert rewards[1:3] == [-0.5, -1.0] and instance.model_turns == 3
    assert instance.guess(word="crane").startswith("The episode has ended")


@pytest.mark.slow
@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_grpo_trainer_trains_through_openenv_on_a_served_wordle(served_wordle, tmp_path, one_thread):
    pytest.importorskip("trl")
    environment = environment_factory("lm_gym/Wordle-v0", url=served_wordle, token=TOKEN)
    dataset = environment_dataset("lm_gym/Wordle-v0", num_prompts=8, url=served_wordle, token=TOKEN)
    words = list(gymnasium.make("lm_gym/Wordle-v0", **PLAYED_WORDLE).unwrapped.vocabulary.answers) + UNKNOWN_WORDS
    model, tokenizer = tool_calling_lm(environment, dataset, words)
    trainer, recorder = train_two_steps(tmp_path, environment, dataset, model, tokenizer, 256)
    check_training(trainer, recorder, environment, "lm_gym/Wordle-v0", PLAYED_WORDLE)
