"""The PettingZoo envs (``lm_gym.multiagent``): PettingZoo's own API, seed and max-cycles tests,
rewards equal to the single-agent envs' for the same dialogue, hidden information, bad input,
and the self-play example run offline."""

import functools
import importlib
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import gymnasium
import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.multiagent import dailydialog_v0, visdial_v0
from lm_gym.tasks.dailydialog.env import DailyDialogEnv
from lm_gym.tasks.visdial.policies import MixtureQuestioner, SceneTextAnswerer
from lm_gym.tasks.visdial.synthetic import gallery, parse_scene_text, scene_text

ROOT = Path(__file__).resolve().parents[2]


def _module(module, **kwargs):
    """``module``'s constructors with ``kwargs`` (PettingZoo's tests take a module or env_fn)."""
    return types.SimpleNamespace(
        env=functools.partial(module.env, **kwargs),
        raw_env=functools.partial(module.raw_env, **kwargs),
        parallel_env=functools.partial(module.parallel_env, **kwargs),
    )


# DailyDialog: dialogues with at least 4 turns to play, so max_cycles_test's 4 cycles fit in every game.
MODULES = {"visdial": _module(visdial_v0), "dailydialog": _module(dailydialog_v0, split="validation", min_replies=4)}


@pytest.fixture(params=sorted(MODULES))
def module(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's tests warn about non-Box spaces and agent names
        yield MODULES[request.param]


def test_pettingzoo_api_test(module):
    api_test(module.env(), num_cycles=100)
    api_test(module.raw_env(), num_cycles=100)


def test_pettingzoo_parallel_api_test(module):
    parallel_api_test(module.parallel_env(), num_cycles=100)


def test_pettingzoo_seed_tests(module):
    seed_test(module.env, num_cycles=20)
    parallel_seed_test(module.parallel_env, num_cycles=20)


def test_pettingzoo_max_cycles_test(module):
    max_cycles_test(module)


def test_metadata_and_spaces():
    env = visdial_v0.parallel_env()
    assert env.metadata["name"] == "visdial_v0" and env.metadata["is_parallelizable"]
    assert dailydialog_v0.parallel_env(split="validation").metadata["name"] == "dailydialog_v0"
    assert env.possible_agents == ["questioner", "answerer"]
    assert isinstance(env.action_space("questioner"), gymnasium.spaces.Text)
    assert env.observation_space("answerer")["text"].max_length > env.observation_space("questioner")["text"].max_length


# ---- Visual Dialogue ------------------------------------------------------------------------
def play_parallel(env, policies, seed):
    """Per-cycle rewards of ``policies`` (agent -> observation text -> utterance), and the last infos."""
    observations, infos = env.reset(seed=seed)
    rewards = []
    while env.agents:
        speaker = infos[env.agents[0]]["active_agent"]
        observations, step_rewards, _, _, infos = env.step(
            {
                speaker: policies[speaker](observations[speaker]["text"]),
                **{agent: "" for agent in env.agents if agent != speaker},
            }
        )
        rewards.append(step_rewards)
    return rewards, infos


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_visdial_cooperative_reward_is_the_single_agent_reward(seed):
    """The scripted answerer reading the scene from its observation answers as the world's
    answerer does, so the game and every round's reward are the single-agent env's."""
    questioner = MixtureQuestioner(0.5, seed=seed)
    rewards, infos = play_parallel(
        visdial_v0.parallel_env(yn_reward_kind="soft"),
        {"questioner": questioner, "answerer": SceneTextAnswerer()},
        seed,
    )
    questioner.seed(seed)
    single = gymnasium.make("lm_gym/VisDial-v0", yn_reward_kind="soft")
    observation, _ = single.reset(seed=seed)
    single_rewards, done = [], False
    while not done:
        observation, reward, terminated, truncated, single_info = single.step(questioner(observation))
        single_rewards.append(reward)
        done = terminated or truncated
    assert all(step["questioner"] == step["answerer"] for step in rewards)  # cooperative
    assert [step["questioner"] for step in rewards[0::2]] == [0.0] * len(single_rewards)  # questions score nothing
    assert [step["questioner"] for step in rewards[1::2]] == single_rewards
    # the scene reader says what the scene's own answerer says: every answer is right
    assert infos["questioner"]["metrics"] == {**single_info["metrics"], "answers_right": 1.0}


def test_visdial_answers_are_the_answering_agents():
    env = visdial_v0.parallel_env(yn_reward_kind="hard", yn_reward=-2.0)
    env.reset(seed=0, options={"index": 5})
    env.step({"questioner": "is it sunny?", "answerer": ""})
    _, rewards, *_, infos = env.step({"answerer": "yes"})
    assert infos["answerer"]["answer"] == "yes" and rewards == {
        "questioner": -3.0,
        "answerer": -3.0,
    }  # -1 and the yes/no penalty
    observations, *_ = env.step({"questioner": "what color is the dog?", "answerer": ""})
    assert observations["questioner"]["text"].endswith("is it sunny?\nyes\nwhat color is the dog?")


def test_visdial_grades_each_answer_against_the_scenes_own():
    # scene 7: "field, day, clear. main: four yellow fences on the left; a brown dog on the left. also: ..."
    env = visdial_v0.parallel_env(max_turns=3)
    env.reset(seed=0, options={"index": 7})
    graded = []
    for question, answer in [
        ("is it day or night?", "night"),
        ("how many fences are there?", "4"),  # the scene says "four": the ranker reads another answer
        ("what color is the fence?", "  Yellow!"),  # the scene's "yellow", as the ranker reads it
    ]:
        env.step({"questioner": question})
        *_, terminations, _, infos = env.step({"answerer": answer})
        graded.append(infos["answerer"]["answer_right"])
    assert graded == [False, False, True] and all(terminations.values())
    assert infos["answerer"]["metrics"]["answers_right"] == pytest.approx(1 / 3)
    assert infos["questioner"]["metrics"]["answers_right"] == pytest.approx(1 / 3)
    # a new game counts afresh
    env.reset(seed=0, options={"index": 7})
    env.step({"questioner": "what color is the fence?"})
    *_, infos = env.step({"answerer": "yellow"})
    assert infos["answerer"]["answer_right"] is True and infos["answerer"]["metrics"]["answers_right"] == 1.0


def test_the_scene_line_reads_back_into_its_scene_and_refuses_other_text():
    for image in gallery("validation"):
        assert parse_scene_text(scene_text(image.content), caption=image.caption) == image.content
    line = scene_text(gallery("train")[7].content)
    assert line.count(".") == 3 and "{" not in line
    for bad in (
        "",
        line[:-1],
        line.replace(" on the ", " at the "),
        "park, day. main: two red dog on the left. also: nothing.",
    ):
        with pytest.raises(ValueError, match="not a scene_text line"):
            parse_scene_text(bad)


def test_visdial_answerer_sees_the_hidden_scene_and_the_questioner_does_not():
    env = visdial_v0.parallel_env()
    observations, infos = env.reset(seed=0, options={"index": 7})
    scene = scene_text(gallery("train")[7].content)
    assert observations["answerer"]["text"].split("\n")[0] == scene
    assert scene not in observations["questioner"]["text"] and "{" not in observations["questioner"]["text"]
    assert observations["questioner"]["text"] == gallery("train")[7].caption
    assert [observations[agent]["active"] for agent in env.agents] == [1, 0] and infos["answerer"][
        "active_agent"
    ] == "questioner"
    observations, *_ = env.step({"questioner": "what else is there?"})
    assert (
        observations["answerer"]["text"].endswith("\nwhat else is there?") and observations["answerer"]["active"] == 1
    )
    assert "setting" not in str(infos["questioner"])


def test_visdial_local_source_shows_the_answerer_the_human_dialog(shared_data):
    env = visdial_v0.parallel_env(split="validation", source="local", data_dir=shared_data / "visdial")
    observations, _ = env.reset(seed=0, options={"index": 0})
    image = env.task.images[0]
    hidden, questioner_view = observations["answerer"]["text"].split("\n\n")
    assert hidden.split("\n")[1:3] == list(image.content.rounds[0]) and questioner_view == image.caption
    env.step({"questioner": image.content.rounds[0][0]})
    *_, infos = env.step({"answerer": image.content.rounds[0][1]})
    assert infos["answerer"]["turn"] == 1 and "answer_right" not in infos["answerer"]


def test_max_cycles_truncates_and_render():
    env = visdial_v0.parallel_env(max_cycles=3, render_mode="ansi")
    env.reset(seed=0)
    for action in ({"questioner": "what else is there?"}, {"answerer": "a cat"}):
        _, _, terminations, truncations, _ = env.step(action)
        assert not any(truncations.values())
    _, _, terminations, truncations, _ = env.step({"questioner": "is it day?"})
    assert all(truncations.values()) and not any(terminations.values()) and env.agents == []
    assert env.render().endswith("what else is there?\na cat\nis it day?")


# ---- DailyDialog ----------------------------------------------------------------------------
def test_dailydialog_reward_is_the_single_agent_reward_of_each_reply():
    """Speakers that say the dataset's utterances are scored exactly as the single-agent env
    scores those replies (same context, reference and act)."""
    env = dailydialog_v0.parallel_env(split="validation", context_size=5, min_replies=3)
    single = DailyDialogEnv(split="validation", source="synthetic", context_size=5)
    observations, infos = env.reset(options={"index": 4})
    speakers, scored = [], []
    for sample in env.games[4]:
        speaker = infos["speaker_0"]["active_agent"]
        assert observations[speaker]["text"] == sample.prompt
        listener = "speaker_1" if speaker == "speaker_0" else "speaker_0"
        observations, rewards, _, _, infos = env.step({speaker: sample.references[0], listener: ""})
        single.reset(options={"index": sample.meta["index"]})
        assert rewards[speaker] == single.step(sample.references[0])[1]
        assert rewards[listener] == 0.0
        speakers.append(speaker)
        scored.append(rewards[speaker])
    assert env.agents == [] and speakers == [f"speaker_{k % 2}" for k in range(len(speakers))]
    assert len(scored) >= 3 and min(scored) > 0.5


def test_dailydialog_context_is_the_conversation_as_played():
    env = dailydialog_v0.parallel_env(split="validation", context_size=2)
    observations, _ = env.reset(seed=0, options={"index": 0})
    first = observations["speaker_0"]["text"]
    observations, rewards, *_, infos = env.step({"speaker_0": "Where is the station?"})
    second_utterance = first.removesuffix(" <EOU>").split(" <EOU> ")[1]
    assert observations["speaker_1"]["text"] == f"{second_utterance} <EOU> Where is the station? <EOU>"
    assert infos["speaker_0"]["prompt"] == first and set(infos["speaker_0"]["metrics"]) >= {"intent_match", "meteor"}
    assert rewards["speaker_1"] == 0.0 and infos["speaker_1"]["active_agent"] == "speaker_1"


# ---- bad input: the contract of the single-agent envs ------------------------------------------
class Unprintable:
    """A caller's object whose ``repr`` and ``str`` raise: error messages must not call them unguarded."""

    def __repr__(self):
        raise RuntimeError("repr of Unprintable")

    __str__ = __repr__


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        (
            {"questioner": Unprintable()},
            "the action of 'questioner' must be a str .*, got Unprintable: <Unprintable object>",
        ),
        ({"questioner": "ok", Unprintable(): ""}, "<Unprintable object> is not a live agent"),
        (Unprintable(), "actions must be a dict"),
        ({"questioner": 3}, "the action of 'questioner' must be a str"),
        ({"questioner": "x" * 257}, "the action of 'questioner' has 257 characters"),
        ({"questioner": "ok", "answerer": None}, "the action of 'answerer' must be a str"),
        ({"answerer": "yes"}, "lacks the utterance of 'questioner'"),
        ({"questioner": "ok", "referee": ""}, "'referee' is not a live agent"),
        (["what?"], "actions must be a dict"),
    ],
)
def test_parallel_bad_actions_raise_and_change_nothing(actions, match):
    env = visdial_v0.parallel_env()
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=match):
        env.step(actions)
    fresh = visdial_v0.parallel_env()
    fresh.reset(seed=0)
    for step in ({"questioner": "what else is there?"}, {"answerer": "a cat"}):
        assert env.step(step) == fresh.step(step)


