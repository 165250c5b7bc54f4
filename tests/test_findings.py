"""The findings' GPU model (scripts/findings.py, md:findings): a row shows the model of its own workload and no
other, labelled as a model, and a phone gets the chart drawn for its column and lists instead of tables."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from scripts import directives, findings, plots, records, render

SNIPPET = "demo/op.py"
SOURCE = "print('hi')\n"
WORK = "compiled op(float32[1024])"
GPUS = {"h100": {"name": "H100 SXM", "tb_per_s": 3.35, "fp32_tflops": 67, "tf32_tflops": 494},
        "b200": {"name": "B200", "tb_per_s": 8.0, "fp32_tflops": 80, "tf32_tflops": 1100}}


def timing(work: str, *medians: float) -> dict:
    return {"median_us": sorted(medians)[len(medians) // 2], "iqr_us": 1.0, "process_medians_us": list(medians),
            "work": work}


def write(tree: Path, snippet: str, results: dict) -> None:
    """A CPU record of snippets/<snippet> made by the main torch release."""
    (tree / "snippets" / snippet).parent.mkdir(parents=True, exist_ok=True)
    (tree / "snippets" / snippet).write_text(SOURCE)
    folder = records.record_dir(snippet, "cpu", records.release_root(records.MAIN, tree / "outputs"))
    (folder / "files").mkdir(parents=True, exist_ok=True)
    manifest = {"snippet": f"snippets/{snippet}", "sha256": hashlib.sha256(SOURCE.encode()).hexdigest(),
                "device": "cpu", "command": f"python scripts/runner.py snippets/{snippet} <record>", "exit_status": 0,
                "duration_s": 1.0, "date": "2026-11-25T12:00:00+00:00",
                "environment": {"torch": records.MAIN, "python": "3.11.7", "cpu": "Test CPU", "cpu_count": 2}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "stdout.txt").write_text("hi\n")
    (folder / "sections.json").write_text(json.dumps({"main": "hi\n"}))
    (folder / "files" / "results.json").write_text(json.dumps(results))


def side(work: str, us: dict[str, float], kernels: int) -> dict:
    return {"work": work, "kernels": [{"op": "k", "bytes": 8, "flops": 0, "tf32": False}] * kernels,
            "bytes": 8 * kernels, "flops": 0, **{f"{g}_us": t for g, t in us.items()}}


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setattr(render, "FIGURE_CACHE", tmp_path / "figures")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(
        f'# A chapter\n\nCompiled is <!-- md:compare {SNIPPET} eager compiled device=cpu what="a demo op" '
        f'why="one kernel instead of six" -->.\n')
    write(tmp_path, SNIPPET, {"eager": timing("op(float32[1024])", 100, 110, 120),
                              "compiled": timing(WORK, 20, 22, 24)})
    return render.Page("guide.md", "guide/", snippets=tmp_path / "snippets", outputs=tmp_path / "outputs",
                           docs=docs)


def model(tree: Path, compiled_work: str = WORK) -> None:
    write(tree, findings.MODEL, {"gpus": GPUS, "timed": {SNIPPET: {
        "eager": side("op(float32[1024])", {"h100": 6.0, "b200": 3.0}, 6),
        "compiled": side(compiled_work, {"h100": 1.2, "b200": 0.5}, 1)}}})


def test_a_row_shows_the_model_of_its_own_workload_labelled_as_a_model(page):
    text = render.expand("<!-- md:findings -->\n", page)
    assert "GPU model" not in text  # no model record: no model, and nothing claims one
    model(page.outputs.parent)
    text = render.expand("<!-- md:findings -->\n", page)
    assert "**GPU model, not measured.**" in text
    (row,) = [line for line in text.splitlines() if line.startswith("| [a demo op]") and "→" in line]
    assert row == "| [a demo op](chapter.md) | 6 → 1 | 6 → 1.2 | 5.00 | 6.00 |"
    assert "H100 SXM 5.00, B200 6.00" in text  # the phone's list says the same


def test_a_model_of_another_size_is_not_shown(page):
    model(page.outputs.parent, compiled_work="compiled op(float32[2048])")
    (found,) = findings.collect(directives.site_directives(page.docs, "compare"), page.outputs, page.snippets)
    assert found.model is None
    assert "GPU model" not in render.expand("<!-- md:findings -->\n", page)


def test_a_phone_gets_the_chart_drawn_for_its_column_and_lists(page):
    text = render.expand("<!-- md:findings -->\n", page)
    assert re.search(r'<span class="mlc-narrow"><a [^>]*><img src="[^"]*phone-findings-', text)
    assert '<div class="mlc-narrow" markdown>\n\n- **[a demo op](chapter.md)**: 5.0× faster' in text
    found = findings.collect(directives.site_directives(page.docs, "compare"), page.outputs, page.snippets)
    colors = plots.PALETTES["light"]
    svg = findings.chart(found, colors, plots.style(colors), narrow=True)
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg).group(1))
    assert width_pt <= plots.NARROW_PT


# Timings a CUDA record holds as a reference for others, not as one side of a comparison: each with where the
# page shows it.
REFERENCES = {
    ("optimizations/fusion.py", "timing.copy"): "the copy that the bandwidths are set against (optimizations.md)",
    ("dissecting/regimes.py", "timing.copy"): "the memory roof: the copy's GB/s (regimes.md, compute-bound)",
    ("dissecting/regimes.py", "timing.matmul"): "the compute roof: the matmul's TFLOP/s (regimes.md)",
    ("dissecting/regimes.py", "timing.add"): "the sweep's largest x + y (sweep.timing.6), the roofline's point",
    ("dissecting/regimes.py", "timing.add_tiny"): "the sweep's smallest x + y (sweep.timing.0), the roofline's point",
}


def test_every_timed_comparison_in_a_cuda_record_is_a_row_of_the_findings():
    """None selected: each pair of timings that a page compares, on any device, is shown with what the newest
    CUDA record holding both measured: a compiled-against-eager pair as a row of the findings, any other pair
    (sizes of one op, say) by its own page with device=cuda; and every timing of a CUDA record is one side of
    such a pair or a reference the page names."""
    docs = records.ROOT / "docs"
    compares = directives.site_directives(docs, "compare")
    found = findings.collect(compares)
    rows = {(f.snippet, f.key_a, f.key_b): f for f in found}
    pairs: dict[str, set[tuple[str, str]]] = {}
    on_gpu: set[tuple[str, str, str]] = set()
    for _, _, d in compares:
        pairs.setdefault(d.args[0], set()).add((d.args[1], d.args[2]))
        if d.options.get("device", "cuda") == "cuda":
            on_gpu.add(tuple(d.args[:3]))
    checked, missing = 0, []
    for snippet in records.find_snippets():
        made = [r for r in records.releases_of(snippet, "cuda") if r.state != "corrupt"]
        timed = {key: t for record in made for key, t in records.timings_in(record.results)}
        for key_a, key_b in sorted(pairs.get(snippet, set())):
            if not {key_a, key_b} <= timed.keys():
                continue
            checked += 1
            compiled = any(findings.is_compiled(k, timed[k].get("work", "")) for k in (key_a, key_b))
            row = rows.get((snippet, key_a, key_b))
            if compiled and (row is None or row.gpu is None):
                missing.append(f"{snippet}: a CUDA record compares {key_a} with {key_b} (compiled against eager) "
                               f"and the findings do not show it: give the md:compare a what=")
            elif not compiled and (snippet, key_a, key_b) not in on_gpu:
                missing.append(f"{snippet}: a CUDA record holds {key_a} and {key_b}, which a page compares, and no "
                               f"page shows them compared on the GPU (md:compare ... device=cuda)")
        compared = {key for pair in pairs.get(snippet, set()) for key in pair}
        missing += [f"{snippet}: its CUDA record times {key} and no page compares it (md:compare ... device=cuda)"
                    for key in sorted(timed.keys() - compared) if (snippet, key) not in REFERENCES]
    assert not missing, "\n".join(missing)
    assert checked >= 10
    for snippet, key in REFERENCES:  # the table names timings that a record still holds
        assert any(key == k for r in records.releases_of(snippet, "cuda") for k, _ in records.timings_in(r.results))


def test_a_comparison_measured_on_a_gpu_only_is_a_row_with_no_cpu_columns(page):
    (page.docs / "gpu.md").write_text(
        f'# On a GPU\n\nIt was <!-- md:compare {SNIPPET} eager compiled device=cuda what="a GPU-only demo" -->.\n')
    folder = records.record_dir(SNIPPET, "cuda", records.release_root("2.11.0", page.outputs))
    cpu = records.record_dir(SNIPPET, "cpu", records.release_root(records.MAIN, page.outputs))
    import shutil

    shutil.copytree(cpu, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(device="cuda", environment={**manifest["environment"], "torch": "2.11.0", "gpu": "Test GPU"})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (page.docs / "chapter.md").write_text("# A chapter\n\nNo comparison here.\n")
    found = findings.collect(directives.site_directives(page.docs, "compare"), page.outputs, page.snippets)
    (row,) = found
    assert not row.on_cpu and row.gpu.hardware == "Test GPU" and row.gpu.release == "2.11.0"
    assert row.gpu.words == "5.0× faster"
    (page.docs / "chapter.md").write_text(
        f'# A chapter\n\nCompiled is <!-- md:compare {SNIPPET} eager compiled device=cpu what="a demo op" -->.\n')
    (row,) = findings.collect(directives.site_directives(page.docs, "compare"), page.outputs, page.snippets)
    assert row.on_cpu and row.words == "5.0× faster" and row.gpu.words == "5.0× faster"
    text = render.expand("<!-- md:findings -->\n", page)
    assert "5.0× faster (5.00; 5.00–5.00, 3 processes) on the Test GPU, torch 2.11.0" in text


def test_a_side_under_the_measured_overheads_is_overhead_bound_not_given_a_ratio():
    costs = findings.Overheads("NVIDIA H200", "2.11.0", eager_op_us=8.0, launch_us=1.0, compiled_call_us=30.0)
    assert costs.floor(6, compiled=False) == 48.0 and costs.floor(3, compiled=True) == 32.0
    roof = {"h100": (400.0, 80.0), "h200": (40.0, 20.0)}  # six eager kernels against one compiled
    model = findings.Modelled((6, 1), (0, 0), roof, {"h100": "H100", "h200": "H200"}, (False, True), costs)
    assert model.cell("h100") == "5.00"  # 400 >= 48 and 80 >= 30: the roofs decide
    assert model.cell("h200") == "overhead-bound"  # eager's 40 us at the roof is under six ops' 48 us
    assert not findings.Modelled((6, 1), (0, 0), roof, {"h200": "H200"}).overhead_bound("h200")  # none measured


def test_the_overheads_come_from_the_newest_cuda_record_of_the_chain():
    costs = findings.overheads()
    record = records.releases_of(findings.OVERHEADS, "cuda")[0]
    ops = record.value("n_ops")
    assert costs.hardware == record.hardware and costs.release == record.release
    assert costs.eager_op_us == record.value("timing.eager")["median_us"] / ops
    assert costs.launch_us < costs.eager_op_us < costs.compiled_call_us  # what the note's words assume


@pytest.mark.parametrize("key, work, compiled", [
    ("timing.eager", "f(float32[8])", False), ("timing.compiled", "compiled f(float32[8])", True),
    ("timing.inference_compiled", "infer(float32[8])", True), ("timing.jit", "jax.jit f(float32[8])", True),
    ("timing_out.eager_out", "f_out(float32[8])", False), ("timing.no_jit", "f(float32[8])", False),
    ("timing.uncompiled", "f(float32[8])", False),
])
def test_a_side_is_compiled_by_its_work_label_or_its_key(key, work, compiled):
    assert findings.is_compiled(key, work) is compiled


def test_a_findings_row_compares_releases_only_on_the_machine_of_its_shown_record():
    """Issue 49: the guide's 'every release points the same way' must not set two runners against each other."""
    found = findings.collect(directives.site_directives(records.ROOT / "docs", "compare"))
    for f in found:
        if not f.on_cpu:
            continue
        made = {r.release: r for r in records.releases_of(f.snippet, "cpu")}
        machines = {made[release].machine for release, _ in f.releases}
        assert len(machines) <= 1, (f.what, machines)
