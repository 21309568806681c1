"""The chat view of a task (``lm_gym.core.chat`` and the chat hooks of ``TextEnv``): the messages of
scripted games of the built-in tasks, a user's and a mixture's, the rules read from the docstrings,
vector envs, and the prompt text with and without a chat template."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import pytest
import user_tasks  # noqa: F401  (registers user/SayTheWord-v0 and user/CountUp-v0)

import lm_gym
from lm_gym import ChatBatch, ChatTranscript, chat_prompt
from lm_gym.core.chat import plain_chat_prompt
from lm_gym.core.docstrings import docstring_instructions
from lm_gym.core.errors import ConfigurationError
from lm_gym.core.text_env import TextEnv
from lm_gym.core.tokenizer import train_tokenizer
from lm_gym.core.vector import TextVectorEnv
from lm_gym.tasks.imdb import IMDBEnv
from lm_gym.tasks.mixture import MixtureEnv
from lm_gym.tasks.visdial import VisDialEnv
from lm_gym.tasks.wordle import WordleEnv

ROOT = Path(__file__).resolve().parents[2]
WORDLE_RULES = (
    "Guess a hidden five-letter word in at most six guesses. After each guess every letter is coloured: "
    "green (right letter, right place), yellow (in the word, elsewhere) or grey (not in the word). Repeated "
    "letters follow the game: greens are assigned first, then, left to right, a letter is yellow only while "
    "the word has an unmatched copy of it."
)
WORDLE_BOARD = (
    "Wordle: guess the hidden five-letter word in 6 tries. Feedback per letter: g = right place, "
    "y = in the word elsewhere, b = not in the word."
)
MARKUP = re.compile(r"`|\*\*|:\w+:|^#|\]\(|::", re.MULTILINE)


def play(env, replies, **reset_kwargs) -> ChatTranscript:
    """A chat of ``env``'s episode reset with ``reset_kwargs`` and stepped with ``replies``."""
    observation, _ = env.reset(**reset_kwargs)
    chat = ChatTranscript.start(env, observation)
    for reply in replies:
        observation, _, terminated, truncated, _ = env.step(reply)
        chat.record(reply, observation, terminated, truncated)
    return chat


def wordle(**kwargs):
    return gymnasium.make("lm_gym/Wordle-v0", mode="hidden_word", **kwargs)


def test_a_wordle_game_as_a_chat():
    chat = play(wordle(), ["crane", "xyz", " SOLAR "], seed=0, options={"answer": "solar"})
    assert chat.messages == [
        {"role": "system", "content": WORDLE_RULES},
        {"role": "user", "content": WORDLE_BOARD},
        {"role": "assistant", "content": "crane"},
        {"role": "user", "content": "byybb"},  # the board's new line "crane byybb" without the echo
        {"role": "assistant", "content": "xyz"},
        {"role": "user", "content": "invalid"},
        {"role": "assistant", "content": " SOLAR "},  # solved: the episode ends on the reply
    ]
    assert chat.done and chat.observation.endswith("\nsolar ggggg")
    with pytest.raises(ConfigurationError, match="ended"):
        chat.record("crane", chat.observation, False, False)


def test_a_visdial_game_as_a_chat():
    chat = play(gymnasium.make("lm_gym/VisDial-v0"), ["is it a dog?", "what color is the car?"], seed=0)
    assert chat.messages == [
        {"role": "system", "content": VisDialEnv.default_chat_instructions()},
        {"role": "user", "content": "a picture of some women and some children in a park"},
        {"role": "assistant", "content": "is it a dog?"},
        {"role": "user", "content": "yes"},
        {"role": "assistant", "content": "what color is the car?"},
        {"role": "user", "content": "i don't see any cars"},
    ]
    assert chat.messages[0]["content"].startswith("An answerer looks at an image the agent cannot see;")
    assert not chat.done


def test_a_single_turn_task_is_the_rules_and_one_user_message():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
    observation, info = env.reset(seed=0)
    chat = ChatTranscript.start(env, observation)
    rules = {"role": "system", "content": IMDBEnv.default_chat_instructions()}
    assert chat.messages == [rules, {"role": "user", "content": info["prompt"]}]
    observation, _, terminated, truncated, _ = env.step("a wonderful film")
    chat.record("a wonderful film", observation, terminated, truncated)
    assert chat.done and chat.messages[2:] == [{"role": "assistant", "content": "a wonderful film"}]
    commongen = gymnasium.make("lm_gym/CommonGen-v0", source="synthetic")
    observation, _ = commongen.reset(seed=0)
    assert [message["role"] for message in ChatTranscript.start(commongen, observation).messages] == ["system", "user"]


@pytest.mark.parametrize("env_id", lm_gym.registered_tasks())
def test_every_task_has_rules_from_its_docstring_without_markup(env_id):
    rules = lm_gym.task_class(env_id).default_chat_instructions()
    assert rules and len(rules.split()) >= 10
    assert not MARKUP.search(rules), rules
    assert all(paragraph == " ".join(paragraph.split()) for paragraph in rules.split("\n\n"))


