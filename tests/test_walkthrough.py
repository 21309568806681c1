"""The README's "Your own task, end to end", run as written: the task file, then each command in a
fresh folder (the commands' checkout paths point at this checkout; nothing else changes)."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def walkthrough_block(name: str, language: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = f"<!-- walkthrough: {name} -->"
    assert text.count(marker) == 1, f"README.md must hold {marker!r} once"
    block = re.search(re.escape(marker) + rf"\n```{language}\n(.*?)```", text, re.DOTALL)
    assert block, f"a ```{language} block must follow {marker!r} in README.md"
    return block.group(1)


@pytest.mark.slow
def test_the_readme_walkthrough_runs_as_written(tmp_path):
    (tmp_path / "my_tasks.py").write_text(walkthrough_block("my_tasks.py", "python"))
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),  # python -m benchmark
        "LM_GYM_CACHE": str(tmp_path / "cache"),
    }
    commands = [line for line in walkthrough_block("commands", "bash").splitlines() if line.strip()]
    assert len(commands) == 4
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "python"
        argv = [
            sys.executable,
            *(str(ROOT / arg) if arg.startswith(("baselines/", "benchmark/")) else arg for arg in argv[1:]),
        ]
        completed = subprocess.run(argv, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=900)
        assert completed.returncode == 0, f"{command}\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    for algorithm in ("ppo", "grpo"):
        result = json.loads((tmp_path / "runs/mine" / algorithm / "result.json").read_text())
        assert result["env_id"] == "my/SayTheWord-v0" and "mean_said" in result["final_eval"]
    report = (tmp_path / "runs/own/report.md").read_text()
    assert "## my/SayTheWord-v0" in report and "## my/CountUp-v0" in report
    board = json.loads((tmp_path / "runs/own/board/board.json").read_text())
    assert (tmp_path / "runs/own/board/index.html").is_file()
    assert board["tasks"] == ["my/SayTheWord-v0", "my/CountUp-v0"] and len(board["entries"]) == 2  # ppo, grpo
