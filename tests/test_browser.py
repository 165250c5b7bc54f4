"""Every built page in a real headless Chromium: no console error, no failed or third-party request, images
load, the copy button, content tabs, palette toggle and search work, axe finds no accessibility problem
in the content (alt text, heading order, contrast in both palettes), figures fit their column and a chapter
reads in one sitting (tests/page_measures.py).

Screenshots at desktop and mobile widths go to .cache/screenshots/ (test artifacts, not committed).
Needs Debian's `chromium` on PATH (the README's test command installs it) and the playwright package.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import re
import shutil
import threading
from pathlib import Path

import page_measures
import pytest
import run_cache
from page_measures import OVERFLOW_ALLOWANCE_PX

from scripts import glossary
from scripts.records import ROOT

playwright = pytest.importorskip("playwright.sync_api", reason="the tests extra installs playwright")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.fail("Chromium is not installed: run the README's test command (it installs Debian's chromium)",
                pytrace=False)

AXE = (Path(__file__).parent / "assets" / "axe.min.js").read_text()
SCREENSHOTS = ROOT / ".cache" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
AXE_RULES = ["image-alt", "heading-order", "color-contrast", "link-name", "button-name", "document-title"]


@pytest.fixture(scope="module")
def server(built_site):
    out = built_site
    handler = functools.partial(QuietHandler, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", out
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


def page_urls() -> list[str]:
    """The URL of every page the site builds, from docs/ (Markdown pages and notebooks)."""
    docs = ROOT / "docs"
    urls = []
    from scripts import chapters  # notebooks are built with the site, one per chapter

    sources = [docs / name for name in sorted(chapters.pages())] + [docs / name for name in chapters.notebooks()]
    for source in sources:
        relative = source.relative_to(docs)
        if relative.parts[0] in ("outputs", "assets", "figures"):
            continue
        stem = relative.with_suffix("").as_posix()
        if stem == "index":
            urls.append("")
        else:
            urls.append(stem.removesuffix("/index") + "/")
    return urls


PAGES = page_urls()
REFERENCE = ("reproduce/", "contributing/", "versions/", "glossary/")  # pages about the site, not chapters of the book
CHAPTERS = [p for p in PAGES if p and not p.startswith("notebooks/") and p not in REFERENCE]


class Watch:
    """Records what a page does wrong while it loads: console errors, failed and foreign requests."""

    def __init__(self, page, origin: str):
        self.problems: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"failed request: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))

        def route(request_route):
            url = request_route.request.url
            if url.startswith(origin) or url.startswith("data:") or url.startswith("blob:"):
                request_route.continue_()
            else:
                self.problems.append(f"third-party request: {url}")
                request_route.abort()

        page.route("**/*", route)


DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


def open_page(browser, base: str, path: str):
    context = browser.new_context(viewport=DESKTOP, color_scheme="light")
    page = context.new_page()
    watch = Watch(page, base)
    page.goto(f"{base}/{path}", wait_until="load")  # later requests are still watched until the end
    return context, page, watch


def test_every_built_page_is_tested(server):
    _, out = server
    built = sorted(
        p.relative_to(out).parent.as_posix() + "/" if p.name == "index.html" else p.relative_to(out).as_posix()
        for p in out.rglob("*.html") if p.name != "404.html" and "outputs" not in p.relative_to(out).parts
    )
    assert sorted(u or "./" for u in PAGES) == built


# Code blocks hold thousands of token spans whose colours come from a handful of CSS rules: axe checks
# the first few elements of each kind (tag, class, and the kind of block around it) on the page and skips
# the rest, which share their colours. The rest are set aside (taken out of the page, each marked by an
# empty comment) while axe runs, and put back after: axe's colour-contrast rule takes time in proportion to
# every element on the page, excluded or not (14 s against 0.6 s on the longest page, triton/).
SET_ASIDE_REPEATS = """() => {
  const seen = new Map();
  document.querySelectorAll('.md-content pre *, .md-content .jp-Cell *').forEach(el => {
    const around = el.closest('.admonition, .jp-OutputArea, .jp-InputArea, .tabbed-block') ;
    const kind = el.tagName + '.' + el.getAttribute('class') + '@' + (around ? around.className : '');
    const n = (seen.get(kind) || 0) + 1;
    seen.set(kind, n);
    if (n > 3) el.setAttribute('data-axe-repeat', '');
  });
  window.mlcAside = [];
  document.querySelectorAll('[data-axe-repeat]').forEach(el => {
    if (el.parentElement.closest('[data-axe-repeat]')) return;  // leaves with its repeated ancestor
    const mark = document.createComment('axe-repeat');
    el.replaceWith(mark);
    window.mlcAside.push([mark, el]);
  });
}"""
PUT_BACK = """() => {
  window.mlcAside.forEach(([mark, el]) => mark.replaceWith(el));
  window.mlcAside = [];
  document.querySelectorAll('[data-axe-repeat]').forEach(el => el.removeAttribute('data-axe-repeat'));
}"""


def axe(page) -> list[str]:
    """axe's violations of AXE_RULES in the page's content; the page is as it was before, afterwards."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=AXE)
    page.evaluate(SET_ASIDE_REPEATS)
    try:
        return page.evaluate(
            "rules => axe.run({include: [['.md-content']]}, {runOnly: rules, resultTypes: ['violations']})"
            ".then(r => r.violations.map(v => v.id + ': ' + v.nodes.length + ' node(s), e.g. '"
            " + v.nodes[0].html.slice(0, 120)))",
            AXE_RULES,
        )
    finally:
        page.evaluate(PUT_BACK)


