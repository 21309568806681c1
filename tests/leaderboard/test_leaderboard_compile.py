"""``python -m leaderboard compile``: the tables equal the statistics of the result files, and the
web page works in a real headless browser (Debian's chromium and chromedriver, Selenium).

The board under test is the README's default one: the smoke suite's runs, one seed of every
algorithm on the tasks the suite runs it on, with two algorithms run on 3 seeds.

The browser test saves a screenshot of the page (``board/screenshot.png`` in its tmp folder,
kept when the test fails).
"""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from rliable import metrics

from benchmark.suite import load_suite
from leaderboard import scoring
from leaderboard.__main__ import main as leaderboard_cli
from leaderboard.boards import boards, task_metrics
from leaderboard.compile import collect_entries, compile_board
from leaderboard.entry import entry_file_name, load_entry
from leaderboard.entry_schema import canonical_json
from lm_gym.results import evaluation_ranges, make_result, write_result

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
CHROMEDRIVER = shutil.which("chromedriver")
SMOKE_MODEL = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}'  # the smoke suite's --model-config
#: the fixture's algorithms: how far from random to the references their metrics are, and their seeds
QUALITY = {"ppo": 0.6, "nlpo": 0.5, "sft": 0.45, "rloo": 0.4, "ilql": 0.35, "grpo": 0.3, "filtered_bc": 0.25, "bc": 0.2}
THREE_SEEDS = ("ppo", "grpo")


def write_runs(
    root: Path, algorithm: str, quality: float, seeds=(1, 2, 3), board="smoke", tasks=None, config=None
) -> None:
    """Runs of ``tasks`` (default: every task of ``board``) in ``root/<its suite>``: metric values
    around ``quality`` of the way from random to the references; ``config(env_id)`` the runs' config."""
    rng = np.random.default_rng(abs(hash((algorithm, quality))) % 2**32)
    points = scoring.load_reference_points(board)
    for env_id in tasks or boards()[board].tasks:
        names = (*task_metrics(board)[env_id].task, *task_metrics(board)[env_id].naturalness)
        returns = evaluation_ranges(env_id, boards()[board].env_kwargs[env_id])["mean_return"]

        def in_range(fraction, returns=returns):  # a return ``fraction`` of the way through the task's range
            return returns.low + fraction * (returns.high - returns.low)

        for seed in seeds:
            final = {"num_episodes": boards()[board].eval_episodes, "std_return": 0.1, "mean_return": in_range(0.5)}
            for name in names:
                low, high = points[env_id][name]["low"], points[env_id][name]["high"]
                final[name] = low + (quality + 0.05 * rng.standard_normal()) * (high - low)
            initial = {**final, "mean_return": in_range(0.4)}
            curves = [
                {"step": step, "mean_return": in_range(quality * step / 20 + 0.01 * seed)} for step in range(1, 11)
            ]
            samples = [
                {"prompt": f"prompt of {env_id}", "generation": f"{algorithm} says {PAYLOAD}", "return": in_range(0.5)}
            ]
            run_config = config(env_id) if config else {"learning_rate": 1e-4, "model_name": f"tiny-{algorithm}"}
            write_result(
                root / boards()[board].suite / env_id.split("/")[1] / algorithm / f"seed{seed}",
                make_result(
                    env_id=env_id,
                    algorithm=algorithm,
                    seed=seed,
                    config={**run_config, "seed": seed},
                    initial_eval=initial,
                    final_eval=final,
                    curves=curves,
                    wall_time_s=10.0,
                    tokens_per_s=1.0,
                    episodes_per_s=1.0,
                    peak_memory_mb=1.0,
                    checkpoint=None,
                    device="cpu",
                    samples=samples,
                ),
            )


