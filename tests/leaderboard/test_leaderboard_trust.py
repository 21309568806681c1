"""Entries that cannot be true are refused, doubtful ones flagged, and any entry verified by re-running it (issue #46).

The fabricated-but-honest entry of ``fabricated_entries`` (its samples played on the board's envs) is
tampered with in every way the validator must catch: numbers outside the ranges their task or metric
declares, samples whose generations do not give the returns they state, inconsistent runs. Then a tiny
suite of one task is run with the harness, submitted, validated and verified, honest and tampered.
"""

import copy
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fabricated_entries import COMMONGEN, IMDB, OFFLINE, offline_runs, valid_entry  # noqa: F401  (fixtures)

from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.boards import boards, forget_user_boards, load_boards_file, task_metrics
from leaderboard.entry_checks import entry_flags, validate_entry
from leaderboard.entry_schema import EntryError
from leaderboard.replay import play_samples, rescore_samples
from lm_gym.core import registration
from lm_gym.results import evaluation_ranges

ROOT = Path(__file__).resolve().parents[2]


def refused(entry, *fragments):
    """Validate ``entry``: it must be refused, with every fragment in the message."""
    with pytest.raises(EntryError) as caught:
        validate_entry(entry)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def runs(entry, env_id=IMDB):
    return entry["tasks"][env_id]["runs"]


# --- 1. impossible numbers ----------------------------------------------------------------------------


def test_every_scored_metric_and_return_of_the_built_in_boards_declares_its_range():
    for board in boards().values():
        for env_id, kwargs in board.env_kwargs.items():
            ranges = evaluation_ranges(env_id, kwargs)
            split = task_metrics(board.name)[env_id]
            undeclared = [name for name in ("mean_return", *split.task, *split.naturalness) if name not in ranges]
            assert not undeclared, f"{board.name} {env_id}: no declared range for {undeclared}"


def test_declared_ranges_are_the_documented_ones():
    ranges = {
        name: registration.task_class(f"lm_gym/{name}-v0").value_ranges()
        for name in ("IMDB", "Wordle", "VisDial", "Reddit", "CNNDailyMail")
    }
    assert ranges["Wordle"]["return"][:2] == (-6.0, 0.0)
    assert ranges["VisDial"]["return"][:2] == (-10.0, 0.0)
    assert ranges["Reddit"]["return"][:2] == (-10.0, 0.0)
    assert ranges["IMDB"]["sentiment"][:2] == (0.0, 1.0) and ranges["IMDB"]["num_words"].integer
    corpus = evaluation_ranges("lm_gym/CommonGen-v0", {"source": "synthetic"})
    assert corpus["corpus_sacrebleu"][:2] == (0.0, 100.0) and corpus["corpus_cider"][:2] == (0.0, math.inf)
    assert corpus["corpus_distinct_2"][:2] == (0.0, 1.0) and corpus["corpus_vocab_size"].integer
    assert corpus["std_return"][:2] == (0.0, 1.0)  # CommonGen's return lies in [-1, 1]: half its width


def test_every_metric_set_to_50_with_identical_seeds_is_refused(valid_entry):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    for task in entry["tasks"].values():
        first = task["runs"][0]["final_eval"]
        for key in first:
            if key.startswith("mean_"):
                first[key] = 50.0
        for run in task["runs"]:
            run["final_eval"] = dict(first)
    refused(
        entry,
        'tasks["lm_gym/IMDB-v0"].runs[0].final_eval.mean_return: 50.0 is not a number in [0, 1], '
        "the range of IMDB-v0's return",
        "final_eval.mean_sentiment: 50.0 is not a number in [0, 1], the range of IMDB-v0's sentiment",
    )


