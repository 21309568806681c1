# ruff: noqa: F811  (the fixtures imported from servers.py are the tests' parameters)
"""TRL through OpenEnv: ``GRPOTrainer`` trains on a served Wordle with a ``rollout_func`` over
OpenEnv's client (TRL's OpenEnv recipe), and every reward it trained on is the one a local env
gives when it replays the same game (same seed, same guesses).

``OpenEnvRollout`` below is the code of docs/serving.md's "TRL through OpenEnv" section.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium
import pytest
import torch
from conftest import tiny_causal_lm

pytest.importorskip("openenv")
pytest.importorskip("trl")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from servers import restore_registry, start_server  # noqa: E402,F401  (fixtures, not a conftest: see servers.py)

# ---- docs/serving.md, "TRL through OpenEnv": the rollout_func a user writes -------------------------------


class OpenEnvRollout:
    """GRPOTrainer's ``rollout_func``: every group of ``num_generations`` prompts plays one game (one
    seed) of the served task, one OpenEnv session per completion; the trainer's model writes every
    turn, the env's answers are appended to the completion and masked out of the loss."""

    def __init__(self, base_url, max_turns=6, max_new_tokens=8, first_seed=0):
        self.base_url, self.max_turns, self.max_new_tokens = base_url, max_turns, max_new_tokens
        self.seeds = itertools.count(first_seed)  # a new game for every group
        self.sessions = []  # opened on the first call, reused by the next ones

    def __call__(self, prompts, trainer):
        group = trainer.args.num_generations
        if not trainer.model.training:  # evaluation
            group = trainer.args.num_generations_eval or group
        while len(self.sessions) < len(prompts):
            self.sessions.append(GenericEnvClient(base_url=self.base_url).sync().connect())
        envs = self.sessions[: len(prompts)]
        seeds = [seed for seed in itertools.islice(self.seeds, len(prompts) // group) for _ in range(group)]
        tokenizer, model = trainer.processing_class, trainer.accelerator.unwrap_model(trainer.model)
        eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
        config = copy.deepcopy(trainer.generation_config)  # TRL's sampling settings
        config.max_new_tokens, config.min_new_tokens = self.max_new_tokens, None
        config.return_dict_in_generate, config.output_scores = True, True  # for the tokens' logprobs
        max_chars = envs[0].state()["spaces"]["max_action_length"]  # the served task's longest action

        with ThreadPoolExecutor(len(envs)) as pool:  # the sessions' steps reach the server together
            results = list(pool.map(lambda env, seed: env.reset(seed=seed), envs, seeds))
            texts = [result.observation["text"] for result in results]
            prompt_ids = [tokenizer(text)["input_ids"] for text in texts]
            completion_ids, logprobs, env_mask = [[] for _ in envs], [[] for _ in envs], [[] for _ in envs]
            actions, rewards = [[] for _ in envs], [[] for _ in envs]
            active = [not result.done for result in results]
            for _ in range(self.max_turns):
                rows = [i for i in range(len(envs)) if active[i]]
                if not rows:
                    break
                # one generate call for the turn of every game still running (left-padded contexts)
                contexts = [prompt_ids[i] + completion_ids[i] for i in rows]
                width = max(map(len, contexts))
                input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=model.device)
                attention_mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
                with torch.no_grad():
                    out = model.generate(
                        input_ids=input_ids, attention_mask=attention_mask.to(model.device), generation_config=config
                    )
                scores = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
                for row, tokens, token_logprobs in zip(rows, out.sequences[:, width:].tolist(), scores.tolist()):
                    if eos in tokens:  # the turn ends at its first EOS
                        tokens = tokens[: tokens.index(eos) + 1]
                    completion_ids[row] += tokens
                    logprobs[row] += token_logprobs[: len(tokens)]
                    env_mask[row] += [1] * len(tokens)
                    actions[row].append(tokenizer.decode(tokens, skip_special_tokens=True).strip()[:max_chars])
                steps = pool.map(lambda i: envs[i].step({"text": actions[i][-1]}), rows)
                for row, result in zip(rows, steps):
                    rewards[row].append(float(result.reward))
                    active[row] = not result.done
                    if active[row]:  # the env's answer: the observation's new text, masked out of the loss
                        said = result.observation["text"].removeprefix(texts[row])
                        texts[row] = result.observation["text"]
                        tokens = tokenizer(said, add_special_tokens=False)["input_ids"]
                        completion_ids[row] += tokens
                        logprobs[row] += [0.0] * len(tokens)
                        env_mask[row] += [0] * len(tokens)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logprobs,
            "env_mask": env_mask,
            # the other keys reach the reward functions, one value per completion
            "env_reward": [sum(r) for r in rewards],
            "env_seed": seeds,
            "env_actions": actions,
            "env_rewards": rewards,
        }

    def close(self):
        for env in self.sessions:
            env.close()