def test_axe_finds_what_it_checks_and_leaves_the_page_as_it_was(browser):
    """Setting the repeats aside neither hides a problem in what axe checks (the first of a kind in code,
    anything outside code) nor changes the page the later checks see."""
    context = browser.new_context()
    page = context.new_page()
    tokens = "".join(f'<span class="n">name_{i}</span> ' for i in range(200))
    page.set_content('<html lang="en"><head><title>axe</title></head><body><div class="md-content"><h1>A page</h1>'
                     f'<pre><code>{tokens}<span class="pale" style="color:#e8e8e8">pale token</span></code></pre>'
                     '<p style="color:#dddddd; background:#ffffff">pale text</p></div></body></html>')
    before = page.inner_html("body")
    found = axe(page)
    after = page.inner_html("body")
    context.close()
    assert after == before, "axe left the page changed"
    assert [v.split(",")[0] for v in found] == ["color-contrast: 2 node(s)"], found


@functools.cache
def assets_digest(site: Path) -> str:
    """Every stylesheet, script, font and image the theme ships: a change to one can change every page."""
    digest = hashlib.sha256()
    for file in sorted((site / "assets").rglob("*")):
        if file.is_file():
            digest.update(file.relative_to(site).as_posix().encode() + file.read_bytes())
    return digest.hexdigest()


def page_key(site: Path, path: str, *tests: str) -> str:
    """What a page's checks depend on: its HTML, every file it references (figures, notebooks), the theme's
    assets, and the tests that check it (this file and any other named)."""
    html = (site / path / "index.html").read_text()
    parts = [html, assets_digest(site), AXE, *(Path(t).read_text() for t in (__file__, *tests))]
    for ref in sorted(set(re.findall(r'(?:src|href)="([^"#?]+)', html))):
        target = (site / path / ref).resolve()
        if not re.match(r"^[a-z]+:|^//", ref) and target.is_file() and target.is_relative_to(site.resolve()):
            parts.append(ref + hashlib.sha256(target.read_bytes()).hexdigest())
    return run_cache.key(*parts)


