"""Offline Visual Dialogue datasets: human dialogues with rewards, and games of scripted questioners.

Generate from the command line (``python -m lm_gym.tasks.visdial.offline_data --help``) or
with :func:`human_dialogues` and :func:`scripted_dialogues`. Rows are trajectories in the
format of :mod:`lm_gym.offline` (``env_id`` ``lm_gym/VisDial-v0``, ``truncated`` False), one per
dialogue: the observations before each question (caption and rounds so far), the questions
(``actions``), their rewards and ``dones``.

Datasets (``--dataset``):

* ``human`` (``source="local"``): each dialog of the release as its people played it, after
  the ILQL code base's ``env_stops`` data: the env's ranker scores each prefix of the human
  dialogue, the dialogue is cut at the first answer that reaches the cutoff, and rewards are
  -1 per turn and 0 on that answer, plus ``yn_reward`` where the answer passes the yes/no
  test (the env's reward function with the env's arguments; ILQL left ``reward_scale`` and
  ``reward_shift`` out of its data, lm-gym applies them so that data and env agree).
* ``informative``, ``random``, ``yes_no``: games of that scripted questioner
  (:mod:`lm_gym.tasks.visdial.policies`), any source, played through the env so that the
  rewards are exactly the env's.
* ``mixture``: the "human-like" data of the synthetic world: each game draws a skill
  ``prob_informative`` uniformly from ``[low, high]`` (default ``[0, 1]``) and asks, each
  turn, the informative question with that probability, else a random or a yes/no one. Good
  and bad questions are mixed within games, at every skill: the data an offline RL method
  should improve on, where behaviour cloning copies the average questioner.

Game ``j`` of a scripted dataset plays image ``image_index`` drawn from ``(seed, j)`` alone.
Replaying ``actions`` in the env reset with ``options={"index": image_index}`` reproduces
``observations`` and ``rewards`` (:func:`replay`; for ``human`` rows, as long as the env's
answerer gives each human question its human answer, which the text-only world does unless a
dialog repeats a question with another answer).

Metadata columns (:func:`metadata_features`):

======================  ========  ==============================================================
field                   type      meaning
======================  ========  ==============================================================
``dialogue_id``         int64     row id
``kind``                string    ``human`` or ``scripted``
``policy``              string    ``human``, ``informative``, ``random``, ``yes_no`` or ``mixture``
``image_id``            int64     the target's image id (COCO id; scene number for synthetic)
``image_index``         int64     ``reset(options={"index": image_index})`` plays the same image
``initial_percentile``  float32   caption-only percentile ``p0``
``final_percentile``    float32   percentile after the last answer
``reached_cutoff``      bool      the last answer reached the cutoff
``num_turns``           int32     number of questions
``prob_informative``    float32   scripted games: the chance of an informative question per turn
                                  (1 informative, 0 random and yes_no); -1 for human dialogues
======================  ========  ==============================================================
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import play_actions
from lm_gym.core.validation import check_int
from lm_gym.offline import save_trajectories, trajectories_from_rows
from lm_gym.tasks.offline_episodes import record_episode
from lm_gym.tasks.visdial.dialogue import dialogue_text
from lm_gym.tasks.visdial.env import VisDialEnv
from lm_gym.tasks.visdial.policies import QUESTIONERS, MixtureQuestioner, Questioner
from lm_gym.tasks.visdial.rewards import cutoff_reached, is_yes_no, turn_reward
from lm_gym.tasks.visdial.world import rank

ENV_ID = "lm_gym/VisDial-v0"
DATASETS = ("human", "informative", "random", "yes_no", "mixture")


def metadata_features() -> dict[str, Any]:
    """The ``datasets`` features of the VisDial columns beyond the core trajectory columns."""
    import datasets

    return {
        "dialogue_id": datasets.Value("int64"),
        "kind": datasets.Value("string"),
        "policy": datasets.Value("string"),
        "image_id": datasets.Value("int64"),
        "image_index": datasets.Value("int64"),
        "initial_percentile": datasets.Value("float32"),
        "final_percentile": datasets.Value("float32"),
        "reached_cutoff": datasets.Value("bool"),
        "num_turns": datasets.Value("int32"),
        "prob_informative": datasets.Value("float32"),
    }


def _env(env_kwargs: Mapping[str, Any] | None) -> VisDialEnv:
    if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
        raise ConfigurationError(
            f"env_kwargs must be a dict of VisDialEnv arguments or None, got {type(env_kwargs).__name__}"
        )
    return VisDialEnv(**dict(env_kwargs or {}))


def human_dialogues(env_kwargs: Mapping[str, Any] | None = None):
    """The human dialogues of a ``source="local"`` env (``env_kwargs``), with rewards: see the module docstring."""
    env = _env(env_kwargs)
    if env.source != "local":
        raise ConfigurationError(
            "human dialogues come from the VisDial release: env_kwargs needs source='local' and data_dir"
        )
    rows = []
    for image in env.images:
        rounds = image.content.rounds[: env.max_turns]
        if not rounds:  # a test dialog whose only round is unanswered
            continue
        prefixes = [rounds[:turn] for turn in range(len(rounds) + 1)]
        initial, *percentiles = rank(env.ranker, [image] * len(prefixes), prefixes)
        row: dict[str, Any] = {"env_id": ENV_ID, "observations": [], "actions": [], "rewards": [], "dones": []}
        reached = False
        for turn, ((question, answer), percentile) in enumerate(zip(rounds, percentiles)):
            reached = cutoff_reached(initial, percentile, env.cutoff, env.goal_value)
            yes_no = is_yes_no(answer, env.yn_reward_kind)
            row["observations"].append(dialogue_text(image.caption, rounds[:turn]))
            row["actions"].append(question)
            row["rewards"].append(turn_reward(reached, yes_no, env.yn_reward, env.reward_scale, env.reward_shift))
            row["dones"].append(reached or turn + 1 == len(rounds))
            if reached:
                break
        row.update(
            dialogue_id=len(rows),
            kind="human",
            policy="human",
            image_id=image.image_id,
            image_index=image.index,
            initial_percentile=float(initial),
            final_percentile=float(percentile),
            reached_cutoff=reached,
            num_turns=len(row["actions"]),
            prob_informative=-1.0,
        )
        rows.append(row)
    return trajectories_from_rows(rows, metadata_features())


def play_dialogue(env: VisDialEnv, questioner: Questioner, image_index: int) -> dict[str, Any]:
    """One game of ``questioner`` about image ``image_index``, as a trajectory row with its metadata."""
    row, info = record_episode(env, ENV_ID, lambda observation, _: questioner(observation), {"index": image_index})
    metrics = info["metrics"]
    row.update(
        kind="scripted",
        policy=questioner.name,
        image_id=info["meta"]["image_id"],
        image_index=image_index,
        initial_percentile=info["meta"]["initial_percentile"],
        final_percentile=metrics["final_percentile"],
        reached_cutoff=bool(metrics["reached_cutoff"]),
        num_turns=metrics["turns"],
    )
    return row


def scripted_dialogues(
    questioner: str,
    num_episodes: int,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    prob_informative: tuple[float, float] = (0.0, 1.0),
):
    """``num_episodes`` games of the scripted ``questioner`` (``informative``, ``random``,
    ``yes_no`` or ``mixture``) in the env of ``env_kwargs`` (default: synthetic, train split).

    ``prob_informative`` is the ``[low, high]`` range the mixture's per-game skill is drawn from.
    """
    if questioner not in (*QUESTIONERS, "mixture"):
        raise ConfigurationError(f"questioner must be one of {(*QUESTIONERS, 'mixture')}, got {safe_repr(questioner)}")
    num_episodes = check_int("num_episodes", num_episodes, 1)
    seed = check_int("seed", seed, 0)
    low, high = prob_informative
    if not 0.0 <= low <= high <= 1.0:
        raise ConfigurationError(
            f"prob_informative must be a (low, high) range inside [0, 1], got {safe_repr(prob_informative)}"
        )
    env = _env(env_kwargs)
    fixed = None if questioner == "mixture" else QUESTIONERS[questioner]()
    rows = []
    for episode in range(num_episodes):
        rng = np.random.default_rng([seed, episode])
        image_index = int(rng.integers(len(env.images)))
        if fixed is None:
            player = MixtureQuestioner(float(rng.uniform(low, high)))
        else:
            player = fixed
        player.seed(int(rng.integers(2**63)))
        row = play_dialogue(env, player, image_index)
        skill = player.prob_informative if fixed is None else float(questioner == "informative")
        rows.append({**row, "dialogue_id": episode, "prob_informative": skill})
    return trajectories_from_rows(rows, metadata_features())


def replay(row: Mapping[str, Any], env: VisDialEnv) -> tuple[list[str], list[float]]:
    """The observations and rewards of replaying ``row["actions"]`` in ``env`` on the row's image."""
    return play_actions(env, row["actions"], {"index": row["image_index"]})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Generate an offline Visual Dialogue dataset (human dialogues or scripted questioners)."
    )
    parser.add_argument("--dataset", choices=DATASETS, required=True, help="which dialogues (the module's docstring)")
    parser.add_argument("--out", required=True, help="output: .parquet, .jsonl, or a directory (save_to_disk)")
    parser.add_argument("--num-episodes", type=int, default=1000, help="scripted datasets: games to play")
    parser.add_argument(
        "--seed", type=int, default=0, help="scripted datasets: game j's image and draws come from (seed, j)"
    )
    parser.add_argument(
        "--source", choices=("synthetic", "local"), default=None, help="default: local for human, else synthetic"
    )
    parser.add_argument("--data-dir", help="source=local: the VisDial v1.0 json file or its folder")
    parser.add_argument("--split", default="train", choices=("train", "validation", "test"), help="the env's split")
    parser.add_argument("--num-images", type=int, help="synthetic gallery size")
    parser.add_argument(
        "--yn-reward", type=float, default=-2.0, help="the env's yn_reward: added where an answer is yes/no"
    )
    parser.add_argument(
        "--yn-reward-kind",
        default="none",
        choices=("none", "soft", "hard", "conservative"),
        help="the env's yn_reward_kind: the yes/no test (none: no yes/no reward)",
    )
    parser.add_argument(
        "--cutoff", type=float, default=0.5, help="the env's cutoff: the share of the gap that ends a game"
    )
    parser.add_argument(
        "--prob-informative",
        type=float,
        nargs=2,
        default=(0.0, 1.0),
        metavar=("LOW", "HIGH"),
        help="mixture: skill range",
    )
    args = parser.parse_args(argv)
    source = args.source or ("local" if args.dataset == "human" else "synthetic")
    env_kwargs = {
        "source": source,
        "split": args.split,
        "yn_reward": args.yn_reward,
        "yn_reward_kind": args.yn_reward_kind,
        "cutoff": args.cutoff,
        **({"data_dir": args.data_dir} if args.data_dir else {}),
        **({"num_images": args.num_images} if args.num_images else {}),
    }
    if args.dataset == "human":
        dataset = human_dialogues(env_kwargs)
    else:
        dataset = scripted_dialogues(
            args.dataset, args.num_episodes, args.seed, env_kwargs, tuple(args.prob_informative)
        )
    path = save_trajectories(dataset, args.out)
    print(
        f"{len(dataset)} trajectories, mean return {np.mean(dataset['return']):.3f}, "
        f"reached cutoff {np.mean(dataset['reached_cutoff']):.3f} -> {path}"
    )


if __name__ == "__main__":
    main()
