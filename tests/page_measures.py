"""What the browser test measures on a page besides its errors and accessibility, and the rules it holds them to:
- figures fit their column (issue 40, item 6): at 1280 px no figure or table is wider than the column, and at
  390 px neither is any chart, diagram, drawn illustration or table (nothing to scroll sideways), except a
  table with a column of code, which may scroll in its frame: a column is code when more than half of its
  non-empty body cells hold at least half of their text (spaces aside) in <code>;
- a chapter reads in one sitting: at most MAX_SCREENS screens at 1280 x 900, at most MAX_CODE_SHARE of it code
  and output, at least one figure, and every figure's text at least FIGURE_TEXT_MIN_PX as rendered at 1280
  and at 390 px. Its measures go to .cache/page-measures/ (the reader issue's table).

tests/test_browser.py opens each page once and asks both here, at each width, in the light palette.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from scripts.records import ROOT

# Allowance: a block may overflow by a few pixels of rounding, never by a character.
OVERFLOW_ALLOWANCE_PX = 4
# The reader issue's goals for a page one reads in one sitting (measured at 1280 x 900).
MAX_SCREENS = 12
MAX_CODE_SHARE = 0.45
FIGURE_TEXT_MIN_PX = 10
MEASURES = ROOT / ".cache" / "page-measures"

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

# Pages whose drawn illustrations have no phone drawing yet (a second <svg class="mlc-illustration
# mlc-narrow"> after the wide one, shown below 720 px: assets/stylesheets/extra.css), so they still scroll in
# their frame at 390 px. Scaled to the column their 12-unit text would be 6 px. A listed page whose
# illustrations fit fails the test, so the list only shrinks.
ILLUSTRATIONS_WITHOUT_A_PHONE_DRAWING: set[str] = set()


def too_wide(figures: list[dict], kinds: tuple[str, ...]) -> list[str]:
    return [f"{f['kind']} {f['width']} px in a {f['column']} px column" + (f", scrolls {f['scrolls']} px" if
            f["scrolls"] > OVERFLOW_ALLOWANCE_PX else "") + f" ({f['what']})"
            for f in figures if f["kind"] in kinds and (f["width"] > f["column"] + OVERFLOW_ALLOWANCE_PX
                                                        or f["scrolls"] > OVERFLOW_ALLOWANCE_PX)]


def fit_problems(path: str, wide: list[dict], narrow: list[dict]) -> list[str]:
    """The figures that do not fit their column (measure's "fit", at 1280 and at 390 px)."""
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
    return problems


MEASURE_PAGE = """() => {
  const article = document.querySelector('article.md-content__inner');
  // A closed <details> keeps its content laid out in Chromium (content-visibility: hidden), so ask twice.
  const shown = e => e.offsetParent !== null && e.getBoundingClientRect().height > 0 &&
    !e.closest('details:not([open])');
  const code = Array.from(article.querySelectorAll('div.highlight, .jp-Cell pre'))
    .filter(e => shown(e) && !e.parentElement.closest('div.highlight'))
    .reduce((sum, e) => sum + e.getBoundingClientRect().height, 0);
  const images = Array.from(article.querySelectorAll(
    '.mlc-figure img, img.mlc-illustration, img[src*="assets/diagrams/"]')).filter(shown)
    .map(i => [i.getAttribute('src'), i.getBoundingClientRect().width]);
  const text = [];
  // A drawing may come twice (wide and phone), one hidden at each width: measure the one shown.
  const drawn = s => s.offsetParent !== null && s.getBoundingClientRect().width > 0;
  article.querySelectorAll('svg.mlc-illustration text').forEach(t => {
    const svg = t.closest('svg'), box = svg.viewBox.baseVal;
    if (!drawn(svg)) return;
    text.push([parseFloat(getComputedStyle(t).fontSize) * svg.getBoundingClientRect().width / box.width,
               t.textContent.trim().slice(0, 40)]);
  });
  return {screens: document.documentElement.scrollHeight / innerHeight,
          code: code / article.getBoundingClientRect().height, images, text,
          drawings: Array.from(article.querySelectorAll('svg.mlc-illustration')).filter(drawn).length};
}"""


def svg_text_px(svg: str, rendered_width: float) -> float:
    """The smallest text of an SVG, in CSS pixels, when it is drawn `rendered_width` pixels wide."""
    view = re.search(r'viewBox="[\d.\s-]*?([\d.]+)\s+[\d.]+"', svg)
    sizes = [float(x) for x in re.findall(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([\d.]+)px", svg)]
    assert view and sizes, "an SVG without a viewBox or text sizes"
    return min(sizes) * rendered_width / float(view.group(1))


def measure(page, out: Path, path: str) -> dict:
    """At the current width: each figure's width against its column ("fit", FIGURES), and the screens, code
    share, figure count and smallest figure text (px, and where)."""
    measured = page.evaluate(MEASURE_PAGE)
    text = list(measured["text"])
    for src, width in measured["images"]:
        svg = (out / path / src.split("#")[0]).resolve()
        if svg.suffix == ".svg":
            text.append([svg_text_px(svg.read_text(), width), src.split("/")[-1]])
    smallest = min(text, default=[None, ""])
    return {"screens": measured["screens"], "code": measured["code"], "smallest": smallest,
            "figures": len(measured["images"]) + measured["drawings"], "fit": page.evaluate(FIGURES)}


def measures_file(path: str) -> Path:
    """Where a page's row of the reader issue's table goes."""
    return MEASURES / f"{(path.strip('/') or 'index').replace('/', '__')}.json"


def sitting_problems(path: str, wide: dict, narrow: dict) -> list[str]:
    """What keeps a page from being read in one sitting (measure at 1280 and at 390 px); writes its row of the
    reader issue's table."""
    row = {"page": path or "home", "screens": round(wide["screens"], 1), "code_share": round(wide["code"], 2),
           "figures": wide["figures"], "text_px_1280": wide["smallest"], "text_px_390": narrow["smallest"]}
    MEASURES.mkdir(parents=True, exist_ok=True)
    measures_file(path).write_text(json.dumps(row))
    problems = []
    if wide["screens"] > MAX_SCREENS:
        problems.append(f"{wide['screens']:.1f} screens at 1280 x 900 (at most {MAX_SCREENS})")
    if wide["code"] > MAX_CODE_SHARE:
        problems.append(f"code and output take {wide['code']:.0%} of the page (at most {MAX_CODE_SHARE:.0%})")
    if not wide["figures"]:
        problems.append("no figure")
    for width, measured in ((1280, wide), (390, narrow)):
        px, where = measured["smallest"]
        if px is not None and px < FIGURE_TEXT_MIN_PX:
            problems.append(f"figure text {px:.1f} px at {width} px ({where})")
    return problems


# The first screen a phone shows (issue 51): the title and the start of the first paragraph, with the notebook
# buttons on one short line between them (two full-width buttons took a quarter of the screen).
FIRST_SCREEN = """() => {
  window.scrollTo(0, 0);
  const article = document.querySelector('article.md-content__inner');
  const title = article.querySelector('h1');
  const first = Array.from(article.querySelectorAll(':scope > p')).find(p => !p.querySelector('.md-button') &&
    p.textContent.trim());
  const buttons = Array.from(article.querySelectorAll('.notebook-link')).map(b => b.getBoundingClientRect());
  return {height: innerHeight, title: title ? title.getBoundingClientRect().bottom : null,
          first: first ? first.getBoundingClientRect().top : null,
          rows: new Set(buttons.map(b => Math.round(b.top))).size,
          buttons: buttons.length ? Math.max(...buttons.map(b => b.bottom)) - Math.min(...buttons.map(b => b.top)) : 0};
}"""
# How far down the first screen a chapter's first paragraph may start at 390 x 844.
FIRST_PARAGRAPH_BY = 0.6
NOTEBOOK_BUTTONS_MAX_PX = 48


def first_screen_problems(page) -> list[str]:
    """At the current (phone) width: the title, the notebook buttons on one line, and the first paragraph
    starting within the first FIRST_PARAGRAPH_BY of the screen."""
    seen = page.evaluate(FIRST_SCREEN)
    problems = []
    if seen["title"] is None or seen["title"] > seen["height"]:
        problems.append("the title is not on a phone's first screen")
    if seen["first"] is not None and seen["first"] > FIRST_PARAGRAPH_BY * seen["height"]:
        problems.append(f"the first paragraph starts {seen['first']:.0f} px down a {seen['height']} px phone screen")
    if seen["rows"] > 1 or seen["buttons"] > NOTEBOOK_BUTTONS_MAX_PX:
        problems.append(f"the notebook buttons take {seen['rows']} lines, {seen['buttons']:.0f} px")
    return problems


# A page's title is its label in the navigation (issue 51: "Graph mode" led to "Graph mode and the torch.compile
# stack"). The pages below differ, each for its reason; a listed page whose title matches fails, so it only shrinks.
TITLE_DIFFERS = {
    "": "Home is the site's name",
    "dissecting/": "the overview of its section, labelled Overview under the section's name",
    "optimizations/": "the kernel fusion page is titled Optimizations, its section's name (the page's title is "
                      "docs/optimizations.md's, not the navigation's)",
}
TITLE_AND_LABEL = """() => {
  const title = document.querySelector('article.md-content__inner h1');
  const label = document.querySelector('.md-sidebar--primary .md-nav__link--active');
  return [title ? title.innerText.replace('¶', '').trim() : '', label ? label.innerText.trim() : ''];
}"""


def title_problems(page, path: str) -> list[str]:
    """At a desktop width: the page's title against its navigation label."""
    title, label = page.evaluate(TITLE_AND_LABEL)
    if not label:
        return []  # not in the navigation (a notebook, a page left out)
    if path in TITLE_DIFFERS:
        return ["its title now equals its navigation label: take it off TITLE_DIFFERS"] if title == label else []
    return [f"its title '{title}' is not its navigation label '{label}'"] if title != label else []