def unless_kept(kind: str, site: Path, path: str, *tests: str) -> str:
    """The key of a page check (page_key); skips the test if the check passed on this page, as it is, before
    (tests/run_cache.py). A passing test keeps it: `run_cache.keep(kind, path or "home", key)`."""
    run_key = page_key(site, path, *tests)
    if run_cache.kept(kind, path or "home", run_key):
        pytest.skip(f"the page and every file it loads are as they were when it passed on this machine "
                    f"(.cache/runs/; {run_cache.RERUN}=1 checks it again)")
    return run_key


FITTED = [""] + CHAPTERS + list(REFERENCE)  # pages whose figures must fit their column
SITTINGS = [""] + CHAPTERS  # pages a reader takes in one sitting


@pytest.mark.parametrize("path", PAGES, ids=[p or "home" for p in PAGES])
def test_page_loads_cleanly_and_is_accessible(server, browser, path):
    """No console error, failed or third-party request; every image loads; axe passes in both palettes; code
    does not scroll sideways; figures fit their column and a chapter reads in one sitting (tests/page_measures.py);
    a figure is shown in its own palette only, and numbered. Screenshots at desktop and mobile widths.
    One page load does it all: opening a page costs more than most checks on it."""
    base, site = server
    if path in SITTINGS and not page_measures.measures_file(path).exists():  # its row of the table is written
        run_key = page_key(site, path, page_measures.__file__)
    else:
        run_key = unless_kept("page-checks", site, path, page_measures.__file__)
    context, page, watch = open_page(browser, base, path)
    problems = list(watch.problems)
    # Lazy images load once scrolled to, and one of each light/dark pair is hidden: load and decode
    # every image explicitly.
    broken = page.evaluate(
        """() => Promise.all(Array.from(document.images).map(i => {
             i.loading = 'eager';
             return i.decode().then(() => i.naturalWidth > 0 ? null : i.src, () => i.src);
           })).then(srcs => srcs.filter(Boolean))"""
    )
    problems += [f"image did not load: {src}" for src in broken]
    problems += [f"light palette: {v}" for v in axe(page)]
    if path in CHAPTERS:
        problems += code_overflow(page)
        problems += page_measures.title_problems(page, path)
    name = (path.strip("/") or "index").replace("/", "__")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.desktop.png"), full_page=True)
    if path in FITTED:  # the home page, the chapters and the reference pages (SITTINGS are among them)
        wide = page_measures.measure(page, site, path)
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(300)  # Material redraws nothing on resize; the layout settles
        narrow = page_measures.measure(page, site, path)
        if path in CHAPTERS:
            problems += page_measures.first_screen_problems(page)
        problems += page_measures.fit_problems(path, wide["fit"], narrow["fit"])
        if path in SITTINGS:
            problems += page_measures.sitting_problems(path, wide, narrow)
    resources = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    problems += [f"loads {r}" for r in resources if "mermaid" in r.lower()]
    page.set_viewport_size(DESKTOP)
    page.locator("form[data-md-component=palette] label:visible").first.click()  # the palette toggle
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'", timeout=5_000)
    problems += [f"dark palette: {v}" for v in axe(page)]
    page.set_viewport_size(PHONE)
    if path in CHAPTERS:
        problems += figure_problems(page, server[1], path, "dark")
    page.screenshot(path=str(SCREENSHOTS / f"{name}.mobile.png"))  # the first screen a phone shows
    problems += [p for p in watch.problems if p not in problems]
    context.close()
    assert not problems, f"{path or 'home'}:\n" + "\n".join(problems)
    run_cache.keep("page-checks", path or "home", run_key)


def test_no_tab_lands_on_a_missing_record(server):
    """A tab per recorded device only: a click on one (linked tabs switch every page) never shows a reader an
    empty tab."""
    _, out = server
    empty = []
    for page in sorted(out.rglob("*.html")):
        for block in re.findall(r'<div class="tabbed-block">(.*?)</div>', page.read_text(), flags=re.S):
            if "not yet recorded" in block.lower():
                empty.append(str(page.relative_to(out)))
    assert not empty, f"tabs that hold no record: {sorted(set(empty))}"


