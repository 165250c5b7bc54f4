"""A behaviour change on the versions page is credited to torch alone only when the Python beside it stayed the
same: where two consecutive releases' records ran on different Pythons and what a sentence states differs
between them, the sentence says that Python changed too (scripts/changelog.py, python_changed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_changelog import GUARDS, copy_records, sentences

from scripts import changelog, records, releases


def pythons_apart(item: changelog.Notable, found) -> list[tuple[str, str]]:
    """(older Python, newer Python) for each pair of consecutive records whose Pythons differ and whose stated
    values differ."""
    values = {record.release: item.read(record) for record in found}
    return [(a.environment["python"], b.environment["python"]) for a, b in zip(found, found[1:])
            if a.environment.get("python") != b.environment.get("python")
            and item.stated(values[a.release]) != item.stated(values[b.release])]


def test_every_sentence_names_the_python_that_changed_with_torch():
    for found in changelog.highlights():
        for a, b in pythons_apart(found.notable, found.found):
            assert f"Python changed too ({a} → {b})" in found.sentence, (found.notable.name, found.sentence)


def set_python(results: Path, version: str) -> None:
    manifest = results.parents[1] / "manifest.json"
    data = json.loads(manifest.read_text())
    data["environment"]["python"] = version
    manifest.write_text(json.dumps(data))


def test_the_python_clause_follows_the_manifests(tmp_path):
    copies = copy_records(tmp_path, GUARDS.snippet)
    assert len(copies) > 1
    for path in copies.values():  # one Python everywhere: the change is torch's alone
        set_python(path, "3.11.7")
    [same] = sentences(tmp_path)
    assert "Python" not in same
    oldest, following = sorted(copies, key=records.version_key)[:2]
    guards = [json.loads(copies[r].read_text())["guard_kinds"] for r in (oldest, following)]
    set_python(copies[oldest], "3.99.0")
    [other] = sentences(tmp_path)
    if guards[0] != guards[1]:  # the sentence states a change between these two records: Python's is named
        assert f"between torch {oldest} and {following}, python changed too (3.99.0 → 3.11.7)" in other.lower()
    else:
        assert other == same


def test_the_pythons_a_chapter_names_for_the_guard_records_are_the_manifests():
    """dynamo.md says which Python torch 2.11's guard record and the later ones ran on: the manifests hold it."""
    text = (records.ROOT / "docs" / "dissecting" / "dynamo.md").read_text()
    said = re.search(r"ran on Python (\d+\.\d+) and the\s+later ones on (\d+\.\d+)", text)
    assert said, "dynamo.md no longer names the Pythons of the guard records: update this test"
    found = sorted(releases.comparable(GUARDS.snippet, "cpu"), key=lambda r: records.version_key(r.release))
    minor = {r.release: ".".join(r.environment["python"].split(".")[:2]) for r in found}
    assert minor[found[0].release] == said.group(1) and found[0].release.startswith("2.11")
    assert {minor[r.release] for r in found[1:]} == {said.group(2)}
