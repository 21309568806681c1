"""Games of lm-gym's PettingZoo envs (``lm_gym.multiagent``), every agent a language model or a scripted speaker.

Each env copy plays one game. Every cycle, each agent speaks in the copies where it is the active agent:
one batched sampling pass of its policy with the KV cache (a scripted speaker: one call per copy). An
agent's turn is one of its utterances, rewarded with everything the agent received from that cycle until
its next turn (VisDial: a question is rewarded when it is answered).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol

import numpy as np

from lm_gym.results.evaluation import Evaluation, episode_samples, summarize_episodes
from lm_toolkit.rollouts import TextPolicy, Turn, episode_uniforms, numeric_metrics

MAX_LOOP_CYCLES = 10_000  # a guard on the loop only: every game ends by its env's max_cycles long before

ScriptedSpeakers = Mapping[str, Sequence[Callable[[str], str]]]  # agent -> one speaker per copy: observation -> text


class RewardShaping(Protocol):
    """A dense training reward: ``weight`` x each change of a potential read from an agent's info."""

    key: str  # the info the potential reads: a step whose info lacks it leaves the potential as it was
    weight: float

    def value(self, info: dict) -> float:
        """The potential of a step's ``info``."""


class PlayedGames(NamedTuple):
    """One game per env copy: each agent's turns (a turn's ``env`` is its chain: copy x agent), per copy each
    agent's return (the env's rewards), the copy's metrics (``utterances``: the game's length) and its text
    (``{"prompt": the first speaker's first observation, "utterance": the game's lines, "agent: text"}``)."""

    turns: dict[str, list[Turn]]
    returns: np.ndarray
    finals: list[dict[str, float]]
    texts: list[dict[str, str]]


def prompt_of(agent: str, observation: str, shared_policy: bool) -> str:
    """The prompt of ``agent``'s policy; a policy shared by every agent is told whose turn it is at the end."""
    return f"{observation}\n{agent}:" if shared_policy else observation


class GamesInPlay:
    """The state of one game per env copy while it is played: observations, infos, turns, returns, potentials."""

    def __init__(self, envs: Sequence, seeds: Sequence[int], shaping: RewardShaping | None):
        self.envs, self.seeds, self.shaping = envs, seeds, shaping
        self.agents = envs[0].possible_agents
        observations, infos = zip(*(env.reset(seed=seed) for env, seed in zip(envs, seeds, strict=True)))
        self.observations, self.infos = list(observations), list(infos)
        if shaping is not None:
            self.potential = {(who, i): shaping.value(info[who]) for i, info in enumerate(infos) for who in self.agents}
        self.turns: dict[str, list[Turn]] = {agent: [] for agent in self.agents}
        self.last: dict[tuple[str, int], Turn] = {}  # an agent's latest turn in a copy: it collects the rewards
        self.returns = np.zeros((len(envs), len(self.agents)))
        self.finals: list[dict[str, float]] = [{} for _ in envs]
        self.reported: list[list[dict[str, float]]] = [[] for _ in envs]  # per copy, the steps' numeric metrics
        self.openings = [self.observations[i][self.active_agent(i)]["text"] for i in range(len(envs))]
        self.lines: list[list[str]] = [[] for _ in envs]  # per copy, "agent: utterance" as said
        self.live = [True] * len(envs)

    def active_agent(self, i: int) -> str:
        return self.infos[i][self.envs[i].agents[0]]["active_agent"]

    def speakers(self) -> dict[str, list[int]]:
        """The live copies, grouped by their active agent."""
        speaking: dict[str, list[int]] = {}
        for i in np.flatnonzero(self.live):
            speaking.setdefault(self.active_agent(i), []).append(int(i))
        return speaking

    def sample(
        self, policy: TextPolicy, agent: str, rows: list[int], cycle: int, first_env: int, shared_policy: bool
    ) -> dict[int, str]:
        """``agent``'s utterances in the copies ``rows``, one batched sampling pass, recorded as its turns; the
        random numbers are keyed by the game's seed, its row in the whole batch and the cycle."""
        texts = [self.observations[i][agent]["text"] for i in rows]
        queries = policy.queries([prompt_of(agent, text, shared_policy) for text in texts])
        keys = [first_env + i for i in rows]
        uniforms = episode_uniforms([self.seeds[i] for i in rows], keys, cycle, policy.lengths.max_new_tokens)
        samples = policy.sample(queries, uniforms=uniforms)
        utterances = {}
        for k, i in enumerate(rows):
            turn = Turn(
                env=i * len(self.agents) + self.agents.index(agent),  # GAE's chain: this agent's turns in copy i
                query=queries[k],
                response=samples.responses[k],
                log_probs=samples.log_probs[k],
                values=samples.values[k] if samples.values else None,
                hook_row=None,
                reward=0.0,
                done=False,
            )
            self.turns[agent].append(turn)
            self.last[agent, i] = turn
            utterances[i] = policy.tokenizer.decode(samples.responses[k], skip_special_tokens=True)
        return utterances

    def step(self, i: int, utterance: str) -> None:
        """Copy ``i``'s active agent says ``utterance``: every agent's reward goes to its latest turn."""
        agent = self.active_agent(i)
        limit = self.envs[i].action_space(agent).max_length
        self.lines[i].append(f"{agent}: {utterance[:limit]}")
        self.observations[i], rewards, terminations, truncations, self.infos[i] = self.envs[i].step(
            {agent: utterance[:limit]}
        )
        metrics = numeric_metrics(self.infos[i][agent].get("metrics", {}))
        if metrics:
            self.reported[i].append(metrics)
        for who, reward in rewards.items():
            self.returns[i, self.agents.index(who)] += reward
            reward = self.shaped(who, i, reward)
            if (who, i) in self.last:
                self.last[who, i].reward += reward
        if any(terminations.values()) or any(truncations.values()):
            self.finish(i)

    def shaped(self, who: str, i: int, reward: float) -> float:
        """``reward`` plus the shaping's weighted change of ``who``'s potential in copy ``i`` (updating it)."""
        if self.shaping is None or self.shaping.key not in self.infos[i][who]:
            return reward
        before, self.potential[who, i] = self.potential[who, i], self.shaping.value(self.infos[i][who])
        return reward + self.shaping.weight * (self.potential[who, i] - before)

    def finish(self, i: int) -> None:
        """Copy ``i``'s game is over: its metrics are their means over the steps that report them (DailyDialog
        scores every utterance, VisDial the whole game); each agent's latest turn ends its chain."""
        self.live[i] = False
        names = {name for step in self.reported[i] for name in step}
        self.finals[i] = {name: float(np.mean([m[name] for m in self.reported[i] if name in m])) for name in names}
        self.finals[i]["utterances"] = self.envs[i].num_cycles
        for who in self.agents:
            if (who, i) in self.last:
                self.last[who, i].done = True


