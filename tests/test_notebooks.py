"""The companion notebooks (scripts/notebooks.py): fresh, free of plumbing, linked to their chapters, runnable."""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
import sys
from html.parser import HTMLParser

import nbformat
import pytest

from scripts import notebooks

ROOT = notebooks.ROOT
COMMITTED = sorted(notebooks.NOTEBOOKS.glob("*.ipynb"))
EAGER = notebooks.NOTEBOOKS / "eager-mode.ipynb"
PLUMBING = ("results[", "SNIPPET_OUTPUT_DIR", "json.dump")
RUN_LIMIT_S = 120


def ids(paths):
    return [p.stem for p in paths]


def test_committed_notebooks_equal_a_fresh_build():
    built, errors = notebooks.build_all()
    assert not errors, "pages that cannot become notebooks:\n" + "\n".join(errors)
    problems = notebooks.differences(built)
    assert not problems, "\n".join(problems) + "\nrun: .venv/bin/python -m scripts.notebooks"


def test_every_chapter_with_snippets_has_a_notebook():
    wanted = {notebooks.notebook_path(page) for page in notebooks.chapter_pages()}
    assert wanted == set(COMMITTED)
    assert EAGER in wanted


@pytest.mark.parametrize("path", COMMITTED, ids=ids(COMMITTED))
def test_no_cell_holds_recording_plumbing(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    found = [
        f"cell {index}: {line.strip()}"
        for index, cell in enumerate(notebook.cells)
        for line in cell.source.splitlines()
        if any(mark in line for mark in PLUMBING)
    ]
    assert not found, f"{path.name} shows the recorder's plumbing:\n" + "\n".join(found)


@pytest.mark.parametrize("path", COMMITTED, ids=ids(COMMITTED))
def test_first_cell_is_the_title_with_a_link_back_to_the_chapter(path):
    """The link, resolved from where mkdocs-jupyter puts the notebook's page, lands on the chapter's page."""
    notebook = nbformat.read(path, as_version=4)
    first = notebook.cells[0]
    page = notebook.metadata["mlc"]["page"]
    assert first.cell_type == "markdown"
    title = first.source.splitlines()[0]
    assert title.startswith("# ") and title[2:] in (notebooks.DOCS / page).read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", first.source)
    assert links, f"{path.name}: the first cell links nowhere"
    notebook_page = notebooks.page_url(path.relative_to(notebooks.DOCS).as_posix())
    landed = posixpath.normpath(posixpath.join(notebook_page, links[0]))
    assert landed.strip("/") == notebooks.page_url(page).strip("/"), (
        f"{path.name}: {links[0]} from {notebook_page} lands on {landed}, not on the page of {page}")
    assert "recorded" in first.source


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href"):
            self.hrefs.append(dict(attrs)["href"])


def test_in_the_built_site_each_notebook_links_to_its_chapter(built_site):
    site = built_site
    for path in COMMITTED:
        page = nbformat.read(path, as_version=4).metadata["mlc"]["page"]
        url = notebooks.page_url(path.relative_to(notebooks.DOCS).as_posix())
        built = site / url / "index.html"
        assert built.exists(), f"{path.name} has no page in the built site ({url})"
        parser = Links()
        parser.feed(built.read_text())
        chapter = (site / notebooks.page_url(page) / "index.html").resolve()
        targets = {(built.parent / href.split("#")[0] / "index.html").resolve()
                   for href in parser.hrefs if not re.match(r"^[a-z]+:|^#", href) and href.endswith("/")}
        assert chapter in targets, f"{url} has no link to {notebooks.page_url(page)}"


def test_the_eager_notebook_carries_its_recorded_outputs():
    notebook = nbformat.read(EAGER, as_version=4)
    shown = [cell for cell in notebook.cells if cell.cell_type == "code" and not cell.metadata["mlc"].get("setup")]
    assert shown and any(cell.outputs for cell in shown), "no code cell carries its recorded output"


def test_the_eager_notebook_runs_top_to_bottom_on_cpu(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, "-m", "scripts.notebooks", "--run", str(EAGER)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=RUN_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.skip(f"the eager notebook took over {RUN_LIMIT_S} s on this machine")
    assert done.returncode == 0, f"{EAGER.name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "# eager-mode.ipynb cell" in done.stdout
