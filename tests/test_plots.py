"""scripts/plots.py: every kind of chart drawn from a throw-away record, in both palettes, byte for byte
the same each time, with text colours readable on the site's backgrounds."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("matplotlib")

from scripts import plots, records  # noqa: E402


def timing(median: float, spread: float = 0.05) -> dict:
    return {"median_us": median, "iqr_us": 2 * spread * median, "q1_us": median * (1 - spread),
            "q3_us": median * (1 + spread), "n": 25}


SIZES = [64, 128, 256, 512, 1024]
RESULTS = {
    "timing": {"eager": timing(1200.0), "compiled": timing(300.0)},
    "bandwidth": {"copy": 180.5, "fused": 150.25, "peak": 200},
    "sweep": {"sizes": SIZES, "eager": [timing(10.0 * s) for s in SIZES],
              "compiled": [timing(400.0 + 4.0 * s) for s in SIZES], "ratio": [0.5, 1, 2, 3, 4]},
    "compile_s": 0.5,
    "graphs": {"default": 2, "lever": 1},
    "who": [0, 0, 1, 1, 2],
    "shapes": {"static": {"after": {"(8, 16)": 1, "(12, 16)": 2, "(20, 16)": 3}},
               "dynamic": {"after": {"(8, 16)": 1, "(12, 16)": 1, "(20, 16)": 1}}},
    "tiles": {"row_major": [[0, 1, 2], [3, 4, 5]], "grouped": [[0, 2, 4], [1, 3, 5]], "wave": 2},
    "roofline": {"label": "Test GPU", "bandwidth_gbps": 3350, "peak_tflops": 989,
                 "points": [{"label": "matmul", "intensity": 300, "tflops": 600, "measured": True},
                            {"label": "softmax", "intensity": 0.5, "tflops": 1.5, "measured": False}]},
}


def trace(events) -> dict:
    return {"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, **e} for e in events]}


EAGER = trace([
    {"cat": "user_annotation", "name": "step", "ts": 1000, "dur": 100},
    {"cat": "cpu_op", "name": "aten::sin", "ts": 1000, "dur": 40},
    {"cat": "cpu_op", "name": "aten::empty", "ts": 1005, "dur": 5},  # inside sin: not a lane bar of its own
    {"cat": "cpu_op", "name": "aten::cos", "ts": 1050, "dur": 40},
    {"cat": "kernel", "name": "void at::native::sin_kernel<float>(float*)", "ts": 1010, "dur": 20},
    {"cat": "kernel", "name": "cos_kernel", "ts": 1060, "dur": 20},
])
COMPILED = trace([
    {"cat": "cpu_op", "name": "CompiledFunction", "ts": 500, "dur": 30},
    {"cat": "kernel", "name": "triton_poi_fused_cos_sin_0", "ts": 510, "dur": 15},
])

KINDS = {
    "timeline": ("timeline", {}),
    "bars": ("speed", {"kind": "bars", "keys": "timing.eager,timing.compiled", "labels": "eager,compiled"}),
    "bars of numbers": ("bw", {"kind": "bars", "keys": "bandwidth.copy,bandwidth.fused", "unit": "GB/s",
                               "line": "bandwidth.peak", "line_label": "peak"}),
    "bars of counts": ("graphs", {"kind": "bars", "keys": "graphs.default,graphs.lever", "unit": "graphs"}),
    "speedup": ("speedup", {"kind": "speedup", "x": "sweep.sizes", "base": "sweep.eager", "other": "sweep.compiled",
                            "xlabel": "elements"}),
    "lines": ("sweep", {"kind": "lines", "x": "sweep.sizes", "series": "sweep.eager,sweep.compiled",
                        "labels": "eager,compiled", "ylabel": "µs", "logy": "1"}),
    "roofline": ("roof", {"kind": "roofline", "key": "roofline"}),
    "breakeven": ("even", {"kind": "breakeven", "base": "timing.eager", "other": "timing.compiled",
                           "compile": "compile_s"}),
    "strip": ("who", {"kind": "strip", "key": "who"}),
    "grid": ("shapes", {"kind": "grid", "rows": "shapes.static,shapes.dynamic", "labels": "static,dynamic"}),
    "tiles": ("order", {"kind": "tiles", "keys": "tiles.row_major,tiles.grouped", "labels": "row-major,grouped",
                        "wave": "tiles.wave"}),
}


@pytest.fixture
def record(tmp_path) -> records.Record:
    folder = tmp_path / "outputs" / "cpu" / "demo" / "plot"
    (folder / "files").mkdir(parents=True)
    (folder / "files" / "results.json").write_text(json.dumps(RESULTS))
    (folder / "files" / "traces.eager.trace.json").write_text(json.dumps(EAGER))
    (folder / "files" / "traces.compiled.trace.json").write_text(json.dumps(COMPILED))
    return records.Record("demo/plot.py", "cpu", folder, tmp_path / "snippets")


@pytest.mark.parametrize("palette", list(plots.PALETTES))
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_renders_in_each_palette(record, kind, palette):
    name, options = KINDS[kind]
    svg, alt = plots.render(record, name, dict(options), palette)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg.rstrip().endswith("</svg>")
    assert plots.PALETTES[palette]["fg"] in svg, "the palette's text colour is not used"
    other = "dark" if palette == "light" else "light"
    assert plots.PALETTES[other]["fg"] not in svg, "the other palette's text colour leaked in"
    assert alt.endswith(".") and len(alt) > 20
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg


def test_alt_texts_say_what_the_chart_shows(record):
    alt = {kind: plots.render(record, name, dict(options), "light")[1] for kind, (name, options) in KINDS.items()}
    assert alt["bars"] == "Bar chart (interquartile range shown): eager 1,200 µs; compiled 300 µs."
    assert alt["bars of numbers"] == "Bar chart: copy 180 GB/s; fused 150 GB/s; dashed line: peak 200 GB/s."
    assert alt["bars of counts"] == "Bar chart: default 2 graphs; lever 1 graph."  # a count's unit agrees
    assert alt["speedup"].startswith("Speedup against elements, from ") and "above 1× from 128" in alt["speedup"]
    assert alt["lines"] == "Line chart of eager, compiled against x."
    assert "Roofline of Test GPU: memory roof 3,350 GB/s, compute roof 989 TFLOP/s" in alt["roofline"]
    # 0.5 s of compiling saves 900 µs a call: the lines cross after 556 calls.
    assert alt["breakeven"].endswith("they cross after 556 calls.") and "grows by 1.2 ms a call" in alt["breakeven"]
    assert alt["strip"] == "5 cells, one per element, each holding the value 0, 0, 1, 1, 2."
    assert alt["grid"] == ("Compiled or reused, per call. static: (8, 16) compiled, (12, 16) compiled, (20, 16) "
                           "compiled; dynamic: (8, 16) compiled, (12, 16) reused, (20, 16) reused.")
    assert alt["timeline"] == ("Timeline of the profiled call on one time axis "
                               "(eager: 2 CPU calls, 2 GPU kernels, compiled: 1 CPU calls, 1 GPU kernels).")


def test_the_timeline_puts_eager_first_and_keeps_outermost_cpu_calls(record):
    assert [t.name for t in plots.traces(record)] == ["traces.eager.trace.json", "traces.compiled.trace.json"]
    title, cpu, gpu, span = plots.trace_lanes(record.file("traces.eager.trace.json"))
    assert title == "eager"
    assert cpu == [(0, 40, "sin"), (50, 40, "cos")]
    assert gpu == [(10, 20, "sin_kernel"), (60, 20, "cos_kernel")]
    assert span == 90


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_same_record_gives_the_same_bytes(record, kind):
    name, options = KINDS[kind]
    for palette in plots.PALETTES:
        first = plots.render(record, name, dict(options), palette)
        assert plots.render(record, name, dict(options), palette) == first


def luminance(colour: str) -> float:
    channels = [int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_of_a_known_pair():
    assert round(contrast("#000000", "#ffffff"), 2) == 21.0
    assert round(contrast("#777777", "#ffffff"), 2) == 4.48


@pytest.mark.parametrize("palette, background", [("dark", "#1e2129"), ("light", "#ffffff")])
def test_text_colours_reach_7_to_1_on_the_sites_background(palette, background):
    for role in ("fg", "muted"):
        colour = plots.PALETTES[palette][role]
        assert contrast(colour, background) >= 7, (
            f"{palette} {role} {colour} reaches only {contrast(colour, background):.2f}:1 on {background}"
        )


@pytest.mark.parametrize("name, options, message", [
    ("speed", {"kind": "bars", "keys": "timing.nope"}, "'timing.nope' is not in "),
    ("speed", {"kind": "bars"}, "needs keys="),
    ("speed", {"kind": "bars", "keys": "timing.eager,timing.compiled", "labels": "one"},
     "labels= names 1 items for 2 keys"),
    ("speed", {"kind": "bars", "keys": "roofline"}, "each must be a timing dict or a number"),
    ("speed", {"kind": "pie", "keys": "timing.eager"}, "kind=pie is not one of timeline, bars"),
    ("speed", {"keys": "timing.eager"}, "kind=None is not one of"),
    ("speedup", {"kind": "speedup", "x": "sweep.sizes", "base": "sweep.eager", "other": "sweep.ratio"},
     "base and other must be lists of the same length"),
    ("sweep", {"kind": "lines", "x": "sweep.sizes", "series": "sweep.missing"}, "'sweep.missing' is not in "),
])
def test_a_bad_option_raises_figure_error_with_a_message(record, name, options, message):
    with pytest.raises(plots.FigureError) as error:
        plots.render(record, name, options, "light")
    assert message in str(error.value), str(error.value)


def test_a_timeline_without_traces_says_what_to_store(record):
    for trace_file in record.files.glob("*.trace.json"):
        trace_file.unlink()
    with pytest.raises(plots.FigureError, match=re.escape("kept no profiler trace")):
        plots.render(record, "timeline", {}, "dark")


def roofline_of(tmp_path, name: str, eager: tuple[float, float], fused: tuple[float, float]):
    """The roofline chart (light palette) of a model GPU with one example, eager and fused at these
    (intensity, TFLOP/s)."""
    model = {"label": "Test GPU", "bandwidth_gbps": 3350, "peak_tflops": 989, "peak_tflops_fp32": 67,
             "points": [{"label": f"{name}, eager", "intensity": eager[0], "tflops": eager[1], "measured": False},
                        {"label": f"{name}, fused", "intensity": fused[0], "tflops": fused[1], "measured": False}]}
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "results.json").write_text(json.dumps({"roofline": model}))
    record = records.Record("demo/roof.py", "cpu", tmp_path)
    fig, _ = plots.draw_roofline(record, {"key": "roofline"}, plots.PALETTES["light"])
    return fig


def test_the_roofline_tells_eager_from_fused_and_draws_each_roof(tmp_path):
    import matplotlib.pyplot as plt
    from matplotlib.text import Annotation

    fig = roofline_of(tmp_path, "act", (0.1, 0.3), (0.5, 1.6))
    ax = fig.axes[0]
    eager, fused = ax.collections[:2]
    assert len(eager.get_facecolors()) == 0 or eager.get_facecolors()[0][3] == 0, "eager is hollow"
    assert fused.get_facecolors()[0][3] > 0, "fused is filled"
    assert fused.get_edgecolors()[0].tolist() == eager.get_edgecolors()[0].tolist(), "one colour per example"
    assert any(isinstance(child, Annotation) for child in ax.get_children()), "an arrow from eager to fused"
    assert any(t.get_text().startswith("fp32 67") for t in ax.texts), "the fp32 roof"
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    assert labels and not any("10^" in label or "times" in label or "×" in label for label in labels), labels
    plt.close(fig)


def test_a_tile_grid_says_in_words_where_the_first_wave_falls(record):
    from scripts import plots

    _, alt = plots.draw_tiles(record, KINDS["tiles"][1], plots.PALETTES["light"])
    assert "row-major: the first wave spans 1 rows and 2 columns" in alt
    assert "grouped: the first wave spans 2 rows and 1 columns" in alt


def viewbox_width(svg: str) -> float:
    return float(re.search(r'viewBox="0 0 ([\d.]+) [\d.]+"', svg).group(1))


def smallest_text(svg: str) -> float:
    return min(float(x) for x in re.findall(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([\d.]+)px", svg))


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_narrow_drawing_fits_a_phone_with_readable_text(record, kind):
    """layout=narrow is what a phone shows, about 358 px wide, so no chart scrolls sideways: at most
    NARROW_PT wide, and its smallest text still at least 10 px at that size."""
    name, options = KINDS[kind]
    svg, _ = plots.render(record, name, {**options, "layout": "narrow"}, "light")
    width = viewbox_width(svg)
    assert width <= plots.NARROW_PT + 1, f"{kind}: {width:.0f} points wide"
    assert smallest_text(svg) * 358 / width >= 10, f"{kind}: text under 10 px on a phone"
    wide, _ = plots.render(record, name, dict(options), "light")
    if viewbox_width(wide) > plots.NARROW_PT + 1:
        assert viewbox_width(wide) > width, "the wide drawing is another one"


def test_a_bad_layout_is_refused(record):
    with pytest.raises(plots.FigureError, match="layout=tiny"):
        plots.render(record, "timeline", {"layout": "tiny"}, "light")


def test_the_speedup_axis_is_labelled_in_plain_ratios(record):
    name, options = KINDS["speedup"]
    svg, _ = plots.render(record, name, dict(options), "light")
    ticks = re.findall(r">([\d.,]+×)<", svg)
    assert len(ticks) >= 4 and "1×" in ticks, ticks
    assert "mathdefault" not in svg and "2^{" not in svg, "sizes as plain numbers, not powers of two"
    assert ">1,024<" in svg


def test_a_bar_label_longer_than_its_bar_is_shortened_never_spilled(tmp_path):
    """A compiled region's name sits inside its bar only as far as it fits: it never runs over the axis."""
    folder = tmp_path / "outputs" / "cpu" / "demo" / "plot"
    (folder / "files").mkdir(parents=True)
    (folder / "files" / "results.json").write_text("{}")
    long = "Torch-Compiled Region: 0/0"
    region = trace([{"cat": "cpu_op", "name": long, "ts": 0, "dur": 120},
                    {"cat": "cpu_op", "name": "aten::add", "ts": 130, "dur": 1000}])
    (folder / "files" / "traces.compiled.trace.json").write_text(json.dumps(region))
    record = records.Record("demo/plot.py", "cpu", folder, tmp_path / "snippets")
    for layout in plots.LAYOUTS:
        svg, _ = plots.render(record, "timeline", {"layout": layout}, "dark")
        assert long not in svg, f"{layout}: the whole name is drawn though its bar is short"
        assert "add" in svg


