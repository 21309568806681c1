"""The core install (``pip install lm-gym``, no extra) makes and plays every env at its defaults.

A fresh process blocks every package that only an optional extra installs (``sys.modules[name] = None``:
importing it raises ``ModuleNotFoundError`` and ``importlib.util.find_spec`` finds nothing), then
imports lm_gym, makes every registered env offline at both action levels, resets and steps it,
and checks that each feature of an extra raises a ``DataUnavailableError`` naming that extra.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lm_gym.core.errors import DataUnavailableError, install_hint, require_extra

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
#: Import names of the packages that only an optional extra installs (a core install has the others).
EXTRA_MODULES = {
    "nlg": ["sacrebleu", "pycocoevalcap"],
    "evaluate": ["evaluate"],
    "bertscore": ["bert_score"],
    "reddit": ["better_profanity", "zstandard"],
    "visdial": ["h5py"],
    "sb3": ["stable_baselines3", "sb3_contrib"],
    "multi-agent": ["pettingzoo"],
    "torchrl": ["torchrl", "tensordict"],
    "baselines": ["tyro", "wandb", "peft"],
    "benchmark": ["rliable", "arch"],  # rich: huggingface_hub brings it
    "cluster": ["ray", "submitit"],
}

SCRIPT = r"""
import sys

BLOCKED = sys.argv[1].split(",")
for name in BLOCKED:
    sys.modules[name] = None  # as if not installed

import gymnasium
import numpy as np
import pytest

import lm_gym
from lm_gym.core.errors import DataUnavailableError
from lm_gym.core.registration import task_class
from lm_gym.metrics import corpus_metrics

NLG = r'pip install "lm-gym\[nlg\]"'
ids = sorted(env_id for env_id in gymnasium.registry if env_id.startswith("lm_gym/"))
assert len(ids) == 10, ids  # the eight tasks, TextGeneration-v0 and Mixture-v0
for env_id in ids:
    offline = dict(task_class(env_id).offline_kwargs)
    for level in ("utterance", "token"):
        env = gymnasium.make(env_id, **offline, action_level=level)
        obs, info = env.reset(seed=0)
        finals = []
        for _ in range(50 if level == "utterance" else 5):  # utterances: a whole episode; tokens: a few
            action = "a dog runs in the park." if level == "utterance" else int(env.action_space.sample())
            obs, reward, terminated, truncated, info = env.step(action)
            assert np.isfinite(reward), (env_id, level, reward)
            if terminated or truncated:
                finals.append(info)
                break
        assert finals or level == "token", (env_id, level)
        if level == "utterance":
            if env_id in ("lm_gym/CommonGen-v0", "lm_gym/CNNDailyMail-v0", "lm_gym/DailyDialog-v0"):
                name = env_id.removeprefix("lm_gym/")
                with pytest.raises(DataUnavailableError, match=rf"{name}'s evaluation .* needs sacrebleu.*: {NLG}"):
                    corpus_metrics(env, finals)
            else:  # the single-turn tasks' diversity; nothing for multi-turn ones
                assert isinstance(corpus_metrics(env, finals), dict), env_id
        env.close()
    venv = gymnasium.make_vec(env_id, 2, vectorization_mode="vector_entry_point", **offline)
    venv.reset(seed=0)
    venv.step(["a dog runs in the park."] * 2)
    venv.close()
print("made, reset and stepped", len(ids), "envs")

cider_reward = rf"CommonGen-v0's reward='cider' \(CIDEr-D\) needs pycocoevalcap: {NLG}"
with pytest.raises(DataUnavailableError, match=cider_reward):
    gymnasium.make("lm_gym/CommonGen-v0", source="synthetic", reward="cider")

from lm_gym import metrics
from lm_gym.tasks.commongen import human_scores  # noqa: F401  (imports; coco_evaluate fails on use)

