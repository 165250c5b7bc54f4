"""Search, as a reader uses it: each query of tests/test_search.py's CANONICAL typed into the built site's search
box lands first on the section that teaches it.

Material's search shows one result per page, the page's best sections under it: "first" is the first page, and,
where a query names a section, the first section under it.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import unquote_plus

import pytest
import run_cache
import test_search
from test_browser import browser, open_page, page_key, server  # noqa: F401 (fixtures)
from test_search import CANONICAL, NOT_SEARCHED


@pytest.fixture(scope="module")
def home(server, browser):  # noqa: F811 (the fixtures)
    """The home page, opened at the first query that runs and kept for the next, as a reader searches again
    without reloading: the search index is built once, not once a query (a query cost 2 to 20 s with a page of
    its own). Opened only if a query runs: a warm suite keeps them all."""
    opened = []

    def page():
        if not opened:
            opened.append(open_page(browser, server[0], ""))
        return opened[0][1]

    yield page
    if opened:
        opened[0][0].close()


def results(page, query: str) -> list[list[str]]:
    """Type the query into the search box, emptied first; each result's links (the page, then its sections), once
    they stop changing. Search runs in a worker, once per key: on a busy machine the first results shown can be
    those of the query's first letters ("max" for "max-autotune"), or still the last query's."""
    box = page.locator("input.md-search__input")
    box.click()
    if box.input_value():  # the last query's: erased by keys, so that its results go too
        page.keyboard.press("Control+A")
        page.keyboard.press("Backspace")
        page.locator(".md-search-result__item").first.wait_for(state="detached", timeout=15_000)
    page.keyboard.type(query, delay=20)  # Material searches on key events, which fill() skips
    page.locator(".md-search-result__item").first.wait_for(timeout=15_000)
    found, previous = None, []
    # In the ?h= of the first result's links once they are this query's. Material fills a link's ?h= with the
    # query's terms that its own entry matched: the page's entry (its title and opening text) often matches
    # none of them, the section that teaches the query usually all.
    last_term = re.split(r"[^0-9a-z]+", query.lower().strip())[-1]
    for _ in range(30):
        found = page.evaluate(
            """() => Array.from(document.querySelectorAll('.md-search-result__item')).map(item =>
                 Array.from(item.querySelectorAll('a.md-search-result__link')).map(a => a.getAttribute('href')))"""
        )
        if found == previous and found and found[0] and last_term in unquote_plus(" ".join(found[0])).lower():
            break
        previous = found
        page.wait_for_timeout(500)
    return found


def location(href: str, base: str) -> str:
    """A result's link as a site path with its anchor: `levers/#mode-named-option-sets`."""
    path, _, anchor = href.partition("#")
    path = path.split("?")[0].removeprefix(base + "/").removeprefix(base)
    return path + (f"#{anchor}" if anchor else "")


@pytest.mark.parametrize("query", list(CANONICAL))
def test_search_lands_on_the_section_that_teaches_it(server, home, query):  # noqa: F811 (the fixtures)
    base, site = server
    # Kept while the home page, every file it loads, the search index and these tests are as they were when it
    # passed here (tests/run_cache.py): a warm suite types no query again (each costs a browser page and a search).
    run_key = run_cache.key(page_key(site, "", __file__, test_search.__file__),
                            (site / "search" / "search_index.json").read_text(), query)
    name = hashlib.sha256(query.encode()).hexdigest()[:16]
    if run_cache.kept("search-queries", name, run_key):
        pytest.skip(f"the search index, the home page and this test are as they were when '{query}' passed on "
                    f"this machine (.cache/runs/; {run_cache.RERUN}=1 checks it again)")
    found = results(home(), query)
    first = [location(href, base) for href in found[0]]
    shown = [[location(href, base) for href in item] for item in found]
    page_, section = first[0].split("#")[0], (first[1] if len(first) > 1 else first[0])
    right = [want for want in CANONICAL[query]
             if want.split("#")[0] == page_ and ("#" not in want or section == want)]
    assert right, f"'{query}' lands first on {section} (page {page_}): {shown[:3]}"
    links = [link for item in shown for link in item]
    assert not [link for link in links if "notebooks/" in link], f"notebooks in the results: {links}"
    assert not [link for link in links if link.startswith(NOT_SEARCHED)], f"the versions page in the results: {links}"
    run_cache.keep("search-queries", name, run_key)
