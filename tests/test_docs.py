"""The documentation site: it builds with every warning an error, every internal link and anchor
resolves, every page opens in headless Chromium with no console error, the environment pages
cover every registered task, the baseline pages every flag, and the code on the pages runs."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import lm_gym

ROOT = Path(__file__).resolve().parents[1]
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason='needs the docs extra: pip install -e ".[docs]"'
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-4000:]
    return out


class Page(HTMLParser):
    """The ids and the link targets of one HTML page."""

    def __init__(self, path: Path):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        for name in ("href", "src"):
            if tag in ("a", "img", "link", "script") and attributes.get(name):
                self.links.append(attributes[name])


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def pages(site: Path) -> list[Path]:
    return sorted(path for path in site.rglob("*.html") if path.name != "404.html")


def test_every_internal_link_and_anchor_resolves(site):
    parsed = {path: Page(path) for path in pages(site)}
    assert len(parsed) >= 30
    broken = []
    for path, page in parsed.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target.exists():
                broken.append(f"{path.relative_to(site)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else Page(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    assert not broken, "\n".join(broken)


def test_the_environment_pages_cover_every_registered_task(site):
    ids = sorted(env_id for env_id in lm_gym.registered_tasks() if env_id.startswith("lm_gym/"))
    assert len(ids) == 10
    index = (site / "environments" / "index.html").read_text(encoding="utf-8")
    for env_id in ids:
        page = site / "environments" / f"{env_id.split('/')[1].lower()}.html"
        text = page.read_text(encoding="utf-8")
        assert env_id in text and "Arguments" in text, env_id  # the docstring's manual, with its arguments table
        assert f'href="{page.name}"' in index, env_id  # in the site's navigation


@pytest.mark.parametrize("script", ["sft", "ppo", "nlpo", "grpo", "ilql", "ippo"])
def test_each_baseline_page_lists_every_flag(site, script):
    module = importlib.import_module(script)  # baselines/ is on sys.path (pyproject.toml's pytest pythonpath)
    text = (site / "baselines" / f"{script}.html").read_text(encoding="utf-8")
    for field in dataclasses.fields(module.Args):
        assert f"--{field.name.replace('_', '-')}" in text, (script, field.name)


@pytest.mark.skipif(CHROMEDRIVER is None, reason="no chromedriver (Debian: apt-get install chromium chromium-driver)")
@pytest.mark.allow_hosts(["127.0.0.1", "::1"])  # Selenium talks to chromedriver on a loopback port; nothing else opens
def test_every_page_opens_in_a_headless_browser_without_a_console_error(site):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # served on loopback, as `mkdocs serve` serves it: the search's worker needs http
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    errors = []
    try:
        for path in pages(site):
            driver.get(f"http://127.0.0.1:{server.server_port}/{path.relative_to(site).as_posix()}")
            title = driver.find_element(By.CSS_SELECTOR, "article h1").text
            assert title, path
            errors += [
                f"{path.relative_to(site)}: {entry['message']}"
                for entry in driver.get_log("browser")
                if entry["level"] == "SEVERE"
            ]
        driver.get(f"http://127.0.0.1:{server.server_port}/index.html")  # the search finds a page
        driver.find_element(By.CSS_SELECTOR, "label.md-search__icon, label[for='__search']").click()
        driver.find_element(By.CSS_SELECTOR, "input.md-search__input").send_keys("Wordle")
        WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
    finally:
        driver.quit()
        server.shutdown()
    assert not errors, "\n".join(errors)


def docs_example(page: str, name: str) -> str:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    marker = f"<!-- docs-example: {name} -->"
    assert text.count(marker) == 1, f"docs/{page} must hold {marker!r} once"
    block = re.search(re.escape(marker) + r"\n```python\n(.*?)```", text, re.DOTALL)
    assert block, f"a ```python block must follow {marker!r} in docs/{page}"
    return block.group(1)


@pytest.mark.slow
def test_the_sb3_example_trains(tmp_path, monkeypatch):
    """The "stable-baselines3 and sb3-contrib" block of docs/integrations.md, executed."""
    pytest.importorskip("sb3_contrib")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(docs_example("integrations.md", "sb3"), "docs/integrations.md", "exec"), namespace)  # noqa: S102
    assert namespace["venv"].num_envs == 8


def test_the_torchrl_example_runs(monkeypatch, capsys):
    """The "TorchRL" block of docs/integrations.md, executed: TorchRL's spec check passes."""
    pytest.importorskip("torchrl")
    namespace: dict = {}
    exec(compile(docs_example("integrations.md", "torchrl"), "docs/integrations.md", "exec"), namespace)  # noqa: S102
    assert namespace["rollout"].batch_size == (16,)
    assert int(namespace["rollout"]["next", "done"].sum()) == 2  # two utterances of 8 tokens


def test_the_skyrl_example_plays(tmp_path, monkeypatch, capsys):
    """The "SkyRL" block of docs/integrations.md, executed: its parquet holds the rows, the step answers."""
    pytest.importorskip("skyrl_gym")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(docs_example("integrations.md", "skyrl"), "docs/integrations.md", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "train.parquet").stat().st_size > 0 and len(namespace["rows"]) > 64
    assert namespace["output"]["reward"] in (-1.0, 0.0) and not namespace["output"]["done"]


def test_the_gem_example_plays(monkeypatch, capsys):
    """The "GEM" block of docs/integrations.md, executed: eight CommonGen copies scored in one step."""
    pytest.importorskip("gem")
    namespace: dict = {}
    exec(compile(docs_example("integrations.md", "gem"), "docs/integrations.md", "exec"), namespace)  # noqa: S102
    assert len(namespace["rewards"]) == 8 and namespace["reward"] in (-1.0, 0.0)


def test_the_readmes_commands_are_the_getting_started_pages():
    """The README's two commands, which CI runs, are the ones the site gives."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    for name in ("main", "test"):
        block = re.search(rf"<!-- {name}-command:start -->\n```bash\n(.*?)\n```", readme, re.DOTALL)
        assert block and block.group(1) in page, name