@pytest.mark.parametrize(
    ("env_id", "key", "value", "expected"),
    [
        (
            COMMONGEN,
            "mean_rouge2",
            7.5,
            "mean_rouge2: 7.5 is not a number in [0, 1], the range of CommonGen-v0's rouge2",
        ),
        (COMMONGEN, "mean_meteor", -0.1, "mean_meteor: -0.1 is not a number in [0, 1]"),
        (
            COMMONGEN,
            "corpus_cider",
            -1.0,
            "corpus_cider: -1.0 is not a number >= 0, the range of the corpus metric cider",
        ),
        (IMDB, "corpus_distinct_2", 1.5, "corpus_distinct_2: 1.5 is not a number in [0, 1]"),
        (IMDB, "corpus_vocab_size", 12.5, "corpus_vocab_size: 12.5 is not an integer >= 0"),
        (IMDB, "std_return", 0.7, "std_return: 0.7 is not a number in [0, 0.5]"),
        (IMDB, "mean_num_words", -3.0, "mean_num_words: -3.0 is not a number >= 0"),
        (IMDB, "mean_return", 1.2, "final_eval.mean_return: 1.2 is not a number in [0, 1]"),
    ],
)
def test_a_number_outside_its_declared_range_is_refused_naming_the_field_and_the_range(
    valid_entry,  # noqa: F811
    env_id,
    key,
    value,
    expected,
):
    entry = copy.deepcopy(valid_entry)
    runs(entry, env_id)[1]["final_eval"][key] = value
    refused(entry, f'tasks["{env_id}"].runs[1].final_eval.{key}', expected)


def test_an_impossible_initial_evaluation_sample_or_curve_point_is_refused(valid_entry):  # noqa: F811
    for path, value, expected in [
        (("initial_eval", "mean_sentiment"), 3.0, "initial_eval.mean_sentiment: 3.0 is not a number in [0, 1]"),
        (("samples", 0, "return"), 2.0, "samples[0].return: 2.0 is not a number in [0, 1]"),
        (("curve", 3, 1), -0.5, "curve[3][1]: -0.5 is not a number in [0, 1], the range of IMDB-v0's return"),
    ]:
        entry = copy.deepcopy(valid_entry)
        node = runs(entry)[0]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        refused(entry, expected)


def test_result_json_with_an_impossible_number_is_refused_when_read(tmp_path):
    from lm_gym.results import ResultFormatError, load_result, make_result, write_result

    final = {"num_episodes": 8, "mean_return": -7.0, "std_return": 0.5, "mean_solved": 0.0}
    result = make_result(
        env_id="lm_gym/Wordle-v0",
        algorithm="ppo",
        seed=1,
        config={"env_kwargs": '{"num_answers": 100}'},
        initial_eval=final,
        final_eval=final,
        curves=[],
        wall_time_s=1.0,
        tokens_per_s=1.0,
        episodes_per_s=1.0,
        peak_memory_mb=1.0,
        checkpoint=None,
        device="cpu",
    )
    write_result(tmp_path, result)  # a run's result is written whatever it holds ...
    with pytest.raises(ResultFormatError, match=r"final_eval/mean_return: -7.0 is not a number in \[-6, 0\]"):
        load_result(tmp_path)  # ... and refused when read


# --- 2. samples re-scored ---------------------------------------------------------------------------------


def test_the_honest_entry_re_scores_and_is_not_flagged(valid_entry):  # noqa: F811
    assert validate_entry(valid_entry) == []


def test_a_sample_whose_return_does_not_match_its_generation_is_refused(valid_entry):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    sample = runs(entry)[2]["samples"][1]
    sample["return"] = round(1 - sample["return"], 3)  # in range, but not what the generation gets
    refused(
        entry,
        'tasks["lm_gym/IMDB-v0"].runs[2].samples[1].return: ',
        "but its generation played on episode 1 (seed 1) returns",
    )


def test_a_sample_with_another_generation_or_prompt_is_refused(valid_entry):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    runs(entry, COMMONGEN)[0]["samples"][0]["generation"] = "a dog runs on the grass near a frisbee"
    refused(entry, 'tasks["lm_gym/CommonGen-v0"].runs[0].samples[0].return')  # the same return no longer follows
    entry = copy.deepcopy(valid_entry)
    runs(entry)[0]["samples"][3]["prompt"] = "An easy prompt of my own."
    refused(entry, 'runs[0].samples[3].prompt: "An easy prompt of my own." is not the prompt of episode 3 (seed 3)')
    entry = copy.deepcopy(valid_entry)
    samples = runs(entry)[0]["samples"]
    samples[0], samples[1] = samples[1], samples[0]  # the right samples, in the wrong episodes
    refused(entry, "runs[0].samples[0].prompt")


