"""Charts drawn from a record, as SVG text, for the light and the dark palette; no GPU and no torch needed.

The mkdocs hook draws each `<!-- md:figure SNIPPET NAME kind=... -->` at build time (cached by content), so
nothing drawn is committed. Kinds and their options (keys are dotted places in the record's results):

    timeline   every profiler trace the record kept (files/*.trace.json): a CPU lane (the ops Python called)
               above a GPU lane (one bar per kernel) per trace, all on one time axis, eager first
    bars       keys=K1,K2 [labels=a,b] [unit=GB/s] [line=K line_label=TEXT] [pairs=BEFORE,AFTER] [log=yes]:
               one bar per key; a timing dict gives its median with the interquartile range as a whisker, a
               number is drawn as is; with pairs=, the keys are (before, after) pairs: each pair one colour,
               pale before and solid after, the two words in a legend; log=yes for values that span decades
    speedup    x=K base=K other=K [xlabel=TEXT]: base/other medians of two lists of timing dicts against x
               (log x axis), the interquartile band shaded, a line at 1x
    lines      x=K series=K1,K2 [labels=a,b] [xlabel=TEXT] [ylabel=TEXT] [logy=1] [regimes=LOW,HIGH]: with
               regimes=, the first series' two limits are drawn dashed (its smallest size's time, flat; its
               largest size's time per element, a line through 0) and the sizes each side of their crossing
               named LOW and HIGH (e.g. overhead-bound,bandwidth-bound)
    roofline   key=K: {"label", "bandwidth_gbps", "peak_tflops", "points": [{"label", "intensity", "tflops",
               "measured"}]}: the memory and compute roofs of published specifications, each point on them

Same record and options in, same bytes out: SVGs carry no date and a fixed id salt.

Each chart is drawn twice: for the 748 px column of a wide screen, and (option layout=narrow, which the
pages add themselves) at most NARROW_PT wide for a phone's column, where it is shown at about 360 px
without scrolling sideways and its 10-point text stays at least 10 px.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

from scripts import measures
from scripts.records import Record, is_timing  # what a timing is, said once

PALETTES = {
    # Text colours reach at least 7:1 against Material's light (#fff) and slate (#1e2129) backgrounds.
    "light": {"fg": "#1f2330", "muted": "#4a5060", "grid": "#d5d8e0", "bg": "#ffffff",
              "series": ["#3949ab", "#bf360c", "#00796b", "#8e24aa"], "alt": ["#5c6bc0", "#a6300a"]},
    "dark": {"fg": "#eceff6", "muted": "#c3c8d6", "grid": "#474c59", "bg": "#1e2129",
             "series": ["#9fa8da", "#ffab91", "#80cbc4", "#ce93d8"], "alt": ["#7986cb", "#ff8a65"]},
}
KINDS = ("timeline", "bars", "speedup", "lines", "roofline", "breakeven", "strip", "grid", "tiles")
# The options each kind of chart reads (scripts/directives.py refuses any other on an md:figure).
OPTIONS = {
    "timeline": (),
    "bars": ("keys", "labels", "unit", "line", "line_label", "pairs", "log"),
    "speedup": ("x", "base", "other", "xlabel", "ylabel"),
    "lines": ("x", "series", "labels", "logy", "xlabel", "ylabel", "regimes"),
    "roofline": ("key",),
    "breakeven": ("base", "other", "compile", "calls"),
    "strip": ("key", "label"),
    "grid": ("rows", "labels", "xlabel"),
    "tiles": ("keys", "labels", "wave"),
}


WIDE_IN = 8.0  # inches: 576 points, shown in the 748 px column
NARROW_PT = 330  # points: the phone's drawing, shown about 358 px wide, so 10-point text is over 10 px
LAYOUTS = ("wide", "narrow")
_layout = {"narrow": False}


def width(wide: float = WIDE_IN) -> float:
    """A chart's width in inches for the layout being drawn: `wide` for the page's column, or a phone's."""
    return min(wide, NARROW_PT / 72) if _layout["narrow"] else wide


class FigureError(Exception):
    """A figure that cannot be drawn from its record; the message says why."""


def render(record: Record, name: str, options: dict[str, str], palette: str) -> tuple[str, str]:
    """(SVG text, alt text) of one figure."""
    plt = pyplot()
    kind = options.get("kind", "timeline" if name == "timeline" else None)
    if kind not in KINDS:
        raise FigureError(f"kind={kind} is not one of {', '.join(KINDS)}")
    colors = PALETTES[palette]
    layout = options.get("layout", "wide")
    if layout not in LAYOUTS:
        raise FigureError(f"layout={layout} is not one of {', '.join(LAYOUTS)}")
    _layout["narrow"] = layout == "narrow"
    try:
        with plt.rc_context(style(colors)):
            fig, alt = DRAW[kind](record, options, colors)
            return svg(fig, _layout["narrow"]), alt
    finally:
        _layout["narrow"] = False


def pyplot():
    """matplotlib's pyplot on the SVG backend, the one every chart of the site draws with (no display needed)."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    return plt


def svg(fig, narrow: bool = False) -> str:
    """The site's SVG of a drawn figure, for every chart (this module's, the versions page's, the findings'):
    on a phone's column (`narrow`) first fitted to it, bar labels fitted to their bars, no date or creator (the
    same drawing gives the same bytes), the figure closed. Call it inside the chart's style (rc_context)."""
    if narrow:
        fit(fig, NARROW_PT / 72 - 0.2)  # savefig pads the tight box by 0.1 inch a side
    fit_bar_labels(fig)
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    pyplot().close(fig)
    return out.getvalue()