def env_reward(completions, env_reward, **kwargs):
    """The reward function: the return of the game the completion played, as the env scored it."""
    return env_reward


# ---- the test ----------------------------------------------------------------------------------------------


DOCS = Path(__file__).resolve().parents[2] / "docs" / "serving.md"
WORDLE_KWARGS = {"unknown_word_penalty": 0.5}
MAX_NEW_TOKENS = 2


@pytest.fixture(autouse=True)
def quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


def test_grpo_trainer_trains_through_openenv_on_a_served_wordle(start_server, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    url, _, _ = start_server("lm_gym/Wordle-v0", env_kwargs=WORDLE_KWARGS)
    model, tokenizer = tiny_causal_lm("lm_gym/Wordle-v0")
    rollout = OpenEnvRollout(url, max_turns=6, max_new_tokens=MAX_NEW_TOKENS)
    played, scored = [], []

    def recorded_rollout(prompts, trainer):
        played.append(rollout(prompts, trainer))
        return played[-1]

    def recorded_reward(completions, **kwargs):
        scored.append(env_reward(completions, **kwargs))
        return scored[-1]

    recorded_reward.__name__ = "env_reward"
    args = GRPOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=8,
        num_generations=2,  # four groups of two: four games a step, each played twice
        max_completion_length=256,
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
        reward_funcs=recorded_reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["Play Wordle."] * 16}),
        processing_class=tokenizer,
        rollout_func=recorded_rollout,
    )
    start = time.monotonic()
    try:
        trainer.train()
    finally:
        rollout.close()
    elapsed = time.monotonic() - start
    print(f"two GRPO steps through OpenEnv: {elapsed:.1f} s")

    # two optimizer steps, each on one rollout of 8 episodes, scored by the env's own rewards
    assert trainer.state.global_step == 2 and len(played) == len(scored) == 2
    logged = [row for row in trainer.state.log_history if "reward" in row]
    assert len(logged) == 2
    for row, output, scores in zip(logged, played, scored):
        assert scores == output["env_reward"]
        assert row["reward"] == pytest.approx(sum(scores) / len(scores), abs=1e-5)
        assert row["rewards/env_reward/mean"] == pytest.approx(sum(scores) / len(scores), abs=1e-5)
        assert row["rewards/env_reward/std"] == pytest.approx(statistics.stdev(scores), abs=1e-4)
    seeds = [seed for output in played for seed in output["env_seed"]]
    assert seeds == [seed for seed in range(8) for _ in range(2)]  # each group one game, each game new
    # unknown words' partial penalty: games of a group end with different returns, so GRPO had advantages
    assert any(row["reward_std"] > 0 and row["grad_norm"] > 0 for row in logged)

    # every episode replayed in a local env: the same reward at every step, the same end
    for output in played:
        for seed, actions, rewards, total, ids, logprobs, mask in zip(
            output["env_seed"],
            output["env_actions"],
            output["env_rewards"],
            output["env_reward"],
            output["completion_ids"],
            output["logprobs"],
            output["env_mask"],
        ):
            local = gymnasium.make("lm_gym/Wordle-v0", **WORDLE_KWARGS)
            local.reset(seed=seed)
            replayed, done = [], False
            for action in actions:
                assert not done
                _, reward, terminated, truncated, _ = local.step(action)
                replayed.append(reward)
                done = terminated or truncated
            assert done and rewards == replayed and total == sum(replayed)
            assert len(ids) == len(logprobs) == len(mask) and sum(mask) > 0
            assert all(lp <= 0.0 for lp in logprobs)
    assert any(0 in mask for output in played for mask in output["env_mask"])  # the env's answers, masked


def test_the_docs_section_is_the_tested_code():
    """docs/serving.md's "TRL through OpenEnv" shows this module's rollout_func and reward function, verbatim."""
    text = DOCS.read_text(encoding="utf-8")
    assert "\n## TRL through OpenEnv\n" in text
    section = text.split("\n## TRL through OpenEnv\n", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, re.DOTALL))
    for shown in (OpenEnvRollout, env_reward):
        assert inspect.getsource(shown) in code, f"docs/serving.md's {shown.__name__} is not the tested one"