def test_an_entry_without_its_samples_is_refused(valid_entry):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    runs(entry)[1]["samples"] = runs(entry)[1]["samples"][:2]
    refused(entry, 'tasks["lm_gym/IMDB-v0"].runs[1].samples: has 2 samples; an entry holds the first 5 episodes')


def test_multi_turn_games_replay_every_utterance_in_order():
    board = boards()["smoke"]
    for env_id, utterances in [
        ("lm_gym/Wordle-v0", [["crane", "anishfordsalper qqq", "moist", "x", "pouty", "lying"]] * 2),  # a cut guess
        ("lm_gym/VisDial-v0", [[f"is there a {thing}?" for thing in ("dog", "cat", "tree", "car")] * 3] * 2),
    ]:
        played = play_samples(env_id, board.env_kwargs[env_id], utterances)
        if not all(isinstance(sample, dict) for sample in played):  # a game ended before its utterances: fewer
            ends = [int(re.search(r"ends after (\d+) of", str(sample)).group(1)) if isinstance(sample, str) else None
                    for sample in played]  # fmt: skip
            utterances = [texts[:end] if end else texts for texts, end in zip(utterances, ends, strict=True)]
            played = play_samples(env_id, board.env_kwargs[env_id], utterances)
        assert all(isinstance(sample, dict) for sample in played), played
        entry = {"tasks": {env_id: {"runs": [{"samples": played}]}}}
        assert rescore_samples(entry, board) == ([], [])
        tampered = copy.deepcopy(entry)
        tampered["tasks"][env_id]["runs"][0]["samples"][0]["return"] += 1.0
        problems, _ = rescore_samples(tampered, board)
        assert problems and problems[0][0][-1] == "return", problems
        forged = copy.deepcopy(entry)  # a transcript edited so that the game is solved at once
        sample = forged["tasks"][env_id]["runs"][0]["samples"][0]
        sample["prompt"] = sample["prompt"].split("\n")[0] + "\n" + "crane ggggg"
        problems, _ = rescore_samples(forged, board)
        assert problems, env_id


def test_samples_of_a_task_that_cannot_be_made_offline_are_noted_not_passed():
    board = boards()["grue"]  # the hub's datasets and reward models
    entry = {"tasks": {IMDB: {"runs": [{"samples": [{"prompt": "p", "generation": "g", "return": 0.5}]}]}}}
    problems, notes = rescore_samples(entry, board)
    assert problems == [] and len(notes) == 1
    assert notes[0][0] == ("tasks", IMDB) and notes[0][1].startswith("samples not re-scored: the task's env cannot")


# --- 3. consistency ------------------------------------------------------------------------------------------


def test_inconsistent_runs_are_refused(valid_entry):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    curve = runs(entry)[0]["curve"]
    curve[4][0] = curve[2][0]
    refused(entry, "runs[0].curve[4][0]: step 20 does not follow step 30 (the curve's steps increase)")
    entry = copy.deepcopy(valid_entry)
    runs(entry, COMMONGEN)[2]["initial_eval"]["num_episodes"] = 64
    refused(entry, "runs[2].initial_eval.num_episodes: 64, but board offline-text evaluates on 128 episodes")
    entry = copy.deepcopy(valid_entry)
    run = runs(entry)[1]  # the 5 samples sum to little: the other 123 episodes cannot lift the mean to 0.995
    run["final_eval"]["mean_return"] = run["final_eval"]["mean_sentiment"] = 0.995
    refused(entry, "runs[1].final_eval.mean_return: 0.995 cannot be the mean of 128 returns in [0, 1]")


