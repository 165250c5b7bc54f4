"""Every chapter has the same frame: it says at its start which regime its example is in, and it ends with
three takeaways and a quiz that asks for at least one calculation (issue 40, items 1 and 4).

The chapters are the pages that show snippets (scripts.chapters.chapter_pages()), in the order mkdocs.yml's
nav lists them. What each check reads:

- **Takeaways**: the section under the heading `## Takeaways`, up to the next `## ` heading; its top-level
  bullets are the lines that start, unindented, with `- ` or `* `. There must be exactly three.
- **Calculation**: a folded quiz question marked with the extra class `calculation`
  (`??? question calculation "..."`) inside `## Quiz`. Folded means `???`, not `???+` or `!!!`.
- **Regime line**: every chapter after "Compute, memory, overhead" in the nav links to that page in its
  *opening*: the first OPENING_LINES non-blank lines after the title (front matter and HTML comments left
  out), cut at the first fenced code block, content tab, admonition or snippet output, whichever comes
  first. About 25 lines of prose is what the first screen at 1280 × 900 shows under the header. The paragraph
  that holds the link names a regime ("compute-bound", "memory-bound", "overhead-bound") or says what the
  regime is of ("regime").
"""

from __future__ import annotations

import re

import pytest

from scripts import chapters as model
from scripts import records

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

DOCS = records.ROOT / "docs"
REGIMES = "dissecting/regimes.md"
OPENING_LINES = 25
TAKEAWAYS = "## Takeaways"
QUIZ = "## Quiz"
BULLET = re.compile(r"^[-*][ \t]+\S")
CALCULATION = re.compile(r"""^\?\?\?[ \t]+question(?:[ \t]+[\w-]+)*[ \t]+calculation"""
                         r"""(?:[ \t]+[\w-]+)*[ \t]+"[^"]+"\s*$""")
REGIME_LINK = re.compile(r"\]\((?:\.\./)*(?:dissecting/)?regimes\.md(?:#[\w-]+)?\)")
REGIME_WORD = re.compile(r"\b(?:compute|memory|overhead)-bound\b|\bregimes?\b", re.IGNORECASE)
LINK_TARGET = re.compile(r"\]\([^)]*\)")
OPENING_ENDS = re.compile(r"^\s*(?:```|~~~|===[ !+]|!!!|\?\?\?|<!-- md:output|--8<--)")


def chapters() -> list[str]:
    order = model.nav()
    pages = [page.relative_to(DOCS).as_posix() for page in model.chapter_pages()]
    missing = [page for page in pages if page not in order]
    assert not missing, f"chapters not in mkdocs.yml's nav: {missing}"
    return sorted(pages, key=order.index)


def section(text: str, heading: str) -> list[str] | None:
    """The lines under `heading` (a level-2 heading line), up to the next level-2 heading; None if absent."""
    lines = text.splitlines()
    if heading not in lines:
        return None
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def takeaway_problem(text: str) -> str | None:
    body = section(text, TAKEAWAYS)
    if body is None:
        return f"no '{TAKEAWAYS}' section"
    bullets = [line for line in body if BULLET.match(line)]
    if len(bullets) != 3:
        return f"'{TAKEAWAYS}' has {len(bullets)} top-level bullets, not 3"
    return None


def calculation_problem(text: str) -> str | None:
    body = section(text, QUIZ)
    if body is None:
        return f"no '{QUIZ}' section"
    if not any(CALCULATION.match(line) for line in body):
        return f"no folded '??? question calculation \"...\"' in '{QUIZ}'"
    return None


def opening(text: str) -> list[str]:
    """The first OPENING_LINES non-blank prose lines after the title, up to the first code, tab, admonition
    or output; paragraphs kept apart by empty strings."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    text = re.sub(r"<!--(?! md:).*?-->", "", text, flags=re.DOTALL)
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("# "))
    out: list[str] = []
    for line in lines[title + 1:]:
        if OPENING_ENDS.match(line) or sum(1 for kept in out if kept) >= OPENING_LINES:
            break
        out.append(line.strip())
    return out


def regime_problem(text: str) -> str | None:
    paragraphs = " ".join(line if line else "\n" for line in opening(text)).split("\n")
    linked = [p for p in paragraphs if REGIME_LINK.search(p)]
    if not linked:
        return f"no link to {REGIMES} in the first {OPENING_LINES} lines of prose after the title"
    if not any(REGIME_WORD.search(LINK_TARGET.sub("]", p)) for p in linked):  # the words, not an anchor
        return f"the paragraph that links to {REGIMES} names no regime"
    return None


CHAPTERS = chapters()
AFTER_REGIMES = CHAPTERS[CHAPTERS.index(REGIMES) + 1:]


def test_regimes_comes_right_after_eager_mode():
    assert CHAPTERS[CHAPTERS.index(REGIMES) - 1] == "eager-mode.md", CHAPTERS


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_ends_with_three_takeaways_and_a_calculation(page):
    text = (DOCS / page).read_text()
    problems = [p for p in (takeaway_problem(text), calculation_problem(text)) if p]
    lines = text.splitlines()
    if TAKEAWAYS in lines and QUIZ in lines and lines.index(TAKEAWAYS) > lines.index(QUIZ):
        problems.append(f"'{TAKEAWAYS}' comes after '{QUIZ}'")
    assert not problems, f"docs/{page}: " + "; ".join(problems)


@pytest.mark.parametrize("page", AFTER_REGIMES)
def test_chapter_says_its_regime_at_the_start(page):
    problem = regime_problem((DOCS / page).read_text())
    assert problem is None, f"docs/{page}: {problem}"


# Each check can fail: a page that breaks it in one way, and one that passes.
GOOD = """---
search:
  boost: 2
---

# A chapter

What it is about, [memory-bound](dissecting/regimes.md#memory-bound-bandwidth-is-the-limit): few FLOPs a byte.

```python
x = 1
```

## Takeaways

- one
  continued
- two
- three

## Quiz

??? question calculation "How long?"

    Long.
"""


def test_the_checks_pass_a_good_page():
    assert (takeaway_problem(GOOD), calculation_problem(GOOD), regime_problem(GOOD)) == (None, None, None)


@pytest.mark.parametrize("bad, check", [
    (GOOD.replace("## Takeaways", "## Summary"), takeaway_problem),
    (GOOD.replace("- three\n", ""), takeaway_problem),
    (GOOD.replace("- three\n", "- three\n- four\n"), takeaway_problem),
    (GOOD.replace("??? question calculation", "??? question"), calculation_problem),
    (GOOD.replace("??? question calculation", "???+ question calculation"), calculation_problem),
    (GOOD.replace("## Quiz", "## Questions"), calculation_problem),
    (GOOD.replace("dissecting/regimes.md", "dissecting/graphs.md"), regime_problem),
    (GOOD.replace("memory-bound](", "this](").replace("few FLOPs", "see"), regime_problem),
    (GOOD.replace("What it is about, [", "```python\ny = 2\n```\n\nWhat it is about, ["), regime_problem),
    (GOOD.replace("What it is about", "line\n" * OPENING_LINES + "What it is about"), regime_problem),
])
def test_each_check_can_fail(bad, check):
    assert check(bad) is not None
