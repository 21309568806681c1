"""Test-suite setup: no network, a private temporary folder and lm-gym cache, small thread counts.

Sockets are blocked for the whole suite by pytest-socket (``--disable-socket`` in
``pyproject.toml``); the Hugging Face libraries are also told they are offline so they fail
fast instead of retrying. Everything the suite and its subprocesses write to the temporary
folder (pytest's ``tmp_path``, the lm-gym cache, Ray's session, chromium's profile) goes to one
private folder (``TMPDIR``), removed when the suite passes and kept, with its path printed,
when it fails.
"""

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "offline"
# pytest-xdist (``-n 2`` in pyproject.toml) runs the tests in worker processes, each of which
# imports this file: a worker makes its own folder (and cache) inside the one the controller
# made, whose TMPDIR it inherits, so no two workers share a temporary folder or a cache. The
# worker's folder is named by its id alone: Ray's socket paths under it come near the 107 bytes
# an AF_UNIX path may have.
if os.environ.get("PYTEST_XDIST_WORKER"):
    SESSION_TMP = os.path.join(tempfile.gettempdir(), os.environ["PYTEST_XDIST_WORKER"])
    os.makedirs(SESSION_TMP, exist_ok=True)
else:
    SESSION_TMP = tempfile.mkdtemp(prefix="lm_gym_tests_")
os.environ["TMPDIR"] = tempfile.tempdir = SESSION_TMP
os.environ["LM_GYM_CACHE"] = tempfile.mkdtemp(prefix="cache_")
# the cores shared out among the workers (two at most each, as before xdist): one torch thread
# per worker with two workers on two cores; the processes the tests start inherit it
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
TORCH_THREADS = max(1, min(2, (os.cpu_count() or 1) // WORKERS))
if WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(TORCH_THREADS))
    os.environ.setdefault("MKL_NUM_THREADS", str(TORCH_THREADS))

import gymnasium  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import lm_gym  # noqa: E402,F401  (registers the envs)

torch.set_num_threads(TORCH_THREADS)

# Hypothesis (tests/contract): the default profile keeps the contract suite to about a
# minute; the deep run (CI, or --run-slow) loads the ``deep`` profile with four times the
# examples, which keeps CI under 30 minutes; ``HYPOTHESIS_PROFILE`` picks one explicitly.
settings.register_profile(
    "default",
    max_examples=25,
    deadline=None,
    database=None,  # leave no .hypothesis/ folder behind
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile("deep", parent=settings.get_profile("default"), max_examples=100)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BASELINES = Path(__file__).resolve().parents[1] / "baselines"  # on sys.path: pyproject.toml's pytest pythonpath


def tiny_causal_lm(env_id: str, env_kwargs: dict | None = None):
    """A one-layer GPT-2 with the tokenizer lm-gym trains on task ``env_id``'s text (no model hub)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from lm_gym.core.registration import resolve_tokenizer

    tokenizer = resolve_tokenizer(gymnasium.make(env_id, **(env_kwargs or {})).unwrapped, None)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_layer=1,
        n_embd=32,
        n_head=2,
        n_positions=1024,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return GPT2LMHeadModel(config), tokenizer


def load_baseline(name: str):
    """``baselines/<name>.py`` as a module (the baselines are scripts, not a package)."""
    module_name = f"baseline_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, BASELINES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[module_name]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent (it exists only beside the development checkout)")
    return SHARED_DATA


@pytest.fixture
def imdb_env():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
    yield env
    env.close()


@pytest.fixture
def imdb_token_env():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token")
    yield env
    env.close()


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow",
        action="store_true",
        help="the deep run, as CI (CI set): also the tests marked slow, Hypothesis's deep profile, longer random play",
    )


def is_deep_run(config) -> bool:
    """The deep run: ``--run-slow`` or ``CI`` set."""
    return bool(config.getoption("--run-slow") or os.environ.get("CI"))


def pytest_configure(config):
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("deep" if is_deep_run(config) else "default"))


@pytest.fixture(scope="session")
def deep_run(request) -> bool:
    return is_deep_run(request.config)


def pytest_collection_modifyitems(config, items):
    """The default run leaves out the tests marked ``slow``; the deep run keeps them."""
    if is_deep_run(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_sessionfinish(session, exitstatus):
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        shutil.rmtree(SESSION_TMP, ignore_errors=True)
    else:
        print(f"\nthe suite's temporary files are kept for the failures: {SESSION_TMP}")