def write_smoke_runs(root: Path) -> None:
    """What ``python -m benchmark run --suite smoke`` writes: every algorithm on the tasks the suite
    runs it on, with its configs (RL from the task's SFT checkpoint where there is one), one seed;
    then ``--algos ppo grpo --num-seeds 3``."""
    suite = load_suite("smoke")
    # the runs of the tasks the smoke board scores (the suite also runs TextGeneration and Mixture)
    scored = [task for task in suite.tasks.values() if task["env_id"] in boards()["smoke"].tasks]
    with_sft = {task["env_id"] for task in scored if "sft" in task["algorithms"]}
    for algorithm, quality in QUALITY.items():
        tasks = [task["env_id"] for task in scored if algorithm in task["algorithms"]]

        def config(env_id, algorithm=algorithm):
            warm = algorithm in ("ppo", "nlpo", "grpo", "rloo") and env_id in with_sft
            return {
                "learning_rate": 1e-4,
                "model_name": None,
                "model_config": SMOKE_MODEL,
                "init_from": str(sft_checkpoint(root, env_id)) if warm else None,
            }

        write_runs(
            root, algorithm, quality, seeds=(1, 2, 3) if algorithm in THREE_SEEDS else (1,), tasks=tasks, config=config
        )
    for env_id in with_sft:  # the SFT runs' checkpoints, as transformers saves them
        sft_checkpoint(root, env_id).mkdir()
        (sft_checkpoint(root, env_id) / "config.json").write_text(SMOKE_MODEL)


def sft_checkpoint(root: Path, env_id: str) -> Path:
    return root / "smoke" / env_id.split("/")[1] / "sft" / "seed1" / "checkpoint"


def entry_of(items, method):
    return next(item for item in items if item["method"] == method)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_smoke_runs(root)
    out = root / "board"
    entries = collect_entries([root / "smoke"])
    data = compile_board(entries, out, reps=500, poi_reps=100)
    return root, out, entries, data


def test_the_tables_equal_the_statistics_of_the_result_files(board):
    root, out, entries, data = board
    written = json.loads((out / "board.json").read_text())
    assert written == json.loads(json.dumps(data))
    ppo = entry_of(written["entries"], "ppo")
    # a raw metric: the mean over the seeds' result.json values
    values = [
        json.loads((root / f"smoke/IMDB-v0/ppo/seed{seed}/result.json").read_text())["final_eval"]["mean_sentiment"]
        for seed in (1, 2, 3)
    ]
    sentiment = ppo["tasks"]["lm_gym/IMDB-v0"]["metrics"]["mean_sentiment"]
    assert (
        sentiment["value"] == pytest.approx(np.mean(values))
        and sentiment["ci"][0] < sentiment["value"] < sentiment["ci"][1]
    )
    assert sentiment["n"] == 3
    # the overall scores and their intervals from 3 seeds: rliable called directly, seeded the same way
    direct = scoring.aggregate({"x": entry_of(entries, "ppo")}, kind="task", reps=500, seed=0)["x"]
    assert ppo["overall"]["task_iqm"] == {**direct["iqm"], "n": 3} and ppo["overall"]["task_mean"] == {
        **direct["mean"],
        "n": 3,
    }
    assert direct["mean"]["value"] == pytest.approx(scoring.score_matrix(entry_of(entries, "ppo"), "task").mean())
    # one seed on every task: rliable's overall point estimates, no interval, marked n=1
    nlpo = entry_of(written["entries"], "nlpo")
    matrix = scoring.score_matrix(entry_of(entries, "nlpo"), "task")
    assert nlpo["overall"]["task_iqm"] == {"value": pytest.approx(metrics.aggregate_iqm(matrix)), "ci": None, "n": 1}
    assert nlpo["overall"]["task_mean"] == {"value": pytest.approx(matrix.mean()), "ci": None, "n": 1}
    assert nlpo["tasks"]["lm_gym/Wordle-v0"]["task_score"] == {"value": pytest.approx(matrix[0, 4]), "ci": None, "n": 1}
    # the better method is ahead
    assert (
        ppo["overall"]["task_iqm"]["value"]
        > nlpo["overall"]["task_iqm"]["value"]
        > entry_of(written["entries"], "grpo")["overall"]["task_iqm"]["value"]
    )
    # a number that does not exist says why, in one line
    sft, bc = entry_of(written["entries"], "sft"), entry_of(written["entries"], "bc")
    assert sft["overall"]["task_iqm"] == {"reason": "only 7 of 8 tasks"} and bc["overall"]["naturalness_iqm"] == {
        "reason": "only 2 of 8 tasks"
    }
    assert sft["tasks"]["lm_gym/IMDB-v0"]["task_score"]["value"] > 0 and "lm_gym/Prompts-v0" not in sft["tasks"]
    assert bc["tasks"]["lm_gym/Wordle-v0"]["naturalness_score"] == {"reason": "no naturalness metric"}
    markdown = (out / "board.md").read_text()
    assert "## lm_gym/IMDB-v0" in markdown and "ppo (smoke)" in markdown and "<script>" not in markdown
    assert "| only 7 of 8 tasks |" in markdown and " (n=1) |" in markdown
    assert {path.name for path in (out / "plots").iterdir()} >= {"scores.png", "curves-0.png"}


