"""The timed comparisons of the site, release by release: the first thing the versions page shows.

For each distinct CPU `md:compare` (snippet, timing A, timing B) a chapter makes, each torch release's fresh
record gives a ratio A/B and the site's verdict, unless that record's processes spread too wide to compare
(`measures.unsteady`). A comparison is steady when every release it has points the same way. The chart puts
each release's ratio on one row per comparison, on a log axis, with the "about the same" band shaded.

Needs no mkdocs: scripts/directives.py renders it inside `md:changes`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from scripts import measures, records, releases


@dataclass
class Timed:
    page: str  # the page that makes the comparison, relative to docs/
    title: str
    snippet: str
    key_a: str
    key_b: str
    by_release: dict[str, tuple[str, float]] = field(default_factory=dict)  # release -> (verdict, ratio)
    refused: dict[str, tuple[float, float]] = field(default_factory=dict)  # release -> process medians' spread

    @property
    def steady(self) -> bool:
        return len({measures.direction(words) for words, _ in self.by_release.values()}) == 1


def collect(compares, outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS) -> list[Timed]:
    """One Timed per distinct comparison with a fresh record on more than one release, from (page, title,
    snippet, key A, key B) rows in nav order."""
    found, seen = [], set()
    for src, title, snippet, key_a, key_b in compares:
        if (snippet, key_a, key_b) in seen:
            continue
        seen.add((snippet, key_a, key_b))
        row = Timed(src, title, snippet, key_a, key_b)
        for record in releases.comparable(snippet, "cpu", outputs, snippets):
            try:
                a, b = record.value(key_a), record.value(key_b)
            except KeyError:
                continue
            if spread := measures.unsteady(a) or measures.unsteady(b):
                row.refused[record.release] = spread
                continue
            words, ratio, _ = measures.verdict(a, b)
            row.by_release[record.release] = (words, ratio)
        if len(row.by_release) + len(row.refused) > 1:
            found.append(row)
    return found


def chart(found: list[Timed], colors: dict, style: dict) -> str:
    """The SVG: a row per comparison, a marker per release at its ratio (log scale), the band shaded."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    rows = [row for row in reversed(found) if row.by_release]
    names = sorted({r for row in rows for r in row.by_release}, key=records.version_key)
    markers = ("s", "^", "o", "D")
    ratios = [ratio for row in rows for _, ratio in row.by_release.values()]
    with plt.rc_context(style):
        fig, ax = plt.subplots(figsize=(6.4, 0.3 * len(rows) + 1.3))
        ax.axvspan(1 / measures.SAME_WITHIN, measures.SAME_WITHIN, color=colors["grid"], alpha=0.8, linewidth=0)
        ax.axvline(1, color=colors["fg"], linewidth=1)
        for i, release in enumerate(names):
            points = [(row.by_release[release][1], y) for y, row in enumerate(rows) if release in row.by_release]
            ax.scatter([p[0] for p in points], [p[1] for p in points], marker=markers[i % len(markers)], s=30,
                       color=colors["series"][i % len(colors["series"])], label=f"torch {release}", zorder=3)
        ax.set_yticks(range(len(rows)), [short(row) for row in rows])
        ax.set_xscale("log")
        low, high = min(min(ratios), 1 / 1.5), max(max(ratios), 1.5)
        ax.set_xlim(low / 1.3, high * 1.3)
        ticks = [t for t in (0.001, 0.01, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if low / 1.3 <= t <= high * 1.3]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("A ÷ B: how much faster B runs (log scale)")
        ax.grid(axis="x")
        ax.tick_params(axis="y", length=0)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 1.2 / (0.3 * len(rows) + 1.3) / 4),
                  ncol=len(names), frameon=False)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
        plt.close(fig)
    return out.getvalue()


def short(row: Timed) -> str:
    """A row's label: the snippet's name and timing B, short enough for a phone."""
    name = Path(row.snippet).stem
    return f"{name}: {row.key_b.removeprefix('timing.')}"


def describe(found: list[Timed]) -> str:
    steady = sum(row.steady for row in found)
    return (f"{len(found)} timed comparisons, each release's ratio on a log scale; {steady} point the same way "
            f"on every release.")
