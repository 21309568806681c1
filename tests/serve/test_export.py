# ruff: noqa: F811  (the fixture imported from servers.py is the tests' parameter)
"""``python -m lm_gym.serve export``: the OpenEnv package of a task passes ``openenv validate --skip-build``,
its client installs from the folder, and, with its server app served in a subprocess, plays the episodes
the local env plays (Wordle, single-turn CommonGen, a user's task); bad input is refused with nothing written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import gymnasium
import pytest
import yaml

from lm_gym.core.errors import ConfigurationError

pytest.importorskip("openenv")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

from servers import restore_registry  # noqa: E402,F401  (a fixture, not a conftest: see servers.py)

TOKEN = "export-test-token-0123456789"
#: Plays an episode with the installed client (argv: package, class prefix, url, seed, actions as JSON).
PLAY = """
import importlib, json, sys
package, prefix, url, seed, actions = sys.argv[1:]
client = importlib.import_module(package)
Env, Action = getattr(client, prefix + "Env"), getattr(client, prefix + "Action")
steps = []
with Env(base_url=url).sync() as env:
    result = env.reset(seed=int(seed))
    steps.append([result.observation.text, result.reward, result.done])
    for text in json.loads(actions):
        result = env.step(Action(text=text))
        steps.append([result.observation.text, result.reward, result.done])
    state = env.state()
