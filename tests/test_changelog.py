"""The versions page (scripts/changelog.py): its notable changes are read from the records, drop or fail when the
records stop showing them, its sections come in the changelog's order, and it needs nothing from the directives."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import changelog, records

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
GUARDS = next(item for item in changelog.NOTABLE if item.snippet == "dissecting/dynamo_guards.py")


def copy_records(tree: Path, snippet: str) -> dict[str, Path]:
    """The snippet and its committed CPU records on every release, copied into a throw-away tree; release ->
    the copy's results.json."""
    (tree / "snippets" / snippet).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(records.SNIPPETS / snippet, tree / "snippets" / snippet)
    copies = {}
    for release, root in records.release_roots().items():
        source = records.record_dir(snippet, "cpu", root)
        if (source / records.MANIFEST).is_file():
            target = records.record_dir(snippet, "cpu", records.release_root(release, tree / "outputs"))
            shutil.copytree(source, target)
            copies[release] = target / "files" / "results.json"
    return copies


def edit(path: Path, **changes) -> None:
    results = json.loads(path.read_text())
    results.update(changes)
    path.write_text(json.dumps(results))


def sentences(tree: Path, notable=(GUARDS,)) -> list[str]:
    return [h.sentence for h in changelog.highlights(tree / "outputs", tree / "snippets", notable)]


def test_a_sentence_is_written_from_the_records_and_changes_with_them(tmp_path):
    copies = copy_records(tmp_path, GUARDS.snippet)
    assert len(copies) > 1
    newest = max(copies, key=records.version_key)
    counts = {release: json.loads(path.read_text())["guard_count"] for release, path in copies.items()}
    [before] = sentences(tmp_path)
    assert all(f"{count}" in before for count in counts.values())

    results = json.loads(copies[newest].read_text())
    kinds = {**results["guard_kinds"], "A_KIND_NO_RELEASE_HAS": 7}
    edit(copies[newest], guard_count=results["guard_count"] + 1000, guard_kinds=kinds)
    [after] = sentences(tmp_path)
    assert after != before
    assert f"{results['guard_count'] + 1000} on {newest}" in after
    assert "and `A_KIND_NO_RELEASE_HAS` (7) appear" in after


def test_a_change_the_records_no_longer_show_drops_from_the_page(tmp_path):
    copies = copy_records(tmp_path, GUARDS.snippet)
    oldest = json.loads(copies[min(copies, key=records.version_key)].read_text())
    for path in copies.values():
        edit(path, guard_count=oldest["guard_count"], guard_kinds=oldest["guard_kinds"])
    assert sentences(tmp_path) == []
    [(_, found, why)] = changelog.review(tmp_path / "outputs", tmp_path / "snippets", (GUARDS,))
    assert (found, why) == (None, "its releases' records now agree")


def test_a_change_whose_record_lacks_what_it_reads_fails_the_build(tmp_path):
    copies = copy_records(tmp_path, GUARDS.snippet)
    results = json.loads(copies[records.MAIN].read_text())
    del results["guard_count"]
    copies[records.MAIN].write_text(json.dumps(results))
    with pytest.raises(changelog.ChangelogError, match=f"'{GUARDS.name}'.*torch {records.MAIN}.*guard_count"):
        sentences(tmp_path)


@pytest.mark.parametrize("item", changelog.NOTABLE, ids=[item.name for item in changelog.NOTABLE])
def test_every_notable_change_is_still_in_the_committed_records(item):
    """A change the records stop showing drops from the page silently; this is where it is noticed: remove the
    entry from changelog.NOTABLE, or rewrite it for what the records show now."""
    [(_, found, why)] = changelog.review(notable=(item,))
    if found is None:
        pytest.fail(f"notable change '{item.name}' is no longer shown: {why}. Remove it from changelog.NOTABLE, "
                    f"remake the records it reads, or rewrite it for what they show now", pytrace=False)
    assert found.changes or found.detail, f"{item.name}: nothing is folded under the sentence"