def test_a_phones_grid_header_breaks_between_words_not_inside_them():
    assert plots.wrapped("dynamic=False", 10) == "dynamic=\nFalse"
    assert plots.wrapped("default (automatic)", 10) == "default\n(automatic)"
    assert plots.wrapped("mark_dynamic", 10) == "mark_\ndynamic"
    assert plots.wrapped("static", 10) == "static"


def test_the_roofline_names_each_example_beside_its_point_and_in_its_legend(record):
    name, options = KINDS["roofline"]
    wide, _ = plots.render(record, name, dict(options), "light")
    narrow, _ = plots.render(record, name, {**options, "layout": "narrow"}, "light")
    for example in ("matmul", "softmax"):
        assert wide.count(f">{example}<") == 2, f"{example}: beside its point and in the legend"
        assert narrow.count(f">{example}<") == 1, f"{example}: a phone's chart names it in the legend only"


def test_pairs_colour_each_before_and_after_alike_and_say_which_is_which(record):
    options = {"kind": "bars", "keys": "graphs.default,graphs.lever,graphs.default,graphs.lever",
               "labels": "a,a lever,b,b lever", "unit": "graphs", "pairs": "without,with"}
    svg, _ = plots.render(record, "graphs", options, "light")
    assert ">without<" in svg and ">with<" in svg, "the legend names the two bars of a pair"
    strokes = re.findall(r"stroke: (#[0-9a-f]{6})", svg)
    first, second = plots.PALETTES["light"]["series"][:2]
    assert strokes.count(first) >= 2 and strokes.count(second) >= 2, "a pair's two bars share its colour"
    with pytest.raises(plots.FigureError, match="pairs="):
        plots.render(record, "graphs", {**options, "keys": "graphs.default,graphs.lever,graphs.default",
                                        "labels": "a,b,c"}, "light")


