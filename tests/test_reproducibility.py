"""scripts/reproducibility.py: which comparisons the pages make, and the report over regenerations (on
throw-away records; the regenerations themselves are a benchmark, never run by the suite)."""

import json

from scripts import reproducibility


def write(folder, snippet, results):
    files = folder / "cpu" / snippet.removesuffix(".py") / "files"
    files.mkdir(parents=True)
    (files / "results.json").write_text(json.dumps(results))


def pooled(*medians):
    return {"median_us": sorted(medians)[len(medians) // 2], "process_medians_us": list(medians)}


def test_it_finds_every_cpu_comparison_and_skips_the_cuda_ones(tmp_path):
    (tmp_path / "a.md").write_text("x <!-- md:compare demo/t.py timing.eager timing.compiled device=cpu -->\n"
                                   "<!-- md:compare demo/t.py timing.eager\n   timing.compiled device=cuda -->")
    assert reproducibility.comparisons(tmp_path) == [
        {"page": "a.md", "snippet": "demo/t.py", "a": "timing.eager", "b": "timing.compiled"}]


def test_the_report_flags_a_verdict_that_changes_direction_or_a_ratio_that_moves(tmp_path):
    runs = [tmp_path / "run-1", tmp_path / "run-2"]
    write(runs[0], "demo/t.py", {"steady": {"a": pooled(200, 210, 190), "b": pooled(100, 100, 100)},
                                 "flips": {"a": pooled(100, 100, 100), "b": pooled(60, 62, 61)}})
    write(runs[1], "demo/t.py", {"steady": {"a": pooled(205, 200, 195), "b": pooled(100, 101, 99)},
                                 "flips": {"a": pooled(100, 100, 100), "b": pooled(140, 145, 141)}})
    rows = [{"page": "p.md", "snippet": "demo/t.py", "a": f"{name}.a", "b": f"{name}.b"}
            for name in ("steady", "flips")]
    table = reproducibility.report(rows, runs)
    steady, flips = (line for line in table.splitlines() if line.startswith("| p.md"))
    assert "2.0× faster" in steady and steady.endswith("| held |")
    assert "faster" in flips and "slower" in flips and flips.endswith("| **missed** |")
    assert "1 of 2 comparisons held" in table
