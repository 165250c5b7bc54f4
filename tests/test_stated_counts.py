"""A count that a page states in its own words ("six kernels", "10 rounds") is held by something that can fail.

Prose drifts from its snippet: a page said "25 blocks" where the code said rounds=10, and "19 guards for this
three-line function" of a function the record never measured. So every count a page types next to a counted
thing is listed in tests/stated_counts.py with what holds it: the snippet check that asserts that number (the
check's source must hold it as a literal), a setting of the site's method in scripts/records.py, or a fact of
the hardware or the language that no record changes, with its reason. A number a record measured is an
`md:value` instead, which this test never sees.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from stated_counts import HELD

from scripts import chapters, directives, records

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

DOCS = records.ROOT / "docs"
FACTS = Path(__file__).parent / "facts"
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "eleven": 11, "twelve": 12}
NOUNS = ("blocks", "rounds", "guards", "guard checks", "threads", "processes", "fresh processes", "kernels",
         "ops", "graphs", "graph breaks", "breaks", "recompiles", "recompilations", "compiles", "instructions",
         "lines", "calls", "nodes", "buffers", "loads", "stores", "fusions", "launches", "warps", "stages")
STATED = re.compile(r"\b(?P<number>" + "|".join(WORDS) + r"|\d[\d,]*)\s+(?P<noun>"
                    + "|".join(sorted(map(re.escape, NOUNS), key=len, reverse=True)) + r")\b", re.IGNORECASE)


def prose(text: str) -> str:
    """A page's own words: no code blocks, no directives or HTML comments, no inline code, no tags."""
    out = "".join(part for is_code, part in directives.fenced_segments(text) if not is_code)
    out = re.sub(r"<!--.*?-->", " ", out, flags=re.DOTALL)
    out = re.sub(r"(`+).*?\1", " ", out, flags=re.DOTALL)
    return re.sub(r"<[^>]+>", " ", out)


def stated(page: Path) -> list[str]:
    """Each count-and-noun the page types, lower-cased, once each."""
    found = (f"{m['number']} {m['noun']}".lower() for m in STATED.finditer(prose(page.read_text())))
    return list(dict.fromkeys(" ".join(phrase.split()) for phrase in found))


def number(phrase: str) -> int:
    word = phrase.split()[0]
    return WORDS.get(word) or int(word.replace(",", ""))


def literals(check: Path) -> set[int]:
    return {n.value for n in ast.walk(ast.parse(check.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool)}


PAGES = sorted(chapters.pages(DOCS))


@pytest.mark.parametrize("page", PAGES)
def test_every_count_a_page_types_is_held(page):
    held = HELD.get(page, {})
    found = stated(DOCS / page)
    unheld = [phrase for phrase in found if phrase not in held]
    assert not unheld, (
        f"docs/{page} states {', '.join(repr(p) for p in unheld)}: make each an md:value from the record, "
        f"list it in tests/stated_counts.py with the check that asserts it (or the fact that makes it true), or "
        f"reword it so that it states no count")
    stale = [phrase for phrase in held if phrase not in found]
    assert not stale, f"tests/stated_counts.py lists {stale} for docs/{page}, which no longer says so"
    for phrase, how in held.items():
        if how.startswith("facts/"):
            check = FACTS / how.removeprefix("facts/")
            assert check.is_file(), f"{page}: {phrase!r} is held by tests/{how}, which does not exist"
            assert number(phrase) in literals(check), (
                f"docs/{page} says {phrase!r}, held by tests/{how}, but that check asserts no {number(phrase)}")
        elif how.startswith("records."):  # a setting of the site's method, such as records.PROCESSES
            assert getattr(records, how.removeprefix("records."), None) == number(phrase), (
                f"docs/{page} says {phrase!r}, but scripts/{how.replace('.', '.py: ', 1)} is not {number(phrase)}")
        else:
            assert how.startswith("fact: ") and len(how) > 12, f"{page}: {phrase!r} needs a check or a reason"