# Search: tests/test_search_browser.py types each query of tests/test_search.py's CANONICAL into the box.


def code_overflow(page) -> list[str]:
    """Code blocks that scroll sideways at the current width, beyond the allowance."""
    return [f"code scrolls sideways: {w}" for w in page.evaluate(  # the explorer's panes scroll both ways
        """allowance => Array.from(document.querySelectorAll('.md-content pre > code'))
             .filter(c => !c.closest('.mlc-explorer'))
             .filter(c => c.scrollWidth - c.clientWidth > allowance)
             .map(c => (c.scrollWidth - c.clientWidth) + 'px over: ' +
                  c.innerText.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 90))""",
        OVERFLOW_ALLOWANCE_PX)]


def figure_problems(page, out: Path, path: str, palette: str) -> list[str]:
    """At the current (phone) width: every figure shown in this palette only, and numbered."""
    other = "#only-light" if palette == "dark" else "#only-dark"
    problems = []
    for figure in page.evaluate(
        """() => Array.from(document.querySelectorAll('.mlc-figure img')).map(i => ({
             src: i.getAttribute('src'), width: i.getBoundingClientRect().width,
             number: !!i.closest('.mlc-figure').querySelector('.mlc-caption strong')}))"""
    ):
        if figure["width"] == 0:  # the other palette's copy, hidden
            continue
        if figure["src"].endswith(other):
            problems.append(f"{figure['src']} belongs to the other palette but is shown in the {palette} one")
        if not figure["number"]:
            problems.append(f"{figure['src']} has no numbered caption")
    return problems


def test_every_chapter_has_footer_links(server):
    _, out = server
    lacking = [path for path in CHAPTERS if "md-footer__link" not in (out / path / "index.html").read_text()]
    assert not lacking, f"chapters without prev/next links: {lacking}"


def test_contributing_page_shows_its_example_as_text(server):
    _, out = server
    page = (out / "contributing" / "index.html").read_text()
    code = " ".join(re.findall(r"<pre\b.*?</pre>", page, flags=re.S))
    plain = re.sub(r"<[^>]+>", "", code)
    assert "--8&lt;--" in plain or "--8<--" in plain, "the include example is not shown as text"
    assert "md:output" in plain, "the directive example is not shown as text"
    assert "def complex_activation" not in plain, "the example was expanded into real code"


def test_notebook_pages_draw_their_diagrams_keep_numbers_whole_and_fold_answers(server, browser):
    base, _ = server
    context, page, _ = open_page(browser, base, "notebooks/graph-mode/")
    # The diagrams are SVG images attached to their cells (an image that failed to load has no size).
    sizes = page.evaluate(
        """() => Promise.all(Array.from(document.querySelectorAll('.jp-RenderedMarkdown img[src^="data:image/svg"]'))
             .map(i => i.decode().catch(() => null).then(() => i.getBoundingClientRect().width)))""")
    output_break = page.evaluate(
        "() => getComputedStyle(document.querySelector('.jp-OutputArea-output pre')).wordBreak")
    answers = page.evaluate(
        "() => Array.from(document.querySelectorAll('.jp-RenderedMarkdown details')).map(d => d.open)")
    current = page.evaluate(
        """() => Array.from(document.querySelectorAll('.md-nav__item--active:not(.md-nav__item--nested) > a'))
             .filter(a => a.offsetParent !== null).map(a => [a.innerText.trim(), getComputedStyle(a).color])""")
    plain = page.evaluate("() => getComputedStyle(document.querySelector('a.md-nav__link')).color")
    context.close()
    assert [text for text, _ in current] == ["Graph mode and the torch.compile stack"], \
        f"the navigation marks {current} as current"
    assert current[0][1] != plain, "the chapter's entry looks like every other entry"
    assert sizes and all(width > 0 for width in sizes), f"diagrams drawn at widths {sizes}"
    assert output_break != "break-all", "outputs break numbers apart"
    assert answers and not any(answers), f"quiz answers: {len(answers)}, open: {sum(answers)}"


