"""Evaluation entries (docs/leaderboard.md, "Evaluation entries"): a tiny local model evaluated with
``python -m benchmark evaluate`` on two of the smoke suite's tasks, submitted, validated, compiled into its own
rows of the page and verified by re-running its recorded command; refusals of mixed and tampered entries."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from conftest import tiny_causal_lm

from benchmark.__main__ import main as benchmark_cli
from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.boards import forget_user_boards, load_boards_file
from leaderboard.compile import compile_board
from leaderboard.entry import load_entry
from leaderboard.entry_checks import validate_entry
from leaderboard.entry_schema import EntryError
from leaderboard.submit import SubmitError, build_entry
from leaderboard.verify import verify_entry

IMDB, COMMONGEN = "lm_gym/IMDB-v0", "lm_gym/CommonGen-v0"
# a board of two of the smoke suite's tasks, of 4 episodes: an evaluation of it takes seconds
BOARD = """
[boards.pair]
description = "two smoke tasks"
suite = "smoke"
source = "synthetic"
eval_episodes = 4
[boards.pair.env_kwargs]
"lm_gym/IMDB-v0" = { source = "synthetic" }
"lm_gym/CommonGen-v0" = { source = "synthetic" }
"""


@pytest.fixture(scope="module")
def boards_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("boards") / "pair.toml"
    path.write_text(BOARD)
    return path


@pytest.fixture(autouse=True)
def _pair_board(boards_file):
    load_boards_file(boards_file)
    yield
    forget_user_boards()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A one-layer GPT-2 (weights of seed 0) with the tokenizer lm-gym trains on IMDB's synthetic text."""
    import torch

    directory = tmp_path_factory.mktemp("tiny-gpt2")
    torch.manual_seed(0)
    model, tokenizer = tiny_causal_lm(IMDB, {"source": "synthetic"})
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def evaluate(out: Path, model_dir: Path, *flags: str) -> Path:
    argv = ["evaluate", "--suite", "smoke", "--tasks", "imdb", "commongen", "--model", str(model_dir)]
    assert (
        benchmark_cli([*argv, "--episodes", "4", "--samples", "2", "--device", "cpu", "--out", str(out), *flags]) == 0
    )
    return out


@pytest.fixture(scope="module")
def eval_out(tmp_path_factory, model_dir) -> Path:
    return evaluate(tmp_path_factory.mktemp("evaluate"), model_dir)


@pytest.fixture()
def entry(eval_out) -> dict:
    return build_entry([eval_out], name="tiny gpt2", board="pair")


def test_evaluate_records_its_command_line(eval_out, model_dir):
    config = json.loads((eval_out / "imdb" / "result.json").read_text())["config"]
    assert config["command"] == [
        "--suite", "smoke", "--tasks", "imdb", "commongen", "--model", str(model_dir),
        "--episodes", "4", "--samples", "2", "--device", "cpu", "--out", str(eval_out),
    ]  # fmt: skip


