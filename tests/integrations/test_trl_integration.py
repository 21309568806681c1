"""lm_gym.integrations.trl: TRL's GRPOTrainer trains on lm-gym tasks, scored exactly as the envs score."""

import json
import re
from pathlib import Path

import gymnasium
import pytest
from conftest import tiny_causal_lm

from lm_gym.core.errors import ConfigurationError
from lm_gym.integrations.trl import (
    INDEX_COLUMN,
    RETURN_FIELD,
    SEED_COLUMN,
    UTTERANCES_FIELD,
    prompt_dataset,
    reward_function,
    rollout_function,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
COMMONGEN = ("lm_gym/CommonGen-v0", {"source": "synthetic"})
WORDLE = ("lm_gym/Wordle-v0", {"num_answers": 20})
VISDIAL = ("lm_gym/VisDial-v0", {"source": "synthetic"})


def env_reward(env_id, env_kwargs, index, utterance):
    env = gymnasium.make(env_id, **env_kwargs)
    env.reset(options={"index": index})
    max_chars = env.action_space.max_length
    return env.step(utterance[:max_chars])[1]


def test_the_dataset_holds_what_the_reward_needs():
    env_id, kwargs = COMMONGEN
    dataset = prompt_dataset(env_id, "validation", num_prompts=5, **kwargs)
    env = gymnasium.make(env_id, split="validation", **kwargs).unwrapped
    assert dataset.num_rows == 5 and dataset[3]["prompt"] == env.samples[3].prompt
    assert dataset[3][INDEX_COLUMN] == 3 and dataset[3]["references"] == list(env.samples[3].references)
    assert json.loads(dataset[3]["meta"]) == json.loads(json.dumps(env.samples[3].meta, default=str))
    chat = prompt_dataset(env_id, "validation", num_prompts=2, chat=True, system_prompt="Write one sentence.", **kwargs)
    assert chat[1]["prompt"] == [
        {"role": "system", "content": "Write one sentence."},
        {"role": "user", "content": env.samples[1].prompt},
    ]
    games = prompt_dataset(*WORDLE[:1], num_prompts=3, **WORDLE[1])
    assert games[SEED_COLUMN] == [0, 1, 2] and games[0]["prompt"].startswith("Wordle")


def test_the_reward_function_is_the_envs_reward():
    env_id, kwargs = COMMONGEN
    dataset = prompt_dataset(env_id, "train", num_prompts=4, **kwargs)
    reward = reward_function(env_id, **kwargs)
    indices = [0, 0, 3, 2, 3]
    completions = [
        "a dog runs in the park",
        "",
        "the cat sleeps",
        dataset[2]["references"][0],
        "x" * 1000,  # longer than the action space: cut to it, as the baselines cut
    ]
    scores = reward(prompts=[dataset[i]["prompt"] for i in indices], completions=completions, lm_gym_index=indices)
    assert scores == pytest.approx([env_reward(env_id, kwargs, i, c) for i, c in zip(indices, completions)])
    assert scores[3] > scores[1]  # a reference beats the empty sentence
    # conversational completions: the assistant message's content
    chat = [[{"role": "assistant", "content": c}] for c in completions]
    assert reward(prompts=[""] * 5, completions=chat, lm_gym_index=indices) == pytest.approx(scores)
    assert reward.__name__ == "lm_gym_commongen"


def test_misuse_is_named():
    with pytest.raises(ConfigurationError, match="lm_gym_index"):
        reward_function(*COMMONGEN[:1], **COMMONGEN[1])(prompts=["a"], completions=["b"])
    with pytest.raises(ConfigurationError, match="for games of several turns pass rollout_func"):
        reward_function(WORDLE[0], **WORDLE[1])(prompts=["a"], completions=["b"])
    with pytest.raises(ConfigurationError, match="single-turn"):
        rollout_function(COMMONGEN[0], **COMMONGEN[1])
    with pytest.raises(ConfigurationError, match="system_prompt only applies with chat=True"):
        prompt_dataset(COMMONGEN[0], system_prompt="hi", **COMMONGEN[1])


# ---- GRPOTrainer itself (TRL is the optional trl extra) ---------------------------------------------


def trainer_config(tmp_path, **overrides):
    from trl import GRPOConfig

    settings = dict(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=12,
        max_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        learning_rate=1e-3,
        seed=0,
        disable_dropout=True,
    )
    return GRPOConfig(**{**settings, **overrides})


class Recorder:
    """A reward function that records what TRL gave it and what the lm-gym reward answered."""

    def __init__(self, reward):
        self.reward, self.__name__, self.calls = reward, reward.__name__, []

    def __call__(self, prompts, completions, **columns):
        scores = self.reward(prompts, completions, **columns)
        self.calls.append((list(completions), {k: v for k, v in columns.items() if k.startswith("lm_gym")}, scores))
        return scores


@pytest.fixture(autouse=True)
def quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


def test_grpo_trainer_trains_on_a_single_turn_task(tmp_path):
    trl = pytest.importorskip("trl")
    env_id, kwargs = COMMONGEN
    model, tokenizer = tiny_causal_lm(env_id, kwargs)
    recorder = Recorder(reward_function(env_id, **kwargs))
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=recorder,
        args=trainer_config(tmp_path),
        train_dataset=prompt_dataset(env_id, num_prompts=16, **kwargs),
        processing_class=tokenizer,
    )
    trainer.train()
    assert trainer.state.global_step == 2 and len(recorder.calls) == 2
    for completions, columns, scores in recorder.calls:
        assert len(completions) == 4 and len(set(columns[INDEX_COLUMN])) == 1  # one prompt, 4 completions
        expected = [env_reward(env_id, kwargs, i, c) for i, c in zip(columns[INDEX_COLUMN], completions)]
        assert scores == pytest.approx(expected)
    logged = [row for row in trainer.state.log_history if "reward" in row]
    assert logged and logged[0]["reward"] == pytest.approx(sum(recorder.calls[0][2]) / 4, abs=1e-5)