def test_the_model_column_says_in_words_which_model_the_runs_trained(board):
    _, _, _, data = board
    assert entry_of(data["entries"], "bc")["model"] == "GPT-2 (1 layer, width 64), random init"
    # the RL runs start from the task's SFT checkpoint, except on Prompts (no demonstrations)
    assert (
        entry_of(data["entries"], "ppo")["model"]
        == "GPT-2 (1 layer, width 64), warm start from sft (Prompts-v0: random init)"
    )


def test_the_probability_of_improvement_equals_rliable_on_the_entries_with_an_overall_score(board):
    _, out, entries, data = board
    ids = {item["method"]: item["id"] for item in data["entries"]}
    assert data["improvement"]["entries"] == [
        ids[method] for method in ("grpo", "nlpo", "ppo", "rloo")
    ]  # on every task
    ppo, grpo, nlpo, rloo = (entry_of(entries, method) for method in ("ppo", "grpo", "nlpo", "rloo"))
    # each pair is resampled once, in the order of the entries: grpo's over ppo's
    matrix = data["improvement"]["matrix"]
    assert matrix[ids["grpo"]][ids["ppo"]] == {
        **scoring.probability_of_improvement(grpo, ppo, reps=100, seed=0),
        "n": 3,
    }
    assert matrix[ids["ppo"]][ids["grpo"]]["value"] > 0.8 and matrix[ids["grpo"]][ids["ppo"]]["value"] < 0.2
    assert matrix[ids["ppo"]][ids["grpo"]]["value"] == pytest.approx(1 - matrix[ids["grpo"]][ids["ppo"]]["value"])
    # one seed: rliable's estimate on the single runs, no interval
    direct = metrics.probability_of_improvement(scoring.score_matrix(nlpo), scoring.score_matrix(rloo))
    assert matrix[ids["nlpo"]][ids["rloo"]] == {"value": pytest.approx(direct), "ci": None, "n": 1}
    assert matrix[ids["rloo"]][ids["nlpo"]] == {"value": pytest.approx(1 - direct), "ci": None, "n": 1}
    assert matrix[ids["ppo"]][ids["nlpo"]]["n"] == 1
    assert "## Probability of improvement" in (out / "board.md").read_text()


def is_three_significant_digits(text: str) -> bool:
    """Whether ``text`` is a number written with 3 significant digits (``0.500``, ``12.5``, ``1.23e+3``)."""
    if not re.fullmatch(r"-?(\d+\.?\d*)(e[+-]\d+)?", text):
        return False
    mantissa, _, exponent = text.lstrip("-").partition("e")
    digits = mantissa.replace(".", "").lstrip("0")
    if not digits:
        return text == "0.00"  # zero, as toPrecision(3) writes it
    return len(digits) == 3 if not exponent else re.fullmatch(r"\d\.\d\d", mantissa) is not None and digits[0] != "0"


def test_board_md_writes_every_number_with_3_significant_digits(board):
    _, out, _, _ = board
    numbers = 0
    for line in (out / "board.md").read_text().splitlines():
        for cell in line.strip("|").split(" | ")[1:] if line.startswith("| ") else []:
            found = re.fullmatch(r"(\S+)( \[(\S+), (\S+)\]| \(n=\d+\))?", cell.strip())
            if (
                found and re.fullmatch(r"-?[\d.]+(e[+-]\d+)?", found[1]) and not found[1].isdigit()
            ):  # seed and run counts are integers
                numbers += 1
                assert all(is_three_significant_digits(part) for part in (found[1], found[3], found[4]) if part), cell
    assert numbers > 100


