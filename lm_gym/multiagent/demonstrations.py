"""Demonstrations for each agent of lm-gym's multi-agent envs, in :mod:`lm_gym.offline`'s format.

Scripted pairs play the parallel envs; every game gives one trajectory per agent: the agent's
observation text at each of its turns, its utterances, and as the reward of a turn everything
the agent received from that turn until its next one (VisDial: the questioner's question is
rewarded when it is answered), so each agent's ``return`` is its return in the game. Extra
columns: ``agent``, ``pairing``, ``game`` (the game's number) and ``seed`` (its reset seed).
``baselines/sft.py --dataset FILE --agent NAME`` warm-starts one agent on its rows.

Pairings (``--pairing``):

* ``visdial_v0``: ``expert`` (the informative questioner and the scene-reading answerer of
  :mod:`lm_gym.tasks.visdial.policies`); ``mixture`` (per game a skill ``p`` drawn from
  ``U(0, 1)``: the questioner asks the informative question with probability ``p``, else a
  random or a yes/no one, and the answerer reads the scene with probability ``p``, else says it
  cannot tell); ``explore`` (the questioner of ``mixture``, the scene-reading answerer: every
  kind of question answered right, where ``expert`` games reach the cutoff within about four
  questions, nearly all of them colours, so an answerer warm-started on those alone never sees
  the where, how many, weather or yes/no questions that longer games bring). Synthetic source
  only (the answerer reads the scene's text).
* ``dailydialog_v0``: ``dataset`` (each speaker says the dataset's utterance at its place).

From the command line::

    python -m lm_gym.multiagent.demonstrations --env visdial_v0 --pairing expert --num-games 2000 \\
        --out data/visdial_pairs.parquet
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.validation import check_int
from lm_gym.offline import save_trajectories, trajectories_from_rows
from lm_gym.tasks.visdial.policies import InformativeQuestioner, MixtureQuestioner, SceneTextAnswerer

Speaker = Callable[[str], str]  #: an agent's policy: its observation's text -> its utterance
CANNOT_TELL = "i can't tell"


def _metadata():
    import datasets

    return {
        "agent": datasets.Value("string"),
        "pairing": datasets.Value("string"),
        "game": datasets.Value("int64"),
        "seed": datasets.Value("int64"),
    }


def play_game(env, speakers: Mapping[str, Speaker], seed: int) -> dict[str, dict[str, Any]]:
    """One game of the parallel ``env`` reset with ``seed``, each agent speaking with ``speakers[agent]``:
    per agent its observations and utterances at its turns, the reward of each turn and whether the
    game ended by truncation."""
    observations, infos = env.reset(seed=seed)
    turns = {agent: {"observations": [], "actions": [], "rewards": []} for agent in env.possible_agents}
    truncated = False
    while env.agents:
        speaker = infos[env.agents[0]]["active_agent"]
        text = observations[speaker]["text"]
        utterance = speakers[speaker](text)
        turns[speaker]["observations"].append(text)
        turns[speaker]["actions"].append(utterance)
        turns[speaker]["rewards"].append(0.0)
        observations, rewards, _, truncations, infos = env.step({speaker: utterance})
        for agent, reward in rewards.items():
            if turns[agent]["rewards"]:  # a reward belongs to the agent's last turn
                turns[agent]["rewards"][-1] += float(reward)
        truncated = any(truncations.values())
    return {agent: {**played, "truncated": truncated} for agent, played in turns.items() if played["actions"]}


def record(env, pairing: str, speakers_of: Callable[[int], Mapping[str, Speaker]], num_games: int, seed: int):
    """``num_games`` games (game ``j`` reset with seed ``seed + j``, played by ``speakers_of(j)``) as
    per-agent trajectories (``datasets.Dataset``, :mod:`lm_gym.offline`'s format)."""
    name = f"lm_gym.multiagent.{env.metadata['name']}"
    rows = []
    for game in range(num_games):
        for agent, played in play_game(env, speakers_of(game), seed + game).items():
            count = len(played["actions"])
            rows.append(
                {
                    "env_id": name,
                    "observations": played["observations"],
                    "actions": played["actions"],
                    "rewards": played["rewards"],
                    "dones": [False] * (count - 1) + [True],
                    "truncated": played["truncated"],
                    "agent": agent,
                    "pairing": pairing,
                    "game": game,
                    "seed": seed + game,
                }
            )
    return trajectories_from_rows(rows, _metadata())


class SkilledAnswerer:
    """Reads the scene with probability ``skill`` per question, else says it cannot tell."""

    def __init__(self, skill: float, rng: np.random.Generator):
        self.skill, self.rng, self.scene = skill, rng, SceneTextAnswerer()

    def __call__(self, observation: str) -> str:
        return self.scene(observation) if self.rng.random() < self.skill else CANNOT_TELL


def visdial_speakers(pairing: str, seed: int) -> Callable[[int], dict[str, Speaker]]:
    """The scripted questioner and answerer of game ``j`` (see the module docstring)."""
    if pairing == "expert":
        questioner, answerer = InformativeQuestioner(), SceneTextAnswerer()
        return lambda game: {"questioner": questioner, "answerer": answerer}

    def mixed_skill(game: int) -> dict[str, Speaker]:
        rng = np.random.default_rng([seed, game])
        skill = float(rng.uniform())
        questioner = MixtureQuestioner(skill, seed=int(rng.integers(2**63)))
        answerer = SceneTextAnswerer() if pairing == "explore" else SkilledAnswerer(skill, rng)
        return {"questioner": questioner, "answerer": answerer}

    return mixed_skill


class DatasetSpeaker:
    """Says the dataset's utterance at the current place of the conversation (DailyDialog)."""

    def __init__(self, env):
        self.env = env

    def __call__(self, observation: str) -> str:
        return self.env.current_reference()


PAIRINGS = {"visdial_v0": ("expert", "mixture", "explore"), "dailydialog_v0": ("dataset",)}


def demonstrations(
    env_name: str, pairing: str, num_games: int, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None
):
    """``num_games`` games of ``pairing`` in ``lm_gym.multiagent.<env_name>`` (``env_kwargs`` for its
    ``parallel_env``) as per-agent trajectories."""
    if env_name not in PAIRINGS:
        raise ConfigurationError(f"env must be one of {sorted(PAIRINGS)}, got {safe_repr(env_name)}")
    if pairing not in PAIRINGS[env_name]:
        raise ConfigurationError(f"pairing of {env_name} must be one of {PAIRINGS[env_name]}, got {safe_repr(pairing)}")
    num_games = check_int("num_games", num_games, 1)
    seed = check_int("seed", seed, 0)
    if env_name == "visdial_v0":
        from lm_gym.multiagent import visdial_v0

        kwargs = {"source": "synthetic", **(env_kwargs or {})}
        if kwargs["source"] != "synthetic":
            raise ConfigurationError("the scripted VisDial answerer reads synthetic scenes: source must be 'synthetic'")
        env = visdial_v0.parallel_env(**kwargs)
        speakers_of = visdial_speakers(pairing, seed)
    else:
        from lm_gym.multiagent import dailydialog_v0

        env = dailydialog_v0.parallel_env(**(env_kwargs or {}))
        speaker = DatasetSpeaker(env)
        speakers_of = lambda game: dict.fromkeys(env.possible_agents, speaker)  # noqa: E731
    return record(env, pairing, speakers_of, num_games, seed)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=sorted(PAIRINGS), required=True, help="the multi-agent env")
    parser.add_argument(
        "--pairing", required=True, help="visdial_v0: expert, mixture or explore; dailydialog_v0: dataset"
    )
    parser.add_argument("--num-games", type=int, default=2000, help="games to play")
    parser.add_argument("--seed", type=int, default=0, help="game j is reset with seed + j")
    parser.add_argument("--env-kwargs", default="{}", help="JSON arguments of the env's parallel_env")
    parser.add_argument("--out", required=True, help="where to save: .parquet, .jsonl or a folder (save_to_disk)")
    args = parser.parse_args(argv)
    data = demonstrations(args.env, args.pairing, args.num_games, args.seed, json.loads(args.env_kwargs))
    save_trajectories(data, args.out)
    for agent in sorted(set(data["agent"])):
        returns = [r for r, a in zip(data["return"], data["agent"]) if a == agent]
        print(f"{agent}: {len(returns)} trajectories, mean return {np.mean(returns):.3f}")
    print(f"wrote {data.num_rows} trajectories to {args.out}")


if __name__ == "__main__":
    main()
