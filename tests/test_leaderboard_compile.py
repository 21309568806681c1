"""``python -m leaderboard compile``: the tables equal the statistics of the result files, and the
web page works in a real headless browser (Debian's chromium and chromedriver, Selenium).

The browser test saves a screenshot of the page (``board/screenshot.png`` in its tmp folder,
kept when the test fails).
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from leaderboard import scoring
from leaderboard.boards import boards, task_metrics
from leaderboard.compile import collect_entries, compile_board, main
from leaderboard.entry import canonical_json, entry_file_name, load_entry
from lm_gym.results import make_result, write_result

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
CHROMEDRIVER = shutil.which("chromedriver")


def write_runs(root: Path, algorithm: str, quality: float, seeds=(1, 2, 3), board="smoke") -> None:
    """Runs of every task of ``board`` in ``root/<its suite>``: metric values around ``quality`` of
    the way from random to the references."""
    rng = np.random.default_rng(abs(hash((algorithm, quality))) % 2**32)
    points = scoring.load_reference_points(board)
    for env_id in boards()[board].tasks:
        names = (*task_metrics()[env_id].task, *task_metrics()[env_id].naturalness)
        for seed in seeds:
            final = {"num_episodes": boards()[board].eval_episodes, "std_return": 0.1, "mean_return": 0.0}
            for name in names:
                low, high = points[env_id][name]["low"], points[env_id][name]["high"]
                final[name] = low + (quality + 0.05 * rng.standard_normal()) * (high - low)
            initial = {**final, "mean_return": final["mean_return"] - 0.1}
            curves = [{"step": step, "mean_return": quality * step / 10 + 0.01 * seed} for step in range(1, 11)]
            samples = [{"prompt": f"prompt of {env_id}", "generation": f"{algorithm} says {PAYLOAD}", "return": 0.5}]
            write_result(root / boards()[board].suite / env_id.split("/")[1] / algorithm / f"seed{seed}", make_result(
                env_id=env_id, algorithm=algorithm, seed=seed, config={"learning_rate": 1e-4, "seed": seed, "model_name": f"tiny-{algorithm}"}, initial_eval=initial,
                final_eval=final, curves=curves, wall_time_s=10.0, tokens_per_s=1.0, episodes_per_s=1.0, peak_memory_mb=1.0,
                checkpoint=None, device="cpu", samples=samples,
            ))


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_runs(root, "ppo", 0.6)
    write_runs(root, "grpo", 0.3)
    write_runs(root, "sft", 0.45, seeds=(1,))  # one seed: per-task scores, no overall score
    out = root / "board"
    entries = collect_entries([root / "smoke"])
    data = compile_board(entries, out, reps=500, poi_reps=100)
    return root, out, entries, data


def test_the_tables_equal_the_statistics_of_the_result_files(board):
    root, out, entries, data = board
    written = json.loads((out / "board.json").read_text())
    assert written == json.loads(json.dumps(data))
    ppo = next(item for item in written["entries"] if item["method"] == "ppo")
    ppo_entry = next(entry for entry in entries if entry["method"] == "ppo")
    # a raw metric: the mean over the seeds' result.json values
    values = [json.loads((root / f"smoke/IMDB-v0/ppo/seed{seed}/result.json").read_text())["final_eval"]["mean_sentiment"] for seed in (1, 2, 3)]
    assert ppo["tasks"]["lm_gym/IMDB-v0"]["metrics"]["mean_sentiment"]["value"] == pytest.approx(np.mean(values))
    # the overall scores and their intervals: rliable called directly, seeded the same way
    direct = scoring.aggregate({"x": ppo_entry}, kind="task", reps=500, seed=0)["x"]
    assert ppo["overall"]["task_iqm"] == direct["iqm"] and ppo["overall"]["task_mean"] == direct["mean"]
    matrix = scoring.score_matrix(ppo_entry, "task")
    assert direct["mean"]["value"] == pytest.approx(matrix.mean())
    # the better method is ahead, and the one-seed entry has task scores but no overall score
    grpo = next(item for item in written["entries"] if item["method"] == "grpo")
    assert ppo["overall"]["task_iqm"]["value"] > grpo["overall"]["task_iqm"]["value"]
    sft = next(item for item in written["entries"] if item["method"] == "sft")
    assert "task_iqm" not in sft["overall"] and sft["tasks"]["lm_gym/IMDB-v0"]["task_score"]["value"] > 0
    markdown = (out / "board.md").read_text()
    assert "## lm_gym/IMDB-v0" in markdown and "ppo (smoke)" in markdown and "<script>" not in markdown
    assert {path.name for path in (out / "plots").iterdir()} >= {"scores.png", "curves-0.png"}


def test_the_probability_of_improvement_equals_rliable_on_the_complete_entries(board):
    _, out, entries, data = board
    ids = {item["method"]: item["id"] for item in data["entries"]}
    assert data["improvement"]["entries"] == ["e0", "e1"] == [ids["grpo"], ids["ppo"]]  # sft, one seed, is not complete
    ppo, grpo = (next(entry for entry in entries if entry["method"] == method) for method in ("ppo", "grpo"))
    # each pair is resampled once, in the order of the entries: grpo's (e0) over ppo's (e1)
    matrix = data["improvement"]["matrix"]
    assert matrix[ids["grpo"]][ids["ppo"]] == scoring.probability_of_improvement(grpo, ppo, reps=100, seed=0)
    assert matrix[ids["ppo"]][ids["grpo"]]["value"] > 0.8 and matrix[ids["grpo"]][ids["ppo"]]["value"] < 0.2
    assert matrix[ids["ppo"]][ids["grpo"]]["value"] == pytest.approx(1 - matrix[ids["grpo"]][ids["ppo"]]["value"])
    assert "## Probability of improvement" in (out / "board.md").read_text()


def test_runs_of_a_suite_with_several_boards_compile_into_one_folder_each(tmp_path, capsys):
    write_runs(tmp_path, "ppo", 0.6, board="offline-text")
    write_runs(tmp_path, "ilql", 0.5, board="offline-games")
    assert main([str(tmp_path / "offline"), "--out", str(tmp_path / "board"), "--reps", "50", "--poi-reps", "10"]) == 0
    for name, method in (("offline-text", "ppo"), ("offline-games", "ilql")):
        data = json.loads((tmp_path / "board" / name / "board.json").read_text())
        assert data["board"]["name"] == name and [item["method"] for item in data["entries"]] == [method]
        assert (tmp_path / "board" / name / "index.html").is_file()
    assert main([str(tmp_path / "offline"), "--out", str(tmp_path / "one"), "--board", "offline-games", "--reps", "50"]) == 0
    assert (tmp_path / "one" / "index.html").is_file()


def test_compile_command_and_its_errors(board, tmp_path, capsys):
    root, *_ = board
    assert main([str(root / "smoke"), "--out", str(tmp_path / "b"), "--reps", "100", "--poi-reps", "10"]) == 0
    assert (tmp_path / "b" / "index.html").is_file() and "index.html" in capsys.readouterr().out
    assert main([str(tmp_path / "nothing"), "--out", str(tmp_path / "c")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.skipif(CHROMEDRIVER is None, reason="no chromedriver (Debian: apt-get install chromium chromium-driver)")
@pytest.mark.allow_hosts(["127.0.0.1", "::1"])  # Selenium talks to chromedriver on a loopback port; nothing else opens
def test_the_page_in_a_headless_browser(board, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    root, out, entries, data = board
    # an entry whose name is a script payload: it must show as text and run nothing
    evil = json.loads(json.dumps(next(entry for entry in entries if entry["method"] == "grpo")))
    evil["name"], evil["description"] = PAYLOAD, "</script><script>window.__pwned=3</script>"
    page_dir = tmp_path / "board"
    compile_board([*entries, evil], page_dir, reps=200, poi_reps=20)

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)  # no Selenium Manager download
    try:
        driver.get((page_dir / "index.html").as_uri())

        def names():
            return [row.find_element(By.CSS_SELECTOR, "td").text for row in driver.find_elements(By.CSS_SELECTOR, "#board tbody tr")]

        assert sorted(names()) == sorted(["ppo (smoke)", "grpo (smoke)", "sft (smoke)", PAYLOAD])
        # sorting: the task-score column, descending then ascending
        header = next(th for th in driver.find_elements(By.CSS_SELECTOR, "#board th") if th.text == "task score (IQM)")
        header.click()
        assert names()[0] == "ppo (smoke)"
        next(th for th in driver.find_elements(By.CSS_SELECTOR, "#board th") if th.text.startswith("task score (IQM)")).click()
        assert names()[-1] == "ppo (smoke)" and names()[0] != "ppo (smoke)"
        # the task filter: that task's metrics as columns, its plot only
        Select(driver.find_element(By.ID, "task-filter")).select_by_value("lm_gym/Wordle-v0")
        headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#board th")]
        assert "mean_solved" in headers and "mean_sentiment" not in headers
        assert len(driver.find_elements(By.CSS_SELECTOR, "#plots img")) == 1
        Select(driver.find_element(By.ID, "task-filter")).select_by_value("")
        # every plot loads from the file system
        images = driver.find_elements(By.CSS_SELECTOR, "#plots img")
        assert len(images) == 1 + len(boards()["smoke"].tasks)
        assert all(driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image) for image in images)
        # the probability of improvement: a row and a column per complete entry (the payload's name as text)
        rows = driver.find_elements(By.CSS_SELECTOR, "#improvement tbody tr")
        assert sorted(row.find_element(By.CSS_SELECTOR, "th").text for row in rows) == sorted(["ppo (smoke)", "grpo (smoke)", PAYLOAD])
        assert all(len(row.find_elements(By.CSS_SELECTOR, "td")) == 3 for row in rows)
        # metadata and samples of each entry
        details = driver.find_element(By.ID, "entry-e0")
        driver.execute_script("arguments[0].open = true", details)
        assert "config hash" in details.text and "sample generations" in details.text
        # the payloads are text: nothing ran, no element was injected
        assert driver.execute_script("return typeof window.__pwned") == "undefined"
        assert driver.execute_script("return document.querySelectorAll('#board img, #board script, #improvement img, #improvement script, #entries script, #entries img').length") == 0
        assert PAYLOAD in names()
        driver.save_screenshot(str(page_dir / "screenshot.png"))
    finally:
        driver.quit()
    assert (page_dir / "screenshot.png").stat().st_size > 10_000


def test_the_accepted_entries_validate_and_make_their_boards(tmp_path, capsys):
    entries_dir = Path(__file__).resolve().parents[1] / "leaderboard" / "entries"
    files = sorted(entries_dir.glob("*.json"))
    assert files, "leaderboard/entries/ holds the accepted entries"
    for path in files:
        entry = load_entry(path)  # validated as untrusted input, like any submission
        assert path.name == entry_file_name(entry) and path.read_text() == canonical_json(entry) + "\n", f"{path.name} was not written by accept_entry"
    assert main([str(entries_dir), "--out", str(tmp_path / "board"), "--reps", "100", "--poi-reps", "10"]) == 0
    board_names = sorted({load_entry(path)["board"] for path in files})
    folders = [tmp_path / "board"] if len(board_names) == 1 else [tmp_path / "board" / name for name in board_names]
    compiled = [json.loads((folder / "board.json").read_text()) for folder in folders]
    assert sum(len(data["entries"]) for data in compiled) == len(files)
    assert all("task_iqm" in item["overall"] for data in compiled for item in data["entries"])  # complete entries only
