"""Same seed, same episodes in a fresh process with a fresh cache (in one process: ``check_determinism``
of ``lm_gym.testing``, run by ``test_contract.py``)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from contract_episodes import all_episodes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.mark.slow
def test_same_seed_same_episodes_in_a_fresh_process_with_a_fresh_cache(tmp_path):
    environment = {
        **os.environ,
        "LM_GYM_CACHE": str(tmp_path / "cache"),
        # this checkout's lm_gym, and tests/user_tasks.py
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    }
    completed = subprocess.run(
        [sys.executable, str(HERE / "contract_episodes.py"), "5"],
        env=environment, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    fresh = json.loads(completed.stdout)
    here = json.loads(json.dumps(all_episodes(5)))
    assert sorted(fresh) == sorted(here)
    for case in here:
        assert fresh[case] == here[case], f"{case}: a fresh process with a fresh cache played differently"