def test_a_phones_bar_chart_names_each_bar_above_it(record):
    name, options = KINDS["bars"]
    svg, _ = plots.render(record, name, {**options, "layout": "narrow"}, "light")
    assert ">eager<" in svg and ">compiled<" in svg


def test_regimes_part_a_sweep_where_its_two_limits_cross(record):
    """sweep.eager is 10 µs per element: with no flat start the limits cross outside the sizes, and the
    chart says so; sweep.compiled (400 µs fixed + 4 µs per element) crosses inside them."""
    options = {"kind": "lines", "x": "sweep.sizes", "series": "sweep.compiled", "logy": "1",
               "regimes": "overhead-bound,bandwidth-bound"}
    svg, alt = plots.render(record, "sweep", dict(options), "light")
    assert ">overhead-bound<" in svg and ">bandwidth-bound<" in svg
    assert "they cross near" in alt and "overhead-bound below it, bandwidth-bound above" in alt
    with pytest.raises(plots.FigureError, match="outside the sizes measured"):
        plots.render(record, "sweep", {**options, "series": "sweep.eager"}, "light")
    with pytest.raises(plots.FigureError, match="two regimes"):
        plots.render(record, "sweep", {**options, "regimes": "one"}, "light")


def test_the_roofs_are_named_past_the_plot_where_no_point_can_be(tmp_path):
    """A roof's name stood at the roof's right end, over the points that sit on the roof there."""
    import matplotlib.pyplot as plt

    fig = roofline_of(tmp_path, "mm", (100, 335), (450, 989))
    ax = fig.axes[0]
    fig.canvas.draw()
    plot = ax.get_window_extent()
    roofs = [t for t in ax.texts if "TFLOP/s" in t.get_text()]
    assert len(roofs) == 2, [t.get_text() for t in ax.texts]
    assert all(t.get_window_extent().x0 > plot.x1 for t in roofs), "a roof's name inside the plot"
    # The point at the right, on the roof, is named left of it: its name stays inside the plot.
    (name,) = [t for t in ax.texts if t.get_text() == "mm"]
    assert name.get_window_extent().x1 < plot.x1
    plt.close(fig)


