"""A behaviour change on the versions page is credited to torch alone only when the Python beside it stayed the
same: where two consecutive releases' records ran on different Pythons and what a sentence states differs
between them, the sentence says that Python changed too (scripts/changelog.py, python_changed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_changelog import GUARDS, copy_records, sentences

from scripts import changelog, records


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


def test_the_pythons_a_chapter_names_for_torch_2_11_and_later_are_the_manifests():
    """A chapter that says torch 2.11's record "ran on Python X, the later ones on Y" (dynamo.md, training.md) says
    what every CPU manifest of those releases holds."""
    said = [(page, m.group(1), m.group(2)) for page in sorted((records.ROOT / "docs").rglob("*.md"))
            for m in re.finditer(r"ran on Python (\d+\.\d+),? (?:and )?the\s+later ones on (\d+\.\d+)",
                                 page.read_text())]
    assert {page.name for page, _, _ in said} >= {"dynamo.md", "training.md"}
    minor = {}
    for release, root in records.release_roots().items():
        for record in records.find_records("cpu", root):
            minor.setdefault(release, set()).add(".".join(record.environment["python"].split(".")[:2]))
    older = [r for r in minor if r.startswith("2.11")]
    later = [r for r in minor if records.version_key(r) > records.version_key("2.11.0")]
    for page, old, new in said:
        assert all(minor[r] == {old} for r in older) and older, (page.name, old, minor)
        assert all(minor[r] == {new} for r in later) and later, (page.name, new, minor)
