"""The companion notebooks (scripts/notebooks.py), as the site's build makes them: one per chapter, its snippets
in file order, free of plumbing, linked to their chapters, and each one run top to bottom in a fresh kernel by the
recorder (a receipt per notebook; the suite runs no kernel)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from scripts import chapters, notebook_runs, notebooks, records

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

ROOT = notebooks.ROOT
NAMES = list(chapters.notebooks())


def ids(names):
    return [name.removeprefix("notebooks/").removesuffix(".ipynb") for name in names]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The notebooks, built as the site's build builds them, into a folder of their own."""
    out = tmp_path_factory.mktemp("notebooks")
    names = notebooks.write_all(out)
    return {name: nbformat.read(out / name, as_version=4) for name in names}


def test_every_chapter_with_snippets_has_a_notebook_and_none_is_committed(built):
    assert set(built) == set(NAMES) and "notebooks/eager-mode.ipynb" in built
    assert not list((chapters.DOCS / "notebooks").glob("*.ipynb")), "notebooks are built with the site"


def test_each_notebook_runs_the_snippets_its_chapter_says_in_that_order(built):
    """The builder and the chapter model (scripts/chapters.py notebook_snippets) agree on what a notebook runs."""
    for name, page in chapters.notebooks().items():
        cells = [c.metadata["mlc"]["snippet"] for c in built[name].cells
                 if c.cell_type == "code" and "snippet" in c.metadata.get("mlc", {})]
        expected = chapters.notebook_snippets(chapters.DOCS / page)
        assert list(dict.fromkeys(cells)) == expected, name
        assert built[name].metadata["mlc"]["snippets"] == sorted(expected), name


def test_a_notebook_is_made_from_the_records_its_prose_quotes_and_the_images_it_embeds(tmp_path):
    """Its cache key covers more than the snippets it runs, so a new record of a quoted snippet rebuilds it."""
    (tmp_path / "figure.svg").write_text("<svg/>")
    text = ('Took <!-- md:value demo/quoted.py t device=cpu -->.\n\n![A figure](figure.svg)\n\n'
            '```python\n--8<-- "snippets/demo/shown.py:main"\n```\n\n```text\n<!-- md:value demo/code.py t -->\n```\n')
    names, images = notebooks.made_from(tmp_path / "page.md", text)
    assert names == ["demo/quoted.py", "demo/shown.py"] and images == [tmp_path / "figure.svg"]
    names, _ = notebooks.made_from(tmp_path / "page.md", text + "\n<!-- md:findings -->\n")
    assert names == records.find_snippets(), "a directive that reads the whole site depends on every record"


def test_pages_show_each_snippets_sections_in_file_order():
    problems = [f"{page.relative_to(ROOT)}: {problem}" for page in chapters.chapter_pages()
                for problem in chapters.out_of_order(page.read_text())]
    assert not problems, "\n".join(problems)


def test_a_page_out_of_file_order_is_found_and_refused(tmp_path, monkeypatch):
    snippet = "eager_mode/complex_activation.py"
    order = list(chapters.section_lines((records.SNIPPETS / snippet).read_text()))
    assert len(order) >= 2
    fence = '```python\n--8<-- "snippets/{}:{}"\n```\n'
    page = "# A page\n\n" + fence.format(snippet, order[1]) + "\n" + fence.format(snippet, order[0])
    (problem,) = chapters.out_of_order(page)
    assert f"shows {order[1]}, {order[0]}; the file holds {order[0]}, {order[1]}" in problem
    monkeypatch.setattr(chapters, "DOCS", tmp_path)
    (tmp_path / "chapter.md").write_text(page)
    with pytest.raises(notebooks.NotebookError, match="out of file order"):
        notebooks.Builder(tmp_path / "chapter.md").build()


