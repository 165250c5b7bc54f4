"""Every snippet is found by glob and checked by some test; nothing silently stops running."""

import re
from pathlib import Path

import pytest
from harness import SKIPS, SNIPPETS, all_snippets
from snippet_runner import section_lines

TESTS = Path(__file__).parent
FIXTURE = re.compile(r"""\bsnippet\(\s*["']([^"']+)["']\s*\)""")


def checked_snippets() -> set[str]:
    return {name for path in TESTS.glob("test_*.py") for name in FIXTURE.findall(path.read_text())}


def test_snippets_exist():
    assert all_snippets(), "no snippets found under snippets/"


@pytest.mark.parametrize("name", all_snippets())
def test_snippet_is_checked_by_a_test(name):
    assert name in checked_snippets() or name in SKIPS, (
        f"snippets/{name} is run by no test: add `run = snippet({name!r})` and tests of what it prints "
        f"to tests/test_<chapter>.py, or list it in SKIPS in tests/harness.py with the reason"
    )


@pytest.mark.parametrize("name", all_snippets())
def test_snippet_sections_are_well_formed(name):
    section_lines((SNIPPETS / name).read_text())  # raises on a start without an end


def test_skips_name_real_snippets():
    unknown = set(SKIPS) - set(all_snippets())
    assert not unknown, f"SKIPS in tests/harness.py names snippets that do not exist: {sorted(unknown)}"
    assert all(reason.strip() for reason in SKIPS.values()), "every entry in SKIPS needs its reason"