def test_the_class_attribute_overrides_the_docstring():
    class ShortRules(WordleEnv):
        chat_instructions = "Guess the word."

    class NoRules(WordleEnv):
        chat_instructions = ""

    class Undocumented(WordleEnv):
        pass

    assert ShortRules().chat_system_message() == "Guess the word."
    assert ShortRules.default_chat_instructions() == WORDLE_RULES  # what it overrides
    assert Undocumented().chat_system_message() == WORDLE_RULES  # the nearest task class's docstring
    observation, _ = NoRules().reset(seed=0)
    assert ChatTranscript.start(NoRules(), observation).messages == [{"role": "user", "content": observation}]


def test_docstring_instructions_reads_the_description_section():
    markdown = """Summary line.

    ## Description
    Read ``the prompt`` and **answer** it; see :func:`~pkg.module.helper`, :class:`pkg.Thing`,
    [the docs](https://example.org) and `Title <https://example.org>`_, with *care*.

    A second paragraph, ``a * b`` kept.

    Options of the game:

    * a list item

    ## Action Space
    Text.
    """
    assert docstring_instructions(markdown) == (
        "Read the prompt and answer it; see helper, pkg.Thing, the docs and Title, with care.\n\n"
        "A second paragraph, a * b kept."
    )
    rst = "Summary.\n\nDescription\n-----------\nPlay the game.\n\nExample::\n\n    code\n\nRewards\n-------\n1."
    assert docstring_instructions(rst) == "Play the game."
    assert docstring_instructions("A summary that goes on\non two lines.\n\nMore text.") == (
        "A summary that goes on on two lines."
    )
    assert docstring_instructions(None) is None and docstring_instructions("  ") is None


def test_the_default_user_message_is_what_the_observation_adds():
    message = TextEnv.chat_user_message
    env = WordleEnv()
    assert message(env, "board", "crane", "board\ncrane bygbb") == "bygbb"
    assert message(env, "board", "  CRANE ", "board\ncrane bygbb") == "bygbb"  # the echo as the task saw it
    assert message(env, "a caption", "no", "a caption\nno\nnothing else") == "nothing else"
    assert message(env, "a caption", "no", "a caption\nnothing") == "nothing"  # "no" is not the echo here
    assert message(env, "cut from the left", "x", "the left\nx\nanswer") == "the left\nx\nanswer"


def test_a_users_single_turn_and_multi_turn_tasks():
    say = play(gymnasium.make("user/SayTheWord-v0"), ["apple"], seed=0)
    rules = "One step: the observation names a word; the reward is 1 when the reply contains it."
    assert say.messages == [
        {"role": "system", "content": rules},
        {"role": "user", "content": say.messages[1]["content"]},  # the word drawn by seed 0, checked below
        {"role": "assistant", "content": "apple"},
    ]
    assert re.fullmatch(r"Say (apple|river|stone|cloud)\.", say.messages[1]["content"])
    count = gymnasium.make("user/CountUp-v0")
    first, _ = count.reset(seed=0)
    start = int(first.split()[-1].rstrip(":"))
    replies = [str(start + 1), str(start + 2), str(start + 3)]
    chat = play(count, replies, seed=0)
    assert chat.messages == [
        {
            "role": "system",
            "content": "turns turns: the observation shows a number; saying the next one scores 1 a turn.",
        },
        {"role": "user", "content": f"Count on from {start}:"},
        {"role": "assistant", "content": replies[0]},
        {"role": "user", "content": f"Count on from {start + 1}:"},  # the observation does not extend: all of it
        {"role": "assistant", "content": replies[1]},
        {"role": "user", "content": f"Count on from {start + 2}:"},
        {"role": "assistant", "content": replies[2]},
    ]
    assert chat.done


def test_a_mixture_gives_its_episodes_task_rules_and_answers():
    mixture = MixtureEnv(**MixtureEnv.offline_kwargs)
    assert mixture.chat_system_message() == MixtureEnv.default_chat_instructions()  # no episode yet
    mixture.reset(seed=0, options={"task": "lm_gym/IMDB-v0"})
    assert mixture.chat_system_message() == IMDBEnv.default_chat_instructions()
    chat = play(mixture, ["crane"], seed=1, options={"task": "lm_gym/Wordle-v0"})
    assert chat.messages[0]["content"] == WORDLE_RULES
    assert chat.messages[1:3] == [{"role": "user", "content": WORDLE_BOARD}, {"role": "assistant", "content": "crane"}]
    assert re.fullmatch("[gyb]{5}", chat.messages[3]["content"])

    class RuledMixture(MixtureEnv):
        chat_instructions = "Do each task well."

    ruled = RuledMixture(**MixtureEnv.offline_kwargs)
    ruled.reset(seed=0, options={"task": "lm_gym/Wordle-v0"})
    assert ruled.chat_system_message() == "Do each task well."