@pytest.mark.parametrize("task", [WORDLE, VISDIAL], ids=["wordle", "visdial"])
def test_grpo_trainer_plays_whole_games_of_a_multi_turn_task(tmp_path, task):
    trl = pytest.importorskip("trl")
    env_id, kwargs = task
    model, tokenizer = tiny_causal_lm(env_id, kwargs)
    recorder = Recorder(reward_function(env_id, **kwargs))
    rollout = rollout_function(env_id, num_prompts=8, max_new_tokens=8, **kwargs)
    rollouts = []

    def recorded_rollout(prompts, trainer):
        rollouts.append(rollout(prompts, trainer))
        return rollouts[-1]

    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=recorder,
        args=trainer_config(tmp_path, num_generations=2),
        train_dataset=prompt_dataset(env_id, num_prompts=8, **kwargs),
        processing_class=tokenizer,
        rollout_func=recorded_rollout,
    )
    trainer.train()
    assert trainer.state.global_step == 2 and len(recorder.calls) == 2
    for (_, columns, scores), played in zip(recorder.calls, rollouts):
        assert scores == played[RETURN_FIELD] == columns[RETURN_FIELD]
        seeds = columns[SEED_COLUMN]
        assert seeds[0] == seeds[1] and seeds[2] == seeds[3]  # a group plays one game
        for seed, utterances, score in zip(seeds, columns[UTTERANCES_FIELD], scores):
            env = gymnasium.make(env_id, **kwargs)  # the same game replayed: the same return
            env.reset(seed=seed)
            total, done = 0.0, False
            for utterance in utterances:
                assert not done
                _, reward, terminated, truncated, _ = env.step(utterance[: env.action_space.max_length])
                total, done = total + reward, terminated or truncated
            assert done and total == pytest.approx(score)
        for ids, mask in zip(played["completion_ids"], played["env_mask"]):
            assert len(ids) == len(mask) and ids[-1] == tokenizer.eos_token_id and 1 in mask
    # the env's feedback lines are in the episodes, masked out of the loss
    assert any(0 in mask for played in rollouts for mask in played["env_mask"])


def test_the_docs_example_runs_as_written(tmp_path, monkeypatch):
    """The docs' "Use from TRL" block, executed (it writes under runs/trl: here, a temporary folder)."""
    pytest.importorskip("trl")
    text = PAGE.read_text(encoding="utf-8")
    block = re.match(r"\s*```python\n(.*?)\n```", text.split("<!-- docs-example: trl -->", 1)[1], re.DOTALL)
    assert block, "a ```python block must follow the trl marker in docs/integrations.md"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme_trl"}
    exec(compile(block.group(1), str(PAGE), "exec"), namespace)  # noqa: S102 - the project's own docs
    assert namespace["config"].max_steps == 2


def test_a_users_one_step_game_is_scored_by_replaying_its_seed():
    import user_tasks  # noqa: F401  (registers user/SayTheWord-v0, a one-step TextEnv, not a SingleTurnTextEnv)

    dataset = prompt_dataset("user/SayTheWord-v0", num_prompts=8)
    words = [prompt.split()[1].rstrip(".") for prompt in dataset["prompt"]]
    completions = [word if k % 2 else "nothing" for k, word in enumerate(words)]
    reward = reward_function("user/SayTheWord-v0")
    scores = reward(dataset["prompt"], completions, **{SEED_COLUMN: dataset[SEED_COLUMN]})
    assert scores == [float(k % 2) for k in range(8)]
    with pytest.raises(ConfigurationError, match="go on after the first utterance: pass rollout_func"):
        reward_function("user/CountUp-v0")(["a"], ["1"], **{SEED_COLUMN: [0]})


def test_grpo_trainer_plays_whole_games_of_a_users_multi_turn_task(tmp_path):
    import user_tasks  # noqa: F401  (registers user/CountUp-v0)

    test_grpo_trainer_plays_whole_games_of_a_multi_turn_task(tmp_path, ("user/CountUp-v0", {}))
