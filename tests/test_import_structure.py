"""Import arrows point one way and run in no circle (docs/design.md): read off the source with ``ast``.

Every import statement counts, also those inside functions (a function-local import that
dodges a cycle is still a cycle) and under ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lm_gym"
TASK_PACKAGES = sorted(path.parent for path in (PACKAGE / "tasks").glob("*/__init__.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports (``from m import n``: ``m.n`` when that is a
    module, else ``m``).

    A package's ``__init__`` that Python runs before a submodule is not counted: ``from p.m import
    n`` is an arrow to ``p.m``, and a package's ``__init__`` importing its own modules is no cycle.
    """
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # a submodule, or a name defined in the module ``base``
                names.add(f"{base}.{alias.name}" if module_exists(f"{base}.{alias.name}") else base)
    return names


def module_exists(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports."""
    modules = {module_name(path): path for path in package.rglob("*.py")}
    return {
        name: {other for other in imported_modules(path) if other in modules and other != name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as the list of its modules (the first repeated at the end), or ``None``."""
    state: dict[str, str] = {}  # "active" while on the depth-first path, "done" after

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "active"
        for neighbour in sorted(graph[node]):
            if state.get(neighbour) == "active":
                return [*path[path.index(neighbour) :], neighbour]
            if neighbour not in state and (cycle := visit(neighbour, [*path, neighbour])):
                return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def test_the_checker_finds_cycles_through_function_local_and_relative_imports(tmp_path, monkeypatch):
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    package = tmp_path / "lm_gym" / "tasks" / "game"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from lm_gym.tasks.game.env import GameEnv\n")
    (package / "env.py").write_text(
        "import lm_gym.metrics\n\ndef demonstrations():\n    from .policies import Expert\n"
    )
    (package / "policies.py").write_text("from lm_gym.tasks.game import env\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert imported_modules(package / "env.py") == {"lm_gym.metrics", "lm_gym.tasks.game.policies"}
    cycle = find_cycle(import_graph(package))
    assert cycle == ["lm_gym.tasks.game.env", "lm_gym.tasks.game.policies", "lm_gym.tasks.game.env"]


@pytest.mark.parametrize("package", TASK_PACKAGES, ids=lambda path: path.name)
def test_task_package_imports_have_no_cycle(package):
    graph = import_graph(package)
    assert len(graph) > 1
    cycle = find_cycle(graph)
    assert cycle is None, f"{package.name}: import cycle {' -> '.join(cycle)}"


def test_core_imports_nothing_above_it():
    """``lm_gym.core`` is the bottom layer: no import of lm_gym.metrics, lm_gym.tasks or any other part of lm_gym."""
    above = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (PACKAGE / "core").rglob("*.py")
        for name in imported_modules(path)
        if (name == "lm_gym" or name.startswith("lm_gym.")) and not name.startswith("lm_gym.core")
    }
    assert not above, sorted(above)


def test_data_imports_only_core():
    """``lm_gym.data`` (the tasks' data sources and word lists) stands right above ``lm_gym.core``: it
    imports the contract's errors and checks, and nothing of the tasks, rewards or metrics above it."""
    above = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (PACKAGE / "data").rglob("*.py")
        for name in imported_modules(path)
        if (name == "lm_gym" or name.startswith("lm_gym.")) and not name.startswith(("lm_gym.core", "lm_gym.data"))
    }
    assert not above, sorted(above)


@pytest.mark.parametrize("package", ["lm_gym", "benchmark", "leaderboard"])
def test_a_package_imports_have_no_cycle(package):
    """No circle between the files of lm_gym, of the harness or of the leaderboard: a command's module
    never re-enters its CLI (``__main__``), function-local imports included."""
    graph = import_graph(ROOT / package)
    assert len(graph) > 5
    cycle = find_cycle(graph)
    assert cycle is None, f"{package}: import cycle {' -> '.join(cycle)}"


def test_lm_gym_imports_none_of_the_packages_that_use_it():
    """baselines/, benchmark/ and leaderboard/ use lm_gym; lm_gym never imports them."""
    users = ("benchmark", "leaderboard", "lm_toolkit", "ppo", "grpo", "nlpo", "ilql", "sft", "ippo")
    upward = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in PACKAGE.rglob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] in users
    }
    assert not upward, sorted(upward)


SYS_PATH_MUTATORS = {"insert", "append", "extend", "remove", "pop", "clear", "reverse", "sort", "__setitem__"}
#: the one edit the project makes on purpose: ``gymnasium.make("my_module:my/Task-v0")`` looks for
#: ``my_module`` in the current directory too (docs/your-own-task.md), a user's module, not the project's
SYS_PATH_EDITS_ALLOWED = {"lm_gym/core/registration.py"}


def sys_path_edits(source: str) -> list[int]:
    """The lines of ``source`` that assign to or mutate ``sys.path``: ``sys.path = ...``, ``sys.path[i] = ...``,
    ``del sys.path[i]``, ``sys.path += ...``, ``sys.path.insert(...)`` and the other list mutators, also
    through ``import sys as s`` or ``from sys import path``. (pytest's ``monkeypatch``, undone after
    each test, is not an edit.)"""
    tree = ast.parse(source)
    sys_names, path_names = {"sys"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            sys_names.update(alias.asname or alias.name for alias in node.names if alias.name == "sys")
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and not node.level:
            path_names.update(alias.asname or alias.name for alias in node.names if alias.name == "path")

    def is_sys_path(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            return is_sys_path(node.value)
        if isinstance(node, ast.Name):
            return node.id in path_names
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id in sys_names
        )

    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            targets = [node.func.value] if node.func.attr in SYS_PATH_MUTATORS else []
        else:
            continue
        if any(is_sys_path(target) for target in targets):
            lines.add(node.lineno)
    return sorted(lines)


def test_the_sys_path_checker_finds_every_kind_of_edit():
    edits = """import sys
import sys as system
from sys import path as search_path
sys.path.insert(0, "a")
system.path.append("b")
search_path.extend(["c"])
sys.path = ["d"]
sys.path[0] = "e"
del sys.path[0]
sys.path += ["f"]
"""
    assert sys_path_edits(edits) == list(range(4, 11))
    reads = 'import os, sys\nfound = "x" in sys.path\nos.path.join("a")\npaths = list(sys.path)\npaths.append("y")\n'
    assert sys_path_edits(reads) == []


def test_no_file_edits_sys_path():
    """No sys.path edits anywhere: a script finds its neighbours as Python runs it (its
    own folder first), ``lm_toolkit`` as an installed package, and the tests through pytest's pythonpath
    (pyproject.toml); so a file never depends on who edited the path before it."""
    edits = {
        f"{path.relative_to(ROOT).as_posix()}:{line}"
        for folder in ("lm_gym", "baselines", "benchmark", "leaderboard", "examples", "tests", "docs")
        for path in (ROOT / folder).rglob("*.py")
        if path.relative_to(ROOT).as_posix() not in SYS_PATH_EDITS_ALLOWED
        for line in sys_path_edits(path.read_text(encoding="utf-8"))
    }
    assert not edits, sorted(edits)
