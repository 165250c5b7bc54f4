"""Figures and notebooks: drawn from the current records, referenced ones exist, notebooks are valid."""

import json
import re

import nbformat
import pytest
import render_assets
from harness import ROOT

PAGES = render_assets.chapter_pages()
FIGURE = re.compile(r"<!--\s*md:figure\s+(\S+\.py)\s+(\S+)\s*-->")


def test_figures_and_notebooks_are_fresh():
    stale = render_assets.stale_figures() + render_assets.stale_notebooks()
    assert not stale, "out of date (run python scripts/render_assets.py):\n" + "\n".join(stale)


def test_every_figure_a_page_shows_was_drawn_from_its_records():
    for page in sorted(render_assets.DOCS.rglob("*.md")):
        for snippet, name in FIGURE.findall(page.read_text()):
            for device in render_assets.DEVICES:
                record = render_assets.OUTPUTS / device / snippet[:-3]
                if not (record / "manifest.json").exists():
                    continue
                assert name in render_assets.figure_sources(record), (
                    f"{page.relative_to(ROOT)} shows figure {name!r} of {snippet}, but its {device} record has no data for it"
                )
                folder = render_assets.FIGURES / device / snippet[:-3]
                kind = render_assets.figure_sources(record)[name]["kind"]
                for path in render_assets.figure_files(folder, name, kind):
                    assert path.exists(), f"{path.relative_to(ROOT)} is missing: run python scripts/render_assets.py"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(render_assets.DOCS)) for p in PAGES])
def test_each_chapter_has_a_valid_notebook_of_exactly_its_snippets(page):
    path = render_assets.notebook_path(page)
    assert path.exists(), f"{page.relative_to(ROOT)} has no notebook: run python scripts/render_assets.py"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    snippets = render_assets.page_snippets(page)
    assert code == [(render_assets.SNIPPETS / s).read_text() for s in snippets]
    assert notebook.metadata["mlc"]["snippets"] == snippets


def test_rendering_is_deterministic(tmp_path):
    """The same records give byte-identical figures."""
    record = render_assets.OUTPUTS / "cpu" / "eager_mode" / "complex_activation"
    source = render_assets.figure_sources(record)["timeline"]
    render_assets.setup_matplotlib()
    render_assets.draw(source, "light", tmp_path / "a.svg")
    render_assets.draw(source, "light", tmp_path / "b.svg")
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    committed = json.loads((render_assets.FIGURES / "cpu/eager_mode/complex_activation/figures.json").read_text())
    assert "timeline" in committed


def test_fx_graph_text_becomes_a_mermaid_diagram():
    text = (
        "graph():\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %w : [num_users=0] = placeholder[target=w]\n"
        "    %sin : [num_users=1] = call_function[target=torch.sin](args = (%x,), kwargs = {})\n"
        "    %mm : [num_users=0] = call_function[target=aten.mm.default](args = (%x, %x), kwargs = {})\n"
        "    return (sin,)\n"
        "graph():\n"
        "    %y : [num_users=1] = placeholder[target=y]\n"
        "    %sum_1 : [num_users=1] = call_method[target=sum](args = (%y,), kwargs = {})\n"
        "    return sum_1\n"
    )
    mermaid, alt = render_assets.fx_to_mermaid(text)
    assert mermaid.startswith("flowchart LR\n")
    assert 'subgraph g0_frame["graph 1"]' in mermaid and 'subgraph g1_frame["graph 2"]' in mermaid
    assert "g0_x --> g0_sin" in mermaid and "g0_sin --> g0_output" in mermaid and "g1_sum_1 --> g1_output" in mermaid
    assert "class g0_mm unused" in mermaid and "class g0_w unused" in mermaid and "class g0_sin unused" not in mermaid
    assert alt == "Computation graph (graph 1: sin, mm (unused: w, mm); graph 2: .sum)."