def test_runs_of_a_suite_with_several_boards_compile_into_one_folder_each(tmp_path, capsys):
    write_runs(tmp_path, "ppo", 0.6, board="offline-text")
    write_runs(tmp_path, "ilql", 0.5, board="offline-games")
    assert (
        leaderboard_cli(
            ["compile", str(tmp_path / "offline"), "--out", str(tmp_path / "board"), "--reps", "50", "--poi-reps", "10"]
        )
        == 0
    )
    for name, method in (("offline-text", "ppo"), ("offline-games", "ilql")):
        data = json.loads((tmp_path / "board" / name / "board.json").read_text())
        assert data["board"]["name"] == name and [item["method"] for item in data["entries"]] == [method]
        assert (tmp_path / "board" / name / "index.html").is_file()
    assert (
        leaderboard_cli(
            [
                "compile",
                str(tmp_path / "offline"),
                "--out",
                str(tmp_path / "one"),
                "--board",
                "offline-games",
                "--reps",
                "50",
            ]
        )
        == 0
    )
    assert (tmp_path / "one" / "index.html").is_file()


def test_a_runs_folder_notes_once_the_tasks_its_board_does_not_score(tmp_path, capsys):
    scored = boards()["smoke"].tasks[:2]
    unscored = ("lm_gym/TextGeneration-v0", "lm_gym/Mixture-v0")  # the smoke suite runs them, its board does not
    for algorithm in ("ppo", "grpo", "sft"):
        write_runs(tmp_path, algorithm, 0.5, seeds=(1,), tasks=scored)
        for env_id in unscored:
            final = {"num_episodes": 8, "mean_return": 0.0, "std_return": 0.0}
            write_result(
                tmp_path / "smoke" / env_id.split("/")[1] / algorithm / "seed1",
                make_result(
                    env_id=env_id,
                    algorithm=algorithm,
                    seed=1,
                    config={"seed": 1, "model_name": f"tiny-{algorithm}"},
                    initial_eval=final,
                    final_eval=final,
                    curves=[],
                    wall_time_s=1.0,
                    tokens_per_s=1.0,
                    episodes_per_s=1.0,
                    peak_memory_mb=1.0,
                    checkpoint=None,
                    device="cpu",
                ),
            )
    capsys.readouterr()
    entries = collect_entries([tmp_path / "smoke"])
    assert [sorted(entry["tasks"]) for entry in entries] == [sorted(scored)] * 3
    note = "note: board smoke does not score lm_gym/Mixture-v0, lm_gym/TextGeneration-v0: their runs are left out\n"
    assert capsys.readouterr().err == note  # once for the board, not once per algorithm


def test_a_board_scores_a_task_on_its_own_metrics(tmp_path):
    # ippo.py's DailyDialog runs hold no corpus metrics, which the multiagent board does not score
    write_runs(tmp_path, "ippo", 0.6, board="multiagent")
    result = json.loads((tmp_path / "multiagent/DailyDialog-v0/ippo/seed1/result.json").read_text())
    assert "corpus_distinct_2" not in result["final_eval"]
    data = compile_board(collect_entries([tmp_path / "multiagent"]), tmp_path / "board", reps=50, poi_reps=10)
    assert data["metrics"]["lm_gym/DailyDialog-v0"] == ["mean_intent_match", "mean_meteor"]
    assert len(data["entries"]) == 1
    score = scoring.aggregate({"x": collect_entries([tmp_path / "multiagent"])[0]}, kind="task", reps=50)["x"]
    assert score["mean"]["value"] == pytest.approx(0.6, abs=0.1)  # the fixture's runs are 0.6 of the way up
    assert score["tasks"] == ["lm_gym/VisDial-v0", "lm_gym/DailyDialog-v0"]