def test_aec_bad_action_is_refused_at_its_step_and_the_cycle_goes_on():
    env = visdial_v0.env()
    env.reset(seed=0)
    assert env.agent_selection == "questioner"
    with pytest.raises(InvalidActionError, match="questioner"):
        env.step(b"what?")
    with pytest.raises(InvalidActionError, match="<Unprintable object>"):
        env.step(Unprintable())
    env.step("what else is there?")
    with pytest.raises(InvalidActionError, match="answerer"):
        env.step("x" * 300)
    env.step("")  # the answerer passes: the question's cycle ends
    observation, *_ = env.last()
    assert env.agent_selection == "questioner" and observation["text"].endswith("\nwhat else is there?")


def test_step_before_reset_and_after_the_end():
    with pytest.raises(ResetNeededError):
        visdial_v0.parallel_env().step({"questioner": "hi"})
    with pytest.raises(ResetNeededError):
        visdial_v0.env().step("hi")
    env = visdial_v0.parallel_env(max_cycles=1)
    env.reset(seed=0)
    env.step({"questioner": "hi"})
    with pytest.raises(ResetNeededError):
        env.step({"questioner": "hi"})


def test_bad_reset_and_constructor_arguments():
    env = visdial_v0.parallel_env()
    with pytest.raises(ConfigurationError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(ConfigurationError, match="index"):
        env.reset(options={"index": 10**6})
    with pytest.raises(ConfigurationError, match="<Unprintable object>"):
        env.reset(options=Unprintable())
    with pytest.warns(UserWarning, match="ignored"):
        env.reset(seed=0, options={"colour": 1})
    assert env.agents == ["questioner", "answerer"]
    for module, kwargs, name in (
        (visdial_v0, {"max_cycles": 0}, "max_cycles"),
        (visdial_v0, {"render_mode": "rgb_array"}, "render_mode"),
        (visdial_v0, {"cutoff": 2.0}, "cutoff"),
        (dailydialog_v0, {"min_replies": 0}, "min_replies"),
        (dailydialog_v0, {"context_size": "5"}, "context_size"),
    ):
        with pytest.raises(ConfigurationError, match=name):
            module.parallel_env(**kwargs)
    with pytest.raises(ConfigurationError, match="index"):
        dailydialog_v0.parallel_env(split="validation").reset(options={"index": -1})


def test_the_task_arguments_reach_the_task_as_they_are():
    """The multi-agent envs take their task's keyword arguments, the server's too, and the task checks them."""
    for kwargs, name in (
        ({"server_timeout": 0}, "server_timeout"),
        ({"image_features": {}}, "image_features"),
        ({"server_url": "http://localhost:1"}, "server_url answers and ranks"),
    ):
        with pytest.raises(ConfigurationError, match=name):
            visdial_v0.parallel_env(**kwargs)
    with pytest.raises(TypeError, match="answerer"):  # the answering agent is the answerer
        visdial_v0.parallel_env(answerer=lambda image, dialogue, question: "yes")
    assert visdial_v0.parallel_env(num_images=40, goal_value=0.5).task.goal_value == 0.5
    assert dailydialog_v0.parallel_env(split="validation", meteor_coef=0.5).task.reward_fn is not None


# ---- without PettingZoo --------------------------------------------------------------------
def test_import_without_pettingzoo_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pettingzoo", None)  # as if it were not installed
    for name in [name for name in sys.modules if name == "lm_gym.multiagent" or name.startswith("lm_gym.multiagent.")]:
        monkeypatch.delitem(sys.modules, name)  # a fresh import; restored afterwards
    with pytest.raises(ImportError, match=r'pip install "lm-gym\[multi-agent\]"'):
        importlib.import_module("lm_gym.multiagent")
    with pytest.raises(ImportError, match="multi-agent"):
        importlib.import_module("lm_gym.multiagent.visdial_v0")


# ---- the self-play example ----------------------------------------------------------------
def test_selfplay_example_runs_offline():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "multiagent_selfplay.py"), "--episodes", "4"],
        check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = {line.split("  ")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("  ")}
    informative = float(lines["informative questioner + scene answerer"].split("return")[1].split()[0])
    lazy = float(lines["informative questioner + lazy answerer"].split("return")[1].split()[0])
    assert informative > lazy == -10.0
    assert "speaker_0" in lines["act-aware"] and "speaker_1" in lines["act-aware"]