predictions, references = ["a dog runs"], [["a dog runs fast", "the dog ran"]]
assert 0 < metrics.meteor_scores(predictions, references)[0] <= 1
assert 0 <= metrics.corpus_bleu(predictions, references) <= 1
assert metrics.corpus_rouge(predictions, references)["rouge1"] > 0
assert 0 < metrics.concept_coverage(["a dog runs"], [["dog", "run"]])[0] <= 1
for call, extra in (
    (lambda: metrics.corpus_sacrebleu(predictions, references), "nlg"),
    (lambda: metrics.cider(predictions, references), "nlg"),
    (lambda: metrics.CiderD(references), "nlg"),
    (lambda: metrics.coco_evaluate(predictions, references, "python"), "nlg"),
    (lambda: metrics.load("meteor"), "evaluate"),
    (lambda: metrics.bertscore(predictions, references, model_type="roberta-large"), "bertscore"),
):
    with pytest.raises(DataUnavailableError, match=rf'needs .*: pip install "lm-gym\[{extra}\]"'):
        call()
leaked = sorted(name for name in BLOCKED if sys.modules.get(name) is not None)
assert not leaked, leaked
print("ok")
"""


def test_core_install_makes_every_env_and_names_the_extras():
    blocked = [module for modules in EXTRA_MODULES.values() for module in modules]
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), ",".join(blocked)],
        check=False, capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "ok", result.stdout


def test_extras_in_pyproject_match():
    """Every extra named here and in the errors exists in pyproject.toml, and ``tests`` and ``all`` hold them all."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]

    def names(requirements):
        found = set()
        for requirement in requirements:
            name = requirement.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip()
            if name == "lm-gym":  # an extra built on others: lm-gym[all,docs]
                for extra in requirement.split("[")[1].split("]")[0].split(","):
                    found |= names(extras[extra.strip()])
            else:
                found.add(name)
        return found

    moved = {"sacrebleu", "pycocoevalcap", "evaluate", "bert-score"}
    assert not moved & names(core)
    assert set(EXTRA_MODULES) <= set(extras)
    assert {"sacrebleu", "pycocoevalcap"} <= names(extras["nlg"]) and {"evaluate"} <= names(extras["evaluate"])
    for extra in ("tests", "all"):
        missing = set().union(*(names(extras[e]) for e in EXTRA_MODULES)) - names(extras[extra])
        assert not missing, (extra, missing)
    assert names(extras["docs"]) <= names(extras["tests"])  # CI builds the site
    # the baselines report the tasks' corpus metrics, so they bring the nlg extra's packages
    assert names(extras["nlg"]) <= names(extras["baselines"])


def test_require_extra_names_the_extra_and_the_missing_packages(monkeypatch):
    require_extra("nlg", "nothing", "numpy")  # installed: no error
    monkeypatch.setitem(sys.modules, "sacrebleu", None)
    monkeypatch.setitem(sys.modules, "bert_score", None)
    with pytest.raises(DataUnavailableError) as error:
        require_extra("nlg", "the thing", "numpy", "sacrebleu", "bert-score")
    hint = install_hint("nlg", "sacrebleu", "bert-score")
    assert str(error.value) == f"the thing needs sacrebleu and bert-score: {hint}"
    assert install_hint("nlg", "sacrebleu") == 'pip install "lm-gym[nlg]" (or pip install sacrebleu)'


def test_commongen_corpus_metrics_leave_pycocoevalcaps_out_when_it_is_absent():
    """pycocoevalcap (104 MB of jars) absent, SacreBLEU present: CommonGen's evaluation gives BLEU and
    SacreBLEU and warns that cider and the COCO scores need pycocoevalcap."""
    script = r"""
import sys, warnings
sys.modules["pycocoevalcap"] = None
import gymnasium, lm_gym
from lm_gym.metrics import corpus_metrics
env = gymnasium.make("lm_gym/CommonGen-v0", source="synthetic")
env.reset(seed=0)
info = env.step("a dog runs in the park.")[-1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = corpus_metrics(env, [info])
assert {"bleu", "sacrebleu"} <= set(results), results
assert not any(key == "cider" or key.startswith("coco") for key in results), results
assert any("needs pycocoevalcap" in str(w.message) and "left out" in str(w.message) for w in caught), caught
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "ok", result.stdout


def test_the_baselines_toolkit_is_installed_with_lm_gym(tmp_path):
    """``import lm_toolkit`` works anywhere lm-gym is installed (an algorithm of your own, in any folder,
    builds on the baselines' toolkit), and it is the toolkit beside the baselines."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", "import lm_toolkit.rollouts, lm_toolkit; print(lm_toolkit.__file__)"],
        check=False, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert Path(result.stdout.strip()).parent == ROOT / "baselines" / "lm_toolkit"
