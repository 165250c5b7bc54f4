"""The page "What changed between versions", written from the CPU records of every torch release.

It shows, in this order: the timed comparisons the chapters make, release by release (a table and a chart);
each output that a release prints differently (a readable diff, folded); each count that differs; and the
outputs that are the same on every release.

The timed comparisons: for each distinct CPU `md:compare` (snippet, timing A, timing B) a chapter makes,
each torch release's fresh record gives a ratio A/B and the site's verdict, unless that record's processes
spread too wide to compare (`measures.unsteady`). A comparison is steady when every release it has points the
same way. The chart puts each release's ratio on one row per comparison, on a log axis, with the "about the
same" band shaded.

Needs no mkdocs and does not import scripts/directives.py: its `md:changes` hands this module a `Site`
(the links, the folders, the figure drawing and what the chapters show) and places what `render` returns.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
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


# ------------------------------------------------------------------------------------------------ the page


@dataclass
class Site:
    """What the versions page reads from the site, handed in by scripts/directives.py (`md:changes`)."""

    outputs: Path  # docs/outputs, every release's records
    snippets: Path
    link: Callable[[str], str]  # a page under docs/ -> its Markdown link from the versions page
    shown: list[tuple[str, str, str, str | None]]  # (page, title, snippet, section) of each md:output, nav order
    compares: list[tuple[str, str, str, str, str]]  # (page, title, snippet, key A, key B) of each CPU md:compare
    anchor: Callable[[str, str | None], str]  # the id an output's line links to: (snippet, section) -> id
    duration: Callable[[float], str]  # microseconds as the site shows a time
    # (key, draw(colors, style) -> SVG, alt, caption) -> the numbered figure's Markdown; None: no figures
    figure: Callable[[str, Callable[[dict, dict], str], str, str], str] | None = None


def fenced(text: str, info: str) -> str:
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def indent(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line if line else "" for line in text.splitlines())


def shown_value(value) -> str:
    """A value for a table cell: a long list by its length."""
    if isinstance(value, list) and len(value) > 6:
        return f"{len(value)} items"
    return "`" + str(value).replace("|", "\\|") + "`"


def timing_section(site: Site, timed: list[Timed]) -> list[str]:
    """The versions page's first section: each timed comparison, release by release, as a chart and a table."""
    steady = sum(row.steady for row in timed)
    refused = sum(len(row.refused) for row in timed)
    ordered = sorted({r for row in timed for r in [*row.by_release, *row.refused]}, key=records.version_key)
    rows = ["| Page | B against A | " + " | ".join(f"torch {r}" for r in ordered) + " |",
            "|---|---|" + "---|" * len(ordered)]
    for row in timed:
        cells = []
        for release in ordered:
            if release in row.by_release:
                words, ratio = row.by_release[release]
                cells.append(f"{words} ({ratio:.2f})")
            elif release in row.refused:
                low, high = row.refused[release]
                cells.append(f"not compared: processes spread {site.duration(low)} to {site.duration(high)}")
            else:
                cells.append("–")
        rows.append(f"| [{row.title}]({site.link(row.page)}) | `{Path(row.snippet).stem}`: `{row.key_b}` "
                    f"against `{row.key_a}` | " + " | ".join(cells) + " |")
    summary = (f"Of the {len(timed)} timed comparisons the chapters make on the CPU, {steady} point the same way "
               "in every release's record (faster, slower, or about the same), judged by the site's one rule. "
               "The releases were recorded on different days on the same kind of machine, whose timings move "
               f"between processes ([how timings are taken]({site.link('reproduce.md')}#how-timings-are-taken))."
               + (f" {refused} record{'s are' if refused != 1 else ' is'} not compared: the medians of their fresh "
                  "processes spread more than "
                  f"{measures.UNSTEADY:g} times, where quiet processes agree within about 2 times, so the machine "
                  "was busy while they ran." if refused else ""))
    figure = ""
    if site.figure is not None and any(row.by_release for row in timed):
        key = hashlib.sha256(Path(__file__).read_bytes() + repr([vars(row) for row in timed]).encode()).hexdigest()
        figure = site.figure(key, lambda colors, style: chart(timed, colors, style), describe(timed),
                             "Each comparison's ratio on each release (a marker per release, log scale); the "
                             "shaded band is what the site calls about the same.")
    return ["## Timings, release by release", "", summary, "", figure, "\n".join(rows), ""]