def play_games(
    envs: Sequence,
    policies: Mapping[str, TextPolicy],
    scripted: ScriptedSpeakers,
    seeds: Sequence[int],
    first_env: int,
    shared_policy: bool,
    shaping: RewardShaping | None = None,
) -> PlayedGames:
    """One game per env copy (copy ``i`` reset with ``seeds[i]``, row ``first_env + i`` of the whole batch), each
    agent played by its policy in ``policies`` or its speakers in ``scripted``. ``shaping``: the turns' rewards also
    get its weighted changes of the potential (the returns do not)."""
    games = GamesInPlay(envs, seeds, shaping)
    for cycle in range(MAX_LOOP_CYCLES):
        if not any(games.live):
            break
        utterances: dict[int, str] = {}
        for agent, rows in games.speakers().items():
            if agent in scripted:
                utterances |= {i: scripted[agent][i](games.observations[i][agent]["text"]) for i in rows}
            else:
                utterances |= games.sample(policies[agent], agent, rows, cycle, first_env, shared_policy)
        for i, utterance in utterances.items():
            games.step(i, utterance)
    texts = [{"prompt": opening, "utterance": "\n".join(lines)} for opening, lines in zip(games.openings, games.lines)]
    return PlayedGames(games.turns, games.returns, games.finals, texts)


def evaluate_games(
    envs: Sequence,
    policies: Mapping[str, TextPolicy],
    scripted: ScriptedSpeakers,
    num_games: int,
    seed: int,
    shared_policy: bool,
) -> Evaluation | None:
    """``num_games`` validation games (game j reset with seed ``seed + j``, sampled with the random numbers of row j):
    ``mean_return`` is the mean over games of the agents' mean return, with each agent's return, the mean reward of an
    utterance and the env's metrics. Returns the evaluation (its samples: the first games' texts, the first
    speaker's first observation, then the game's lines); ``None`` without games."""
    if num_games == 0:
        return None
    returns, metrics, texts = [], [], []
    agents = envs[0].possible_agents
    for first in range(0, num_games, len(envs)):
        count = min(len(envs), num_games - first)  # copies beyond this play seeds that are not needed
        seeds = [seed + first + j for j in range(len(envs))]
        played = play_games(envs, policies, scripted, seeds, first, shared_policy)
        for j in range(count):
            per_agent = {f"{agent}_return": played.returns[j, a] for a, agent in enumerate(agents)}
            utterance_reward = played.returns[j].sum() / max(1, played.finals[j]["utterances"])
            returns.append(float(played.returns[j].mean()))
            metrics.append({**per_agent, **played.finals[j], "utterance_reward": utterance_reward})
            texts.append(played.texts[j])
    return Evaluation(summarize_episodes(returns, metrics), samples=episode_samples(texts, returns))