def fit(fig, inches: float) -> None:
    """Narrow the figure until its drawing, labels included (what bbox_inches="tight" keeps), is at most
    `inches` wide; the text keeps its size, the axes give up the room."""
    import textwrap

    for legend in filter(None, (ax.get_legend() for ax in fig.axes)):
        for text in legend.get_texts():  # a long entry would keep the legend wider than a phone
            text.set_text(textwrap.fill(text.get_text(), 30))
    for _ in range(4):
        drawn = fig.get_tightbbox(fig._get_renderer()).width  # matplotlib >= 3.6
        if drawn <= inches:
            return
        wide, high = fig.get_size_inches()
        fig.set_size_inches(max(wide - (drawn - inches) - 0.02, 1.0), high)


def bar_label(ax, start: float, end: float, row: float, text: str, beside: str | None = None, **style) -> None:
    """A label centred in a bar from `start` to `end` (data units); fit_bar_labels() wraps it, sets it beside
    the bar in colour `beside` (where given, and the row is free to the axis' end), or shortens or drops it,
    where the drawn bar is too short to hold it, so it never runs over a neighbour or the axis."""
    label = ax.text((start + end) / 2, row, text, ha="center", va="center", **style)
    label.mlc_bar = (start, end)
    label.mlc_beside = beside
    label.mlc_inside = style.get("color")


def fit_bar_labels(fig) -> None:
    renderer = fig._get_renderer()  # matplotlib >= 3.6
    for ax in fig.axes:
        for label in ax.texts:
            if not hasattr(label, "mlc_bar"):
                continue
            start, end = label.mlc_bar
            room = abs(ax.transData.transform((end, 0))[0] - ax.transData.transform((start, 0))[0]) - 6
            text = label.get_text()
            if label.get_window_extent(renderer).width > room and " " in text:
                # On two lines before a cut: "Torch-Compiled / Region: 0/0" reads, "Torch…" does not (issue 51).
                words = text.split()
                for cut in range(len(words) - 1, 0, -1):
                    label.set_text(" ".join(words[:cut]) + "\n" + " ".join(words[cut:]))
                    if label.get_window_extent(renderer).width <= room:
                        break
                else:
                    label.set_text(text)
            beside = getattr(label, "mlc_beside", None)
            if label.get_window_extent(renderer).width > room and beside:
                # After the bar, where the row is free to the axis' end: the whole name, in the text colour.
                label.set_text(text)
                label.set_position((end, label.get_position()[1]))
                label.set_horizontalalignment("left")
                label.set_color(beside)
                label.set_text(" " + text)
                right = ax.transData.transform((ax.get_xlim()[1], 0))[0]
                if label.get_window_extent(renderer).x1 <= right and not any(
                        other is not label and getattr(other, "mlc_bar", (0, 0))[0] >= end
                        and abs(other.get_position()[1] - label.get_position()[1]) < 0.5 for other in ax.texts):
                    continue
                label.set_position(((start + end) / 2, label.get_position()[1]))
                label.set_horizontalalignment("center")
                label.set_color(label.mlc_inside)
                label.set_text(text)
            text = label.get_text()
            while label.get_window_extent(renderer).width > room and len(text) > 3:
                text = text[:-1]
                label.set_text(text.rstrip() + "…")
            if label.get_window_extent(renderer).width > room:
                label.set_visible(False)


def mixed(color: str, background: str, share: float) -> tuple:
    """`color` with `share` of `background` mixed in: a pale version of it on this palette."""
    from matplotlib.colors import to_rgb

    return tuple(c + (b - c) * share for c, b in zip(to_rgb(color), to_rgb(background)))