def test_a_vector_env_keeps_one_chat_per_copy():
    venv = gymnasium.make_vec(
        "lm_gym/Mixture-v0", num_envs=4, vectorization_mode="vector_entry_point", **MixtureEnv.offline_kwargs
    )
    observations, infos = venv.reset(seed=0)
    batch = ChatBatch(venv, observations)
    rules = {task: lm_gym.task_class(task).default_chat_instructions() for task in MixtureEnv.offline_kwargs["tasks"]}
    assert [chat.messages[0]["content"] for chat in batch.transcripts] == [rules[task] for task in infos["task"]]
    assert batch.messages() == [[chat.messages[0], {"role": "user", "content": observation}]
                                for chat, observation in zip(batch.transcripts, observations)]  # fmt: skip
    wordle_copies = [i for i, task in enumerate(infos["task"]) if task == "lm_gym/Wordle-v0"]
    single_turn = [i for i, task in enumerate(infos["task"]) if task != "lm_gym/Wordle-v0"]
    assert wordle_copies and single_turn  # seed 0 draws both kinds
    replies = ["crane" if i in wordle_copies else "a fine day" for i in range(4)]
    observations, _, terminations, truncations, _ = venv.step(replies)
    batch.record(replies, observations, terminations, truncations)
    assert batch.active() == wordle_copies  # the single-turn copies ended on their reply
    for i in single_turn:
        assert batch.transcripts[i].messages[2:] == [{"role": "assistant", "content": "a fine day"}]
    ended = list(batch.transcripts[single_turn[0]].messages)
    observations, _, terminations, truncations, _ = venv.step(["slate"] * 4)  # NextStep: the ended copies reset
    batch.record(["slate"] * 4, observations, terminations, truncations)
    assert batch.transcripts[single_turn[0]].messages == ended
    assert [m["content"] for m in batch.transcripts[wordle_copies[0]].messages[2:5:2]] == ["crane", "slate"]
    with pytest.raises(ConfigurationError, match="one entry per copy"):
        batch.record(["slate"], observations, terminations, truncations)


def test_a_batch_takes_one_env_for_all_copies_or_one_each():
    venv = TextVectorEnv(WordleEnv(mode="hidden_word"), 2)
    observations, _ = venv.reset(seed=0)
    shared = ChatBatch(WordleEnv(), observations)
    each = ChatBatch(list(venv.envs), observations)
    assert [chat.messages for chat in shared.transcripts] == [chat.messages for chat in each.transcripts]
    observations, _, terminations, truncations, _ = venv.step(["crane", "crane"])
    shared.record(["crane", "crane"], observations, terminations, truncations)
    assert [chat.messages[-2]["content"] for chat in shared.transcripts] == ["crane", "crane"]
    assert all(re.fullmatch("[gyb]{5}", chat.messages[-1]["content"]) for chat in shared.transcripts)
    with pytest.raises(ConfigurationError, match="one env per observation"):
        ChatBatch(list(venv.envs), observations[:1])
    with pytest.raises(ConfigurationError, match="utterance-level"):
        ChatTranscript.start(gymnasium.make("CartPole-v1"), "")


def test_a_prompt_with_the_tokenizers_chat_template_and_without_one():
    messages = [
        {"role": "system", "content": "Guess the word."},
        {"role": "user", "content": "board"},
        {"role": "assistant", "content": "crane"},
        {"role": "user", "content": "byybb"},
    ]
    plain = "System: Guess the word.\n\nUser: board\n\nAssistant: crane\n\nUser: byybb\n\nAssistant:"
    assert chat_prompt(messages) == plain_chat_prompt(messages) == plain
    tokenizer = train_tokenizer(["guess the word crane board"] * 8, "unit-test-chat", vocab_size=300)
    assert chat_prompt(messages, tokenizer) == plain  # no chat template: the plain text
    tokenizer.chat_template = (
        "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    assert chat_prompt(messages, tokenizer) == (
        "<|system|>Guess the word.\n<|user|>board\n<|assistant|>crane\n<|user|>byybb\n<|assistant|>"
    )


def test_the_chat_view_example_of_the_docs_runs():
    text = (ROOT / "docs" / "your-own-task.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- docs-example: chat-view -->\n```python\n(.*?)```", text, re.DOTALL)
    namespace: dict = {}
    exec(compile(block.group(1), "docs/your-own-task.md", "exec"), namespace)  # noqa: S102
    contents = [message["content"] for message in namespace["chat"].messages]
    assert contents == [
        "Count down from the number you are given, one number per reply, to 0.",
        "Start at 4.", "3", "right, now at 3", "2", "right, now at 2", "1", "right, now at 1", "0",
    ]  # fmt: skip