def test_the_highlighted_sentences_carry_no_run_to_run_noise():
    for found in changelog.highlights():
        for noise in ("jax", "JAX", "numpy", "buf", "0x", "Python 3"):
            assert noise not in found.sentence, (found.notable.name, noise, found.sentence)


def demo_tree(tree: Path) -> changelog.Site:
    """Two releases of one snippet: an output that differs, a count that differs, a timing on both."""
    (tree / "snippets" / "demo").mkdir(parents=True)
    source = "# --8<-- [start:main]\nprint('hi')\n# --8<-- [end:main]\n"
    (tree / "snippets" / "demo" / "hello.py").write_text(source)
    for release, stdout, ops in ((records.MAIN, "graph\nadd_ alpha\n", 1), ("2.11.0", "graph\nmul\nadd_\n", 2)):
        folder = records.record_dir("demo/hello.py", "cpu", records.release_root(release, tree / "outputs"))
        (folder / "files").mkdir(parents=True)
        manifest = {"snippet": "snippets/demo/hello.py", "device": "cpu", "exit_status": 0, "duration_s": 1.0,
                    "sha256": records.source_sha256(tree / "snippets" / "demo" / "hello.py"),
                    "command": "python scripts/runner.py", "date": "2026-11-21T12:00:00+00:00",
                    "environment": {"torch": release, "python": "3.11.7", "cpu": "Test CPU", "cpu_count": 2}}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        (folder / "stdout.txt").write_text(stdout)
        (folder / "sections.json").write_text(json.dumps({"main": stdout}))
        timing = {"median_us": 100.0, "iqr_us": 1.0, "process_medians_us": [99.0, 100.0, 101.0]}
        fast = {"median_us": 10.0, "iqr_us": 1.0, "process_medians_us": [9.0, 10.0, 11.0]}
        (folder / "files" / "results.json").write_text(json.dumps({"ops": ops, "eager": timing, "compiled": fast}))
    return changelog.Site(
        tree / "outputs", tree / "snippets", lambda path: f"../{path}",
        shown=[("chapter.md", "A chapter", "demo/hello.py", "main")],
        compares=[("chapter.md", "A chapter", "demo/hello.py", "eager", "compiled")],
        pages=[("chapter.md", "A chapter", "<!-- md:output demo/hello.py:main -->\n")],
        anchor=lambda snippet, section: f"changed-{section}", duration=lambda us: f"{us:g} µs")


def say_ops(values):
    return f"The demo's ops: {changelog.by_release(values, 'ops')}." if len(set(values.values())) > 1 else None


OPS = changelog.Notable("Ops", "demo/hello.py", ("main",), lambda r: r.value("ops"), say_ops)


def test_the_page_reads_as_a_changelog_timings_then_changes_then_the_rest(tmp_path, monkeypatch):
    site = demo_tree(tmp_path)
    monkeypatch.setattr(changelog, "NOTABLE", (OPS,))
    text = changelog.render(site)
    order = ["## Timings, release by release", "## Behaviour changes that matter",
             f"**Ops.** The demo's ops: 2 ops on torch 2.11.0, 1 on {records.MAIN}.", "```diff",
             "## Everything else", "values in the records' `results.json` differ", "### The records compared"]
    places = [text.find(part) for part in order]
    assert -1 not in places and places == sorted(places), list(zip(order, places))
    # The highlighted output's diff and anchor sit under its sentence, and not again among the rest.
    assert text.count('<span id="changed-main"></span>') == 1 and text.count("```diff") == 1
    assert "other outputs differ" not in text


def test_without_a_notable_change_the_diff_is_folded_with_the_rest(tmp_path, monkeypatch):
    site = demo_tree(tmp_path)
    monkeypatch.setattr(changelog, "NOTABLE", ())
    text = changelog.render(site)
    assert "## Behaviour changes that matter" not in text
    assert '??? abstract "1 other output differs between consecutive releases"' in text
    assert '    <span id="changed-main"></span>' in text