def test_a_tiny_value_reads_as_a_plain_decimal():
    assert [plots.readable(v) for v in (1e-5, 1.5e-5, 0.000123, 0.0123)] == ["0.00001", "0.000015", "0.000123",
                                                                             "0.0123"]


def test_a_bar_of_length_zero_is_marked_and_says_none(record, tmp_path):
    """Issue 51: the wrong-output figure drew two bars of length 0 labelled only "0"."""
    results = json.loads(record.file("results.json").read_text())
    results["graphs"]["lever"] = 0
    record.file("results.json").write_text(json.dumps(results))
    svg, alt = plots.render(record, "graphs", {"kind": "bars", "keys": "graphs.default,graphs.lever",
                                               "unit": "graphs"}, "light")
    assert alt == "Bar chart: default 2 graphs; lever 0 graphs (none)."



def test_a_timeline_row_of_kernels_without_times_says_so(record):
    """Issue 51: the H200's eager trace kept its kernels without times, and the row was drawn empty."""
    untimed = trace([{**e, "dur": 0} if e["cat"] == "kernel" else e for e in
                     (dict(e) for e in EAGER["traceEvents"])])
    record.file("traces.eager.trace.json").write_text(json.dumps(untimed))
    svg, _ = plots.render(record, "timeline", {}, "light")
    assert svg.count("kernels, kept without their times") == 1 and "eager: GPU" in svg and "compiled: GPU" in svg


