"""Every chapter fact, checked on a fresh CPU run of its snippet and on every committed record."""

from __future__ import annotations

import sys

import pytest
from facts import SKIPS, load

from scripts import records, runner

CHECKS = load()
SNIPPETS = records.find_snippets()
COMMITTED = [r for r in records.all_records() if r.snippet in CHECKS]


def test_every_snippet_has_a_check():
    unchecked = [s for s in SNIPPETS if s not in CHECKS and s not in SKIPS]
    assert not unchecked, (
        f"no check for {', '.join(unchecked)}: add `@check('<snippet>')` to tests/facts/<chapter>.py, "
        f"or list it in SKIPS in tests/facts/__init__.py with the reason"
    )
    assert not set(CHECKS) - set(SNIPPETS), f"checks for snippets that do not exist: {set(CHECKS) - set(SNIPPETS)}"
    assert all(reason.strip() for reason in SKIPS.values()), "every entry in SKIPS needs its reason"


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s in CHECKS])
def test_fresh_run(snippet, tmp_path):
    if snippet.startswith("jax/"):
        pytest.importorskip("jax", reason="JAX is the optional jax extra (the README's test command installs it)")
    try:
        runner.run(records.SNIPPETS / snippet, tmp_path)
    finally:
        if "torch" in sys.modules:  # forget compiled graphs: the next snippet compiles as it would alone
            sys.modules["torch"]._dynamo.reset()
    run = records.Record(snippet, "cpu", tmp_path)
    run.device = run.results.get("device", "cpu")
    CHECKS[snippet](run)


@pytest.mark.parametrize("record", COMMITTED, ids=[f"{r.device}/{r.snippet}" for r in COMMITTED])
def test_committed_record(record):
    try:
        CHECKS[record.snippet](record)
    except AssertionError as error:
        raise AssertionError(f"{record.where()} contradicts its chapter: {error}") from None