def test_doubtful_entries_are_flagged_not_refused(valid_entry):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    runs(entry)[0]["final_eval"].update(mean_return=0.9, std_return=0.05)  # possible, but far from its samples
    flags = validate_entry(entry)
    assert any(flag.startswith('tasks["lm_gym/IMDB-v0"].runs[0].final_eval.mean_return: 0.9 is') for flag in flags)
    entry = copy.deepcopy(valid_entry)
    for run in runs(entry, COMMONGEN)[1:]:
        run["final_eval"] = dict(runs(entry, COMMONGEN)[0]["final_eval"])
    flags = entry_flags(entry)
    assert 'tasks["lm_gym/CommonGen-v0"].runs[1].final_eval: identical to runs[0]\'s (seeds 0 and 1)' in flags[0]
    assert len(flags) == 2


def test_validate_prints_the_flags(valid_entry, tmp_path, capsys):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    runs(entry)[0]["final_eval"].update(mean_return=0.9, std_return=0.05)
    path = tmp_path / "entry.json"
    path.write_text(json.dumps(entry))
    assert leaderboard_cli(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f'{path}: valid\n{path}: flagged: tasks["lm_gym/IMDB-v0"].runs[0].final_eval.mean_return')


# --- 4. verification by re-running -----------------------------------------------------------------------

SUITE = """
[suite]
description = "one task, tiny PPO from scratch: the verify test's suite"
seeds = [1, 2, 3]
threads_per_job = 1

[defaults]
eval-episodes = 8
eval-batch-size = 8

[algorithms.ppo]
script = "baselines/ppo.py"
args = { model-config = { model_type = "gpt2", n_layer = 1, n_embd = 32, n_head = 2 }, num-envs = 4, iterations = 1, \
update-epochs = 1, num-minibatches = 1, eval-every = 0 }

[tasks.prompts]
env_id = "lm_gym/Prompts-v0"
env_kwargs = { prompt_words = 8, num_prompts = 64 }
algorithms = ["ppo"]

[boards.verifiable]
description = "the verify test's board"
eval_episodes = 8
[boards.verifiable.env_kwargs]
"lm_gym/Prompts-v0" = { prompt_words = 8, num_prompts = 64 }
[boards.verifiable.metrics."lm_gym/Prompts-v0"]
task = ["mean_return"]
naturalness = ["corpus_distinct_2"]
"""