def render(site: Site) -> str:
    """The generated page "What changed between versions": from the CPU records of every torch release, each
    output that differs (a readable diff), each count that differs, and each timed comparison per release."""
    roots = {release: root for release, root in records.release_roots(site.outputs).items()
             if records.find_records("cpu", root)}
    if len(roots) < 2:
        return "Only one torch release has CPU records so far, so nothing can be compared yet.\n"
    lines = ["| torch | records | made | Python | triton | JAX | numpy |", "|---|---|---|---|---|---|---|"]
    for release, root in sorted(roots.items(), key=lambda item: records.version_key(item[0]), reverse=True):
        made = records.find_records("cpu", root, site.snippets)
        fresh = sum(r.state == "fresh" for r in made)
        dates = sorted(r.date for r in made)
        stack = [", ".join(sorted({str(r.environment.get(key)) for r in made if r.environment.get(key)})) or "–"
                 for key in releases.STACK]
        main = " (the site's)" if release == records.MAIN else ""
        lines.append(f"| {release}{main} | {fresh} fresh of {len(made)} | {dates[0]} to {dates[-1]} | "
                     + " | ".join(stack) + " |")
    out = ["\n".join(lines), ""]
    unchanged, seen, diffs, anchored = [], set(), [], set()
    for src, title, snippet, section in site.shown:
        if (snippet, section) in seen or not (site.snippets / snippet).is_file():
            continue
        seen.add((snippet, section))
        found = releases.changes(snippet, [section], "cpu", site.outputs, site.snippets)
        link = site.link(src)
        where = f"`{snippet}`" + (f" · `{section}`" if section else "")
        if not found:
            unchanged.append(f"[{title}]({link}): {where}")
            continue
        for change in found:
            body = fenced("\n".join(change.lines), "diff")
            also = releases.stack_changes(change.older, change.newer)
            cause = (f" Besides torch, {', '.join(also)} changed between the two records: a line may differ "
                     f"because of any of them." if also else "")
            anchor = site.anchor(snippet, section)
            if anchor not in anchored:
                anchored.add(anchor)
                diffs.append(f'<span id="{anchor}"></span>\n')
            versions = releases.label(change.older, change.newer)
            diffs.append(f'??? abstract mlc-recorded "{title}: {where}, {versions}"\n\n'
                         f"    On [{title}]({link}). `-` torch {change.older.release}, `+` torch "
                         f"{change.newer.release}; a line of context either side.{cause}\n\n{indent(body)}\n")
    if diffs:
        out += ["## Outputs that differ", "",
                f"{len(diffs)} changes between consecutive releases, in the order of the chapters. Open one "
                f"for the lines that differ.", "", *diffs]
    counted = []
    for snippet in records.find_snippets(site.snippets):
        found = releases.comparable(snippet, "cpu", site.outputs, site.snippets)
        for key, values in releases.counts(found) if len(found) > 1 else []:
            ordered = sorted(values, key=records.version_key)
            counted.append(f"| `{snippet}` | `{key}` | " + " → ".join(
                f"{release}: {shown_value(values[release])}" for release in ordered) + " |")
    if counted:
        table = "\n".join(["| Snippet | Key | By release |", "|---|---|---|", *counted])
        out += ["## Counts and values that differ", "",
                f'??? info mlc-recorded "{len(counted)} values in the records\' `results.json` differ"\n\n'
                "    Whole numbers, words and flags; measurements are in the next section.\n\n"
                + indent(table) + "\n"]
    timed = collect(site.compares, site.outputs, site.snippets)
    if timed:
        out = out[:2] + timing_section(site, timed) + out[2:]
    if unchanged:
        out += ["## The same on every release", "",
                f'??? success "{len(unchanged)} outputs differ only in addresses, hashes, measured numbers and '
                f'generated names"\n\n' + indent("\n".join(f"- {item}" for item in unchanged)) + "\n"]
    return "\n".join(out) + "\n"