@pytest.mark.parametrize("path", ["", "graph-mode/", "dissecting/training/"])
def test_no_page_loads_a_large_library(server, browser, path):
    """Diagrams are SVG drawn before the browser sees them: no page loads Mermaid, and none has math."""
    base, _ = server
    context, page, _ = open_page(browser, base, path)
    page.wait_for_load_state("networkidle")
    scripts = page.evaluate(
        """() => performance.getEntriesByType('resource').filter(e => e.initiatorType === 'script')
             .map(e => [e.name.split('/').pop(), e.decodedBodySize])""")
    context.close()
    names = {name for name, _ in scripts}
    assert "mermaid.min.js" not in names and "mathjax-tex-svg.js" not in names, names
    total = sum(size for _, size in scripts)
    assert total <= 2_000_000, f"{total:,} bytes of JavaScript on {path or 'home'}: {scripts}"


IN_VIEW = """(e, stage) => { const pre = e.querySelector(`.mlc-x-pane[data-stage="${stage}"] pre`);
  return Array.from(pre.querySelectorAll('.mlc-x-line.is-hl'))
    .filter(l => l.offsetTop >= pre.scrollTop && l.offsetTop < pre.scrollTop + pre.clientHeight)
    .map(l => l.textContent); }"""


def test_the_explorer_links_a_line_to_every_stage(server, browser):
    """Focusing the tl.dot line of the matmul lights lines in every stage, the target's tensor-core
    instruction among the SASS, in view; a stage line, reached from the keyboard, lights its Python line; on a phone
    the stages stack in one column."""
    base, _ = server
    context, page, watch = open_page(browser, base, "dissecting/triton/")
    explorer = page.locator(".mlc-explorer").first
    lit = """e => Array.from(e.querySelectorAll('.mlc-x-pane'))
               .map(p => [p.dataset.stage || 'Python', p.querySelectorAll('.mlc-x-line.is-hl').length])"""
    found = {}
    for target, instruction in (("sm_90", "HGMMA"), ("sm_80", "HMMA"), ("sm_100", "UTCHMMA")):
        explorer.locator(f'button[data-target="{target}"]').click()
        page.wait_for_function(f"document.querySelector('.mlc-explorer').dataset.loaded === '{target}'")
        explorer.locator(".mlc-x-source .mlc-x-line[data-src]", has_text="tl.dot(").focus()
        found[target] = dict(explorer.evaluate(lit))
        sass = explorer.locator('.mlc-x-pane[data-stage="SASS"] .mlc-x-line.is-hl').all_inner_texts()
        assert any(instruction in line for line in sass), f"{target}: no {instruction} on the tl.dot line"
        shown = explorer.evaluate(IN_VIEW, "SASS")  # the pane brings the instruction into view, not set-up code
        assert any(instruction in line for line in shown), f"{target}: {instruction} out of view: {shown[:3]}"
    page.mouse.move(0, 0)  # a line under a resting pointer would take the highlight as the pane scrolls
    explorer.locator('.mlc-x-pane[data-stage="PTX"] pre').focus()
    current = explorer.locator('.mlc-x-pane[data-stage="PTX"] .mlc-x-line.is-current')
    source = None
    for _ in range(200):  # down to the first PTX line that carries a source line
        page.keyboard.press("ArrowDown")
        source = current.get_attribute("data-src")
        if source:
            break
    python = [line.get_attribute("data-src") for line in explorer.locator(".mlc-x-source .mlc-x-line.is-hl").all()]
    page.set_viewport_size({"width": 390, "height": 844})
    lefts = {round(box["x"]) for box in (pane.bounding_box() for pane in explorer.locator(".mlc-x-pane").all())}
    context.close()
    for target, counts in found.items():
        assert counts["Python"] == 1 and all(counts[stage] > 0 for stage in counts), (target, counts)
    assert source and python == [source], f"PTX line of source line {source} lit Python lines {python}"
    assert len(lefts) == 1, f"the explorer's panes sit side by side on a phone: {sorted(lefts)}"
    assert not watch.problems, watch.problems


