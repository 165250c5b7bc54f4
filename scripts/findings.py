"""The site's findings in one table: every timed comparison a chapter makes (`md:compare`), side by side.

Nothing here is typed: a row is one distinct comparison (snippet, timing A, timing B) of the pages' CPU
`md:compare`s, in nav order, with the workload and the one-line reason that the page gives it as options of
that directive (`what=`, `why=`, and `size=KEY` for a size the record holds). Its numbers are the record's:
the verdict by the site's one rule, the median ratio of the per-process medians and its range over the
fresh processes, and whether every other torch release's record points the same way.

Each row also gets a GPU model (`model_of`), from the record of snippets/gpu_code/findings_model.py: both sides'
kernels, counted from Inductor's CUDA code and eager's ATen ops, each at its roof on an H100, H200 and B200 from
datasheet figures. A row gets a model only where the model's workload is the one the row's record timed (the same
`work` label: function and input sizes).

Needs no mkdocs: the directives module renders it on a page (`md:findings`), with a chart drawn here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from scripts import measures, plots, records, releases


@dataclass
class Finding:
    page: str  # the page that makes the comparison, relative to docs/
    title: str
    snippet: str
    key_a: str
    key_b: str
    what: str
    why: str
    size: str  # the size the record holds, formatted; "" where the page names none
    words: str  # "1.3× faster", "about the same"
    ratio: float  # A/B: above 1, B is faster
    low: float
    high: float
    processes: int
    releases: list[tuple[str, str]]  # (release, words) for each release with a fresh record, main first
    model: Modelled | None = None

    @property
    def steady(self) -> bool:
        """More than one release recorded it, and every one's record points the same way (faster, slower, or
        about the same)."""
        return len(self.releases) > 1 and len({measures.direction(words) for _, words in self.releases}) == 1


MODEL = "gpu_code/findings_model.py"


@dataclass
class Modelled:
    """One row's GPU model: each side's kernels and its time at the roof, per GPU."""
    kernels: tuple[int, int]  # (A, B)
    nbytes: tuple[int, int]
    us: dict[str, tuple[float, float]]  # gpu key -> (A, B) microseconds at the roof
    names: dict[str, str]  # gpu key -> its name

    def ratio(self, gpu: str) -> float:
        """A's time over B's: above 1, B is faster if every kernel runs at its roof."""
        a, b = self.us[gpu]
        return a / b if b else float("nan")


def model_of(finding: Finding, outputs: Path = records.OUTPUTS,
             snippets: Path = records.SNIPPETS) -> Modelled | None:
    """The row's model, or None where the model record is missing or models another workload than the row's."""
    record = records.record(MODEL, "cpu", outputs, snippets)
    if not record.exists:
        return None
    sides = record.results.get("timed", {}).get(finding.snippet, {})
    timed = records.record(finding.snippet, "cpu", outputs, snippets)
    found = []
    for key in (finding.key_a, finding.key_b):
        try:
            work = timed.value(key).get("work")
        except KeyError:
            return None
        if key not in sides or sides[key]["work"] != work:
            return None
        found.append(sides[key])
    a, b = found
    gpus = record.results["gpus"]
    return Modelled((len(a["kernels"]), len(b["kernels"])), (a["bytes"], b["bytes"]),
                    {g: (a[f"{g}_us"], b[f"{g}_us"]) for g in gpus}, {g: spec["name"] for g, spec in gpus.items()})


def shown_size(value) -> str:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return "×".join(f"{v:,}" for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def collect(compares, outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS) -> list[Finding]:
    """One Finding per distinct CPU comparison, from (page, title, directive) triples in nav order; the first
    that says what it compares names it. A comparison no page describes (`what=`) is left out."""
    described: dict[tuple[str, str, str], tuple[str, str, dict]] = {}
    for src, title, d in compares:
        if d.options.get("device", "cuda") != "cpu":
            continue
        key = tuple(d.args)
        if key not in described or ("what" in d.options and "what" not in described[key][2]):
            described[key] = (src, title, d.options)
    found = []
    for (snippet, key_a, key_b), (src, title, options) in described.items():
        if "what" not in options:
            continue
        made = releases.comparable(snippet, "cpu", outputs, snippets) or records.releases_of(
            snippet, "cpu", outputs, snippets)[:1]
        if not made:
            continue
        shown = made[0]
        a, b = shown.value(key_a), shown.value(key_b)
        ratio, low, high = measures.timing_band(a, b)
        verdicts = []
        for record in made:
            try:
                x, y = record.value(key_a), record.value(key_b)
            except KeyError:
                continue
            if not (measures.unsteady(x) or measures.unsteady(y)):
                verdicts.append((record.release, measures.judge(x, y)))
        size = (f"{options['size'].split('.')[-1]} = {shown_size(shown.value(options['size']))}"
                if options.get("size") else "")
        finding = Finding(src, title, snippet, key_a, key_b, options["what"], options.get("why", ""), size,
                          measures.judge(a, b), ratio, low, high, len(measures.ratios(a, b)), verdicts)
        finding.model = model_of(finding, outputs, snippets)
        found.append(finding)
    return found


def chart(found: list[Finding], colors: dict, style: dict, narrow: bool = False) -> str:
    """The SVG of each comparison's ratio on a log axis, its range over the fresh processes as a
    whisker, and the band the site calls "about the same" shaded. `narrow`: drawn for a phone's column
    (plots.NARROW_PT), each label on two lines and the axis label shorter, so its text stays readable."""
    import textwrap

    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    rows = list(reversed(found))  # the first finding on top
    with plt.rc_context(style):
        high_row = 0.62 if narrow else 0.34
        fig, ax = plt.subplots(figsize=(plots.NARROW_PT / 72 if narrow else 6.4, high_row * len(rows) + 1.1))
        ax.axvspan(1 / measures.SAME_WITHIN, measures.SAME_WITHIN, color=colors["grid"], alpha=0.8, linewidth=0)
        ax.axvline(1, color=colors["fg"], linewidth=1)
        for y, row in enumerate(rows):
            color = colors["series"][0] if row.ratio >= 1 else colors["series"][1]
            ax.plot([row.low, row.high], [y, y], color=color, linewidth=2, solid_capstyle="butt")
            ax.plot([row.ratio], [y], marker="o", markersize=6, color=color)
        ax.set_yticks(range(len(rows)), [textwrap.fill(row.what, 30) if narrow else row.what for row in rows])
        ax.set_xscale("log")
        low = min(min(r.low for r in rows), 1 / 1.5)
        high = max(max(r.high for r in rows), 1.5)
        ax.set_xlim(low / 1.2, high * 1.2)
        ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if low / 1.2 <= t <= high * 1.2]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("how much faster the second runs\n(log scale)" if narrow
                      else "how much faster the second runs than the first (log scale)")
        ax.grid(axis="x")
        ax.tick_params(axis="y", length=0)
        if narrow:
            plots.fit(fig, plots.NARROW_PT / 72 - 0.2)  # savefig pads the tight box by 0.1 inch a side
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
        plt.close(fig)
    return out.getvalue()


def describe(found: list[Finding]) -> str:
    """The chart's alt text."""
    faster = sum(measures.direction(r.words) > 0 for r in found)
    slower = sum(measures.direction(r.words) < 0 for r in found)
    return (f"{len(found)} comparisons on a log scale: {faster} faster, {slower} slower, "
            f"{len(found) - faster - slower} about the same (the shaded band).")