def test_compile_command_and_its_errors(board, tmp_path, capsys):
    root, *_ = board
    assert (
        leaderboard_cli(
            ["compile", str(root / "smoke"), "--out", str(tmp_path / "b"), "--reps", "100", "--poi-reps", "10"]
        )
        == 0
    )
    assert (tmp_path / "b" / "index.html").is_file() and "index.html" in capsys.readouterr().out
    assert leaderboard_cli(["compile", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.skipif(CHROMEDRIVER is None, reason="no chromedriver (Debian: apt-get install chromium chromium-driver)")
@pytest.mark.allow_hosts(["127.0.0.1", "::1"])  # Selenium talks to chromedriver on a loopback port; nothing else opens
def test_the_page_in_a_headless_browser(board, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, _, entries, _ = board
    # an entry whose name is a script payload: it must show as text and run nothing
    evil = json.loads(json.dumps(entry_of(entries, "grpo")))
    evil["name"], evil["description"] = PAYLOAD, "</script><script>window.__pwned=3</script>"
    page_dir = tmp_path / "board"
    compile_board([*entries, evil], page_dir, reps=200, poi_reps=20)

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        service=Service(executable_path=CHROMEDRIVER), options=options
    )  # no Selenium Manager download
    try:
        driver.get((page_dir / "index.html").as_uri())

        def names():
            return [
                row.find_element(By.CSS_SELECTOR, "td").text
                for row in driver.find_elements(By.CSS_SELECTOR, "#board tbody tr")
            ]

        assert sorted(names()) == sorted([f"{method} (smoke)" for method in QUALITY] + [PAYLOAD])
        check_every_cell_has_a_number_or_a_one_line_reason(driver)
        check_the_table_fits_or_scrolls_in_its_box_with_the_entry_column_in_view(driver)
        # sorting: the task-score column, descending then ascending
        header = next(th for th in driver.find_elements(By.CSS_SELECTOR, "#board th") if th.text == "task score (IQM)")
        header.click()
        assert names()[0] == "ppo (smoke)"
        next(
            th for th in driver.find_elements(By.CSS_SELECTOR, "#board th") if th.text.startswith("task score (IQM)")
        ).click()
        assert names()[-1] == "ppo (smoke)" and names()[0] != "ppo (smoke)"
        # the task filter: that task's metrics as columns, its plot only
        Select(driver.find_element(By.ID, "task-filter")).select_by_value("lm_gym/Wordle-v0")
        headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#board th")]
        assert "mean_solved" in headers and "mean_sentiment" not in headers
        assert len(driver.find_elements(By.CSS_SELECTOR, "#plots img")) == 1
        check_every_cell_has_a_number_or_a_one_line_reason(driver)
        Select(driver.find_element(By.ID, "task-filter")).select_by_value("lm_gym/CommonGen-v0")  # the most metrics
        check_every_cell_has_a_number_or_a_one_line_reason(driver)
        check_the_table_fits_or_scrolls_in_its_box_with_the_entry_column_in_view(driver)
        driver.set_window_size(900, 1000)  # too narrow for the table: it scrolls in its box
        check_the_table_fits_or_scrolls_in_its_box_with_the_entry_column_in_view(driver, must_scroll=True)
        driver.set_window_size(1400, 1000)
        Select(driver.find_element(By.ID, "task-filter")).select_by_value("")
        # every plot loads from the file system
        images = driver.find_elements(By.CSS_SELECTOR, "#plots img")
        assert len(images) == 1 + len(boards()["smoke"].tasks)
        assert all(
            driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image)
            for image in images
        )
        # the probability of improvement: a row and a column per complete entry (the payload's name as text)
        rows = driver.find_elements(By.CSS_SELECTOR, "#improvement tbody tr")
        on_every_task = ["grpo (smoke)", "nlpo (smoke)", "ppo (smoke)", "rloo (smoke)", PAYLOAD]
        assert sorted(row.find_element(By.CSS_SELECTOR, "th").text for row in rows) == sorted(on_every_task)
        assert all(len(row.find_elements(By.CSS_SELECTOR, "td")) == len(on_every_task) for row in rows)
        check_every_cell_has_a_number_or_a_one_line_reason(driver, "#improvement")
        # metadata and samples of each entry
        details = driver.find_element(By.ID, "entry-e0")
        driver.execute_script("arguments[0].open = true", details)
        assert "config hash" in details.text and "sample generations" in details.text
        # the payloads are text: nothing ran, no element was injected
        assert driver.execute_script("return typeof window.__pwned") == "undefined"
        assert (
            driver.execute_script(
                "return document.querySelectorAll('#board img, #board script, #improvement img, "
                "#improvement script, #entries script, #entries img').length"
            )
            == 0
        )
        assert PAYLOAD in names()
        driver.save_screenshot(str(page_dir / "screenshot.png"))
    finally:
        driver.quit()
    assert (page_dir / "screenshot.png").stat().st_size > 10_000


def check_every_cell_has_a_number_or_a_one_line_reason(driver, table="#board"):
    """Each number cell of ``table`` holds a value with 3 significant digits and either its interval
    or the n=1 marker (one seed: the smoke suite's runs), or a reason on one line."""
    cells = driver.execute_script(
        """return [...document.querySelectorAll(arguments[0] + ' td.number')].map((cell) => {
             const part = (name) => { const node = cell.querySelector('.' + name); return node && node.textContent; };
             const reason = cell.querySelector('.reason') || (cell.classList.contains('reason') ? cell : null);
             return {value: part('value'), ci: part('ci'), runs: part('runs'),
                     reason: reason && reason.textContent, reasonLines: reason && reason.getClientRects().length,
                     entry: cell.parentElement.dataset.entry};
           });""",
        table,
    )
    assert cells
    for cell in cells:
        if cell["reason"] is not None:
            assert cell["reason"].strip() and "\n" not in cell["reason"] and cell["reasonLines"] == 1, cell
            continue
        if cell["value"].isdigit():  # the seeds column
            continue
        assert is_three_significant_digits(cell["value"]), cell
        if cell["ci"] is not None:
            low, high = re.fullmatch(r"\[(\S+), (\S+)\]", cell["ci"]).groups()
            assert is_three_significant_digits(low) and is_three_significant_digits(high), cell
        else:
            assert cell["runs"] == "n=1", cell
    marked = [cell for cell in cells if cell["runs"]]
    assert marked and all(cell["ci"] is None for cell in marked)


def check_the_table_fits_or_scrolls_in_its_box_with_the_entry_column_in_view(driver, must_scroll=False):
    """At 1400 px (or less) the page itself never scrolls sideways: the board's table fits, or scrolls
    inside its own box with the entry column sticky (still at the box's left edge once scrolled)."""
    assert driver.execute_script("return window.innerWidth") <= 1400
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    box = driver.find_element("id", "board-box")
    if driver.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", box):
        assert not must_scroll
        return
    assert box.value_of_css_property("overflow-x") == "auto"
    driver.execute_script("arguments[0].scrollLeft = arguments[0].scrollWidth", box)
    left_edge = driver.execute_script("return arguments[0].getBoundingClientRect().left", box)
    for cell in driver.find_elements("css selector", "#board tr > :first-child"):
        assert cell.value_of_css_property("position") == "sticky"
        assert driver.execute_script("return arguments[0].getBoundingClientRect().left", cell) == pytest.approx(
            left_edge, abs=1
        )
    driver.execute_script("arguments[0].scrollLeft = 0", box)


def test_the_accepted_entries_validate_and_make_their_boards(tmp_path, capsys):
    entries_dir = Path(__file__).resolve().parents[2] / "leaderboard" / "entries"
    files = sorted(entries_dir.glob("*.json"))
    assert files, "leaderboard/entries/ holds the accepted entries"
    for path in files:
        entry = load_entry(path)  # validated as untrusted input, like any submission
        assert path.name == entry_file_name(entry) and path.read_text() == canonical_json(entry) + "\n", (
            f"{path.name} was not written by accept_entry"
        )
        # a -dirty commit names code no checkout holds: rebuild the entry from a clean one (docs/leaderboard.md)
        assert entry["git_commit"] and not entry["git_commit"].endswith("-dirty"), f"{path.name}: {entry['git_commit']}"
    assert (
        leaderboard_cli(
            ["compile", str(entries_dir), "--out", str(tmp_path / "board"), "--reps", "100", "--poi-reps", "10"]
        )
        == 0
    )
    board_names = sorted({load_entry(path)["board"] for path in files})
    folders = [tmp_path / "board"] if len(board_names) == 1 else [tmp_path / "board" / name for name in board_names]
    compiled = [json.loads((folder / "board.json").read_text()) for folder in folders]
    assert sum(len(data["entries"]) for data in compiled) == len(files)
    assert all(
        item["overall"]["task_iqm"]["ci"] is not None for data in compiled for item in data["entries"]
    )  # 3 or more seeds
