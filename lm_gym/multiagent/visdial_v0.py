"""# Visual Dialogue (questioner and answerer)

| | |
|---|---|
| Import | `from lm_gym.multiagent import visdial_v0` |
| Actions | text (`gymnasium.spaces.Text`) |
| Parallel API | yes (native; the AEC env is PettingZoo's `parallel_to_aec` of it) |
| Manual control | no |
| Agents | `agents = ["questioner", "answerer"]` |
| Number of agents | 2 |
| Action spaces | questioner `Text(max_length=256)`, answerer `Text(max_length=256)` |
| Observation spaces | `Dict(text=Text, active=Discrete(2))` (lengths below) |

The cooperative version of `lm_gym/VisDial-v0` (the ILQL code base's Visual Dialogue, after
Das et al.'s VisDial RL), with the answerer as a second agent.

## Description
An image is hidden from the questioner. It reads the caption and asks questions; the answerer,
who sees the image, answers them. After each answer the task's ranker scores how well the
caption and dialogue so far pick the image out of the candidates (a retrieval percentile), and
the game ends once the dialogue has closed ``cutoff`` of the gap between the caption-only
percentile and a perfect rank. Both agents are rewarded for finding the image in few rounds:
good questions and answers that are true to the picture. The game is the single-agent env's
(:class:`lm_gym.tasks.visdial.VisDialEnv`), played through it with the answering agent in
place of the world's answerer; nothing of the task is implemented twice.

Turns alternate, one utterance per cycle (see :mod:`lm_gym.multiagent.turns`): the
questioner speaks at even cycles, the answerer at odd ones. Every live agent hands in an
action each cycle; only the active agent's (``info["active_agent"]``) is used, the other is
checked and ignored (pass ``""``).

## Agents
* ``questioner``: asks about the hidden image (the agent of ``lm_gym/VisDial-v0``).
* ``answerer``: sees the image and answers the last question.

## Action Space
Each agent's utterance, ``Text(max_length=256)`` of printable ASCII, as in the single-agent
env: whitespace runs (newlines too) become one space and surrounding space is dropped, so an
utterance is one line of the observation. Any text is a question or an answer (an answer the
ranker cannot match with any candidate rules nothing out). A non-``str`` action or one over
256 characters raises ``InvalidActionError`` naming the agent, and so does a parallel step
whose dict lacks the active agent or names an agent that is not live; the episode goes on as
if the call had not happened. Token level: not offered (see :mod:`lm_gym.multiagent`).

## Observation Space
``Dict``: ``text`` below and ``active``, 1 for the agent whose turn it is (a ``Dict`` rather
than a bare ``Text``: PettingZoo's ``api_test`` compares an observation's ``dtype`` with its
space's, which a ``str`` has not).

* ``questioner``: the single-agent observation (ILQL's text: the caption on the first line,
  then a line per question and per answer), followed, while its question waits for the
  answer, by that question's line: ``Text(max_length=512 + 514 * max_turns + 257)``.
* ``answerer``: the hidden image, a blank line, then the questioner's view; at its turn the
  last line is the question to answer. ``source="synthetic"``: the scene in one line of words
  (``lm_gym.tasks.visdial.synthetic.scene_text``: ``park, night, snowy. main: three green women
  on the left. also: a gray bench in the middle.``: setting, time, weather, then the groups the
  caption names and the others, each with count, colour and position); ``source="local"``: the
  target dialog's caption and human rounds (the text-only world's "image"), cut to 8,192
  characters: ``Text(max_length=8192 + 2 + the questioner's length)``.

## Rewards
Cooperative: both agents get the single-agent env's reward of the round, at the cycle of the
answer (the question's cycle gives 0). That is ILQL's reward: -1 per round until the
percentile gain reaches ``cutoff``, 0 for the round that reaches it, plus ``yn_reward`` when
the *answer* passes the yes/no test ``yn_reward_kind``, then ``* reward_scale +
reward_shift``. So each agent's return equals the single-agent return of the same dialogue.

## Starting State
The single-agent env's, reset with the same ``seed``: a target image drawn uniformly with the
env's RNG, or image ``i`` with ``reset(options={"index": i})`` (a bad index raises
``ConfigurationError``; other option keys are ignored with a warning). ``infos`` hold
``active_agent`` (``"questioner"``) and the single-agent reset's ``info`` (``prompt``,
``references``, ``meta``, ``percentile``: the caption-only percentile, ``percentile_gain``: 0.0,
where a dense reward on the rounds' progress starts, e.g. ``baselines/ippo.py --shaping-info
percentile_gain``).

## Episode End
Both agents terminate at the answer that reaches the cutoff or ends round ``max_turns``; both
are truncated after ``max_cycles`` utterances. At each answer every agent's ``info`` holds the
single-agent step's ``info`` (``answer``, ``percentile``, ``turn``, ``meta``; at the end
``metrics``: ``return``, ``turns``, ``reached_cutoff``, ``final_percentile``,
``percentile_gain``, ``yes_no_answers``); at each question ``question``. With
``source="synthetic"`` each answer's ``info`` also holds ``answer_right`` (whether it says what
the scene's own answerer says, compared as the ranker compares answers: lower-case words), and
the last one's ``metrics`` hold ``answers_right``, the share of the game's answers that did: how
well the answering agent reads the scene, apart from the questions asked.

## Arguments
Every argument of ``lm_gym/VisDial-v0`` (:class:`lm_gym.tasks.visdial.VisDialEnv`) but
``answerer`` (the answering agent answers) and ``render_mode``, passed to it as it is, and the
multi-agent env's own:

| argument | default | meaning |
|---|---|---|
| ``split``, ``source`` | ``"train"``, ``"synthetic"`` | the images (see below) |
| ``data_dir``, ``num_images`` | ``None``, ``None`` | the images (see below) |
| ``ranker`` | ``None`` | your own ranker (``percentiles(images, dialogues)``); ``None``: the source's |
| ``cutoff``, ``goal_value`` | ``0.5``, ``1.0`` | the end of the game, as ``lm_gym/VisDial-v0`` |
| ``yn_reward``, ``yn_reward_kind`` | ``-2.0``, ``"none"`` | the yes/no penalty of the answers |
| ``reward_scale``, ``reward_shift`` | ``1.0``, ``0.0`` | ``reward = (base + yn) * reward_scale + reward_shift`` |
| ``max_turns`` | ``10`` | rounds (question and answer) per game, 1 to 20 |
| ``server_url``, ``image_features``, ``server_timeout`` | the task's | as ``lm_gym/VisDial-v0`` (see below) |
| ``max_cycles`` | ``None`` | truncate after this many utterances (PettingZoo's cycles); ``None``: no limit |
| ``render_mode`` | ``None`` | ``"ansi"`` returns the conversation (the questioner's view), ``"human"`` prints it |

``split``, ``source``, ``data_dir`` and ``num_images`` choose the images as for ``lm_gym/VisDial-v0``
(``source="synthetic"`` is offline; ``"local"`` reads a VisDial v1.0 json). ``max_cycles=None`` ends
the episode at the game's own end only. A visdial-rl server (``server_url``) answers *and* ranks,
so the task refuses it beside the answering agent.

Bad arguments raise ``ConfigurationError`` naming the argument.

## Usage
```python
from lm_gym.multiagent import visdial_v0

env = visdial_v0.env()                        # AEC
env.reset(seed=0)
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    elif info["active_agent"] == agent:
        action = "what color is the dog?" if agent == "questioner" else "brown"
    else:
        action = ""                           # not this agent's turn
    env.step(action)

parallel = visdial_v0.parallel_env()          # parallel
observations, infos = parallel.reset(seed=0)
observations, rewards, terminations, truncations, infos = parallel.step({"questioner": "is it sunny?"})
```

## Version History
* v0: initial version (before the first release the synthetic scene line changed from JSON,
  about 400 tokens, to words, about 50, the reset ``infos`` got the single-agent reset's, and
  the synthetic answers got ``answer_right`` and the games' ``metrics`` ``answers_right``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from lm_gym.core.errors import UnknownArgumentError
from lm_gym.multiagent.turns import TurnTakingEnv, pettingzoo_constructors
from lm_gym.tasks.visdial.dialogue import (
    MAX_ANSWER_LENGTH,
    MAX_QUESTION_LENGTH,
    HiddenImage,
    clean_question,
    dialogue_text,
)
from lm_gym.tasks.visdial.env import VisDialEnv
from lm_gym.tasks.visdial.synthetic import Scene, answer_question, normalize_answer, scene_text

QUESTIONER, ANSWERER = "questioner", "answerer"
#: Longest text of the hidden image in the answerer's observation (characters; longer is cut).
MAX_HIDDEN_LENGTH = 8192


def hidden_text(image: HiddenImage) -> str:
    """What the answerer sees of ``image``: a synthetic scene as one line of words, a human dialog as its text."""
    content = image.content
    text = scene_text(content) if isinstance(content, Scene) else dialogue_text(content.caption, content.rounds)
    return text[:MAX_HIDDEN_LENGTH]


class _AgentAnswer:
    """The single-agent env's answerer, answering with the answering agent's utterance."""

    text = ""

    def answer(self, image: HiddenImage, dialogue: Any, question: str) -> str:
        return self.text


class VisDialParallelEnv(TurnTakingEnv):
    """Visual Dialogue with a questioning and an answering agent: see :mod:`lm_gym.multiagent.visdial_v0`."""

    metadata: ClassVar[dict[str, Any]] = {**TurnTakingEnv.metadata, "name": "visdial_v0"}

    def __init__(self, *, max_cycles: int | None = None, render_mode: str | None = None, **task_kwargs: Any):
        super().__init__(max_cycles, render_mode)
        if "answerer" in task_kwargs:
            raise UnknownArgumentError(
                "VisDialParallelEnv() got an unexpected keyword argument 'answerer': the answering agent answers"
            )
        self.possible_agents = [QUESTIONER, ANSWERER]
        self._answer = _AgentAnswer()
        self.task = VisDialEnv(answerer=self._answer, **task_kwargs)
        questioner_view = self.task.observation_space.max_length + 1 + MAX_QUESTION_LENGTH
        self._set_spaces(
            {QUESTIONER: questioner_view, ANSWERER: MAX_HIDDEN_LENGTH + 2 + questioner_view},
            {QUESTIONER: self.task.action_space.max_length, ANSWERER: MAX_ANSWER_LENGTH},
        )
        self._dialogue, self._hidden, self._question = "", "", None
        self._scene: Scene | None = None  # the synthetic scene, whose own answers grade the answerer's
        self._right_answers = 0

    @property
    def active_agent(self) -> str:
        return QUESTIONER if self._question is None else ANSWERER

    def _start(self, seed: int | None, options: dict[str, Any]) -> dict[str, Any]:
        self._dialogue, info = self.task.reset(seed=seed, options=options)
        image = self.task.images[info["meta"]["index"]]
        self._hidden = hidden_text(image)
        self._scene = image.content if isinstance(image.content, Scene) else None
        self._question = None
        self._right_answers = 0
        return info

    def _speak(self, utterance: str) -> tuple[dict[str, float], bool, dict[str, Any]]:
        if self._question is None:
            self._question = clean_question(utterance)
            return {}, False, {"question": self._question}
        self._answer.text = utterance
        dialogue, reward, terminated, _, info = self.task.step(self._question)
        if self._scene is not None:
            right = normalize_answer(info["answer"]) == normalize_answer(answer_question(self._scene, self._question))
            self._right_answers += right
            info["answer_right"] = right
            if "metrics" in info:  # the game's last answer; info["turn"] counts its answers
                info["metrics"] = {**info["metrics"], "answers_right": self._right_answers / info["turn"]}
        self._dialogue, self._question = dialogue, None
        return dict.fromkeys(self.possible_agents, reward), terminated, info

    def observe(self, agent: str) -> str:
        questioner_view = self._text()
        return questioner_view if agent == QUESTIONER else f"{self._hidden}\n\n{questioner_view}"

    def _text(self) -> str:
        return self._dialogue if self._question is None else f"{self._dialogue}\n{self._question}"


parallel_env, raw_env, env = pettingzoo_constructors(VisDialParallelEnv)
