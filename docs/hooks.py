"""MkDocs hooks: the pages made from the code, so they cannot drift from it.

* ``environments/<task>.md`` for every registered ``lm_gym/*`` env: its class docstring, the
  env's manual (Description, spaces, rewards, the Arguments table, ...).
* ``baselines/<script>.md`` for every baseline: its module docstring and a table of its flags
  read off its ``Args`` dataclass (name, type, default and the field's docstring, which is also
  its ``--help`` line).
* The speed benchmark's plots, which live beside their results in ``benchmark/perf/results``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ("sft", "ppo", "nlpo", "grpo", "ilql", "ippo")
PLOTS = ROOT / "benchmark" / "perf" / "results"


def env_slug(env_id: str) -> str:
    """``lm_gym/CNNDailyMail-v0`` -> ``cnndailymail-v0``."""
    return env_id.split("/", 1)[1].lower()


def registered_envs() -> dict[str, type]:
    """Every registered ``lm_gym/*`` id and its task class."""
    import gymnasium

    import lm_gym  # noqa: F401  (registers the envs)
    from lm_gym.core.registration import task_class

    return {env_id: task_class(env_id) for env_id in sorted(gymnasium.registry) if env_id.startswith("lm_gym/")}


def shift_headings(text: str, levels: int) -> str:
    """Every Markdown heading of ``text`` ``levels`` deeper (code blocks left alone)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out)


def docstring_markdown(text: str) -> str:
    """A docstring as Markdown: Sphinx roles (``:class:`X```) as code, ``Examples::`` as ``Examples:``."""
    text = re.sub(r":(?:class|func|meth|data|mod|attr|exc):`~?([^`]+)`", r"`\1`", text)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


def env_page(env_id: str, cls: type) -> str:
    doc = docstring_markdown(inspect.getdoc(cls) or "")
    summary, _, manual = doc.partition("\n")
    return (
        f"# `{env_id}`\n\n{summary}\n\n"
        f'`gymnasium.make("{env_id}")` makes `{cls.__module__}.{cls.__qualname__}`; '
        f"its offline arguments: `{dict(cls.offline_kwargs)}`.\n\n"
        f"{manual.strip()}\n"
    )


def field_docstrings(cls: type) -> dict[str, str]:
    """A dataclass's field docstrings (the string under each field), its bases' first."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass is object:
            continue
        body = ast.parse(inspect.cleandoc("\n" + inspect.getsource(klass))).body[0].body
        for node, after in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def flag_default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    return f"`{value!r}`".replace("|", "\\|")


def baseline_script(script: str):
    """``baselines/<script>.py`` as the module ``import <script>`` gives beside it: a script that imports another
    (``nlpo.py`` and ``ippo.py`` import ``ppo``) finds it among the ones loaded before it (``BASELINES``' order)."""
    if script not in sys.modules:
        spec = importlib.util.spec_from_file_location(script, ROOT / "baselines" / f"{script}.py")
        sys.modules[script] = importlib.util.module_from_spec(spec)  # dataclasses look their module up there
        spec.loader.exec_module(sys.modules[script])
    return sys.modules[script]


def baseline_page(script: str) -> str:
    module = baseline_script(script)
    docs = field_docstrings(module.Args)
    rows = ["| flag | type | default | meaning |", "|---|---|---|---|"]
    hints = {field.name: field.type for field in dataclasses.fields(module.Args)}
    for field in dataclasses.fields(module.Args):
        flag = "--" + field.name.replace("_", "-")
        if hints[field.name] in (bool, "bool"):
            flag += f" / --no-{field.name.replace('_', '-')}"
        kind = hints[field.name] if isinstance(hints[field.name], str) else getattr(hints[field.name], "__name__", "")
        meaning = docs.get(field.name, "").replace("|", "\\|")
        rows.append(f"| `{flag}` | `{kind}` | {flag_default(field)} | {meaning} |")
    doc = docstring_markdown(inspect.getdoc(module) or "")
    title, _, body = doc.partition("\n")
    return (
        f"# `baselines/{script}.py`\n\n{title}\n\n{shift_headings(body.strip(), 1)}\n\n"
        f"## Flags\n\n`python baselines/{script}.py --help` prints the same.\n\n" + "\n".join(rows) + "\n"
    )


def on_files(files: Files, config) -> Files:
    for env_id, cls in registered_envs().items():
        files.append(File.generated(config, f"environments/{env_slug(env_id)}.md", content=env_page(env_id, cls)))
    for script in BASELINES:
        files.append(File.generated(config, f"baselines/{script}.md", content=baseline_page(script)))
    for plot in sorted(PLOTS.glob("*.png")):
        files.append(File.generated(config, f"assets/perf/{plot.name}", content=plot.read_bytes()))
    return files