@pytest.fixture(scope="module")
def harness_entry(tmp_path_factory):
    """An honest entry of 3 seeds of the one-task suite, run by the harness (seconds per job)."""
    root = tmp_path_factory.mktemp("verify")
    suite = root / "tiny.toml"
    suite.write_text(SUITE)
    command = [sys.executable, "-m", "benchmark", "run", "--suite", str(suite), "--out", str(root / "runs")]
    done = subprocess.run([*command, "--gpus", "none"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    entry_file = root / "entry.json"
    argv = ["submit", str(root / "runs"), "--name", "tiny PPO", "--boards", str(suite), "--out", str(entry_file)]
    assert leaderboard_cli(argv) == 0
    yield suite, entry_file
    forget_user_boards()


def test_an_honest_harness_entry_validates_and_verifies(harness_entry, tmp_path, capsys):
    suite, entry_file = harness_entry
    load_boards_file(suite)
    entry = json.loads(entry_file.read_text())
    recipe = entry["recipe"]
    assert (
        recipe["suite"] == "tiny"
        and recipe["algorithm"] == "ppo"
        and recipe["tasks"] == {"lm_gym/Prompts-v0": "prompts"}
    )
    assert [job["name"] for job in recipe["jobs"]] == ["prompts/ppo/seed1", "prompts/ppo/seed2", "prompts/ppo/seed3"]
    argv = recipe["jobs"][0]["argv"]
    assert argv[0] == "baselines/ppo.py" and argv[argv.index("--out-dir") + 1] == "{runs}/prompts/ppo/seed1"
    capsys.readouterr()
    assert leaderboard_cli(["validate", str(entry_file), "--boards", str(suite)]) == 0
    assert capsys.readouterr().out == f"{entry_file}: valid\n"  # re-scored, nothing flagged
    records = tmp_path / "verifications"
    argv = ["verify", str(entry_file), "--seeds", "1", "--suite", str(suite), "--boards", str(suite)]
    assert leaderboard_cli([*argv, "--record-into", str(records)]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert out.startswith(f"{entry_file}: verified (1 seed re-run: 1; 1 tasks, exactly)"), out
    board = tmp_path / "board"
    assert leaderboard_cli(["compile", str(entry_file), "--boards", str(suite), "--out", str(board),
                            "--verifications", str(records), "--reps", "50", "--poi-reps", "10"]) == 0  # fmt: skip
    data = json.loads((board / "board.json").read_text())
    assert data["entries"][0]["verification"] == "verified (1 seed re-run)"
    assert "verified (1 seed re-run)" in (board / "board.md").read_text()


@pytest.mark.slow  # a harness run (8-10 s); the deep run keeps it
def test_a_tampered_plausible_entry_passes_validate_but_not_verify(harness_entry, tmp_path, capsys):
    suite, entry_file = harness_entry
    load_boards_file(suite)
    entry = json.loads(entry_file.read_text())
    final = entry["tasks"]["lm_gym/Prompts-v0"]["runs"][0]["final_eval"]
    final["mean_return"] = final["mean_reward"] = min(1.0, final["mean_return"] + 0.03)  # raised within range
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(entry))
    assert leaderboard_cli(["validate", str(tampered), "--boards", str(suite)]) == 0  # nothing impossible in it
    records = tmp_path / "verifications"
    argv = ["verify", str(tampered), "--suite", str(suite), "--boards", str(suite), "--record-into", str(records)]
    capsys.readouterr()
    assert leaderboard_cli(argv) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{tampered}: refused: the re-run disagrees (1 seed re-run: 1, compared exactly): ")
    assert 'tasks["lm_gym/Prompts-v0"].runs[0].final_eval.mean_return: ' in out
    argv = ["compile", str(tampered), str(entry_file), "--boards", str(suite), "--out", str(tmp_path / "board"),
            "--verifications", str(records), "--reps", "50", "--poi-reps", "10"]  # fmt: skip
    assert leaderboard_cli(argv) == 0
    assert "left out: its re-run disagrees" in capsys.readouterr().err
    data = json.loads((tmp_path / "board" / "board.json").read_text())
    assert [item["verification"] for item in data["entries"]] == ["not verified"]  # the honest one, not re-run here


def test_an_entry_without_a_recipe_is_not_verified(valid_entry, tmp_path, capsys):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    del entry["recipe"]
    path = tmp_path / "entry.json"
    path.write_text(json.dumps(entry))
    assert leaderboard_cli(["verify", str(path)]) == 1
    assert (
        capsys.readouterr().out
        == f"{path}: not verified: the entry has no recipe (it was not built from harness runs)\n"
    )


def test_the_tasks_of_the_offline_text_fixture_are_those_of_the_board():
    assert set(OFFLINE) == set(boards()["offline-text"].tasks)


def test_the_docs_table_of_ranges_is_the_declared_one():
    """docs/leaderboard.md's table of the smoke board's ranges is what the tasks and metrics declare."""

    def shown(declared):
        return str(declared).replace("a number in ", "").replace("a number ", "").replace("an integer ", "integer ")

    text = (ROOT / "docs" / "leaderboard.md").read_text()
    board = boards()["smoke"]
    for env_id, kwargs in board.env_kwargs.items():
        ranges = evaluation_ranges(env_id, kwargs)
        split = task_metrics("smoke")[env_id]
        scored = [m for m in (*split.task, *split.naturalness) if m != "mean_return"]
        metrics = ", ".join(f"`{m}` {shown(ranges[m])}" for m in scored)
        name = env_id.removeprefix("lm_gym/").removesuffix("-v0")
        assert f"| {name} | {shown(ranges['mean_return'])} | {metrics or '-'} |" in text, env_id


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("suite", "../../tmp/evil", 'recipe.suite: "../../tmp/evil" is not a suite\'s name'),
        ("algorithm", "--out=/etc", 'recipe.algorithm: "--out=/etc" is not a label of the suite'),
        ("tasks", {IMDB: "-x"}, "is not a label of the suite"),
    ],
)
def test_a_recipe_cannot_name_a_path_or_an_option(valid_entry, field, value, expected):  # noqa: F811
    entry = copy.deepcopy(valid_entry)
    entry["recipe"][field] = value
    refused(entry, expected)