def test_submit_builds_an_evaluation_entry_that_validates(eval_out, model_dir, tmp_path, boards_file, capsys):
    out = tmp_path / "entry.json"
    code = leaderboard_cli(
        [
            "submit",
            str(eval_out),
            "--name",
            "tiny gpt2",
            "--board",
            "pair",
            "--boards",
            str(boards_file),
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    entry = load_entry(out)
    assert "recipe" not in entry and entry["method"] == "eval"
    assert entry["model"] == f"{model_dir.name}, evaluated, not trained"
    evaluation = entry["evaluation"]
    assert evaluation["tasks"] == {IMDB: "imdb", COMMONGEN: "commongen"}
    assert evaluation["model"] == str(model_dir) and len(evaluation["model_digest"]) == 64
    assert evaluation["base_url"] is None and evaluation["api"] is None
    assert evaluation["sampling"] == {
        "episodes": 4, "samples": 2, "seed": 0, "temperature": 1.0, "top_p": 1.0, "greedy": False,
    }  # fmt: skip
    assert evaluation["argv"][-2:] == ["--out", "{out}"]
    for task in entry["tasks"].values():
        (run,) = task["runs"]
        assert run["curve"] == [] and run["initial_eval"] is None and run["final_eval"]["num_episodes"] == 8
        assert run["sampling"]["samples_per_episode"] == 2
        assert run["sampling"]["statistics"]["mean@2"] == pytest.approx(run["final_eval"]["mean_return"])
    assert leaderboard_cli(["validate", str(out), "--boards", str(boards_file)]) == 0


def test_evaluation_and_training_runs_are_never_one_entry(eval_out, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(eval_out, mixed / "eval")
    evaluation = json.loads((eval_out / "imdb" / "result.json").read_text())
    trained = evaluation | {"algorithm": "ppo", "initial_eval": evaluation["final_eval"]}
    del trained["sampling"]
    (mixed / "ppo" / "seed0").mkdir(parents=True)
    (mixed / "ppo" / "seed0" / "result.json").write_text(json.dumps(trained))
    with pytest.raises(SubmitError, match="evaluation runs .* and training runs \\(ppo\\): an entry is a model"):
        build_entry([mixed], name="both", board="pair")
    assert build_entry([mixed], name="evaluated", board="pair", algorithm="eval")["evaluation"]


def test_validate_refuses_tampered_numbers_and_commands(entry):
    validate_entry(entry, rescore=False)
    raised = copy.deepcopy(entry)
    raised["tasks"][IMDB]["runs"][0]["final_eval"]["mean_return"] += 0.25
    with pytest.raises(EntryError, match="mean@2 .* is not the final evaluation's mean_return"):
        validate_entry(raised, rescore=False)
    greedy = copy.deepcopy(entry)
    greedy["evaluation"]["sampling"]["greedy"] = True
    with pytest.raises(EntryError, match="--greedy absent, but evaluation.sampling.greedy is True"):
        validate_entry(greedy, rescore=False)
    fewer = copy.deepcopy(entry)
    fewer["evaluation"]["argv"][fewer["evaluation"]["argv"].index("--episodes") + 1] = "2"
    with pytest.raises(EntryError, match='--episodes "2", but board pair.s eval_episodes is 4'):
        validate_entry(fewer, rescore=False)
    served = copy.deepcopy(entry)  # a server named by the entry, not by the command that made its runs
    served["evaluation"].update(base_url="http://localhost:8000/v1", api="chat", model_digest=None)
    with pytest.raises(EntryError, match="--base-url absent, but evaluation.base_url is"):
        validate_entry(served, rescore=False)
    trained = copy.deepcopy(entry)
    del trained["evaluation"]
    with pytest.raises(EntryError, match="runs: has 1 items, at least 3 allowed"):
        validate_entry(trained, rescore=False)
    seeds = copy.deepcopy(entry)
    seeds["tasks"][IMDB]["runs"].append(copy.deepcopy(seeds["tasks"][IMDB]["runs"][0]))
    with pytest.raises(EntryError, match="runs: has 2 items, at most 1 allowed"):
        validate_entry(seeds, rescore=False)


def test_compile_shows_evaluation_entries_in_their_own_rows(entry, tmp_path):
    data = compile_board([entry], tmp_path / "site", reps=50, poi_reps=20)
    (item,) = data["entries"]
    assert item["kind"] == "evaluation" and item["label"] == "evaluated, not trained"
    assert item["sampling"][IMDB]["samples_per_episode"] == 2
    assert "mean@2" in item["sampling"][IMDB]["statistics"]
    assert data["improvement"]["entries"] == []  # one evaluation seed: no distribution of training runs to compare
    markdown = (tmp_path / "site" / "board.md").read_text()
    assert (
        "## Evaluated, not trained (zero-shot)" in markdown and "## K-sample statistics of the evaluations" in markdown
    )
    assert "tiny gpt2 (evaluated, not trained)" in markdown  # its rows of the per-task tables
    page = (tmp_path / "site" / "index.html").read_text()
    assert '"kind": "evaluation"' in page or '"kind":"evaluation"' in page
    assert "Evaluated, not trained (zero-shot)" in page


def test_verify_reruns_a_local_model_and_checks_its_digest(entry, model_dir, tmp_path):
    verification = verify_entry(entry, out=tmp_path / "rerun")
    assert verification.agrees, verification.summary()
    assert verification.tasks == [IMDB, COMMONGEN] and verification.seeds == [0]


@pytest.mark.slow  # two re-runs of the evaluation
def test_verify_refuses_other_numbers_and_other_weights(entry, tmp_path):
    tampered = copy.deepcopy(entry)
    tampered["tasks"][COMMONGEN]["runs"][0]["final_eval"]["mean_return"] += 0.125
    assert verify_entry(tampered, out=tmp_path / "again").agrees is False
    other = copy.deepcopy(entry)
    other["evaluation"]["model_digest"] = "0" * 64
    verification = verify_entry(other, out=tmp_path / "other")
    assert verification.agrees is False
    assert "evaluation.model_digest" in verification.summary()


def test_verify_does_not_rerun_a_servers_model(entry):
    served = copy.deepcopy(entry)
    served["evaluation"].update(base_url="http://localhost:8000/v1", api="chat", model_digest=None)
    verification = verify_entry(served)
    assert verification.agrees is None
    assert "a server's model is not re-run" in verification.summary()
