"""The offline demo: every lm-gym env played with simple policies.

Run ``python -m lm_gym.demo`` (or ``lm-gym-demo``). Everything is built offline: synthetic
data, the n-gram sentiment, dialogue-act and upvote rewards, a BPE tokenizer trained on the reviews
and the Wordle feedback table (cached in ``$LM_GYM_CACHE``, default ``~/.cache/lm_gym``).
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.tasks.visdial.policies import InformativeQuestioner, RandomQuestioner, YesNoQuestioner
from lm_gym.tasks.wordle.policies import InfoGainPolicy, RandomMixturePolicy, RandomPolicy

POSITIVE = "The acting was brilliant and the ending was wonderful. A superb, moving film."
NEGATIVE = "The acting was awful and the ending was boring. A dull, tedious film."
HELPFUL_REPLY = "In my experience it helps to start small and practice every day, because it builds the habit."
RUDE_REPLY = "Only a moron would write this, you clown."


def play_utterances(env: gymnasium.Env, policy, episodes: int, seed: int) -> np.ndarray:
    """Episode returns of ``policy`` (observation text -> utterance)."""
    returns = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total = 0.0
        while True:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += reward
            if terminated or truncated:
                break
        returns.append(total)
        obs, _ = env.reset()
    return np.array(returns)


def play_random_tokens(env: gymnasium.Env, episodes: int, seed: int) -> tuple[np.ndarray, list[str]]:
    rewards, utterances = [], []
    _, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(episodes):
        terminated = truncated = False
        while not (terminated or truncated):  # the mask keeps EOS out before the task's minimum length
            _, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=info["action_mask"]))
        rewards.append(reward)
        utterances.append(info["utterance"])
        _, info = env.reset()
    return np.array(rewards), utterances


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16, help="episodes per policy")
    parser.add_argument("--num-envs", type=int, default=8, help="envs in the batched vector env")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
    obs, info = env.reset(seed=args.seed)
    print(f"lm_gym/IMDB-v0 (source='synthetic'), ready in {time.perf_counter() - start:.1f}s")
    print(f"example prompt ({info['meta']['label']} review): {obs[:160]}...")

    rng = np.random.default_rng(args.seed)
    words = " ".join(env.unwrapped.samples[i].references[0] for i in range(200)).split()
    policies = {
        "positive text": lambda _: POSITIVE,
        "negative text": lambda _: NEGATIVE,
        "random review words": lambda _: " ".join(rng.choice(words, size=30)),
        "copy the true ending": lambda _: env.unwrapped.current_sample.references[0],
    }
    print("\nutterance level: mean reward (P(positive)) per policy")
    for name, policy in policies.items():
        rewards = play_utterances(env, policy, args.episodes, args.seed)
        print(f"  {name:<22} {rewards.mean():.3f} +- {rewards.std():.3f}")

    token_env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token")
    rewards, utterances = play_random_tokens(token_env, args.episodes, args.seed)
    print(f"\ntoken level (Discrete({token_env.action_space.n}), 48 new tokens): random tokens")
    print(f"  mean reward {rewards.mean():.3f} +- {rewards.std():.3f}; e.g. {utterances[0][:100]!r}")

    venv = gymnasium.make_vec(
        "lm_gym/IMDB-v0", num_envs=args.num_envs, vectorization_mode="vector_entry_point", source="synthetic"
    )
    venv.reset(seed=args.seed)
    _, rewards, *_ = venv.step([POSITIVE, NEGATIVE] * (args.num_envs // 2) + [POSITIVE] * (args.num_envs % 2))
    print(f"\nbatched vector env, {args.num_envs} envs scored in one call: {np.round(rewards, 3).tolist()}")

    print("\nreference-scored tasks (source='synthetic'): mean reward per policy, utterance level")
    for env_id in ("lm_gym/CommonGen-v0", "lm_gym/CNNDailyMail-v0", "lm_gym/DailyDialog-v0"):
        task = gymnasium.make(env_id, source="synthetic", split="validation")
        obs, _ = task.reset(seed=args.seed)
        print(f"  {env_id}, e.g. {obs[:90]!r}...")
        for name, policy in (
            ("a reference", lambda _, task=task: task.unwrapped.current_sample.references[0]),
            ("a generic reply", lambda _: "I think so."),
        ):
            rewards = play_utterances(task, policy, args.episodes, args.seed)
            print(f"    {name:<20} {rewards.mean():.3f} +- {rewards.std():.3f}")

    wordle = gymnasium.make("lm_gym/Wordle-v0")
    vocabulary = wordle.unwrapped.vocabulary
    print(f"\nlm_gym/Wordle-v0 (offline default vocabulary, {len(vocabulary.answers)} answers): mean return per policy")
    for policy in (
        InfoGainPolicy(vocabulary),
        RandomMixturePolicy(vocabulary, 0.5, seed=args.seed),
        RandomPolicy(vocabulary, seed=args.seed),
    ):
        rewards = play_utterances(wordle, policy, args.episodes, args.seed)
        print(f"  {policy.name:<22} {rewards.mean():.3f} +- {rewards.std():.3f}")
    board, _ = wordle.reset(seed=args.seed)
    while True:
        board, _, terminated, _, _ = wordle.step(InfoGainPolicy(vocabulary)(board))
        if terminated:
            break
    print("  an info-gain game:\n    " + "\n    ".join(board.splitlines()[1:]))

    print(
        "\nlm_gym/VisDial-v0 (synthetic scenes): mean return per scripted questioner (-1 per question until the cutoff)"
    )
    visdial = gymnasium.make("lm_gym/VisDial-v0", source="synthetic", split="validation")
    for questioner in (InformativeQuestioner(), YesNoQuestioner(seed=args.seed), RandomQuestioner(seed=args.seed)):
        rewards = play_utterances(visdial, questioner, args.episodes, args.seed)
        print(f"  {type(questioner).__name__:<22} {rewards.mean():.3f} +- {rewards.std():.3f}")
    caption, _ = visdial.reset(seed=args.seed)
    question = InformativeQuestioner()(caption)
    _, _, _, _, info = visdial.step(question)
    print(f"  e.g. {caption!r} -> {question!r} -> {info['answer']!r} (target's percentile {info['percentile']:.2f})")

    print("\nlm_gym/Reddit-v0 (synthetic threads): mean reward per reply and reward")
    for reward in ("toxicity", "upvotes_model"):
        reddit = gymnasium.make("lm_gym/Reddit-v0", source="synthetic", split="validation", reward=reward)
        for name, policy in (
            ("a helpful reply", lambda _: HELPFUL_REPLY),
            ("a rude reply", lambda _: RUDE_REPLY),
            ("the real reply", lambda _, reddit=reddit: reddit.unwrapped.current_sample.references[0]),
        ):
            rewards = play_utterances(reddit, policy, args.episodes, args.seed)
            print(f"  {reward:<14} {name:<16} {rewards.mean():.3f} +- {rewards.std():.3f}")
    print(f"done in {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