# --- 4. a recipe is what its suite runs ---------------------------------------------------------------


def tampered_recipe(recipe, change):
    """A copy of ``recipe`` changed by ``change`` (it edits the copy in place)."""
    recipe = copy.deepcopy(recipe)
    change(recipe)
    return recipe


def set_flag(argv, flag, value):
    argv[argv.index(flag) + 1] = value


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (  # one command's training stretched: the numbers would be those of another experiment
            lambda recipe: set_flag(recipe["jobs"][1]["argv"], "--iterations", "100"),
            'recipe.jobs[1].argv[{iterations}] (job prompts/ppo/seed2): "100" after "--iterations", where suite tiny '
            'runs "1"',
        ),
        (  # another baseline's script
            lambda recipe: recipe["jobs"][0]["argv"].__setitem__(0, "baselines/grpo.py"),
            'recipe.jobs[0].argv[0] (job prompts/ppo/seed1): "baselines/grpo.py", where suite tiny runs '
            '"baselines/ppo.py"',
        ),
        (
            lambda recipe: recipe["jobs"][2]["argv"].extend(["--learning-rate", "0.1"]),
            "recipe.jobs[2].argv (job prompts/ppo/seed3): {arguments_plus_2} arguments, where suite tiny runs "
            '{arguments}: it adds "--learning-rate", "0.1"',
        ),
        (
            lambda recipe: recipe["jobs"].pop(),
            "recipe.jobs: lacks prompts/ppo/seed3, which suite tiny runs for ppo on seeds [1, 2, 3]",
        ),
        (
            lambda recipe: recipe["jobs"][2].update(name="prompts/ppo/seed9"),
            'recipe.jobs[2].name: "prompts/ppo/seed9" is not a job suite tiny runs for ppo on seeds [1, 2, 3]; '
            "recipe.jobs: lacks prompts/ppo/seed3",
        ),
        (
            lambda recipe: recipe.update(algorithm="grpo"),
            'recipe.algorithm: "grpo" is not an algorithm of suite tiny (ppo)',
        ),
        (
            lambda recipe: recipe["tasks"].update({"lm_gym/Prompts-v0": "imdb"}),
            'recipe.tasks["lm_gym/Prompts-v0"]: "imdb" is not a task of suite tiny (prompts)',
        ),
        (
            lambda recipe: recipe.update(suite="smoke"),
            'recipe.suite: "smoke", but board verifiable scores the runs of suite tiny',
        ),
    ],
    ids=["a-flag", "the-script", "an-added-flag", "a-job-left-out", "a-job-renamed", "algorithm", "task", "suite"],
)
def test_a_recipe_whose_commands_are_not_the_suites_is_refused_naming_the_job(
    harness_entry, tmp_path, capsys, change, expected
):
    """An honest harness entry with its recipe changed: before, only verify (a re-run) noticed; validate compares
    the recipe's jobs with those the suite runs (benchmark.suite's expansion), naming the job and the difference."""
    suite, entry_file = harness_entry
    entry = json.loads(entry_file.read_text())
    argv = entry["recipe"]["jobs"][1]["argv"]
    where = {"iterations": argv.index("--iterations") + 1, "arguments": len(argv), "arguments_plus_2": len(argv) + 2}
    entry["recipe"] = tampered_recipe(entry["recipe"], change)
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(entry))
    capsys.readouterr()
    assert leaderboard_cli(["validate", str(tampered), "--boards", str(suite)]) == 1
    assert capsys.readouterr().out.startswith(f"{tampered}: {expected.format(**where)}")