def test_the_changelog_does_not_import_the_directives():
    tree = ast.parse((ROOT / "scripts" / "changelog.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module or "" for node in ast.walk(tree)
                                            if isinstance(node, ast.ImportFrom)}
    assert not any("directives" in name or "mkdocs" in name for name in imported), imported
    loaded = subprocess.run([sys.executable, "-c", "import sys, scripts.changelog; print(sorted(sys.modules))"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "scripts.directives" not in loaded and "'mkdocs" not in loaded


def test_a_release_recorded_on_another_machine_is_not_judged_against_it(tmp_path):
    """Two runners that both say "AMD EPYC" but differ in L1d are two machines: a release whose record came from the
    other one is listed as such, never judged as a release that got faster or slower."""
    from tests.test_directives import SNIPPET, SOURCE, timing, write_record

    (tmp_path / "snippets" / SNIPPET).parent.mkdir(parents=True)
    (tmp_path / "snippets" / SNIPPET).write_text(SOURCE)
    here = write_record(tmp_path, "cpu", results={"eager": timing(100, 110, 120), "compiled": timing(50, 55, 60)})
    there = write_record(tmp_path, "cpu", release="2.11.0",
                         results={"eager": timing(200, 220, 240), "compiled": timing(200, 220, 240)})
    for folder, l1d in ((here, 32768), (there, 49152)):
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["environment"].update(cpu="AMD EPYC", caches={"L1d": l1d, "L2": 2**20, "L3": 2**25})
        (folder / "manifest.json").write_text(json.dumps(manifest))
    compares = [("chapter.md", "A chapter", SNIPPET, "eager", "compiled")]
    (row,) = changelog.collect(compares, tmp_path / "outputs", tmp_path / "snippets")
    assert list(row.by_release) == [records.MAIN] and row.machine == "AMD EPYC, L1d 32 KiB, L2 1 MiB, L3 32 MiB"
    assert row.elsewhere == {"2.11.0": "AMD EPYC, L1d 48 KiB, L2 1 MiB, L3 32 MiB"}
    # The same runner on both: judged release by release.
    manifest = json.loads((there / "manifest.json").read_text())
    manifest["environment"]["caches"]["L1d"] = 32768
    (there / "manifest.json").write_text(json.dumps(manifest))
    (row,) = changelog.collect(compares, tmp_path / "outputs", tmp_path / "snippets")
    assert set(row.by_release) == {records.MAIN, "2.11.0"} and not row.elsewhere


def test_one_timing_at_two_sizes_is_a_sweep_and_is_not_judged():
    """Issue 51: the versions page judged "sweep.timing.6 against sweep.timing.0: 10257x slower" as if it were a
    compile gain."""
    def row(a, b):
        return changelog.Timed("p.md", "P", "s.py", a, b)
    assert changelog.sizes_of_one_timing(row("sweep.timing.0", "sweep.timing.6"))
    assert changelog.sizes_of_one_timing(row("compile.whole.0", "compile.whole.3"))
    assert not changelog.sizes_of_one_timing(row("timing.eager", "timing.compiled"))
    assert not changelog.sizes_of_one_timing(row("regional.3", "eager.3"))
    assert not changelog.sizes_of_one_timing(row("timing.0", "other.timing.6"))



def test_a_row_reads_in_the_words_of_the_page_that_makes_the_comparison():
    row = changelog.Timed("optimizations.md", "Kernel fusion", "optimizations/fusion.py", "timing.eager",
                          "timing.compiled")
    assert changelog.short(row) == "fusion: compiled against eager"
    row.work_a, row.work_b = "complex_activation(float32[64])", "compiled complex_activation(float32[64])"
    assert changelog.short(row) == "fusion: compiled complex_activation against complex_activation"
    row.work_b = "complex_activation(float32[4096])"  # one function at two sizes: the keys tell them apart
    assert changelog.short(row) == "fusion: compiled against eager"
    row.what = "Six element-wise ops, compiled"
    assert changelog.short(row) == "Six element-wise ops, compiled"
