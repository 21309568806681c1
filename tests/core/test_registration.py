"""lm_gym.register: any TextEnv becomes a Gymnasium id at both action levels, with native vector envs,
JSON specs and Gymnasium's "module:env_id" form; bad registrations leave nothing behind; task plugins."""

import importlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec

import lm_gym
from lm_gym.core.errors import ConfigurationError, UnknownArgumentError
from lm_gym.core.registration import takes_argument, task_class, task_id, token_settings, unknown_arguments
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.vector import TextVectorEnv
from lm_gym.testing import check_text_env, check_token_env, check_vector_env, play

TASK_MODULE = '''
import lm_gym
from lm_gym.core import TextEnv


class Guess(TextEnv):
    """Two turns: guess the hidden digit; the second observation says higher or lower."""

    token_level_defaults = {"max_prompt_length": 32, "max_new_tokens": 4}

    def __init__(self, hint="Guess a digit.", render_mode=None):
        super().__init__(max_observation_length=64, max_action_length=8, render_mode=render_mode)
        self.hint = hint

    def _new_episode(self, options):
        self.digit, self.turn = int(self.np_random.integers(10)), 0
        return f"{self.hint} It is {'even' if self.digit % 2 == 0 else 'odd'}.", {}

    def _transition(self, utterance, score):
        self.turn += 1
        right = utterance.strip() == str(self.digit)
        done = right or self.turn == 2
        info = {"metrics": {"right": float(right)}} if done else {}
        return "higher" if utterance.strip() < str(self.digit) else "lower", float(right), done, False, info


lm_gym.register("{env_id}", Guess)
'''


@pytest.fixture(autouse=True)
def registry_restored():
    """Each test's registrations are gone after it, as are the modules it wrote."""
    before, modules = dict(gymnasium.registry), set(sys.modules)
    yield
    gymnasium.registry.clear()
    gymnasium.registry.update(before)
    for name in set(sys.modules) - modules:
        if name.startswith("user_guess"):
            del sys.modules[name]


