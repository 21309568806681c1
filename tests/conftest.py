"""Test-suite setup: no network, a private lm-gym cache, small thread counts.

Sockets are blocked for the whole suite by pytest-socket (``--disable-socket`` in
``pyproject.toml``); the Hugging Face libraries are also told they are offline so they fail
fast instead of retrying.
"""

import os
import tempfile
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "offline"
os.environ["LM_GYM_CACHE"] = tempfile.mkdtemp(prefix="lm_gym_test_cache_")

import gymnasium  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import lm_gym  # noqa: E402,F401  (registers the envs)

torch.set_num_threads(2)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