def test_events_kept_without_any_time_set_no_origin(tmp_path):
    """The H200's eager fusion trace kept its launches and kernels at ts 0 and dur 0 beside ops with the clock's
    own times: taken as the origin, they stretched the axis to 5 x 10^9 ms and left every row empty."""
    events = [{**e, "ts": e["ts"] + 4.9e12} for e in EAGER["traceEvents"] if e["cat"] != "kernel"]
    events += [{"ph": "X", "cat": cat, "name": name, "ts": 0.0, "dur": 0.0}
               for cat, name in (("cuda_runtime", "cudaLaunchKernel"), ("kernel", "sin_kernel"))]
    path = tmp_path / "traces.eager.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    title, cpu, gpu, span = plots.trace_lanes(path)
    assert span == 90 and [start for start, _, _ in cpu] == [0, 50], cpu
    assert gpu == [(0.0, 0.0, "sin_kernel")]


def test_a_label_too_long_for_its_bar_goes_whole_beside_it_rather_than_cut(record):
    """Issue 51: on a phone the compiled region's bar held "Torch…"; the last bar of a row has the row's free end."""
    long = "Torch-Compiled Region: 0/0"
    compiled = trace([{"cat": "cpu_op", "name": long, "ts": 500, "dur": 80}, COMPILED["traceEvents"][1]])
    record.file("traces.compiled.trace.json").write_text(json.dumps(compiled))
    eager = trace([e for e in EAGER["traceEvents"] if e["cat"] != "kernel"] +
                  [{"cat": "cpu_op", "name": "aten::relu", "ts": 1100, "dur": 600}])
    record.file("traces.eager.trace.json").write_text(json.dumps(eager))
    svg, _ = plots.render(record, "timeline", {"layout": "narrow"}, "light")
    assert long in svg and "Torch…" not in svg


def test_every_chart_is_saved_by_the_one_chart_module():
    """plots.svg is the site's one way from a drawn figure to its SVG (phone fit, bar labels, no date): no other
    module saves a figure of its own, so a change to how charts are saved is made once."""
    savers = [path.name for path in sorted((records.ROOT / "scripts").glob("*.py"))
              if path.name != "plots.py" and re.search(r"\.savefig\(|matplotlib\.use\(", path.read_text())]
    assert not savers, f"{', '.join(savers)} save(s) figures: draw, then return plots.svg(fig, narrow)"