@pytest.fixture
def guess_module(tmp_path, monkeypatch):
    """A task module of the user's own on sys.path, registering ``test/Guess-v0`` when imported."""
    (tmp_path / "user_guess.py").write_text(TASK_MODULE.replace("{env_id}", "test/Guess-v0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_guess"


def test_a_registered_task_is_made_at_both_levels_and_as_native_vector_envs(guess_module):
    env = gymnasium.make(f"{guess_module}:test/Guess-v0")  # Gymnasium's form imports the module that registers
    assert "test/Guess-v0" in lm_gym.registered_tasks() and task_id(f"{guess_module}:test/Guess-v0") == "test/Guess-v0"
    check_text_env(env)
    token_env = gymnasium.make("test/Guess-v0", action_level="token")  # tokenizer=None: trained on the task's text
    assert token_env.unwrapped.max_new_tokens == 4 and token_env.unwrapped.max_prompt_length == 32  # class defaults
    check_token_env(token_env, sb3=False)
    venv = gymnasium.make_vec("test/Guess-v0", num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(venv, TextVectorEnv)
    check_vector_env(venv)
    token_venv = gymnasium.make_vec(
        "test/Guess-v0", num_envs=3, vectorization_mode="vector_entry_point", action_level="token", max_new_tokens=2
    )
    assert isinstance(token_venv, TokenVectorEnv) and token_venv.max_new_tokens == 2


def test_the_spec_round_trips_through_json_and_holds_only_the_arguments_given(guess_module):
    env = gymnasium.make(f"{guess_module}:test/Guess-v0", hint="Which digit?")
    assert env.spec.entry_point == "lm_gym.envs:make(user_guess/Guess)" and env.spec.kwargs == {"hint": "Which digit?"}
    again = gymnasium.make(EnvSpec.from_json(env.spec.to_json()))
    assert again.reset(seed=3)[0].startswith("Which digit? It is ")
    assert play(again, seed=4, steps=6) == play(env, seed=4, steps=6)


def test_defaults_given_to_register_are_the_specs_and_arguments_override_them(guess_module):
    cls = task_class(f"{guess_module}:test/Guess-v0")
    lm_gym.register("test/GuessHinted-v0", cls, hint="Pick one.")
    assert gymnasium.spec("test/GuessHinted-v0").kwargs == {"hint": "Pick one."}
    assert gymnasium.make("test/GuessHinted-v0").reset(seed=0)[0].startswith("Pick one. ")
    assert gymnasium.make("test/GuessHinted-v0", hint="Go.").reset(seed=0)[0].startswith("Go. ")


def test_a_class_python_cannot_import_by_name_registers_but_its_spec_is_not_json():
    from lm_gym.core import TextEnv

    class Local(TextEnv):
        def __init__(self, render_mode=None):
            super().__init__(max_observation_length=8, max_action_length=8, render_mode=render_mode)

        def _new_episode(self, options):
            return "hi", {}

        def _transition(self, utterance, score):
            return "bye", 1.0, True, False, {"metrics": {}}

    lm_gym.register("test/Local-v0", Local)
    assert task_class("test/Local-v0") is Local
    env = gymnasium.make("test/Local-v0")
    assert env.reset(seed=0)[0] == "hi" and env.step("x")[1] == 1.0
    assert isinstance(gymnasium.make_vec("test/Local-v0", 2, vectorization_mode="vector_entry_point"), TextVectorEnv)
    with pytest.raises(ValueError, match="serialising callables"):  # Gymnasium's own rule for callables
        env.spec.to_json()


BAD_REGISTRATIONS = {
    "an id with a space": (("test/No Space-v0", "user_guess:Guess"), "env_id"),
    "an id with a module": (("m:test/X-v0", "user_guess:Guess"), "env_id"),
    "an id that is not a string": ((7, "user_guess:Guess"), "env_id"),
    "not a class path": (("test/X-v0", "user_guess.Guess"), "module:Class"),
    "a module that does not exist": (("test/X-v0", "no_such_module_here:Guess"), "no_such_module_here"),
    "a module that fails to import": (("test/X-v0", "user_broken:Task"), "RuntimeError: broken on purpose"),
    "a missing class": (("test/X-v0", "user_guess:Nope"), "has no 'Nope'"),
    "a class that is not a TextEnv": (("test/X-v0", "user_guess:TextEnv.__base__"), "subclass of lm_gym.core.TextEnv"),
    "a gymnasium.Env that is not a TextEnv": (("test/X-v0", gymnasium.Env), "subclass of lm_gym.core.TextEnv"),
    "a function": (("test/X-v0", print), "subclass of lm_gym.core.TextEnv"),
}


@pytest.mark.parametrize("name", BAD_REGISTRATIONS)
def test_a_bad_registration_raises_a_typed_error_and_registers_nothing(name, guess_module, tmp_path):
    (tmp_path / "user_broken.py").write_text("raise RuntimeError('broken on purpose')\n")
    (args, message) = BAD_REGISTRATIONS[name]
    importlib.import_module(guess_module)  # its own registration is not the one under test
    before = dict(gymnasium.registry)
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        lm_gym.register(*args)
    assert dict(gymnasium.registry) == before


def test_a_default_the_class_does_not_take_is_refused_at_registration_and_at_make(guess_module):
    cls = task_class(f"{guess_module}:test/Guess-v0")
    with pytest.raises(UnknownArgumentError, match=r"Guess\(\) got an unexpected keyword argument 'colour'; it takes"):
        lm_gym.register("test/Colour-v0", cls, colour="red")
    assert "test/Colour-v0" not in gymnasium.registry
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):  # what TorchRL's GymEnv probes
        gymnasium.make("test/Guess-v0", colour="red")
    with pytest.raises(ConfigurationError, match="only apply with action_level='token'"):
        gymnasium.make("test/Guess-v0", max_new_tokens=3)
    assert gymnasium.make("test/Guess-v0").reset(seed=0)[0].startswith("Guess a digit.")  # still works


def test_ids_that_are_not_lm_gym_tasks_get_errors_that_say_what_to_do():
    with pytest.raises(ConfigurationError, match="not a registered lm-gym task.*lm_gym/IMDB-v0"):
        task_class("test/Unknown-v0")
    with pytest.raises(ConfigurationError, match="not an lm-gym task.*lm_gym.register"):
        task_class("CartPole-v1")
    with pytest.raises(ConfigurationError, match="importing module 'no_such_module_here' failed"):
        task_class("no_such_module_here:test/Unknown-v0")


def test_a_module_in_the_working_directory_is_found_for_module_env_id(tmp_path, monkeypatch):
    # python baselines/ppo.py puts baselines/ first on sys.path, not the folder the user works in
    (tmp_path / "user_guess_cwd.py").write_text(TASK_MODULE.replace("{env_id}", "test/GuessCwd-v0"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(tmp_path))])
    assert task_id("user_guess_cwd:test/GuessCwd-v0") == "test/GuessCwd-v0"
    del sys.modules["user_guess_cwd"]


def test_the_default_tokenizer_corpus_leaves_the_env_as_it_was(guess_module):
    env = task_class(f"{guess_module}:test/Guess-v0")()
    env.reset(seed=5)
    digit = env.digit
    key, texts = env.tokenizer_corpus()
    assert len(texts) == 512 and set(texts) == {"Guess a digit. It is even.", "Guess a digit. It is odd."}
    assert key.startswith("user_guess.Guess-")
    assert env.digit == digit and env.step(str(digit))[1] == 1.0  # the episode goes on untouched


PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1"

[project.entry-points."lm_gym.tasks"]
{name} = "{name}"
"""


def _install_plugin(tmp_path, name: str, module_text: str) -> None:
    source = tmp_path / f"src_{name}"
    (source / name).mkdir(parents=True)
    (source / "pyproject.toml").write_text(PLUGIN_PYPROJECT.replace("{name}", name))
    (source / name / "__init__.py").write_text(module_text)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--target", str(tmp_path / "site"), str(source)],
        check=True,
        capture_output=True,
    )


def test_an_installed_task_package_registers_its_tasks_on_import_lm_gym(tmp_path):
    _install_plugin(tmp_path, "lmgym_plugin_ok", TASK_MODULE.replace("{env_id}", "plugin/Guess-v0"))
    broken = "import lm_gym\nfrom lm_gym.core import TextEnv\n"
    broken += "lm_gym.register('plugin/Half-v0', TextEnv.__subclasses__()[0])\nraise RuntimeError('plugin bug')\n"
    _install_plugin(tmp_path, "lmgym_plugin_broken", broken)
    script = textwrap.dedent("""
        import warnings, gymnasium
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import lm_gym
        print(gymnasium.make("plugin/Guess-v0").reset(seed=0)[0])
        print("plugin/Half-v0" in gymnasium.registry)
        print([str(w.message) for w in caught if "plugin" in str(w.message)])
    """)
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    made, half, warned = out.splitlines()
    assert made.startswith("Guess a digit.") and half == "False"  # the broken plugin's first id was removed again
    assert "lmgym_plugin_broken" in warned and "RuntimeError: plugin bug" in warned and "registers nothing" in warned


def test_the_built_in_tasks_are_registered_through_the_same_function():
    ids = [env_id for env_id in lm_gym.registered_tasks() if env_id.startswith("lm_gym/")]
    assert {"lm_gym/IMDB-v0", "lm_gym/Wordle-v0", "lm_gym/Prompts-v0"} <= set(ids)
    for env_id in ids:
        spec = gymnasium.spec(env_id)
        assert spec.entry_point.startswith("lm_gym.envs:make(lm_gym.tasks.")
        assert spec.vector_entry_point == spec.entry_point.replace(":make(", ":make_vec(")
    assert np.all([issubclass(task_class(env_id), lm_gym.core.TextEnv) for env_id in ids])


def test_the_docs_registration_example_runs_as_written():
    """docs/your-own-task.md's "Register it" block, run after its "Write your own task" block."""
    page = Path(__file__).resolve().parents[2] / "docs" / "your-own-task.md"
    text, namespace = page.read_text(encoding="utf-8"), {"__name__": "docs_example"}
    for marker in ("write-your-own-task", "register-your-own-task"):
        block = re.search(rf"<!-- docs-example: {marker} -->\n```python\n(.*?)```", text, re.DOTALL)
        exec(compile(block.group(1), str(page), "exec"), namespace)  # noqa: S102 - the project's own docs
    assert isinstance(namespace["venv"], TextVectorEnv) and isinstance(namespace["token_venv"], TokenVectorEnv)
    assert namespace["token_env"].reset(seed=0)[0]["prompt_ids"].shape == (128,)
    assert namespace["env"].reset(seed=0)[0].startswith("Say ")


def test_token_settings_and_arguments_of_a_task_class():
    """What ``gymnasium.make`` and ``lm_gym/Mixture-v0`` read off a task class: its token-level settings
    (IMDB's 48-token minimum lowered to a shorter ``max_new_tokens``) and the arguments it takes."""
    imdb = task_class("lm_gym/IMDB-v0")
    assert token_settings(imdb, {}) == {"max_prompt_length": 64, "max_new_tokens": 48, "min_new_tokens": 48}
    assert token_settings(imdb, {"max_new_tokens": 8})["min_new_tokens"] == 8
    assert token_settings(imdb, {"max_new_tokens": 8, "min_new_tokens": 2})["min_new_tokens"] == 2
    assert takes_argument(imdb, "split") and not takes_argument(task_class("lm_gym/Wordle-v0"), "source")
    unknown, accepted = unknown_arguments(imdb, ["split", "nope", "also_nope"])
    assert unknown == ["also_nope", "nope"] and "split" in accepted and "self" not in accepted
