"""Self-play in lm-gym's PettingZoo envs, offline: scripted policies on both sides of a conversation.

    python examples/multiagent_selfplay.py --episodes 20 --seed 0

* Visual Dialogue (AEC API): the informative or the random questioner of
  ``lm_gym.tasks.visdial.policies`` asks, and the scripted answerer that reads the scene from its
  observation (``SceneTextAnswerer``), or a lazy one that always says "i can't tell", answers.
  The reward is shared, so both agents get the same return.
* DailyDialog (parallel API): one policy plays both speakers. The act-aware policy answers a
  question with a statement and asks after a statement (the commonest dialogue-act transitions
  of DailyDialog); the constant policy always says "OK.".
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from lm_gym.multiagent import dailydialog_v0, visdial_v0
from lm_gym.tasks.visdial.policies import InformativeQuestioner, RandomQuestioner, SceneTextAnswerer

EOU = "<EOU>"


def play_visdial(questioner, answerer, episodes: int, seed: int) -> tuple[float, float]:
    """Mean return (the same for both agents) and mean rounds of ``episodes`` AEC games."""
    env = visdial_v0.env()
    returns, rounds = [], []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total = 0.0
        for agent in env.agent_iter():
            observation, reward, termination, truncation, info = env.last()
            if agent == "questioner":
                total += reward
            if termination or truncation:
                action = None
            elif observation["active"]:
                action = (questioner if agent == "questioner" else answerer)(observation["text"])
            else:
                action = ""  # not this agent's turn: its action is ignored
            env.step(action)
        returns.append(total)
        rounds.append(info["metrics"]["turns"])
    env.close()
    return float(np.mean(returns)), float(np.mean(rounds))


def act_aware(context: str) -> str:
    """A statement after a question, a question after anything else."""
    last = context.removesuffix(EOU).rstrip().rsplit(EOU, 1)[-1].strip()
    return "Yes, I think it is a good idea." if last.endswith("?") else "Really? Why do you think so?"


def constant(context: str) -> str:
    return "OK."


def play_dailydialog(policy, episodes: int, seed: int) -> dict[str, float]:
    """Mean reward per utterance of each speaker, ``policy`` playing both."""
    env = dailydialog_v0.parallel_env(split="validation")
    rewards = defaultdict(list)
    for episode in range(episodes):
        observations, _ = env.reset(seed=seed + episode)
        while env.agents:
            speaker = next(agent for agent in env.agents if observations[agent]["active"])
            observations, step_rewards, _, _, _ = env.step({speaker: policy(observations[speaker]["text"])})
            rewards[speaker].append(step_rewards[speaker])
    env.close()
    return {speaker: float(np.mean(values)) for speaker, values in sorted(rewards.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20, help="episodes per pairing")
    parser.add_argument("--seed", type=int, default=0, help="episode i is reset with seed + i")
    args = parser.parse_args(argv)

    print("visdial_v0 (questioner + answerer, shared reward): mean return, mean rounds")
    pairings = {
        "informative questioner + scene answerer": (InformativeQuestioner(), SceneTextAnswerer()),
        "random questioner + scene answerer": (RandomQuestioner(seed=args.seed), SceneTextAnswerer()),
        "informative questioner + lazy answerer": (InformativeQuestioner(), lambda observation: "i can't tell"),
    }
    for name, (questioner, answerer) in pairings.items():
        mean_return, mean_rounds = play_visdial(questioner, answerer, args.episodes, args.seed)
        print(f"  {name:42s} return {mean_return:6.2f}  rounds {mean_rounds:5.2f}")

    print("dailydialog_v0 (one policy for both speakers): mean reward per utterance")
    for name, policy in (("act-aware", act_aware), ("constant 'OK.'", constant)):
        means = play_dailydialog(policy, args.episodes, args.seed)
        print(f"  {name:42s} " + "  ".join(f"{speaker} {value:.3f}" for speaker, value in means.items()))


if __name__ == "__main__":
    main()
