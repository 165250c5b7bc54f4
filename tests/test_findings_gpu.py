"""Every GPU measurement beside the model of its own run (scripts/findings.py, md:findings): the findings give each
GPU comparison the model's gain at the roof for the workload, size and dtype the GPU ran, where the model counts
it; the model's figure (md:findings part=model, on dissecting/regimes.md) places each such comparison, says each
residual beyond findings.RESIDUAL in a sentence, and lists every other GPU comparison with why it has no point."""

from __future__ import annotations

import re

import pytest

from scripts import directives, findings, plots, records, render

DOCS = records.ROOT / "docs"


@pytest.fixture(scope="module")
def found():
    return findings.collect(directives.site_directives(DOCS, "compare"))


def test_each_gpu_run_the_model_counts_has_its_prediction_beside_it(found):
    models = findings.gpu_models()
    assert models, f"{findings.GPU_MODEL}'s CPU record names no model's work"
    checked = 0
    for f in found:
        g = f.gpu
        if g is None:
            continue
        eager_then_compiled = (not findings.is_compiled(f.key_a, g.work) and findings.is_compiled(f.key_b, g.work_b)
                               and findings.bare(g.work_b) == findings.bare(g.work))
        counted = findings.bare(g.work) in models and any(name in g.hardware for name in findings.MODELLED_GPUS)
        assert (g.predicted is not None) == (eager_then_compiled and counted), (f.snippet, f.key_a, f.key_b)
        if g.predicted is not None:
            # The prediction is of the run the GPU timed: its work, on its GPU.
            assert g.predicted.model.names[g.predicted.gpu] in {s["name"] for s in models[findings.bare(g.work)]
                                                                 ["specs"].values()}
            checked += 1
    assert checked >= 3  # the activation (two records and JAX's) and linear + ReLU, on the H200


def test_the_library_gemm_split_is_the_models_own(found):
    """Where the model's record has the library GEMM's bound (linear + ReLU), the findings' split is the same."""
    models = findings.gpu_models()
    for f in found:
        p = f.gpu.predicted if f.gpu else None
        if p is None or p.how != "library GEMM + one kernel":
            continue
        entry = models[findings.bare(f.gpu.work)][p.gpu]
        if "library_gemm_us" in entry:
            assert p.model.us[p.gpu][1] == pytest.approx(entry["library_gemm_us"])
            assert p.model.ratio(p.gpu) == pytest.approx(entry["library_gemm_speedup"])


def test_a_recompiled_timing_is_said_and_kept_out_of_the_model_figure(found):
    points, left = findings.against_model(found)
    recompiled = [f for f in found if f.gpu and f.gpu.recompiled]
    for f in recompiled:
        assert f.gpu.stale and f in left and all(p.finding is not f for p in points)
    page = render.Page("guide.md", "guide/")
    text = render.expand("<!-- md:findings -->\n", page)
    for f in recompiled:
        (row,) = [line for line in text.splitlines() if line.startswith(f"| [{f.what}]")]
        assert "not the program compared" in row


def test_every_residual_beyond_the_band_gets_a_sentence_and_the_figure_fits_a_phone(found, tmp_path, monkeypatch):
    monkeypatch.setattr(render, "FIGURE_CACHE", tmp_path / "figures")
    points, left = findings.against_model(found)
    assert points, "no GPU comparison has a point in the model's figure"
    page = render.Page("dissecting/regimes.md", "dissecting/regimes/")
    text = render.expand("<!-- md:findings part=model -->\n", page)
    for p in points:
        assert re.search(rf"^{p.number}\. \[{re.escape(p.finding.what)}\]", text, re.MULTILINE), p.number
        # A workload's points beyond the band share one sentence: "point 4 lies 1.31× short of the model, point 6
        # 1.26× short of it."
        named = re.search(rf"\*\*Beyond [\d.]+×:\*\* (point {p.number} lies |[^\n]*?, point {p.number} [\d.]+×)", text)
        assert bool(named) == findings.beyond(p), p.number
    for f in left:
        assert f"- [{f.what}]" in text
    assert "from published specifications" in text  # the caption says the x axis is a model
    colors = plots.PALETTES["dark"]
    svg = findings.model_chart(points, colors, plots.style(colors), narrow=True)
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg).group(1))
    assert width_pt <= plots.NARROW_PT


def test_part_takes_table_or_model():
    page = render.Page("guide.md", "guide/")
    with pytest.raises(directives.DirectiveError, match="part is table"):
        render.expand("<!-- md:findings part=chart -->\n", page)