def test_a_snippet_whose_dropped_plumbing_defines_a_name_that_kept_code_reads_is_refused(tmp_path, monkeypatch):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "x.py").write_text(
        "results = {'reason': 'no GPU'}\n\n\ndef why():\n    print(results['reason'])\n\n\n"
        "# --8<-- [start:main]\nwhy()\n# --8<-- [end:main]\n")
    (tmp_path / "demo" / "fine.py").write_text(
        "results = {}\nfor name in ('a',):\n    results[name] = 1\n# --8<-- [start:main]\n"
        "for name in ('b',):\n    print(name)\n# --8<-- [end:main]\n")
    monkeypatch.setattr(records, "SNIPPETS", tmp_path)
    with pytest.raises(chapters.ChapterError, match=r"demo/x.py:4: .* only it defines `why`"):
        chapters.Snippet.load("demo/x.py")
    chapters.Snippet.load("demo/fine.py")  # the loop's `name` is bound by kept code too


@pytest.mark.parametrize("name", NAMES, ids=ids(NAMES))
def test_a_notebook_runs_each_snippet_in_file_order_without_plumbing(built, name):
    """Its code cells, read in order, are each of its snippets' lines from the top to the last shown section,
    once, less the recording plumbing."""
    notebook = built[name]
    nbformat.validate(notebook)
    cells: dict[str, list[str]] = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        plumbing = [cell.source.splitlines()[n - 1] for n in chapters.plumbing_lines(cell.source)]
        assert not plumbing, f"{name} cell {index} shows the recorder's plumbing: {plumbing}"
        where = cell.metadata["mlc"]
        if "snippet" in where:
            cells.setdefault(where["snippet"], []).append(cell.source)
    assert cells, f"{name} has no code cell"
    for snippet, sources in cells.items():
        loaded = chapters.Snippet.load(snippet)
        last = max(loaded.sections[s][1] for s in loaded.sections
                   if any(loaded.text(*loaded.sections[s], dedent=True) == src for src in sources))
        expected = [line.strip() for line in loaded.text(1, last).splitlines() if line.strip()]
        shown = [line.strip() for source in sources for line in source.splitlines() if line.strip()]
        assert shown == expected, f"{name}: the cells of snippets/{snippet} are not its lines in file order"


def test_no_notebook_uses_a_name_that_its_cells_never_define(built, tmp_path):
    """Ruff's undefined-name rule over every notebook's cells: dropping a plumbing statement must not drop a
    name that kept code reads, on any branch, including those a CPU run never takes."""
    for name, notebook in built.items():
        nbformat.write(notebook, tmp_path / Path(name).name)
    found = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F821",
                            "--output-format", "concise", str(tmp_path)], capture_output=True, text=True, timeout=120)
    undefined = [line.replace(str(tmp_path) + os.sep, "notebooks/") for line in found.stdout.splitlines()
                 if "F821" in line]
    assert not undefined, "a notebook uses a name its cells never define:\n" + "\n".join(undefined)


@pytest.mark.parametrize("name", NAMES, ids=ids(NAMES))
def test_the_first_cell_is_the_title_with_a_link_back_to_the_chapter(built, name):
    """The link, absolute on the published site, lands on the chapter's page."""
    notebook = built[name]
    first = notebook.cells[0]
    page = notebook.metadata["mlc"]["page"]
    assert first.cell_type == "markdown"
    title = first.source.splitlines()[0]
    assert title.startswith("# ") and title[2:] in (chapters.DOCS / page).read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", first.source)
    assert links, f"{name}: the first cell links nowhere"
    published = chapters.site_url().rstrip("/") + "/"
    assert links[0] == published + chapters.page_url(page), f"{name}: {links[0]} is not the page of {page}"
    assert "recorded" in first.source and chapters.site_name() in first.source


def test_a_triton_chapter_chooses_the_interpreter_in_a_cell_the_reader_sees(built):
    notebook = built["notebooks/dissecting__triton-basics.ipynb"]
    setup = [c for c in notebook.cells if c.cell_type == "code" and c.metadata.get("mlc", {}).get("environment")]
    assert len(setup) == 1 and "TRITON_INTERPRET" in setup[0].source
    assert not setup[0].metadata.get("jupyter", {}).get("source_hidden"), "the environment cell is hidden"
    first_code = next(c for c in notebook.cells if c.cell_type == "code")
    assert first_code is setup[0], "the interpreter must be chosen before any snippet imports triton"


