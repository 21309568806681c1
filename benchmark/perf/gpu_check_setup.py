"""The GPU check's environment: the wheels a GPU machine without network lacks, fetched beforehand on
a machine with PyPI, and, on the GPU machine, the venv they are installed into offline.

    python benchmark/perf/gpu_check.py --download-wheels .whl   # here: download_wheels
    python3 benchmark/perf/gpu_check.py --wheels .whl           # there: set_up, then the check in its venv

``download_wheels`` fetches, for the GPU machine's Python on manylinux x86_64, every distribution
lm-gym's requirements (and its ``baselines`` and ``benchmark`` extras) and the TRL contenders need
that the GPU image lacks (``gpu_image_packages.txt``), each at the version installed here, and
exports the word lists lm-gym derives from wordfreq. ``set_up`` makes a venv that sees the
machine's packages (torch, transformers, ...) after its own (``trl_envs.overlay_venv``), into
which pip installs lm-gym's requirements with ``--no-index --find-links``, taking a carried wheel
only where the machine has no fitting version; then the word lists and the TRL venvs
(``trl_envs.py --create --wheels``). Nothing here imports lm_gym, which the GPU machine can import
only after the setup.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import trl_envs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: The GPU machine's Python and platforms, for ``pip download``.
GPU_PYTHON = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: lm-gym's requirements the check leaves out, and why.
LEFT_OUT = {
    "wordfreq": "its 57 MB wheel: the word lists it gives travel as data (lm_gym.tasks.word_lists)",
    "pycocoevalcap": "its 104 MB of jars: CommonGen's cider and COCO scores are left out, with a warning",
    "wandb": "only for --track, which the check does not use",
}
#: lm-gym's extras the check installs beside its core requirements.
EXTRAS = ("baselines", "benchmark")
#: Older releases carried beside the tested ones, for pip to fall back on where the machine's
#: packages are too old for the newest: datasets 5.0.0 asks pyarrow>=21 where 5.2 asks >=24.
ALTERNATES = ("datasets==5.0.0",)
#: Carried even though the image has them, for pip to take where the image's version (unknown here) does
#: not fit a carried package's bounds: pandas<3 (the benchmark extra), fsspec<=2026.9.0 (datasets 5.2),
#: tqdm>=4.66.3 (datasets), typing-extensions>=4.13 (tyro).
ALWAYS_CARRIED = ("pandas", "fsspec", "tqdm", "typing-extensions")

# ---------------------------------------------------------------- the wheels (a machine with PyPI)


def check_requirements() -> list[str]:
    """lm-gym's requirements and those of ``EXTRAS``, less ``LEFT_OUT``, as pyproject.toml states them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in EXTRAS:
        lines += project["optional-dependencies"][extra]
    chosen = {}
    for line in lines:
        requirement = Requirement(line)
        if requirement.name not in LEFT_OUT and requirement.name not in chosen:
            chosen[requirement.name] = line
    return list(chosen.values())


def gpu_image_packages() -> set[str]:
    from packaging.utils import canonicalize_name

    lines = (HERE / "gpu_image_packages.txt").read_text().splitlines()
    return {canonicalize_name(line) for line in lines if line.strip() and not line.startswith("#")}


