"""One virtual environment per TRL version for the speed benchmark's TRL contenders.

PPOTrainer exists only up to ``trl==1.12.0`` (as ``trl.experimental.ppo``); GRPO and RLOO are
benchmarked with ``trl==1.16.0``. Two TRL versions cannot share an environment, so each gets
its own venv under ``$LM_GYM_CACHE/trl-envs/trl-<version>``.

Each venv *sees* the packages of the interpreter that creates it (torch, transformers,
datasets, lm_gym, wordfreq, ...) without copying them: a ``.pth`` file in the venv's
site-packages calls ``site.addsitedir`` on this interpreter's ``purelib``/``platlib``, which
also runs that directory's own ``.pth`` files (so lm-gym's editable install works). The venv's
own site-packages stays first on ``sys.path``, so only what pip adds (trl, accelerate and
their missing dependencies) lives in the venv. pip runs with a constraints file pinning every
distribution this interpreter already has to its installed version, so it can add packages
but never reinstall or upgrade torch, transformers or anything else already there; if TRL
needed a different version it fails with a resolution error instead. Left out of the pins:
TRL itself, should this interpreter have another release of it (lm-gym's ``trl`` extra), and
what only TRL needs (:func:`exclusive_requirements`): the venv gets its own versions of those.

    python benchmark/perf/trl_envs.py --create                 # both versions
    python benchmark/perf/trl_envs.py --create --versions 1.16.0
    python benchmark/perf/trl_envs.py --create --wheels DIR    # offline, from a folder of wheels
    python benchmark/perf/trl_envs.py                          # where they are (no creation)
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

VERSIONS = ("1.12.0", "1.16.0")
#: What the TRL contenders import from the creating interpreter; none of these may land in a venv.
SHARED = ("torch", "transformers", "datasets", "tokenizers", "huggingface_hub", "numpy", "lm-gym")
PTH_NAME = "_lm_gym_base_site.pth"
MARKER = "lm_gym_trl_env.json"


class TRLEnvError(RuntimeError):
    """A TRL venv could not be created or verified."""


def _cache_root() -> Path:
    try:
        from lm_gym.core.cache import cache_root
    except ImportError:  # the same rule, should lm_gym not be importable here
        return Path(os.environ.get("LM_GYM_CACHE") or Path.home() / ".cache" / "lm_gym")
    return cache_root()


def env_dir(version: str) -> Path:
    return _cache_root() / "trl-envs" / f"trl-{version}"


def _base_site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    dirs = []
    for key in ("purelib", "platlib"):
        if paths[key] not in dirs:
            dirs.append(paths[key])
    return dirs


def _identity() -> dict:
    """What a venv depends on: this interpreter and its site directories."""
    return {
        "base_executable": str(Path(sys.executable).resolve()),
        "base_site_dirs": _base_site_dirs(),
        "python": ".".join(map(str, sys.version_info[:3])),
    }


def _python_of(directory: Path) -> Path:
    return directory / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def trl_python(version: str, create: bool = False, wheels: str | Path | None = None) -> Path | None:
    """The interpreter of the TRL ``version`` venv; ``None`` if it is absent (or was made by
    another base interpreter) and ``create`` is false. With ``create`` it is built if needed,
    from PyPI, or offline from the folder of wheels ``wheels`` (pip's ``--no-index --find-links``).
    An interpreter that has this TRL release itself is its own: no venv is made."""
    if own_trl_version() == version:
        return Path(sys.executable)
    directory = env_dir(version)
    if _is_ready(directory, version):
        return _python_of(directory)
    if not create:
        return None
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".trl-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent creator waits, then finds it ready
        if not _is_ready(directory, version):
            _create(directory, version, wheels)
    return _python_of(directory)


def own_trl_version() -> str | None:
    """The TRL release this interpreter has, if any."""
    try:
        return importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return None


def _is_ready(directory: Path, version: str) -> bool:
    try:
        marker = json.loads((directory / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return (
        marker.get("trl_version") == version
        and marker.get("identity") == _identity()
        and _python_of(directory).exists()
    )


def _run(cmd: list, what: str, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])
        raise TRLEnvError(f"{what} failed (exit {result.returncode}): {' '.join(map(str, cmd))}\n{tail}")
    return result


def _installed() -> dict[str, importlib.metadata.Distribution]:
    """This interpreter's distributions by canonical name (the first on ``sys.path`` wins, as for imports)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), dist)
    return found


def _requirements(dist: importlib.metadata.Distribution, installed: Mapping[str, object]) -> set[str]:
    """The installed distributions ``dist`` needs (its extras left out: nobody asked for them)."""
    needed = set()
    for line in dist.requires or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in installed:
            needed.add(name)
    return needed


def exclusive_requirements(package: str) -> set[str]:
    """``package`` and every installed distribution that only it needs, directly or through
    others of this set (canonical names; empty when ``package`` is not installed).

    A dependency that anything else installed needs (transformers for lm-gym, say) is not in
    it; one that only the package and its own exclusive dependencies need is."""
    installed = _installed()
    root = canonicalize_name(package)
    if root not in installed:
        return set()
    needs = {name: _requirements(dist, installed) for name, dist in installed.items()}
    reachable, frontier = {root}, [root]
    while frontier:
        for name in needs[frontier.pop()] - reachable:
            reachable.add(name)
            frontier.append(name)
    exclusive, grown = {root}, True
    while grown:
        grown = False
        for name in sorted(reachable - exclusive):
            dependents = {other for other, wanted in needs.items() if name in wanted and other != name}
            if dependents <= exclusive:
                exclusive.add(name)
                grown = True
    return exclusive


def constraints(leave_out: str = "trl") -> str:
    """``name==version`` for every distribution this interpreter has (pip must keep them),
    except pip and :func:`exclusive_requirements` of ``leave_out`` (the package being installed)."""
    skip = exclusive_requirements(leave_out) | {"pip"}
    lines = [f"{dist.metadata['Name']}=={dist.version}" for name, dist in _installed().items() if name not in skip]
    return "\n".join(sorted(lines, key=str.lower)) + "\n"


def _site_packages(python: Path) -> Path:
    out = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], "querying the venv")
    return Path(out.stdout.strip())