def ratio_ticks(ax) -> None:
    """A log axis of ratios labelled 0.2×, 0.5×, 1×, 2×, …: enough ticks to read a value off, all plain."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    low, high = ax.get_ylim()
    for steps in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** e for e in range(-4, 5) for m in steps if low <= m * 10.0 ** e <= high]
        if len(ticks) >= 4:
            break
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{readable(v)}×"))


def power_of_two_ticks(ax) -> None:
    """A base-2 log x axis with few enough labels to stay apart: plain numbers (64, 128, 1,024) up to 10,000,
    powers written 2¹⁵, 2¹⁸ beyond, as plain text (mathtext's superscripts come out too small)."""
    import math

    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    low, high = ax.get_xlim()
    powers = [k for k in range(0, 63) if low <= 2 ** k <= high]
    step = max(1, math.ceil(len(powers) / (5 if _layout["narrow"] else 8)))
    big = high > 10_000
    superscript = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    ax.xaxis.set_major_locator(FixedLocator([2 ** k for k in powers[::step]]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: "2" + str(round(math.log2(v))).translate(superscript) if big else f"{v:,.0f}"))


# ------------------------------------------------------------------------------------------------ helpers


def style(colors: dict) -> dict:
    """Matplotlib settings for one palette: text in its colours, a transparent background, stable SVG ids."""
    return {
        "svg.hashsalt": "mlc", "svg.fonttype": "none", "font.size": 11,
        "text.color": colors["fg"], "axes.labelcolor": colors["fg"], "axes.edgecolor": colors["grid"],
        "xtick.color": colors["fg"], "ytick.color": colors["fg"], "grid.color": colors["grid"],
        "axes.facecolor": "none", "figure.facecolor": "none", "savefig.transparent": True,
        "axes.axisbelow": True,  # gridlines behind the bars, never over them
        "axes.spines.top": False, "axes.spines.right": False,
    }


def value(record: Record, key: str):
    try:
        return record.value(key)
    except KeyError as error:
        raise FigureError(error.args[0]) from None


def keys(options: dict, name: str) -> list[str]:
    if not options.get(name):
        raise FigureError(f"needs {name}=")
    return options[name].split(",")


def labels(options: dict, given: list[str]) -> list[str]:
    names = options.get("labels", "").split(",") if options.get("labels") else [k.split(".")[-1] for k in given]
    if len(names) != len(given):
        raise FigureError(f"labels= names {len(names)} items for {len(given)} keys")
    return names


def plain_log_ticks(ax, x: bool = True, y: bool = True) -> None:
    """Log axes labelled as plain numbers ("0.4", "1,000"), not "4×10⁻¹"; minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for on, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        if on:
            axis.set_major_formatter(FuncFormatter(lambda value, _: readable(value)))
            axis.set_minor_formatter(NullFormatter())


def readable(number: float) -> str:
    """1234.5 -> '1,234'; 12.345 -> '12.3'; 0.01234 -> '0.0123'; 0.00001 -> '0.00001' (never '1e-05')."""
    if 0 < abs(number) < 1e-3:
        import math

        return f"{number:.{2 - math.floor(math.log10(abs(number)))}f}".rstrip("0").rstrip(".")
    return f"{number:,.0f}" if abs(number) >= 100 else f"{number:.3g}"


def short(number: float) -> str:
    """A tick on a log axis: 1000 -> '1k', 10000000 -> '10M', 0.5 -> '0.5'."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(number) >= size:
            return f"{number / size:g}{suffix}"
    return f"{number:g}"


def counted(number: float, unit: str) -> str:
    """'1 graph', '2 graphs': a count's unit agrees with it; other units (MiB, GB/s) are left as they are."""
    if number == 1 and unit.isalpha() and unit.endswith("s"):
        unit = unit[:-1]
    return f"{readable(number)} {unit}"


def time_unit(medians: list[float]) -> tuple[str, float]:
    largest = max(medians)
    return ("s", 1e-6) if largest >= 1e6 else ("ms", 1e-3) if largest >= 1e4 else ("µs", 1.0)


# --------------------------------------------------------------------------------------------------- kinds


def zero_said(value, unit: str, timings: bool) -> str:
    """A bar's number; an exact 0 (a difference, a count) says "none" beside it, as its bar has no length."""
    return counted(value, unit) + (" (none)" if value == 0 and not timings else "")


def draw_bars(record: Record, options: dict, colors: dict):
    import matplotlib.pyplot as plt

    wanted = keys(options, "keys")
    names = labels(options, wanted)
    items = [value(record, k) for k in wanted]
    timings = all(is_timing(i) for i in items)
    if timings:
        unit, factor = time_unit([i["median_us"] for i in items])
        values = [i["median_us"] * factor for i in items]
        lo = [measures.quartiles(i)[0] * factor for i in items]
        hi = [measures.quartiles(i)[1] * factor for i in items]
    elif all(isinstance(i, (int, float)) for i in items):
        unit = options.get("unit", "")
        values, lo, hi = list(items), list(items), list(items)
    else:
        raise FigureError(f"keys={options['keys']}: each must be a timing dict or a number")
    line = value(record, options["line"]) if options.get("line") else None

    pairs = options["pairs"].split(",") if options.get("pairs") else None
    if pairs is not None and (len(pairs) != 2 or len(items) % 2):
        raise FigureError("pairs= names two words (before,after) and keys= an even number of keys")
    # On a phone each bar's name stands above it, so the bars keep the chart's whole width.
    above = _layout["narrow"]
    fig, ax = plt.subplots(figsize=(width(), (0.75 if above else 0.55) * len(items) + 1.3))
    positions = list(range(len(items)))[::-1]
    errors = [[v - low for v, low in zip(values, lo)], [h - v for v, h in zip(values, hi)]] if timings else None
    if pairs is None:
        fills = edges = [colors["series"][i % 4] for i in range(len(items))]
    else:  # one colour per pair: the first bar pale (its colour mixed with the background), the second solid
        edges = [colors["series"][(i // 2) % 4] for i in range(len(items))]
        fills = [mixed(c, colors["bg"], 0.7) if i % 2 == 0 else c for i, c in enumerate(edges)]
    ax.barh(positions, values, xerr=errors, color=fills, edgecolor=edges, linewidth=1.2,
            ecolor=colors["fg"], capsize=4, height=0.45 if above else 0.6)
    if pairs is not None:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor=mixed(colors["fg"], colors["bg"], 0.7), edgecolor=colors["fg"],
                                 label=pairs[0]),
                           Patch(facecolor=colors["fg"], edgecolor=colors["fg"], label=pairs[1])],
                  frameon=False, fontsize=10, loc="lower left", bbox_to_anchor=(0, 1), ncol=2)
    # log=yes: values that span decades, where a linear axis leaves the small bars invisible.
    log = options.get("log") == "yes"
    if log and min(lo) <= 0:
        raise FigureError("log=yes needs every value above 0")
    if above:
        ax.set_yticks([])
        start = min(lo) / 2 if log else 0  # the axis's left end
        for pos, name in zip(positions, names):
            ax.text(start, pos + 0.28, name, ha="left", va="bottom", fontsize=10, color=colors["fg"])
    else:
        ax.set_yticks(positions, names)
    end = max(hi + ([line] if line else []))
    for pos, v, h, edge in zip(positions, values, hi, edges):
        if v == 0 and not timings:  # a bar of length 0 is drawn as a mark at 0, and says so (issue 51)
            ax.plot([0, 0], [pos - 0.22, pos + 0.22], color=edge, linewidth=4, solid_capstyle="butt")
        # The number sits past the whisker's end, so it never touches the bar or the whisker.
        ax.text(h * 1.15 if log else h + end * 0.02, pos, zero_said(v, unit, timings), va="center", fontsize=10,
                color=colors["fg"])
    if line is not None:
        ax.axvline(line, color=colors["fg"], linestyle="--", linewidth=1)
        ax.text(line, len(items) - 0.45, f" {options.get('line_label', '')} {readable(line)} {unit}",
                fontsize=10, color=colors["fg"], va="bottom")
    if log:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        ax.set_xlim(min(lo) / 2, end * 12)  # room for the number past the longest bar
        # 10k, 1M: a power of ten's superscript would be drawn smaller than the site's least text size.
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: short(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xlim(0, end * 1.35)
    ax.set_ylim(-0.6, len(items) - 0.4 + (0.5 if line is not None else 0))
    label = f"median ({unit}); whiskers: interquartile range" if timings else unit
    ax.set_xlabel(f"{label} (log scale)" if log and label else "log scale" if log else label)
    if all(isinstance(i, int) for i in items) and not log:  # counts: whole-number ticks
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.grid(axis="x")
    spread = " (interquartile range shown)" if timings else ""
    alt = "Bar chart" + spread + ": " + "; ".join(f"{n} {zero_said(v, unit, timings)}" for n, v in zip(names, values))
    if line is not None:
        alt += f"; dashed line: {options.get('line_label', 'reference')} {readable(line)} {unit}"
    return fig, alt + "."


def draw_speedup(record: Record, options: dict, colors: dict):
    import matplotlib.pyplot as plt

    x = value(record, options.get("x") or "x")
    base, other = value(record, keys(options, "base")[0]), value(record, keys(options, "other")[0])
    if not (len(x) == len(base) == len(other)) or not all(is_timing(t) for t in base + other):
        raise FigureError("x, base and other must be lists of the same length, base and other of timing dicts")
    # The ratio and its band as the pages' words give them (per-process ratios where there are several).
    ratio, low, high = (list(v) for v in zip(*(measures.timing_band(b, o) for b, o in zip(base, other))))
    fig, ax = plt.subplots(figsize=(width(), 4.2))
    ax.axhline(1, color=colors["fg"], linestyle="--", linewidth=1)
    ax.text(x[0], 1, " 1× (same speed)", va="bottom", fontsize=10, color=colors["fg"])
    ax.fill_between(x, low, high, color=colors["series"][0], alpha=0.25, linewidth=0)
    ax.plot(x, ratio, marker="o", markersize=4, color=colors["series"][0])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ratio_ticks(ax)
    power_of_two_ticks(ax)
    ax.set_xlabel(options.get("xlabel", options.get("x", "x")))
    ax.set_ylabel(options.get("ylabel", "speedup (× faster than eager)"))
    ax.grid(which="major")
    above = [xi for xi, r in zip(x, ratio) if r > 1]
    alt = (f"Speedup against {options.get('xlabel', 'size')}, from {readable(ratio[0])}× at {x[0]:,} "
           f"to {readable(ratio[-1])}× at {x[-1]:,}; above 1× from {above[0]:,}." if above else
           f"Speedup against {options.get('xlabel', 'size')}, below 1× at every size measured.")
    return fig, alt


def draw_lines(record: Record, options: dict, colors: dict):
    import matplotlib.pyplot as plt

    x = value(record, keys(options, "x")[0])
    wanted = keys(options, "series")
    names = labels(options, wanted)
    fig, ax = plt.subplots(figsize=(width(), 4.2))
    for i, (key, label) in enumerate(zip(wanted, names)):
        ys = value(record, key)
        ys = [y["median_us"] if is_timing(y) else y for y in ys]
        ax.plot(x, ys, marker="o", markersize=4, color=colors["series"][i % 4], label=label)
    ax.set_xscale("log", base=2)
    power_of_two_ticks(ax)
    if options.get("logy"):
        ax.set_yscale("log")
        plain_log_ticks(ax, x=False)
    ax.set_xlabel(options.get("xlabel", ""))
    ax.set_ylabel(options.get("ylabel", ""))
    ax.grid(which="major")
    ax.legend(frameon=False)
    alt = f"Line chart of {', '.join(names)} against {options.get('xlabel', 'x')}."
    if options.get("regimes"):
        alt += mark_regimes(ax, x, value(record, wanted[0]), options["regimes"], colors)
    return fig, alt


def mark_regimes(ax, x: list, timings: list, regimes: str, colors: dict) -> str:
    """The two limits of a time-per-call sweep, dashed: flat at the smallest size's time (the fixed cost of
    a call) and proportional to size at the largest size's time per element (the bandwidth); where they
    cross, a dotted line parts the two regimes, each named. Returns the sentence the alt text adds."""
    names = regimes.split(",")
    if len(names) != 2:
        raise FigureError("regimes= names two regimes: LOW,HIGH")
    ys = [y["median_us"] if is_timing(y) else y for y in timings]
    floor, per_element = ys[0], ys[-1] / x[-1]
    knee = floor / per_element
    if not x[0] < knee < x[-1]:
        raise FigureError(f"regimes=: the two limits cross at {readable(knee)}, outside the sizes measured")
    ax.plot([x[0], x[-1]], [floor, floor], color=colors["muted"], linestyle="--", linewidth=1)
    ax.plot([knee, x[-1]], [floor, ys[-1]], color=colors["muted"], linestyle="--", linewidth=1)
    ax.axvline(knee, color=colors["muted"], linestyle=":", linewidth=1.2)
    # Each name centred in its own stretch of sizes, just above the flat limit (under the rising curve).
    for low, high, name in ((x[0], knee, names[0]), (knee, x[-1], names[1])):
        ax.annotate(name, xy=((low * high) ** 0.5, floor), xytext=(0, 6), textcoords="offset points",
                    ha="center", va="bottom", fontsize=10, color=colors["fg"])
    return (f" Dashed: the fixed cost at the smallest size and the time per element at the largest; they cross "
            f"near {readable(knee)}, {names[0]} below it, {names[1]} above.")


def apart(fig, names: list) -> None:
    """Move each point's name down, below any name drawn before it that it would cover."""
    fig.canvas.draw()
    for i, name in enumerate(names):
        for _ in range(4):
            box = name.get_window_extent()
            if not any(box.overlaps(other.get_window_extent()) for other in names[:i]):
                break
            x, y = name.xyann
            name.xyann = (x, y - box.height * 72 / fig.dpi - 2)


def draw_roofline(record: Record, options: dict, colors: dict):
    import math

    import matplotlib.pyplot as plt

    model = value(record, keys(options, "key")[0])
    bandwidth, peak = model["bandwidth_gbps"], model["peak_tflops"]
    points = model["points"]
    ridge = peak * 1e12 / (bandwidth * 1e9)  # FLOP per byte where the two roofs meet
    intensities = [p["intensity"] for p in points] + [ridge]
    xs = [min(intensities) / 4, max(intensities) * 4]
    xs = [xs[0], ridge, xs[1]]
    roof = [min(peak, x * bandwidth / 1e3) for x in xs]
    fig, ax = plt.subplots(figsize=(width(), 4.6))
    ax.plot(xs, roof, color=colors["fg"], linewidth=1.5)
    # The memory roof's label sits above the slope, clear of the points under it.
    at = (xs[0] * ridge) ** 0.5
    ax.text(at, at * bandwidth / 1e3 * 1.6, f"{readable(bandwidth)} GB/s ", fontsize=10, color=colors["fg"],
            va="bottom", ha="right")
    # A compute roof is named past the right edge of the plot, level with it, where no point can be: inside,
    # at the roof's end, the name covered the points that sit on the roof. Two lines on a phone's chart.
    from matplotlib.transforms import blended_transform_factory

    beside = blended_transform_factory(ax.transAxes, ax.transData)

    def roof_name(tflops: float, prefix: str = "") -> None:
        ax.text(1.02, tflops, f"{prefix}{readable(tflops)}{chr(10) if _layout['narrow'] else ' '}TFLOP/s",
                transform=beside, fontsize=10, color=colors["fg"], va="center", ha="left", linespacing=1.1)

    roof_name(peak)
    fp32 = model.get("peak_tflops_fp32")
    if fp32:  # a second compute roof, for the examples that run in fp32
        knee = fp32 * 1e12 / (bandwidth * 1e9)
        ax.plot([knee, xs[-1]], [fp32, fp32], color=colors["fg"], linewidth=1.2, linestyle="--")
        roof_name(fp32, "fp32 ")
    # One colour per example; hollow for eager, filled for fused or compiled, an arrow from one to the other.
    examples = list(dict.fromkeys(p["label"].split(", ")[0] for p in points))
    placed = {}
    for p in points:
        example, _, variant = p["label"].partition(", ")
        color = colors["series"][examples.index(example) % len(colors["series"])]
        eager = variant.startswith("eager")
        marker = "o" if p.get("measured") else "s"
        ax.scatter([p["intensity"]], [p["tflops"]], marker=marker, zorder=3, s=46, linewidths=1.6,
                   edgecolors=color, facecolors="none" if eager else color)
        # A model's points and measured ones are separate pairs, each with its own arrow.
        pair = placed.setdefault((example, bool(p.get("measured"))), {})
        pair["eager" if eager else "other"] = (p["intensity"], p["tflops"])
    named, names = set(), []
    for (example, _), ends in placed.items():
        if "eager" in ends and "other" in ends:
            ax.annotate("", xy=ends["other"], xytext=ends["eager"], zorder=2, arrowprops={
                "arrowstyle": "->", "color": colors["series"][examples.index(example) % len(colors["series"])],
                "linewidth": 1.2, "shrinkA": 5, "shrinkB": 5})
        if _layout["narrow"] or example in named:
            continue  # a phone's chart is too small for names beside the points: its legend names them
        named.add(example)  # once, at the first pair drawn: the model's where there is one
        # Each example is named beside its last point (the fused or compiled one), not only in the legend:
        # right of it and below, or, in the right part of the chart, left of it and below the example's
        # lowest point (on the right the name would run into the roofs' names, and above it, it would read
        # as the name of whatever sits left of it under a roof).
        point = ends.get("other", ends.get("eager"))
        left = math.log(point[0] / xs[0]) > 0.7 * math.log(xs[-1] / xs[0])
        if left:
            point = (point[0], min(p["tflops"] for p in points if p["label"].split(", ")[0] == example))
        names.append(ax.annotate(example.replace("_", " "), xy=point, xytext=(-7, -9) if left else (7, -3),
                                 textcoords="offset points", ha="right" if left else "left", va="top",
                                 fontsize=10, color=colors["fg"], zorder=4))
    apart(fig, names)
    from matplotlib.lines import Line2D

    variants = {p["label"].partition(", ")[2] for p in points}
    every_measured = all(p.get("measured") for p in points)
    handles = [Line2D([], [], linestyle="none", marker="o" if every_measured else "s", markersize=7,
                      color=colors["series"][i % len(colors["series"])],
                      label=example.replace("_", " ")) for i, example in enumerate(examples)]
    if any(v.startswith("eager") for v in variants) and len(variants) > 1:
        handles += [Line2D([], [], linestyle="none", marker="o", markersize=7, markerfacecolor="none",
                           markeredgecolor=colors["fg"], label="eager (hollow)"),
                    Line2D([], [], linestyle="none", marker="o", markersize=7, color=colors["fg"],
                           label="fused or compiled (filled)")]
    if not every_measured:
        handles.append(Line2D([], [], linestyle="none", marker="s", markersize=7, markerfacecolor="none",
                              markeredgecolor=colors["fg"], label="square: a model, not measured"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("TFLOP/s")
    ax.grid(which="major")
    if _layout["narrow"]:  # under the chart: inside, on a phone, it would cover the points
        ax.legend(handles=handles, frameon=False, fontsize=10, loc="upper left", bbox_to_anchor=(-0.2, -0.2))
    else:  # under the chart, in two columns: inside, measured points far below a roof ran into it
        ax.legend(handles=handles, frameon=False, fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16),
                  ncol=2)
    ax.set_title(model.get("label", ""), loc="left", fontsize=11)
    alt = (f"Roofline of {model.get('label', 'a device')}: memory roof {readable(bandwidth)} GB/s, compute roof "
           f"{readable(peak)} TFLOP/s, ridge at {readable(ridge)} FLOP per byte; points: "
           + "; ".join(f"{p['label']} at {readable(p['intensity'])} FLOP/byte" for p in points) + ".")
    return fig, alt


def trace_lanes(trace_path: Path) -> tuple[str, list, list, float]:
    """(title, CPU bars, GPU bars, span) of one Chrome trace; bars are (start µs, length µs, label)."""
    every = [e for e in json.loads(trace_path.read_text()).get("traceEvents", []) if e.get("ph") == "X"]
    # A trace may keep events without their times (ts and dur 0: the H200's eager traces did). They set no
    # origin and draw no bar; a GPU lane of nothing else is kept, at 0, so its row can say "no times".
    events = [e for e in every if e.get("ts") or e.get("dur")]
    annotations = [e for e in events if e.get("cat") == "user_annotation"]
    t0 = min((e["ts"] for e in annotations), default=min((e["ts"] for e in events), default=0))
    cpu_ops = sorted((e for e in events if e.get("cat") in ("cpu_op", "cuda_runtime")), key=lambda e: e["ts"])
    top, end = [], -1.0
    for e in cpu_ops:  # keep the outermost calls: children sit inside their parent's bar
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e.get("dur", 0)
    on_gpu = ("kernel", "gpu_memcpy", "gpu_memset")
    gpu = sorted((e for e in events if e.get("cat") in on_gpu), key=lambda e: e["ts"])
    untimed = [e for e in every if e.get("cat") in on_gpu and e not in events]

    def bars(items):
        return [(max(e["ts"] - t0, 0), e.get("dur", 0), short_name(e["name"])) for e in items]

    cpu_bars = bars(top)
    gpu_bars = bars(gpu) or [(0.0, 0.0, short_name(e["name"])) for e in untimed]
    span = max((s + d for s, d, _ in cpu_bars + gpu_bars), default=1.0)
    title = trace_path.name.removesuffix(".trace.json").split(".")[-1].replace("_", " ")
    return title, cpu_bars, gpu_bars, span


def short_name(name: str) -> str:
    name = name.removeprefix("void ").split("<")[0].split("(")[0]
    return name.removeprefix("aten::").split("::")[-1]


def traces(record: Record) -> list[Path]:
    # Eager first, so it sits above whatever it is compared with.
    return sorted(record.files.glob("*.trace.json"), key=lambda t: ("eager" not in t.name, t.name))


def draw_timeline(record: Record, options: dict, colors: dict):
    import matplotlib.pyplot as plt

    found = traces(record)
    if not found:
        raise FigureError("the record kept no profiler trace (store the profile object in results)")
    lanes = [trace_lanes(t) for t in found]
    span = max(lane[3] for lane in lanes)
    rows = [(title, side, bars) for title, cpu, gpu, _ in lanes for side, bars in (("CPU", cpu), ("GPU", gpu))
            if bars or side == "CPU"]
    unit, factor = ("ms", 1e-3) if span >= 1e4 else ("µs", 1.0)
    fig, ax = plt.subplots(figsize=(width(), 0.6 * len(rows) + 1.2))
    names = []
    for row, (title, side, bars) in enumerate(reversed(rows)):
        lane = 0 if side == "CPU" else 1
        if bars and not any(b[1] for b in bars):  # kept without times: said in the row, no bar drawn at 0
            ax.text(span * 0.01 * factor, row, f"{len(bars)} kernels, kept without their times", va="center",
                    fontsize=10, color=colors["muted"])
            bars = []
        for i, (start, length, label) in enumerate(bars):
            # Neighbouring calls alternate in shade and are parted by a gap, so six ops read as six.
            color = (colors["series"][lane], colors["alt"][lane])[i % 2]
            ax.broken_barh([(start * factor, max(length, span / 2000) * factor)], (row - 0.35, 0.7),
                           color=color, edgecolor=colors["bg"], linewidth=1.5)
            if length > span / 12:
                bar_label(ax, start * factor, (start + length) * factor, row, label, fontsize=10,
                          beside=colors["fg"] if i == len(bars) - 1 else None,
                          color="#ffffff" if colors is PALETTES["light"] else "#10121a")
        names.append(f"{title}: {side}")
    ax.set_yticks(range(len(rows)), names)
    ax.set_xlim(0, span * 1.02 * factor)
    ax.set_xlabel(f"time since the profiled region began ({unit})")
    ax.grid(axis="x")
    counts = ", ".join(f"{t}: {len(c)} CPU calls, {len(g)} GPU kernels" for t, c, g, _ in lanes)
    return fig, f"Timeline of the profiled call on one time axis ({counts})."



def draw_breakeven(record: Record, options: dict, colors: dict):
    """Total time against the number of calls: eager is calls × its median; compiled pays the compile first,
    then calls × its median. The lines cross at the break-even."""
    import matplotlib.pyplot as plt

    eager, compiled = value(record, keys(options, "base")[0]), value(record, keys(options, "other")[0])
    compile_s = value(record, keys(options, "compile")[0])
    if not (is_timing(eager) and is_timing(compiled) and isinstance(compile_s, (int, float))):
        raise FigureError("base and other must be timings, compile a number of seconds")
    e, c = eager["median_us"] / 1e6, compiled["median_us"] / 1e6
    even = compile_s / (e - c) if e > c else None
    last = int(options.get("calls") or max(10, 3 * (even or 3)))
    n = list(range(0, last + 1))
    fig, ax = plt.subplots(figsize=(width(), 4.2))
    ax.plot(n, [k * e for k in n], color=colors["series"][0], label="eager: calls × its median")
    ax.plot(n, [compile_s + k * c for k in n], color=colors["series"][1],
            label="compiled: compile time, then calls × its median")
    if even is not None and even <= last:
        ax.axvline(even, color=colors["muted"], linestyle="--", linewidth=1)
        # On the chart's background, so that neither the grid nor the dashed line runs through it.
        # Where the lines cross, and the first whole call after it: the count a snippet prints ("pays off after
        # 14 calls") is that call, so a crossing at 13.04 is not shown as "13".
        ax.annotate(f"lines cross at {even:.1f} calls:\ncompiled ahead from call {math.ceil(even)}",
                    (even, compile_s + even * c), xytext=(6, -6),
                    textcoords="offset points", va="top", fontsize=10, color=colors["fg"],
                    bbox={"facecolor": colors["bg"], "edgecolor": "none", "pad": 1})
    ax.set_xlabel("calls")
    ax.set_ylabel("total time (s)")
    ax.set_xlim(0, last)
    ax.set_ylim(0, None)
    ax.grid(which="major")
    # Under the chart: inside it, the break-even line ran through the entries.
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(-0.1, -0.16))
    alt = (f"Total time against calls: eager grows by {readable(e * 1e3)} ms a call; compiled starts at "
           f"{readable(compile_s)} s of compiling and grows by {readable(c * 1e3)} ms a call"
           + (f"; they cross after {readable(even)} calls." if even is not None else "; they never cross."))
    return fig, alt


def draw_strip(record: Record, options: dict, colors: dict):
    """A list of small integers as a strip of cells, one per element, coloured and labelled by value: which
    program handled each element."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    items = value(record, keys(options, "key")[0])
    if not (isinstance(items, list) and items and all(isinstance(i, int) for i in items)):
        raise FigureError("key must name a list of integers")
    fig, ax = plt.subplots(figsize=(width(max(4.0, 0.62 * len(items))), 1.6))
    for i, item in enumerate(items):
        color = colors["series"][item % 4] if item >= 0 else colors["grid"]
        ax.add_patch(Rectangle((i, 0), 0.94, 1, color=color, alpha=0.85))
        ax.text(i + 0.47, 0.5, str(item), ha="center", va="center", fontsize=12, color=colors["bg"],
                fontweight="bold")
        ax.text(i + 0.47, -0.25, str(i), ha="center", va="top", fontsize=10, color=colors["muted"])
    ax.set_xlim(-0.1, len(items))
    ax.set_ylim(-0.8, 1.05)
    ax.axis("off")
    ax.text(-0.1, -0.78, options.get("label", "element index"), fontsize=10, color=colors["fg"])
    alt = f"{len(items)} cells, one per element, each holding the value {', '.join(map(str, items))}."
    return fig, alt


def draw_grid(record: Record, options: dict, colors: dict):
    """Rows of settings against the calls made under each: a cell says whether that call compiled a new
    graph or reused one, from each row's graph count after every call (`ROW.after`, a dict in call order)."""

    rows = keys(options, "rows")
    names = labels(options, rows)
    counts = [value(record, f"{row}.after") for row in rows]
    if not all(isinstance(c, dict) and c for c in counts):
        raise FigureError("each row must hold `after`, the graph count after each call")
    columns = list(dict.fromkeys(k for c in counts for k in c))
    cells = []  # per row: (column index, compiled?) for each call made
    for row in counts:
        before, found = 0, []
        for x, column in enumerate(columns):
            if column in row:
                found.append((x, row[column] > before))
                before = row[column]
        cells.append(found)
    if _layout["narrow"]:
        fig, ax = grid_down(cells, names, columns, options, colors)
    else:
        fig, ax = grid_across(cells, names, columns, options, colors)
    ax.axis("off")
    alt = "; ".join(f"{name}: " + ", ".join(f"{columns[x]} {'compiled' if new else 'reused'}" for x, new in found)
                    for name, found in zip(names, cells))
    return fig, "Compiled or reused, per call. " + alt + "."


def grid_cell(ax, x: float, y: float, new: bool, colors: dict) -> None:
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), 0.95, 0.9, color=colors["series"][1] if new else colors["grid"]))
    ax.text(x + 0.47, y + 0.45, "compiled" if new else "reused", ha="center", va="center", fontsize=10,
            color=colors["bg"] if new else colors["fg"])


