"""Figures fit their column (issue 40, item 6): diagrams are SVG images made when the site is built, so no
page holds a Mermaid block or loads a diagram script; at 1280 px no figure or table is wider than the
column, and at 390 px neither is any chart, diagram, drawn illustration or table (nothing to scroll
sideways), except a table with a column of code, which may scroll in its frame: a column is code when
more than half of its non-empty body cells hold at least half of their text (spaces aside) in <code>.
The pages in ILLUSTRATIONS_WITHOUT_A_PHONE_DRAWING are the illustrations' exception, until each has one."""

from __future__ import annotations

import json
import re

import pytest
import run_cache
from test_browser import CHAPTERS, OVERFLOW_ALLOWANCE_PX, REFERENCE, browser, server, unless_kept  # noqa: F401

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


# Every figure a page shows, and every table, with its frame (what scrolls when the figure is wider).
FIGURES = """() => {
  const article = document.querySelector('article.md-content__inner');
  const column = article.clientWidth;
  const shown = e => e.offsetParent !== null && e.getBoundingClientRect().width > 0 &&
    !e.closest('details:not([open])');
  const found = [];
  const letters = e => e.textContent.replace(/\\s/g, '').length;
  const mostlyCode = cell => 2 * Array.from(cell.querySelectorAll('code'))
    .filter(c => !c.parentElement.closest('code')).reduce((sum, c) => sum + letters(c), 0) >= letters(cell);
  // A column of code: more than half of its non-empty body cells are mostly code.
  const codeColumn = table => {
    const rows = Array.from(table.tBodies).flatMap(b => Array.from(b.rows));
    const columns = Math.max(0, ...rows.map(r => r.cells.length));
    return Array.from({length: columns}, (_, i) => rows.map(r => r.cells[i]).filter(c => c && letters(c)))
      .some(cells => cells.length && 2 * cells.filter(mostlyCode).length > cells.length);
  };
  const add = (kind, e, frame) => {
    const width = Math.max(e.getBoundingClientRect().width, e.scrollWidth || 0);
    if (kind === 'table' && codeColumn(e)) kind = 'table of code';
    found.push({kind, width: Math.round(width), column,
                scrolls: frame ? Math.round(frame.scrollWidth - frame.clientWidth) : 0,
                what: (e.getAttribute('src') || e.getAttribute('aria-label') ||
                       (e.querySelector('caption, th') || e).textContent || '').trim().slice(0, 60)});
  };
  article.querySelectorAll('.mlc-figure img').forEach(i => shown(i) &&
    add(i.classList.contains('mlc-diagram') ? 'diagram' : 'chart', i, i.closest('.mlc-zoom')));
  article.querySelectorAll('img[src*="assets/diagrams/"]').forEach(i => shown(i) && add('diagram', i, null));
  article.querySelectorAll('svg.mlc-illustration').forEach(s => shown(s) &&
    add('illustration', s, s.closest('.mlc-illustration-frame')));
  article.querySelectorAll('.mlc-x-cost table').forEach(t => shown(t) &&
    add('cost table', t, t.closest('.mlc-x-cost')));
  article.querySelectorAll('table').forEach(t => shown(t) && !t.closest('.mlc-x-cost') && add('table', t, t));
  return found;
}"""


def too_wide(figures: list[dict], kinds: tuple[str, ...]) -> list[str]:
    return [f"{f['kind']} {f['width']} px in a {f['column']} px column" + (f", scrolls {f['scrolls']} px" if
            f["scrolls"] > OVERFLOW_ALLOWANCE_PX else "") + f" ({f['what']})"
            for f in figures if f["kind"] in kinds and (f["width"] > f["column"] + OVERFLOW_ALLOWANCE_PX
                                                        or f["scrolls"] > OVERFLOW_ALLOWANCE_PX)]


# Pages whose drawn illustrations have no phone drawing yet (a second <svg class="mlc-illustration
# mlc-narrow"> after the wide one, shown below 720 px: assets/stylesheets/extra.css), so they still scroll in
# their frame at 390 px. Scaled to the column their 12-unit text would be 6 px. A listed page whose
# illustrations fit fails the test, so the list only shrinks.
ILLUSTRATIONS_WITHOUT_A_PHONE_DRAWING: set[str] = set()


@pytest.mark.parametrize("path", [""] + CHAPTERS + list(REFERENCE), ids=["home"] + CHAPTERS + list(REFERENCE))
def test_figures_fit_the_column_at_1280_and_390(server, browser, path):  # noqa: F811
    base, site = server
    run_key = unless_kept("figures-fit", site, path, __file__)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    page = context.new_page()
    page.goto(f"{base}/{path}", wait_until="networkidle")
    page.evaluate("() => Promise.all(Array.from(document.images).map(i => { i.loading = 'eager';"
                  " return i.decode().catch(() => null); }))")
    wide = page.evaluate(FIGURES)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)  # the layout settles
    narrow = page.evaluate(FIGURES)
    scripts = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    context.close()
    problems = [f"at 1280: {p}" for p in too_wide(wide, ("chart", "diagram", "illustration", "cost table", "table",
                                                         "table of code"))]
    # At 390 a chart is drawn again for the phone, a diagram scales, the cost table wraps its source lines,
    # an illustration is drawn again for the phone and a table wraps its cells; only a table of code may scroll.
    problems += [f"at 390: {p}" for p in too_wide(narrow, ("chart", "diagram", "cost table", "table"))]
    illustrations = too_wide(narrow, ("illustration",))
    if path in ILLUSTRATIONS_WITHOUT_A_PHONE_DRAWING:
        if not illustrations:
            problems.append("its illustrations fit at 390 px: take it off ILLUSTRATIONS_WITHOUT_A_PHONE_DRAWING")
    else:
        problems += [f"at 390: {p}" for p in illustrations]
    problems += [f"loads {s}" for s in scripts if "mermaid" in s.lower()]
    assert not problems, f"{path or 'home'}: " + "; ".join(problems)
    run_cache.keep("figures-fit", path or "home", run_key)