def overlay_venv(directory: str | Path) -> Path:
    """A new venv at ``directory`` that sees this interpreter's packages after its own (a ``.pth``
    file calls ``site.addsitedir`` on this interpreter's site directories); returns its python.

    It has no pip of its own (``--without-pip``: a Python without ``ensurepip`` can make it too);
    ``python -m pip`` in it runs this interpreter's pip, installing into the venv."""
    _run([sys.executable, "-m", "venv", "--without-pip", directory], "python -m venv")
    python = _python_of(Path(directory))
    lines = ["# lm-gym's benchmark: see the creating interpreter's packages (torch, transformers, lm_gym ...)"]
    lines += [f"import site; site.addsitedir({d!r})" for d in _base_site_dirs()]
    (_site_packages(python) / PTH_NAME).write_text("\n".join(lines) + "\n")
    return python


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _create(directory: Path, version: str, wheels: str | Path | None) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    print(f"[trl_envs] creating {directory} (trl=={version})", file=sys.stderr)
    python = overlay_venv(directory)
    site_packages = _site_packages(python)

    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="trl-constraints-", delete=False) as f:
        f.write(constraints("trl"))
        constraints_file = f.name
    before = {p.name for p in site_packages.iterdir()}
    try:
        pip = _run(
            [
                python,
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                f"trl=={version}",
                "accelerate",
                "-c",
                constraints_file,
                *(["--no-index", "--find-links", str(Path(wheels).resolve())] if wheels else []),
            ],
            f"pip install trl=={version}",
            env={**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"},
        )
    except TRLEnvError as error:
        shutil.rmtree(directory, ignore_errors=True)
        text = str(error)
        if "ResolutionImpossible" in text or "conflict" in text.lower():
            hint = (
                f"trl=={version} needs a version of a package that differs from this interpreter's; "
                "the venv may add packages but not replace the interpreter's (torch, transformers, ...), "
                "so install a matching version there."
            )
        elif wheels:
            hint = f"the folder {wheels} lacks a wheel pip needs (see its error above)"
        else:
            hint = (
                "pip needs PyPI (or a configured index / --find-links with the trl and accelerate wheels): "
                "check the network."
            )
        raise TRLEnvError(f"{text}\n{hint}") from None
    finally:
        os.unlink(constraints_file)
    added = sorted(p.name for p in site_packages.iterdir() if p.name not in before)
    installed = [line for line in pip.stdout.splitlines() if line.startswith("Successfully installed")]

    # Verify: TRL imports, and the shared packages come from the base interpreter, not the venv.
    check = (
        "import json, importlib.metadata as m, os; import trl, accelerate, torch, transformers, lm_gym; "
        "print(json.dumps({'trl': trl.__version__, 'accelerate': accelerate.__version__, 'torch': torch.__version__, "
        "'transformers': transformers.__version__, "
        "'files': {n: os.path.realpath(str(m.distribution(n).locate_file('')))"
        f" for n in {[n for n in SHARED if n != 'lm-gym']!r}}} | "
        # lm-gym may come from PYTHONPATH alone (the GPU check's checkout), without an install's metadata
        "{'lm-gym': os.path.dirname(os.path.realpath(lm_gym.__file__))}}))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    info = json.loads(
        _run([python, "-c", check], "importing trl in the new venv", env=env).stdout.strip().splitlines()[-1]
    )
    if info["trl"] != version:
        raise TRLEnvError(f"the venv imports trl {info['trl']}, expected {version}")
    inside = {name: where for name, where in info.pop("files").items() if where.startswith(os.path.realpath(directory))}
    if inside:
        raise TRLEnvError(
            f"pip installed shared packages into {directory}: {inside}; the benchmark needs the base interpreter's"
        )
    doctor = subprocess.run([str(python), "-m", "pip", "check"], check=False, capture_output=True, text=True)
    marker = {
        "trl_version": version,
        "identity": _identity(),
        "versions": info,
        "added_to_site_packages": added,
        "pip": installed,
        "venv_site_packages_bytes": _dir_size(site_packages),
        "pip_check": (doctor.stdout + doctor.stderr).strip().splitlines(),
    }
    (directory / MARKER).write_text(json.dumps(marker, indent=1) + "\n")


def describe(version: str) -> dict:
    if own_trl_version() == version:
        return {"trl_version": version, "python": sys.executable, "directory": None, "note": "this interpreter's own"}
    directory = env_dir(version)
    if not _is_ready(directory, version):
        return {"trl_version": version, "python": None, "directory": str(directory)}
    marker = json.loads((directory / MARKER).read_text())
    return {
        "trl_version": version,
        "python": str(_python_of(directory)),
        "directory": str(directory),
        "versions": marker["versions"],
        "venv_site_packages_mb": round(marker["venv_site_packages_bytes"] / 2**20, 1),
        "pip": marker["pip"],
        "pip_check": marker["pip_check"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--create", action="store_true", help="create the venvs that are missing")
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS), metavar="V")
    parser.add_argument("--wheels", metavar="DIR", help="create offline from this folder of wheels (no PyPI)")
    args = parser.parse_args(argv)
    status = 0
    for version in args.versions:
        try:
            trl_python(version, create=args.create, wheels=args.wheels)
        except TRLEnvError as error:
            print(f"[trl_envs] trl=={version}: {error}", file=sys.stderr)
            status = 1
        print(json.dumps(describe(version)))
    return status


if __name__ == "__main__":
    sys.exit(main())
