"""The speed benchmark's TRL venvs: made from an interpreter that has TRL itself (lm-gym's ``trl`` extra).

The venv creation runs for real (``python -m venv``, the ``.pth`` onto this interpreter's packages,
the import check in the new venv); only pip's install is replaced, at the subprocess boundary, by
a stand-in that checks what pip was asked and writes the ``trl`` release it was asked for."""

import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import trl_envs


def fake_distribution(name: str, *requires: str) -> SimpleNamespace:
    return SimpleNamespace(metadata={"Name": name}, version="1.0", requires=list(requires))


def test_exclusive_requirements_are_what_only_the_package_needs(monkeypatch):
    installed = {
        "trl": fake_distribution("trl", "accelerate>=1", "datasets", "rich; extra == 'dev'"),
        "accelerate": fake_distribution("accelerate", "psutil", "torch", "safetensors"),
        "lm-gym": fake_distribution("lm-gym", "datasets", "torch", "trl; extra == 'trl'"),
        "wandb": fake_distribution("wandb", "psutil"),
        "safetensors": fake_distribution("safetensors"),
        "psutil": fake_distribution("psutil"),
        "datasets": fake_distribution("datasets"),
        "torch": fake_distribution("torch"),
        "rich": fake_distribution("rich"),
    }
    monkeypatch.setattr(trl_envs, "_installed", lambda: installed)
    # safetensors: only accelerate needs it, and only trl needs accelerate; psutil: wandb needs it too
    assert trl_envs.exclusive_requirements("trl") == {"trl", "accelerate", "safetensors"}
    assert trl_envs.exclusive_requirements("absent") == set()
    pins = trl_envs.constraints("trl").splitlines()
    assert pins == ["datasets==1.0", "lm-gym==1.0", "psutil==1.0", "rich==1.0", "torch==1.0", "wandb==1.0"]


@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="needs lm-gym's trl extra")
def test_a_venv_for_another_trl_release_is_made_from_an_interpreter_with_trl(tmp_path, monkeypatch):
    installed_trl = importlib.metadata.version("trl")
    wanted = "1.12.0" if installed_trl != "1.12.0" else "1.16.0"
    monkeypatch.setenv("LM_GYM_CACHE", str(tmp_path / "cache"))
    real_run, asked = trl_envs._run, {}

    def pip_boundary(cmd, what, **kwargs):
        cmd = [str(c) for c in cmd]
        if cmd[1:4] != ["-m", "pip", "install"]:
            return real_run(cmd, what, **kwargs)
        asked["command"] = cmd
        asked["constraints"] = Path(cmd[cmd.index("-c") + 1]).read_text().splitlines()
        site_packages = Path(real_run([cmd[0], "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "")
                             .stdout.strip())  # fmt: skip
        (site_packages / "trl").mkdir()
        (site_packages / "trl" / "__init__.py").write_text(f"__version__ = {wanted!r}\n")
        info = site_packages / f"trl-{wanted}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: trl\nVersion: {wanted}\n")
        return SimpleNamespace(stdout=f"Successfully installed trl-{wanted}\n", stderr="", returncode=0)

    monkeypatch.setattr(trl_envs, "_run", pip_boundary)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    python = trl_envs.trl_python(wanted, create=True, wheels=wheels)

    command, pins = asked["command"], asked["constraints"]
    assert f"trl=={wanted}" in command and "--no-index" in command
    assert command[command.index("--find-links") + 1] == str(wheels.resolve())
    pinned = {line.split("==")[0].lower() for line in pins}
    # the package being installed and what only it needs are free; what others need too is pinned (accelerate:
    # free while only trl needs it, pinned once peft, the baselines' LoRA, needs it as well)
    only_trl = trl_envs.exclusive_requirements("trl")
    assert "trl" in only_trl and not pinned & only_trl
    assert ("accelerate" in pinned) != ("accelerate" in only_trl)
    if importlib.util.find_spec("peft") is not None:  # peft needs accelerate too: it stays as it is
        assert "accelerate" in pinned
    for shared in ("torch", "transformers", "datasets", "numpy", "lm-gym"):
        assert f"{shared}=={importlib.metadata.version(shared)}".lower() in {line.lower() for line in pins}
    # the new venv imports its own trl, and this interpreter's torch, transformers and lm_gym
    versions = trl_envs.describe(wanted)["versions"]
    assert python is not None and versions["trl"] == wanted != installed_trl
    assert versions["torch"] == importlib.metadata.version("torch")
    assert trl_envs.trl_python(wanted) == python  # ready: found without creating again
    assert trl_envs.trl_python(installed_trl) == Path(sys.executable)  # its own release needs no venv