def test_a_chapter_notebook_follows_the_first_tab_then_runs_its_jax_tabs_and_folds_quiz_answers(built):
    notebook = built["notebooks/eager-mode.ipynb"]
    sources = [c.metadata.get("mlc", {}).get("snippet", "") for c in notebook.cells if c.cell_type == "code"]
    first_jax = next(i for i, s in enumerate(sources) if s.startswith("jax/"))
    assert not [s for s in sources[first_jax:] if s and not s.startswith("jax/")], "PyTorch code after the JAX"
    heading = next(i for i, c in enumerate(notebook.cells) if c.source.startswith("## The same in JAX"))
    assert notebook.cells[heading + 1:] and all(
        not c.metadata.get("mlc", {}).get("snippet", "jax/").startswith(("eager_mode/", "optimizations/"))
        for c in notebook.cells[heading + 1:])
    prose = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "<details>" in prose and "??? question" not in prose and '=== "' not in prose


def test_a_notebook_opened_anywhere_has_no_relative_link(built):
    """Downloaded, a notebook has no site around it: every link is absolute (the published site), an anchor
    in the notebook itself, or an attachment (the site's own images are embedded in their cells)."""
    relative = []
    for name, notebook in built.items():
        for cell in notebook.cells:
            if cell.cell_type != "markdown":
                continue
            prose = re.sub(r"```.*?```|`[^`\n]*`", "", cell.source, flags=re.DOTALL)  # code is not a link
            for target in re.findall(r"\]\(([^()\s]+)", prose) + re.findall(r'(?:href|src)="([^"]+)"', prose):
                if not re.match(r"^(https?:|mailto:|#|attachment:)", target):
                    relative.append(f"{name}: {target}")
            if "<p class=" in prose:
                relative.append(f"{name}: a styled HTML paragraph, which Colab and VS Code drop")
    assert not relative, relative[:10]


def test_a_notebook_shows_each_drawn_illustration_once(built):
    """The site draws an illustration twice, wide and for a phone, and its CSS shows one; a notebook has no such
    CSS, so it keeps the wide one only."""
    twice = [name for name, notebook in built.items() for cell in notebook.cells
             if cell.cell_type == "markdown" and "mlc-narrow" in cell.source]
    drawn = [name for name, notebook in built.items() for cell in notebook.cells
             if cell.cell_type == "markdown" and "mlc-illustration" in cell.source]
    assert drawn, "no notebook has a drawn illustration: the check below would prove nothing"
    assert not twice, f"notebooks with a phone copy of an illustration: {sorted(set(twice))}"


def test_the_eager_notebook_carries_its_recorded_outputs(built):
    notebook = built["notebooks/eager-mode.ipynb"]
    shown = [cell for cell in notebook.cells if cell.cell_type == "code" and not cell.metadata["mlc"].get("setup")]
    assert shown and any(cell.outputs for cell in shown), "no code cell carries its recorded output"


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href"):
            self.hrefs.append(dict(attrs)["href"])


def test_in_the_built_site_each_notebook_is_a_page_a_download_and_links_to_its_chapter(built_site):
    site = built_site
    for name, chapter_src in chapters.notebooks().items():
        url = chapters.page_url(name)
        built_page = site / url / "index.html"
        assert built_page.exists(), f"{name} has no page in the built site ({url})"
        assert (site / url / name.split("/")[-1]).exists(), f"{name} cannot be downloaded from {url}"
        parser = Links()
        parser.feed(built_page.read_text())
        chapter_url = chapters.page_url(chapter_src)
        chapter = (site / chapter_url / "index.html").resolve()
        published = chapters.site_url().rstrip("/") + "/"
        targets = {(site / href.removeprefix(published).split("#")[0] / "index.html").resolve()
                   for href in parser.hrefs if href.startswith(published) and href.split("#")[0].endswith("/")}
        assert chapter in targets, f"{url} has no link to {chapter_url}"


