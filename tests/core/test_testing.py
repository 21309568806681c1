"""``lm_gym.testing`` on a user's own env: the docs' example passes, and broken envs fail with clear messages.

The example is the code block of docs/your-own-task.md itself (after its ``docs-example`` marker),
run here, so the page and this test cannot drift apart.
"""

from __future__ import annotations

import random
import re
import sys
import warnings
from pathlib import Path

import pytest

from lm_gym.core import InvalidActionError, TextEnv, TextVectorEnv, TokenLevel
from lm_gym.core.tokenizer import train_tokenizer
from lm_gym.testing import (
    check_bad_call,
    check_determinism,
    check_random_play,
    check_text_env,
    check_token_env,
    check_vector_env,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "your-own-task.md"
MARKER = "<!-- docs-example: write-your-own-task -->"


def docs_example() -> dict:
    """Run the docs' "Write your own task" code block; its names."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(MARKER) == 1, f"docs/your-own-task.md must hold {MARKER!r} once"
    block = re.match(r"\s*```python\n(.*?)\n```", text.split(MARKER, 1)[1], re.DOTALL)
    assert block, f"a ```python block must follow {MARKER!r} in docs/your-own-task.md"
    namespace = {"__name__": "docs_example"}
    exec(compile(block.group(1), str(PAGE), "exec"), namespace)  # noqa: S102 - the project's own docs
    return namespace


@pytest.fixture(scope="module")
def say_the_word() -> type[TextEnv]:
    return docs_example()["SayTheWord"]


@pytest.fixture(scope="module")
def tokenizer():
    texts = [f"Say {word}. {word}" for word in ("apple", "river", "stone", "cloud")]
    return train_tokenizer(texts * 10, "say-the-word", vocab_size=300)


def test_the_docs_example_passes_check_text_env(say_the_word):
    assert issubclass(say_the_word, TextEnv)  # docs_example() ran check_text_env(SayTheWord()) itself


def test_the_readme_env_passes_at_token_level_and_as_vector_envs(say_the_word, tokenizer):
    check_token_env(TokenLevel(say_the_word(), tokenizer, max_new_tokens=8), num_steps=500)
    check_text_env(TokenLevel(say_the_word(), tokenizer, max_new_tokens=8), num_steps=500)  # the same, by level
    for mode in ("NextStep", "SameStep", "Disabled"):
        check_vector_env(TextVectorEnv(say_the_word(), 3, autoreset_mode=mode), num_steps=20)


def test_the_checks_name_the_wrong_kind_of_env(say_the_word, tokenizer):
    with pytest.raises(AssertionError, match="use check_text_env"):
        check_token_env(say_the_word())
    with pytest.raises(AssertionError, match="use check_vector_env"):
        check_text_env(TextVectorEnv(say_the_word(), 2))
    with pytest.raises(AssertionError, match="not an lm-gym env"):
        check_text_env(object())


def test_an_env_that_ignores_its_seed_fails(say_the_word):
    class GlobalRandom(say_the_word):
        def _new_episode(self, options):
            self.word = random.choice(self.WORDS)  # not self.np_random
            return f"Say {self.word}.", {}

    with pytest.raises(AssertionError, match="played differently"):
        check_determinism(GlobalRandom(), seed=0)


def test_an_env_without_randomness_passes_with_seed_sensitive_false(say_the_word):
    class OneWord(say_the_word):
        WORDS = ("apple",)

    with pytest.raises(AssertionError, match="seed_sensitive=False"):
        check_determinism(OneWord())
    check_text_env(OneWord(), seed_sensitive=False, num_steps=20)


def test_an_episode_that_never_ends_or_lacks_metrics_fails(say_the_word):
    class Endless(say_the_word):
        def _transition(self, utterance, score):
            return f"Say {self.word}.", 0.0, False, False, {}

    class NoMetrics(say_the_word):
        def _transition(self, utterance, score):
            return f"Say {self.word}.", 0.0, True, False, {}

    with pytest.raises(AssertionError, match="no episode ended in 30 steps"):
        check_random_play(Endless(), 30)
    with pytest.raises(AssertionError, match=r"without info\['metrics'\]"):
        check_random_play(NoMetrics(), 30)


def test_a_bad_action_must_get_a_typed_error_and_change_nothing(say_the_word):
    class UntypedError(say_the_word):
        def parse_action(self, action):
            if not isinstance(action, str):
                raise TypeError("not a str")  # not lm-gym's InvalidActionError
            return super().parse_action(action)

    class CountsRefusals(say_the_word):
        refused = 0

        def parse_action(self, action):
            if not isinstance(action, str):
                self.refused += 1  # state changed by a refused action
                self.word = self.WORDS[self.refused % len(self.WORDS)]
                raise InvalidActionError("not a str")
            return super().parse_action(action)

    with pytest.raises(AssertionError, match=r"step\(None\) raised TypeError: not a str; expected a typed error"):
        check_text_env(UntypedError(), num_steps=20)
    with pytest.raises(AssertionError, match=r"the refused step\(None\) changed the episode"):
        check_text_env(CountsRefusals(), num_steps=20)


def test_check_bad_call_may_accept_a_call(say_the_word):
    env = say_the_word()
    assert check_bad_call(env, lambda e: e.step(7), "step(7)")
    assert not check_bad_call(env, lambda e: e.step("fine"), "step('fine')", may_accept=True)
    with pytest.raises(AssertionError, match=r"step\('fine'\) was accepted"):
        check_bad_call(env, lambda e: e.step("fine"), "step('fine')")


def test_without_stable_baselines3_its_checker_is_skipped_with_a_warning(say_the_word, tokenizer, monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3.common.env_checker", None)  # import fails
    env = TokenLevel(say_the_word(), tokenizer, max_new_tokens=8)
    with pytest.warns(UserWarning, match="stable-baselines3 is not installed"):
        check_token_env(env, num_steps=200)
    with pytest.raises(ImportError, match="lm-gym\\[sb3\\]"):
        check_token_env(env, sb3=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sb3=False skips it without a warning
        check_token_env(env, num_steps=200, sb3=False)
