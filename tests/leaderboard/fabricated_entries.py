"""Fabricated runs and entries for the leaderboard's tests: ``result.json`` files as a baseline writes them
(:func:`write_runs`), their samples played on the board's envs so that they re-score (:func:`honest_samples`),
and the fixtures ``offline_runs`` (the offline-text board's runs, 3 seeds) and ``valid_entry`` (an entry built
from them, with the recipe of a suite that runs them, so that every field of the format is present).
"""

import copy
import functools
import json
import math
import re

import pytest

from benchmark.suite import expand_jobs, load_suite
from leaderboard.boards import boards, task_metrics
from leaderboard.entry_checks import validate_entry
from leaderboard.recipe import forget_suite_files, recipe_argument, use_suite_files
from leaderboard.submit import build_entry
from lm_gym.results import load_result, make_result, write_result

OFFLINE = boards()["offline-text"].tasks
SEEDS = (0, 1, 2)
IMDB = "lm_gym/IMDB-v0"
COMMONGEN = "lm_gym/CommonGen-v0"
SAFE_FILE_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*-[0-9a-f]{12}\.json")

# Plausible final scores of a small PPO policy per metric (the initial policy scores less).
FINAL_SCORES = {
    "mean_return": 0.42,
    "mean_sentiment": 0.61,
    "mean_meteor": 0.18,
    "mean_rouge2": 0.07,
    "corpus_cider": 0.35,
    "mean_coverage": 0.52,
    "mean_intent_match": 0.31,
    "mean_solved": 0.12,
    "mean_reached_cutoff": 0.4,
    "corpus_distinct_2": 0.47,
    "corpus_msttr": 0.55,
}


@functools.cache
def result_template():
    """One result made by make_result (its versions and commit), copied for every run: git is asked once."""
    return make_result(
        env_id=IMDB,
        algorithm="ppo",
        seed=0,
        config={},
        initial_eval=None,
        final_eval=None,
        curves=[],
        wall_time_s=1.0,
        tokens_per_s=1.0,
        episodes_per_s=1.0,
        peak_memory_mb=1.0,
        checkpoint=None,
        device="cpu",
    )


def evaluation(env_id, scale):
    split = task_metrics()[env_id]
    values = {
        "num_episodes": boards()["offline-text"].eval_episodes,
        # the return of the policy that plays the samples (entry_flags flags a mean far from its samples')
        "mean_return": math.fsum(sample["return"] for sample in honest_samples(env_id)) / len(GENERATIONS) * scale,
        "std_return": 0.21,
    }
    values.update(
        {name: round(FINAL_SCORES[name] * scale, 4) for name in (*split.task, *split.naturalness) if name not in values}
    )
    return values


# What the fabricated runs' policy says on the first episodes of every evaluation: played on the board's envs
# (honest_samples), so that the samples re-score as validate replays them.
GENERATIONS = ["a fine film with a warm heart", "a dog runs in the park", "thank you so much", "it is", ""]


@functools.cache
def honest_samples(env_id, board="offline-text"):
    """The first 5 episodes of ``board``'s evaluation of ``env_id`` played with :data:`GENERATIONS`."""
    from leaderboard.replay import play_samples

    if env_id not in boards()[board].env_kwargs:  # runs of other boards are only submitted, not re-scored
        return [
            {"prompt": f"prompt {index}", "generation": text, "return": 0.0} for index, text in enumerate(GENERATIONS)
        ]
    return play_samples(env_id, boards()[board].env_kwargs[env_id], [[text] for text in GENERATIONS])


LABELS = {IMDB: "imdb", COMMONGEN: "commongen", "lm_gym/DailyDialog-v0": "dailydialog", "lm_gym/Prompts-v0": "prompts"}