@pytest.mark.parametrize("name", NAMES, ids=ids(NAMES))
def test_a_notebook_ran_top_to_bottom_in_a_fresh_kernel(built, name):
    """The recorder ran this notebook's code cells, with this torch, in a fresh kernel as a reader would, and
    kept a receipt (scripts/notebook_runs.py): the suite runs no kernel, so each snippet runs once here."""
    receipt = notebook_runs.load().get(name)
    assert receipt, f"{name} has never run in a fresh kernel: {notebook_runs.COMMAND}"
    assert receipt["key"] == notebook_runs.key(built[name]), (
        f"{name}'s code cells (or torch) changed since it last ran top to bottom on {receipt['date']}: "
        f"{notebook_runs.COMMAND}")


def test_a_downloaded_notebooks_links_resolve_in_the_site_it_came_from(built_site):
    """The build the tests make has no SITE_URL, as a local build: each notebook downloaded from the built site says
    in its first cell which address its links start with, and every such link, read as a path under the site,
    is a page (or file) of that site, and its #anchor a heading there."""
    site = built_site
    dead, checked = [], 0
    for name in chapters.notebooks():
        download = site / chapters.page_url(name) / Path(name).name
        notebook = nbformat.read(download, as_version=4)
        address = notebook.metadata["mlc"]["site"]
        first = notebook.cells[0].source
        assert address in first and "SITE_URL" in first, f"{name}: the first cell does not say where the site is"
        for cell in notebook.cells:
            if cell.cell_type != "markdown":
                continue
            prose = re.sub(r"```.*?```|`[^`\n]*`", "", cell.source, flags=re.DOTALL)
            for target in re.findall(r"\]\(([^()\s]+)", prose) + re.findall(r'href="([^"]+)"', prose):
                if not target.startswith(address):
                    continue
                path, _, anchor = target.removeprefix(address).partition("#")
                file = site / path / "index.html" if path.endswith("/") or not path else site / path
                checked += 1
                if not file.is_file():
                    dead.append(f"{name}: {target} (no {file.relative_to(site)})")
                elif anchor and f'id="{anchor}"' not in file.read_text():
                    dead.append(f"{name}: {target} (no heading #{anchor})")
    assert checked > 100, f"only {checked} links to the site: the check would prove little"
    assert not dead, f"{len(dead)} dead links, e.g. {dead[:5]}"


def test_a_notebooks_links_start_with_the_address_it_is_given(tmp_path):
    page = chapters.DOCS / "eager-mode.md"
    where = notebooks.where_the_site_is("http://127.0.0.1:8765/", published=False, serving=True)
    built = nbformat.reads(notebooks.build(page, "http://127.0.0.1:8765/", where), as_version=4)
    first = built.cells[0].source
    assert "](http://127.0.0.1:8765/eager-mode/)" in first and "mkdocs serve" in first
    assert built.metadata["mlc"]["site"] == "http://127.0.0.1:8765/"
    assert notebooks.where_the_site_is("https://example.org/site/", published=True, serving=False) == ""
    assert "SITE_URL" in notebooks.where_the_site_is("http://127.0.0.1:8000/", published=False, serving=False)
    assert notebooks.inputs_key(page, "http://a/") != notebooks.inputs_key(page, "http://b/")


def test_publishing_without_the_sites_address_is_refused(monkeypatch):
    from mkdocs.exceptions import PluginError

    from scripts import mkdocs_hooks

    monkeypatch.delenv("SITE_URL", raising=False)
    mkdocs_hooks.on_startup("gh-deploy", dirty=False)
    try:
        with pytest.raises(PluginError, match="SITE_URL"):
            mkdocs_hooks.on_files([], {"site_url": "http://127.0.0.1:8000/"})
    finally:
        mkdocs_hooks.on_startup("build", dirty=False)