def wrapped(text: str, width: int) -> str:
    """Lines of at most `width` characters where the text allows, broken after a space, '=' or '_':
    'dynamic=False' -> 'dynamic=' / 'False', 'mark_dynamic' -> 'mark_' / 'dynamic'."""
    import re

    lines = [""]
    for piece in re.split(r"(?<=[=_ ])", text):
        if lines[-1] and len(lines[-1] + piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.strip() for line in lines)


def grid_down(cells, names, columns, options, colors):
    """A phone's grid: one column per setting, one row per call, so the cells stay wide enough for a word."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width(), 1.2 + 0.45 * len(columns)))
    for c, (found, name) in enumerate(zip(cells, names)):
        ax.text(c + 0.47, len(columns) + 0.05, wrapped(name, 10), ha="center", va="bottom", fontsize=10,
                color=colors["fg"])
        for x, new in found:
            grid_cell(ax, c, len(columns) - 1 - x, new, colors)
    for x, column in enumerate(columns):
        ax.text(-0.1, len(columns) - 1 - x + 0.45, column, ha="right", va="center", fontsize=10, color=colors["fg"])
    ax.text(-1.3, len(columns) / 2, options.get("xlabel", "calls, in order"), ha="center", va="center",
            rotation=90, fontsize=10, color=colors["fg"])
    ax.set_xlim(-0.1, len(cells))
    ax.set_ylim(-0.1, len(columns) + 1.1)
    return fig, ax


def grid_across(cells, names, columns, options, colors):
    import matplotlib.pyplot as plt

    rows = names
    fig, ax = plt.subplots(figsize=(1.6 + 1.45 * len(columns), 0.7 + 0.62 * len(rows)))
    for r, (found, name) in enumerate(zip(cells, names)):
        y = len(rows) - 1 - r
        ax.text(-0.1, y + 0.45, name, ha="right", va="center", fontsize=11, color=colors["fg"])
        for x, new in found:
            grid_cell(ax, x, y, new, colors)
    for x, column in enumerate(columns):
        ax.text(x + 0.47, len(rows) + 0.1, column, ha="center", va="bottom", fontsize=10, color=colors["fg"])
    ax.text(len(columns) / 2, len(rows) + 0.65, options.get("xlabel", "calls, in order"), ha="center",
            va="bottom", fontsize=11, color=colors["fg"])
    ax.set_xlim(-0.1, len(columns))
    ax.set_ylim(-0.1, len(rows) + 1.1)
    return fig, ax


def draw_tiles(record: Record, options: dict, colors: dict):
    """Grids of output tiles side by side, each cell the launch order of the program that computes it (a 2-D
    list of program ids per key): the first `wave` programs (an int under that key) in the accent colour,
    the later ones paler the later they start."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    wanted = keys(options, "keys")
    names = labels(options, wanted)
    grids = [value(record, k) for k in wanted]
    if not all(isinstance(g, list) and g and all(isinstance(r, list) and len(r) == len(g[0]) for r in g)
               for g in grids):
        raise FigureError(f"keys={options['keys']}: each must be a grid, a list of equal rows of program ids")
    wave = value(record, options["wave"]) if options.get("wave") else 0
    # Side by side on a wide page; one above the other on a phone.
    shape, size = ((len(grids), 1), (width(4.2), 4.6 * len(grids))) if _layout["narrow"] else \
        ((1, len(grids)), (4.2 * len(grids), 4.6))
    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    accent, base, background = (to_rgb(c) for c in (colors["series"][1], colors["series"][0], colors["bg"]))
    for ax, grid, name in zip(axes.flat, grids, names):
        last = max(max(row) for row in grid) or 1
        cells = [[accent if pid < wave else tuple(b + (f - b) * (0.25 + 0.65 * pid / last)
                                                   for b, f in zip(base, background))
                  for pid in row] for row in grid]
        ax.imshow(cells, interpolation="nearest")
        ax.set_title(name, fontsize=12, color=colors["fg"])
        ax.set_xlabel("column of tiles (of B)")
        ax.set_ylabel("row of tiles (of A)")
        ax.tick_params(labelsize=10)
    first = f"the first {wave} programs, in the accent colour; " if wave else ""
    alt = (f"Tile grids, one per order ({', '.join(names)}): {first}later programs paler the later they start. "
           + "; ".join(f"{name}: the first wave spans {len({r for r, row in enumerate(g) for p in row if p < wave})} "
                       f"rows and {len({c for row in g for c, p in enumerate(row) if p < wave})} columns of tiles"
                       for name, g in zip(names, grids)))
    return fig, alt + "."


DRAW = {"timeline": draw_timeline, "bars": draw_bars, "speedup": draw_speedup, "lines": draw_lines,
        "roofline": draw_roofline, "breakeven": draw_breakeven, "strip": draw_strip, "grid": draw_grid,
        "tiles": draw_tiles}