def write_fabricated_suite(folder):
    """``folder/offline.toml``: the suite the fabricated runs' recipe names, PPO on every task of the offline-text
    board as the board runs it. The offline suite itself runs GRPO on Prompts, so no one algorithm of it makes an
    entry of that board: this file stands in for it (``leaderboard.recipe.use_suite_files``)."""
    board = boards()["offline-text"]
    tasks = "".join(
        f'[tasks.{LABELS[env_id]}]\nenv_id = "{env_id}"\nenv_kwargs = {_inline_table(kwargs)}\nalgorithms = ["ppo"]\n'
        for env_id, kwargs in board.env_kwargs.items()
    )
    path = folder / "offline.toml"
    path.write_text(
        f"[suite]\nseeds = {list(SEEDS)}\n[defaults]\neval-episodes = {board.eval_episodes}\n[algorithms.ppo]\n"
        'script = "baselines/ppo.py"\nargs = { model-config = { model_type = "gpt2", n_layer = 2 } }\n' + tasks
    )
    return path


def _inline_table(values):
    return "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in values.items()) + " }"


def fabricated_recipe(suite_file, runs_folder):
    """The recipe ``submit`` builds from harness runs of ``suite_file`` in ``runs_folder`` (the fabricated runs
    have no ``harness_job.json``): every job's command line with the runs folder written ``{runs}``."""
    jobs = expand_jobs(load_suite(str(suite_file)), runs_folder, algorithms=["ppo"], seeds=SEEDS)
    return {
        "suite": "offline",
        "algorithm": "ppo",
        "tasks": dict(LABELS),
        "device": "cpu",
        "versions": {"python": "3.11.9", "lm_gym": "0.1.0", "torch": "2.13.0+cpu"},
        "jobs": [
            {"name": job.key, "argv": [recipe_argument(part, runs_folder.resolve()) for part in job.argv]}
            for job in jobs
        ],
    }


def write_runs(root, *, algorithm="ppo", seeds=SEEDS, tasks=OFFLINE, steps=100, eval_every=10, samples=None):
    """result.json files under ``root/<algorithm>/<task>/seed<k>``, as a baseline writes them."""
    for env_id in tasks:
        for seed in seeds:
            out = root / algorithm / env_id.split("/")[1] / f"seed{seed}"
            (out / "checkpoint").mkdir(parents=True)
            config = {
                "env_id": env_id,
                "seed": seed,
                "out_dir": str(out),
                "checkpoint_dir": str(out / "checkpoint"),
                "learning_rate": 1e-4,
                "model_name": None,
                "model_config": '{"model_type": "gpt2", "n_layer": 2}',
                "init_from": None,
                "device": "cpu",
                "track": False,
            }
            base = 0.0 if env_id in boards()["offline-text"].env_kwargs else -1.0  # the games' returns are negative
            curves = [
                {"step": step, "mean_return": base + 0.1 + step / steps / 2, "loss": 1.0 / (step + 1)}
                | ({"eval/mean_return": base + 0.2 + step / steps / 2} if step % eval_every == 0 else {})
                for step in range(steps)
            ]
            result = copy.deepcopy(result_template()) | {
                "env_id": env_id,
                "algorithm": algorithm,
                "seed": seed,
                "config": config,
                "curves": curves,
                "initial_eval": evaluation(env_id, 0.5),
                "final_eval": evaluation(env_id, 1 + seed / 20),
                "wall_time_s": 600.0 + seed,
            }
            result["samples"] = honest_samples(env_id) if samples is None else samples
            write_result(out, result)
    return root


def edit_result(path, change):
    result = load_result(path)
    change(result)
    write_result(path.parent, result)


@pytest.fixture(scope="module")
def offline_runs(tmp_path_factory):
    return write_runs(tmp_path_factory.mktemp("runs") / "offline")


@pytest.fixture(scope="module")
def valid_entry(offline_runs, tmp_path_factory):
    """A built entry with a recipe, so that every field of the format is present; its samples re-score, and its
    recipe is what the suite it names (:func:`write_fabricated_suite`, in use while the module's tests run) runs."""
    suite_file = write_fabricated_suite(tmp_path_factory.mktemp("suite"))
    use_suite_files([suite_file])
    entry = build_entry([offline_runs], name="PPO (lm-gym)", description="3 seeds, synthetic data")
    entry["recipe"] = fabricated_recipe(suite_file, offline_runs)
    validate_entry(entry)
    yield entry
    forget_suite_files()