print(json.dumps({"steps": steps, "module": client.__file__, "env_id": state.env_id}))
"""


def export(env_id, directory, **kwargs):
    from lm_gym.serve.export import export_package

    return export_package(env_id, directory, **kwargs)


def validate(directory: Path) -> str:
    """``openenv validate DIR --skip-build`` (OpenEnv's CLI); its output, after checking it passed."""
    done = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", str(directory), "--skip-build"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  static.manifest" in done.stdout and "FAIL" not in done.stdout, done.stdout
    return done.stdout


def install_client(directory: Path, target: Path) -> None:
    """``pip install DIR`` offline, into ``target`` (a copy of DIR, so the package folder stays as exported)."""
    source = target.parent / f"{directory.name}-source"
    subprocess.run(["cp", "-r", str(directory), str(source)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
        + [str(source), "--target", str(target)],
        check=True,
        capture_output=True,
        timeout=300,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(directory: Path, command: list[str], token: str | None = None) -> tuple[subprocess.Popen, str]:
    """The exported server, run from its folder as the image runs it (no lm-gym test module on its path)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("LM_GYM_SERVE_TOKEN", "PYTHONPATH")}
    env.update({"PYTHONPATH": str(directory), **({"LM_GYM_SERVE_TOKEN": token} if token else {})})
    process = subprocess.Popen(
        [sys.executable, "-m", *command, "--port", str(port)],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, process.stdout.read().decode()
        try:
            urllib.request.urlopen(f"{url}/health", timeout=1)
            return process, url
        except OSError:
            assert time.monotonic() < deadline, "the exported server did not start"
            time.sleep(0.2)


def play_client(client_dir: Path, package: str, prefix: str, url: str, seed: int, actions, token=None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LM_GYM_SERVE_TOKEN"}
    env.update({"PYTHONPATH": str(client_dir), **({"LM_GYM_SERVE_TOKEN": token} if token else {})})
    done = subprocess.run(
        [sys.executable, "-c", PLAY, package, prefix, url, str(seed), json.dumps(actions)],
        capture_output=True,
        text=True,
        env=env,
        cwd=client_dir,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def play_local(env_id: str, env_kwargs: dict, seed: int, actions) -> list:
    env = gymnasium.make(env_id, **env_kwargs)
    obs, _ = env.reset(seed=seed)
    steps = [[obs, None, False]]
    for text in actions:
        obs, reward, terminated, truncated, _ = env.step(text)
        steps.append([obs, float(reward), bool(terminated or truncated)])
    return steps


def check_served_episode(tmp_path, directory, command, package, prefix, env_id, env_kwargs, seed, actions, token=None):
    """The installed client plays ``actions`` from ``seed`` against the served package as the local env plays them."""
    client_dir = tmp_path / "client"
    install_client(directory, client_dir)
    process, url = serve(directory, command, token)
    try:
        played = play_client(client_dir, package, prefix, url, seed, actions, token)
    finally:
        process.terminate()
        process.wait(30)
    assert Path(played["module"]).is_relative_to(client_dir)  # the installed client, not the package folder
    assert played["env_id"] == env_id.rpartition(":")[2]
    assert played["steps"] == play_local(env_id, env_kwargs, seed, actions)


@pytest.mark.slow
def test_a_wordle_package_validates_installs_and_plays_the_local_episode(tmp_path):
    directory = export("lm_gym/Wordle-v0", tmp_path / "wordle")
    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    assert files == [
        "Dockerfile",
        "README.md",
        "__init__.py",
        "client.py",
        "models.py",
        "openenv.yaml",
        "pyproject.toml",
        "server/__init__.py",
        "server/app.py",
        "validation/runtime.json",
    ]
    manifest = yaml.safe_load((directory / "openenv.yaml").read_text())
    assert manifest["name"] == "lm_gym_wordle_v0" and manifest["app"] == "server.app:app"
    assert manifest["validation"]["reward"]["range"] == [-6.0, 0.0]  # WordleEnv.value_ranges' return
    assert manifest["lm_gym"]["env_id"] == "lm_gym/Wordle-v0"
    plan = json.loads((directory / "validation/runtime.json").read_text())
    assert len(plan["actions"]) == 6 and plan["actions"][0] == {"text": "hello"}  # six guesses end the game
    readme = (directory / "README.md").read_text()
    assert readme.startswith("---\ntitle:") and "sdk: docker" in readme and "Wordle as a text game" in readme
    assert "'lm-gym[serve]==" in (directory / "Dockerfile").read_text()
    validate(directory)
    actions = ["crane", "slate", "hello", "zzzzz"]
    command = ["uvicorn", "server.app:app", "--host", "127.0.0.1", "--log-level", "warning"]
    check_served_episode(tmp_path, directory, command, "lm_gym_wordle_v0", "Wordle", "lm_gym/Wordle-v0", {}, 7, actions)


@pytest.mark.slow
def test_a_single_turn_package_plays_each_sample_as_the_local_env(tmp_path):
    kwargs = {"source": "synthetic"}
    directory = export("lm_gym/CommonGen-v0", tmp_path / "commongen", env_kwargs=kwargs)
    manifest = yaml.safe_load((directory / "openenv.yaml").read_text())
    assert manifest["validation"]["types"]["tags"] == ["lm-gym", "single-turn", "utterance"]
    assert manifest["lm_gym"]["env_kwargs"] == kwargs
    assert '"--env-kwargs", "{\\"source\\": \\"synthetic\\"}"' in (directory / "server/app.py").read_text()
    validate(directory)
    command = ["uvicorn", "server.app:app", "--host", "127.0.0.1", "--log-level", "warning"]
    actions = ["A dog runs across the field to catch the ball."]
    check_served_episode(
        tmp_path, directory, command, "lm_gym_commongen_v0", "CommonGen", "lm_gym/CommonGen-v0", kwargs, 3, actions
    )


@pytest.mark.slow
def test_a_users_task_ships_its_module_and_serves_with_a_token(tmp_path, restore_registry):
    import user_tasks  # noqa: F401  (registers user/CountUp-v0)

    directory = export("user/CountUp-v0", tmp_path / "countup", options=options(reward_range=(0, 3)))
    assert (directory / "user_tasks.py").read_text() == Path(user_tasks.__file__).read_text()
    assert '"user_tasks:user/CountUp-v0"' in (directory / "server/app.py").read_text()
    assert 'py-modules = ["user_tasks"]' in (directory / "pyproject.toml").read_text()
    validate(directory)
    local = gymnasium.make("user/CountUp-v0")
    first, _ = local.reset(seed=4)
    start = int(first.split()[-1].rstrip(":"))
    actions = [str(start + 1), "wrong", str(start + 3)]
    check_served_episode(
        tmp_path, directory, ["server.app"], "user_countup_v0", "CountUp", "user/CountUp-v0", {}, 4, actions, TOKEN
    )


def options(**settings):
    from lm_gym.serve.export import ExportOptions

    return ExportOptions(**settings)


def test_the_command_line_bakes_the_settings_in(tmp_path):
    target = tmp_path / "package"
    done = subprocess.run(
        [sys.executable, "-m", "lm_gym.serve", "export", "user_tasks:user/SayTheWord-v0", str(target)]
        + ["--max-sessions", "8", "--no-batching", "--reward-range", "0", "1", "--name", "say_it", "--insecure"]
        + ["--lm-gym-requirement", "lm-gym[serve] @ git+https://example.org/lm-gym.git", "--requirement", "nltk"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],  # tests/, where user_tasks.py is
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    app = (target / "server/app.py").read_text()
    assert (
        'SERVE_ARGUMENTS = ["user_tasks:user/SayTheWord-v0", "--env-kwargs", "{}", "--action-level", "utterance", '
        '"--max-sessions", "8", "--no-batching"]' in app
    )
    dockerfile = (target / "Dockerfile").read_text()
    assert "pip install --no-cache-dir 'lm-gym[serve] @ git+https://example.org/lm-gym.git' nltk" in dockerfile
    assert '"--port", "8000", "--insecure"]' in dockerfile
    execution = yaml.safe_load((target / "openenv.yaml").read_text())["validation"]["execution"]
    assert execution["requires_credentials"] is False  # the image serves without a token: validation needs none
    assert "from .client import SayTheWordEnv" in (target / "__init__.py").read_text()
    from lm_gym.serve.export import main

    with pytest.raises(SystemExit) as refused:  # the command line's answer to a non-empty DIR
        main(["lm_gym/Wordle-v0", str(target)])
    assert f"ConfigurationError: DIR {str(target)!r} is not empty" in str(refused.value.code)


@pytest.mark.parametrize("level", ["utterance", "token"])
def test_the_client_types_are_the_servers_wire_types(tmp_path, restore_registry, level):
    import importlib.util

    import user_tasks  # noqa: F401  (registers user/SayTheWord-v0)

    from lm_gym.serve.config import ServeConfig
    from lm_gym.serve.environment import TaskService, TaskState

    directory = export("user/SayTheWord-v0", tmp_path / level, action_level=level, options=options(reward_range=(0, 1)))
    spec = importlib.util.spec_from_file_location(f"exported_models_{level}", directory / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    service = TaskService(ServeConfig(env_id="user/SayTheWord-v0", action_level=level))
    try:
        served = {"Action": service.action_cls, "Observation": service.observation_cls, "State": TaskState}
        for role, server_type in served.items():
            client_type = getattr(models, f"SayTheWord{role}")
            assert client_type.model_json_schema()["properties"] == server_type.model_json_schema()["properties"], role
    finally:
        service.batcher.shutdown()
    action = {"utterance": {"text": "hello"}, "token": {"token": 0}}[level]
    assert json.loads((directory / "validation/runtime.json").read_text())["actions"][0] == action
    if level == "token":  # the utterance level's packages are validated above
        validate(directory)


def nothing_written(parent: Path, before: set) -> bool:
    return set(parent.iterdir()) == before


@pytest.mark.parametrize(
    ("env_id", "kwargs", "match"),
    [
        ("lm_gym/NoSuchTask-v0", {}, "is not a registered lm-gym task"),
        ("lm_gym/Wordle-v0", {"env_kwargs": {"no_such_argument": 1}}, "no_such_argument"),
        ("lm_gym/Wordle-v0", {"env_kwargs": ["not", "a", "dict"]}, "env_kwargs must be a JSON object"),
        ("lm_gym/Wordle-v0", {"env_kwargs": {"num_answers": -3}}, "num_answers"),
        ("lm_gym/Wordle-v0", {"action_level": "sentence"}, "action_level must be one of"),
        ("lm_gym/Wordle-v0", {"options": "reward_range"}, "--reward-range must be two finite numbers"),
        ("user/Echo-v0", {}, "declares no return range .* pass --reward-range LOW HIGH"),
    ],
)
def test_bad_input_is_refused_with_nothing_written(tmp_path, restore_registry, env_id, kwargs, match):
    import user_tasks  # noqa: F401  (registers user/Echo-v0, which declares no value ranges)

    if kwargs.get("options") == "reward_range":
        kwargs = {"options": options(reward_range=(1.0, float("inf")))}
    before = set(tmp_path.iterdir())
    with pytest.raises(ConfigurationError, match=match):
        export(env_id, tmp_path / "package", **kwargs)
    assert nothing_written(tmp_path, before)


def test_a_non_empty_or_file_dir_is_refused_and_left_as_it_is(tmp_path):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    before = set(tmp_path.iterdir())
    with pytest.raises(ConfigurationError, match=f"DIR {str(occupied)!r} is not empty"):
        export("lm_gym/Wordle-v0", occupied)
    assert nothing_written(tmp_path, before) and [p.name for p in occupied.iterdir()] == ["notes.txt"]
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(ConfigurationError, match="is a file"):
        export("lm_gym/Wordle-v0", a_file)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert export("lm_gym/Wordle-v0", empty) == empty and (empty / "openenv.yaml").is_file()


def test_a_level_the_task_cannot_be_played_at_is_refused(tmp_path, restore_registry):
    from user_tasks import SayTheWord

    import lm_gym

    class NoTokens(SayTheWord):
        """SayTheWord with no text to train a tokenizer on: no token level."""

        def tokenizer_corpus(self):
            raise ConfigurationError("NoTokens has no text to train a tokenizer on")

    lm_gym.register("user/NoTokens-v0", NoTokens)
    before = set(tmp_path.iterdir())
    with pytest.raises(ConfigurationError, match="no text to train a tokenizer on"):
        export("user/NoTokens-v0", tmp_path / "package", action_level="token", options=options(reward_range=(0, 1)))
    assert nothing_written(tmp_path, before)
