"""Figures fit their column (issue 40, item 6): diagrams are SVG images made when the site is built, so no
page holds a Mermaid block or loads a diagram script. That each figure fits its column at 1280 and at
390 px is measured in the browser, by tests/page_measures.py, when tests/test_browser.py opens the page."""

from __future__ import annotations

import json
import re

from scripts.records import ROOT

# A Mermaid element or fence, or a script tag that fetches Mermaid. (nbconvert's notebook template carries an
# inline loader that imports Mermaid only where a `.jp-Mermaid > pre.mermaid` element exists: none may.)
MERMAID = re.compile(r'<[^>]+class="[^"]*\b(?:mermaid|jp-Mermaid)\b|```mermaid|<script[^>]+src="[^"]*mermaid',
                     re.IGNORECASE)


def test_no_page_has_a_mermaid_block_or_loads_mermaid(built_site):
    pages = [p for p in built_site.rglob("*.html") if "outputs" not in p.relative_to(built_site).parts]
    found = [f"{p.relative_to(built_site)}: {m.group(0)}" for p in pages for m in [MERMAID.search(p.read_text())] if m]
    assert not found, "Mermaid left in the built site:\n" + "\n".join(found)
    assert not list(built_site.rglob("mermaid*.js")), "a Mermaid script is still served"
    config = (ROOT / "mkdocs.yml").read_text()
    assert not re.search(r"^\s*-\s*assets/vendor/mermaid", config, re.MULTILINE), "mkdocs.yml loads Mermaid"


def test_no_notebook_has_a_mermaid_cell(built_site):
    notebooks = list(built_site.glob("notebooks/**/*.ipynb"))
    assert notebooks, "no notebook in the site"
    found = [nb.name for nb in notebooks
             if any("```mermaid" in "".join(cell["source"]) for cell in json.loads(nb.read_text())["cells"])]
    assert not found, f"notebooks with a Mermaid cell: {found}"