def test_a_term_shows_its_definition_on_tap(server, browser):
    """On a phone, tapping a glossary term's first use shows its definition (Material's tooltip, not a title
    attribute, which touch screens never show)."""
    base, _ = server
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    watch = Watch(page, base)
    page.goto(f"{base}/eager-mode/", wait_until="load")
    term = page.locator("article abbr:not(.recorded)").first  # a recorded number is an <abbr> too (below)
    # Material moves the title into its own tooltip once its script runs: the definition comes from the glossary.
    definition = {form: t.tooltip for t in glossary.terms(ROOT / "docs") for form in t.forms}[term.inner_text()]
    term.scroll_into_view_if_needed()
    term.tap()
    tip = page.locator(".md-tooltip2, .md-tooltip").filter(has_text=definition[:30])
    tip.first.wait_for(state="visible", timeout=5000)
    context.close()
    assert not watch.problems, watch.problems


def test_a_recorded_number_shows_where_it_came_from_on_tap(server, browser):
    """A number in prose that came from a record has its source (the record, the machine, the day) in a tooltip
    a phone shows on tap (issue 51: the dotted underline showed nothing when tapped)."""
    base, _ = server
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    watch = Watch(page, base)
    page.goto(f"{base}/eager-mode/", wait_until="load")
    number = page.locator("article .recorded").first
    number.scroll_into_view_if_needed()
    number.tap()
    tip = page.locator(".md-tooltip2, .md-tooltip").filter(has_text="recorded on")
    tip.first.wait_for(state="visible", timeout=5000)
    context.close()
    assert not watch.problems, watch.problems


SLOW_SM80 = """() => { window.fetch = (original => (url, ...rest) => String(url).includes('.sm_80.')
  ? new Promise(done => setTimeout(done, 400)).then(() => original(url, ...rest))
  : original(url, ...rest))(window.fetch); }"""


def test_the_explorer_shows_the_last_target_chosen(server, browser):
    """A reader who picks sm_80 and then sm_90 before sm_80's files arrive sees sm_90 in every stage, with the
    focused line still lit: a late answer for the earlier choice does not overwrite the later one."""
    base, _ = server
    context, page, watch = open_page(browser, base, "dissecting/triton/")
    explorer = page.locator(".mlc-explorer").first
    page.wait_for_function("document.querySelector('.mlc-explorer').dataset.loaded === 'sm_90'")
    page.evaluate(SLOW_SM80)
    explorer.locator('button[data-target="sm_80"]').click()
    explorer.locator(".mlc-x-source .mlc-x-line[data-src]", has_text="tl.dot(").focus()
    explorer.locator('button[data-target="sm_90"]').click()
    page.wait_for_function("document.querySelector('.mlc-explorer').dataset.loaded === 'sm_90'")
    page.wait_for_timeout(800)  # past the delayed sm_80 answers
    sass = explorer.locator('.mlc-x-pane[data-stage="SASS"] code').inner_text()
    lit = explorer.evaluate("e => Array.from(e.querySelectorAll('.mlc-x-pane[data-file]'))"
                            ".map(p => [p.dataset.stage, p.querySelectorAll('.mlc-x-line.is-hl').length])")
    context.close()
    assert "HGMMA" in sass, "the SASS pane shows another target's code after sm_90 was chosen last"
    assert all(count > 0 for _, count in lit), f"stages without the focused line lit after the load: {lit}"
    assert not watch.problems, watch.problems