def carried_distributions(python_version: str = GPU_PYTHON) -> dict[str, str]:
    """Name -> version (this machine's, so the GPU gets what was tested here) of every distribution
    the check's requirements and the TRL contenders need that the GPU image does not hold
    (``gpu_image_packages.txt``), through the requirements of those carried, plus ``ALWAYS_CARRIED``;
    TRL itself not."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    environment = {"python_version": python_version, "python_full_version": f"{python_version}.0", "extra": ""}
    environment.update(sys_platform="linux", platform_system="Linux", platform_machine="x86_64", os_name="posix")
    image = gpu_image_packages()
    roots = [Requirement(line) for line in check_requirements()]
    roots += [Requirement(line) for line in importlib.metadata.requires("trl") or [] if "extra ==" not in line]
    found: dict[str, str] = {}
    queue = [r for r in roots if r.marker is None or r.marker.evaluate(environment)]
    seen: set[str] = set()
    while queue:
        requirement = queue.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(
                f"{name} is needed by the GPU check but not installed here: pip install -e '.[tests]' first"
            ) from None
        if name in image and name not in ALWAYS_CARRIED:
            continue  # the image's own version brings what it needs
        found[name] = dist.version
        for line in dist.requires or []:
            needed = Requirement(line)
            if needed.marker is None or needed.marker.evaluate(environment):
                queue.append(needed)
    return dict(sorted(found.items()))


def download_wheels(directory: Path, python_version: str = GPU_PYTHON) -> dict:
    """Fetch the wheels (``carried_distributions``, both TRL releases, ``ALTERNATES``) for
    ``python_version`` on manylinux x86_64 into ``directory``, building a pure-Python wheel where
    PyPI has only a source archive; export the word lists to ``directory/word-lists``."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = [f"{name}=={version}" for name, version in carried_distributions(python_version).items()]
    wanted += [f"trl=={version}" for version in trl_envs.VERSIONS] + list(ALTERNATES)
    platform = [arg for p in PLATFORMS for arg in ("--platform", p)]
    target = ["--python-version", python_version, "--implementation", "cp", *platform]
    built = []
    for spec in wanted:
        binary = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", *target]
            + ["-d", str(directory), spec],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if binary.returncode == 0:
            continue
        # a source archive only (rouge-score): build its wheel here, which must be pure Python
        source = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(directory), spec],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        name = spec.split("==")[0].replace("-", "_")
        if source.returncode != 0 or not list(directory.glob(f"{name}-*-py3-none-any.whl")):
            raise SystemExit(f"no wheel of {spec} for Python {python_version}:\n{binary.stderr[-2000:]}")
        built.append(spec)
    subprocess.run(
        [sys.executable, "-m", "lm_gym.tasks.word_lists", "export", str(directory / "word-lists")],
        check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    wheels = sorted(directory.glob("*.whl"))
    manifest = {
        "python_version": python_version,
        "platforms": list(PLATFORMS),
        "requirements": check_requirements(),
        "wheels": [w.name for w in wheels],
        "built_from_source": built,
        "megabytes": round(sum(w.stat().st_size for w in wheels) / 2**20, 1),
        "left_out": LEFT_OUT,
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# ---------------------------------------------------------------- the venv (the GPU machine, offline)


def set_up(wheels: Path, work_dir: Path, env: dict[str, str]) -> dict:
    """The check's venv with lm-gym's requirements from ``wheels``, the word lists, the TRL venvs."""
    record: dict = {"wheels": str(wheels), "steps": {}}
    manifest = json.loads((wheels / "manifest.json").read_text())
    venv = work_dir / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        trl_envs.overlay_venv(venv)
    started = time.time()
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-index"]
        + ["--find-links", str(wheels.resolve()), *manifest["requirements"]],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    installed = [line for line in pip.stdout.splitlines() if line.startswith("Successfully installed")]
    record["steps"]["pip"] = {"seconds": round(time.time() - started, 1), "installed": installed}
    if pip.returncode != 0:
        record["steps"]["pip"]["error"] = (pip.stdout + pip.stderr)[-4000:]
        return {**record, "python": None}
    lists = subprocess.run(
        [str(python), "-m", "lm_gym.tasks.word_lists", "install", str(wheels / "word-lists")],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    record["steps"]["word_lists"] = lists.stdout.split() if lists.returncode == 0 else {"error": lists.stderr[-2000:]}
    record["steps"]["trl_envs"] = {}
    for version in trl_envs.VERSIONS:
        started = time.time()
        made = subprocess.run(
            [str(python), str(HERE / "trl_envs.py"), "--create", "--wheels", str(wheels), "--versions", version],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        step = {"seconds": round(time.time() - started, 1)}
        if made.returncode != 0:
            step["error"] = made.stderr[-3000:]
        record["steps"]["trl_envs"][version] = step
    return {**record, "python": str(python)}
