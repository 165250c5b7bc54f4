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
    machine: str = ""  # the machine of the first release's record: the others are judged only on the same one
    elsewhere: dict[str, str] = field(default_factory=dict)  # release -> the other machine its record was made on
    what: str = ""  # what the comparison is, in the words of the page that makes it (md:compare's what=)
    work_a: str = ""  # what A timed, as its snippet's measure() named it: "compiled f(float32[1024])"
    work_b: str = ""

    @property
    def steady(self) -> bool:
        return len({measures.direction(words) for words, _ in self.by_release.values()}) == 1


def collect(compares, outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS,
            names: dict | None = None) -> list[Timed]:
    """One Timed per distinct comparison with a fresh record on more than one release, from (page, title,
    snippet, key A, key B) rows in nav order; `names` gives a comparison's words, {(snippet, A, B): what}."""
    found, seen = [], set()
    for src, title, snippet, key_a, key_b in compares:
        if (snippet, key_a, key_b) in seen:
            continue
        seen.add((snippet, key_a, key_b))
        row = Timed(src, title, snippet, key_a, key_b, what=(names or {}).get((snippet, key_a, key_b), ""))
        for record in releases.comparable(snippet, "cpu", outputs, snippets):
            try:
                a, b = record.value(key_a), record.value(key_b)
            except KeyError:
                continue
            row.machine = row.machine or record.machine
            if not row.work_a and isinstance(a, dict) and isinstance(b, dict):
                row.work_a, row.work_b = str(a.get("work", "")), str(b.get("work", ""))
            if record.machine != row.machine:  # another runner: what differs may be the machine, not torch
                row.elsewhere[record.release] = record.machine
                continue
            if spread := measures.unsteady(a) or measures.unsteady(b):
                row.refused[record.release] = spread
                continue
            words, ratio, _ = measures.verdict(a, b, "cpu")
            row.by_release[record.release] = (words, ratio)
        if len(row.by_release) + len(row.refused) + len(row.elsewhere) > 1:
            found.append(row)
    return found


def sizes_of_one_timing(row: Timed) -> bool:
    """A and B are one timing at two sizes (keys that differ only in an index: `sweep.timing.6` against
    `sweep.timing.0`): a sweep's growth, not a gain of one way of running over another, so it is not judged."""
    a, b = row.key_a.split("."), row.key_b.split(".")
    differ = [(x, y) for x, y in zip(a, b) if x != y]
    return len(a) == len(b) and len(differ) == 1 and all(part.isdigit() for part in differ[0])


def chart(found: list[Timed], colors: dict, style: dict, narrow: bool = False) -> str:
    """The SVG: a row per comparison, a marker per release at its ratio (log scale), the band shaded. Narrow:
    for a phone's column (scripts/plots.py NARROW_PT), each label on two lines."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    from scripts import plots

    plt = plots.pyplot()

    rows = [row for row in reversed(found) if row.by_release]
    names = sorted({r for row in rows for r in row.by_release}, key=records.version_key)
    markers = ("s", "^", "o", "D")
    ratios = [ratio for row in rows for _, ratio in row.by_release.values()]
    labels = [wrapped(short(row)) if narrow else short(row) for row in rows]
    # Inches a row: on a phone, room for each of its label's lines, so no two labels overprint.
    step = 0.3 if not narrow else 0.2 + 0.17 * max(label.count("\n") + 1 for label in labels)
    with plt.rc_context(style):
        fig, ax = plt.subplots(figsize=(6.4, step * len(rows) + 1.3))
        ax.axvspan(1 / measures.SAME_WITHIN, measures.SAME_WITHIN, color=colors["grid"], alpha=0.8, linewidth=0)
        ax.axvline(1, color=colors["fg"], linewidth=1)
        for i, release in enumerate(names):
            points = [(row.by_release[release][1], y) for y, row in enumerate(rows) if release in row.by_release]
            ax.scatter([p[0] for p in points], [p[1] for p in points], marker=markers[i % len(markers)], s=30,
                       color=colors["series"][i % len(colors["series"])], label=f"torch {release}", zorder=3)
        ax.set_yticks(range(len(rows)), labels)
        ax.set_xscale("log")
        low, high = min(min(ratios), 1 / 1.5), max(max(ratios), 1.5)
        ax.set_xlim(low / 1.3, high * 1.3)
        # Over more than two decades, decades only: 0.1×, 0.2×, 0.5× and 1× overprint each other there.
        every = (0.001, 0.01, 0.1, 1, 10, 100) if high / low > 100 else (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50)
        ticks = [t for t in every if low / 1.3 <= t <= high * 1.3]
        if narrow and len(ticks) > 3:  # a phone's plot is about 150 px wide: three labels, 1× among them
            ticks = ticks[ticks.index(1) % 2::2] if 1 in ticks else ticks[::2]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("A ÷ B: how much faster B runs" + ("\n" if narrow else " ") + "(log scale)")
        ax.grid(axis="x")
        ax.tick_params(axis="y", length=0)
        below = -0.75 / (step * len(rows)) if narrow else -0.12 - 1.2 / (step * len(rows) + 1.3) / 4
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, below), ncol=1 if narrow else len(names),
                  frameon=False)
        return plots.svg(fig, narrow)


def wrapped(label: str, width: int = 20) -> str:
    """A row's label on a phone: the snippet's name, then timing B over as many lines as it needs; a page's
    words (no "name: ") over lines of `width`."""
    import textwrap

    name, _, key = label.partition(": ")
    if not key:
        return "\n".join(textwrap.wrap(label, width, break_on_hyphens=True))
    return "\n".join([name + ":", *textwrap.wrap(key, width, break_on_hyphens=True)])


def short(row: Timed) -> str:
    """A row's label: the page's words for it where the page gives them (`what=`); else the snippet's name and
    the functions the two sides timed, as its code names them ("fusion: compiled complex_activation_into
    against complex_activation_into"), where they differ; else B against A by their keys, without the path
    they share ("fusion: compiled_out against compiled"), so two comparisons of one timing read apart."""
    if row.what:
        return row.what
    name = Path(row.snippet).stem
    function_a, function_b = (work.split("(", 1)[0].strip() for work in (row.work_a, row.work_b))
    if function_a and function_b and function_a != function_b:
        return f"{name}: {function_b} against {function_a}"
    a, b = row.key_a.split("."), row.key_b.split(".")
    shared = 0
    while shared < min(len(a), len(b)) - 1 and a[shared] == b[shared]:
        shared += 1
    group = "" if a[:shared] in ([], ["timing"]) else ".".join(a[:shared]) + " "  # "tiny", "compile": kept
    return f"{name}: {group}{'.'.join(b[shared:])} against {'.'.join(a[shared:])}"


def describe(found: list[Timed]) -> str:
    steady = sum(row.steady for row in found)
    return (f"{len(found)} timed comparisons, each release's ratio on a log scale; {steady} point the same way "
            f"on every release.")


# ------------------------------------------------------------------------------ the changes that matter


class ChangelogError(Exception):
    """A notable change reads something its snippet's records do not hold; the message is one line."""


def runs(values: dict[str, object]) -> list[tuple[object, list[str]]]:
    """(value, releases) for each run of consecutive releases, oldest first, that share a value."""
    out: list[tuple[object, list[str]]] = []
    for release in sorted(values, key=records.version_key):
        if out and out[-1][0] == values[release]:
            out[-1][1].append(release)
        else:
            out.append((values[release], [release]))
    return out


def by_release(values: dict[str, object], unit: str = "", show: Callable[[object], str] = str) -> str:
    """'23 checks on torch 2.11.0, 29 on 2.13.0 and 2.15.0': each run of releases with its value, oldest first;
    the unit follows the first value only."""
    parts = [f"{show(value)}{' ' + unit if unit and i == 0 else ''} on {'torch ' if i == 0 else ''}"
             f"{releases.names_of(names)}" for i, (value, names) in enumerate(runs(values))]
    return ", ".join(parts)


def listed(items) -> str:
    """a, b and c."""
    items = list(items)
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + "".join(items[-1:])


def code(names) -> str:
    """`a`, `b` and `c`."""
    return listed(f"`{name}`" for name in names)


def first_with(values: dict[str, object], test: Callable[[object], bool]) -> str | None:
    """The oldest release whose value passes the test."""
    return next((r for r in sorted(values, key=records.version_key) if test(values[r])), None)


def oldest_newest(values: dict[str, object]) -> tuple[object, object]:
    ordered = sorted(values, key=records.version_key)
    return values[ordered[0]], values[ordered[-1]]


def say_guards(values: dict[str, object]) -> str | None:
    counts = {release: count for release, (count, _) in values.items()}
    if len(set(counts.values())) < 2:
        return None
    (_, old), (_, new) = oldest_newest(values)
    came = [f"`{kind}` ({new[kind]})" for kind in new if kind not in old]
    went = [f"`{kind}` ({old[kind]})" for kind in old if kind not in new]
    moved = [f"`{kind}` {'falls' if new[kind] < old[kind] else 'rises'} from {old[kind]} to {new[kind]}"
             for kind in new if kind in old and old[kind] != new[kind]]  # every kind that changed, none left out
    kinds = ", ".join([*([f"{listed(came)} appear{'s' if len(came) == 1 else ''}"] if came else []),
                       *([f"{listed(went)} go{'es' if len(went) == 1 else ''}"] if went else []), *moved])
    return (f"TorchDynamo guards the chapter's function with {by_release(counts, 'checks')}"
            + (f": of its kinds, {kinds}." if kinds else "."))


def read_asserts(record: records.Record) -> tuple[int, int]:
    """(assert_size_stride calls, assert_size_stride_grouped calls) in the wrapper Inductor generated."""
    wrapper = record.section("wrapper")
    return len(re.findall(r"\bassert_size_stride\(", wrapper)), len(re.findall(r"\bassert_size_stride_grouped\(",
                                                                              wrapper))


def say_asserts(values: dict[str, object]) -> str | None:
    grouped = first_with(values, lambda v: v[1] > 0)
    single = {r: v[0] for r, v in values.items() if v[0] and not v[1]}
    if grouped is None or not single:
        return None
    calls = by_release(single, "calls") if len(set(single.values())) > 1 else f"{next(iter(single.values()))} calls"
    groups = values[grouped][1]
    return (f"From torch {grouped}, Inductor's generated wrapper checks the sizes and strides of its inputs just "
            f"before the first kernel that uses them, grouped into one `assert_size_stride_grouped` call per such "
            f"kernel ({groups} call{'s' if groups != 1 else ''} here), where {releases.names_of(list(single))} "
            f"call `assert_size_stride` once per input, at the top ({calls} here).")


def say_softmax(values: dict[str, object]) -> str | None:
    old, new = oldest_newest(values)
    if old == new:
        return None
    words = [set(str(name).split("fused_", 1)[-1].split("_")) for name in (old, new)]
    gone, came = sorted(words[0] - words[1] - {""}), sorted(words[1] - words[0] - {""})
    moved = "; ".join([*([f"{code(gone)} leave{'s' if len(gone) == 1 else ''} the name"] if gone else []),
                       *([f"{code(came)} join{'s' if len(came) == 1 else ''} the name"] if came else [])])
    return (f"Inductor names the kernel it fuses from `prepare_softmax_online` after the ATen ops fused into it: "
            f"{by_release(values, show=lambda name: f'`{name}`')}" + (f" ({moved})" if moved else "")
            + ", so a trace or a log searched by one release's name misses the other's.")


PRODUCT = re.compile(r"(_[0-9a-z]{52})?_\d+\.\w+$")  # as snippets/dissecting/tlparse_report.py names them


def read_trace(record: records.Record) -> tuple[int, frozenset[str]]:
    """(events in the structured trace, the products tlparse shows for every compile)."""
    compiles = record.value("tlparse.products").values()
    return record.value("event_count"), frozenset.intersection(
        *(frozenset(PRODUCT.sub("", name) for name in names) for names in compiles))


def say_trace(values: dict[str, object]) -> str | None:
    events = {release: count for release, (count, _) in values.items()}
    ordered = sorted(values, key=records.version_key)
    moves = []
    for older, newer in zip(ordered, ordered[1:]):
        came, went = sorted(values[newer][1] - values[older][1]), sorted(values[older][1] - values[newer][1])
        both = [*([f"{code(came)} appear{'s' if len(came) == 1 else ''}"] if came else []),
                *([f"{code(went)} go{'es' if len(went) == 1 else ''}"] if went else [])]
        if both:
            moves.append(f"on {newer} " + " and ".join(both))
    if len(set(events.values())) < 2 and not moves:
        return None
    products = f"; of the products tlparse shows for every compile, {', and '.join(moves)}" if moves else ""
    return f"torch's structured trace of the chapter's compiles holds {by_release(events, 'events')}{products}."


def read_sgd(record: records.Record) -> tuple[int, tuple[str, ...], bool]:
    ops = record.value("optimizer.dynamo_ops")
    return len(ops), tuple(sorted(set(ops))), "alpha=" in record.section("optimizer")


def say_sgd(values: dict[str, object]) -> str | None:
    counts = {release: v[0] for release, v in values.items()}
    if len(set(counts.values())) < 2:
        return None
    kinds = {release: v[1] for release, v in values.items()}
    shown = by_release({r: f"{counts[r]} ops ({code(kinds[r])})" for r in values})
    kept = first_with(values, lambda v: v[2])
    alpha = (f": from torch {kept} it keeps `add_`'s `alpha` in the op instead of multiplying first"
             if kept and kept != sorted(values, key=records.version_key)[0] else "")
    return f"TorchDynamo's graph of the SGD step holds {shown}{alpha}."


def read_cases(record: records.Record) -> dict[str, tuple[str, int]]:
    """Each atlas case: (what it does, how often it broke the graph or recompiled before the fix)."""
    return {name: (case["what"], case["before"]) for name, case in record.value("atlas").items()}


def changed_cases(values: dict[str, object]) -> dict[str, dict[str, int]]:
    """case -> release -> count, for the cases whose count differs between releases (present on every one)."""
    names = set.intersection(*(set(v) for v in values.values()))
    out = {}
    for name in sorted(names):
        counts = {release: v[name][1] for release, v in values.items()}
        if len(set(counts.values())) > 1:
            out[name] = counts
    return out


def say_breaks(values: dict[str, object]) -> str | None:
    changed = changed_cases(values)
    if not changed:
        return None
    newest = values[sorted(values, key=records.version_key)[-1]]
    stopped: dict[str, list[str]] = {}
    started: dict[str, list[str]] = {}
    for name, counts in changed.items():
        (before, _), *rest = runs(counts)
        for count, names in rest:
            (stopped if count < before else started).setdefault(names[0], []).append(newest[name][0])
            before = count
    parts = [f"{listed(whats)} stop{'s' if len(whats) == 1 else ''} breaking the graph on {{torch}}{release}"
             for release, whats in sorted(stopped.items(), key=lambda item: records.version_key(item[0]))]
    parts += [f"{listed(whats)} start{'s' if len(whats) == 1 else ''} breaking it on {{torch}}{release}"
              for release, whats in sorted(started.items(), key=lambda item: records.version_key(item[0]))]
    text = "; ".join(parts).replace("{torch}", "torch ", 1).replace("{torch}", "")
    return f"In the graph-break atlas, {text}."


def cases_table(values: dict[str, object]) -> str:
    """The cases whose count differs, one column per release."""
    ordered = sorted(values, key=records.version_key)
    rows = ["| Case | " + " | ".join(f"torch {r}" for r in ordered) + " |", "|---|" + "---|" * len(ordered)]
    for name, counts in changed_cases(values).items():
        rows.append(f"| {values[ordered[-1]][name][0]} | " + " | ".join(str(counts[r]) for r in ordered) + " |")
    return "\n".join(rows)


def say_recompiles(values: dict[str, object]) -> str | None:
    changed = changed_cases(values)
    if not changed:
        return None
    newest = values[sorted(values, key=records.version_key)[-1]]
    parts = [f"{newest[name][0]}: {by_release(counts, 'recompiles')}" for name, counts in changed.items()]
    text = "; ".join(parts)
    return f"In the recompile atlas, {text[:1].lower()}{text[1:]}."


def read_builds(record: records.Record) -> tuple[str, tuple[str, ...], tuple[int, int], int]:
    """Triton's version, the targets, the (least, most) registers over the builds of complex_activation (each
    target, with and without hints), and how many builds."""
    targets = record.value("builds.complex_activation")
    registers = [build["registers"] for target in targets.values() for build in target.values()]
    return record.value("triton"), tuple(targets), (min(registers), max(registers)), len(registers)


def say_builds(values: dict[str, object]) -> str | None:
    registers = {release: v[2] for release, v in values.items()}
    if len(set(registers.values())) < 2:
        return None
    _, (_, targets, _, count) = oldest_newest(values)
    tritons = listed(str(v[0]) for _, v in sorted(values.items(), key=lambda item: records.version_key(item[0])))
    span = lambda pair: f"{pair[0]}–{pair[1]}" if pair[0] != pair[1] else f"{pair[0]}"  # noqa: E731
    return (f"Built {count} ways ({listed(targets)}, with and without hints), the Triton kernel "
            f"`complex_activation` takes {by_release(registers, 'registers', span)}; the releases bring "
            f"Triton {tritons}.")


@dataclass(frozen=True)
class Notable:
    """A behaviour change the versions page states in one sentence. Its values are read from each release's
    record (a value a record lacks fails the build); the sentence is None once the releases agree, and the
    page leaves it out (tests/test_changelog.py fails on that, so the entry is removed or rewritten)."""

    name: str  # the fold's title
    snippet: str
    sections: tuple[str, ...]  # the outputs whose diffs fold under the sentence
    read: Callable[[records.Record], object]
    say: Callable[[dict[str, object]], str | None]
    detail: Callable[[dict[str, object]], str] | None = None  # a table folded under it, from the same values
    stated: Callable[[object], object] = lambda value: value  # the part of a value the sentence credits to torch


NOTABLE = (
    Notable("Guards", "dissecting/dynamo_guards.py", ("guards",),
            lambda r: (r.value("guard_count"), r.value("guard_kinds")), say_guards),
    Notable("Input checks in generated code", "graph_mode/inductor_linear_relu.py", ("wrapper",),
            read_asserts, say_asserts),
    Notable("The softmax kernel's name", "gpu_code/reductions.py", ("persistent", "looped"),
            lambda r: r.value("kinds.256.kernel"), say_softmax),
    Notable("tlparse's events and products", "dissecting/tlparse_report.py", ("summary", "tlparse"),
            read_trace, say_trace),
    Notable("The SGD step's graph", "dissecting/training_step.py", ("optimizer",), read_sgd, say_sgd),
    Notable("Graph breaks", "graph_mode/break_atlas.py", (), read_cases, say_breaks, cases_table),
    Notable("Recompiles", "graph_mode/recompile_atlas.py", ("modules",), read_cases, say_recompiles),
    Notable("Registers", "gpu_code/triton_pipeline.py", ("resources",), read_builds, say_builds,
            stated=lambda v: v[2]),  # the registers: Triton's version is named, not credited
)


def python_changed(item: Notable, found: list[records.Record], values: dict[str, object]) -> str:
    """Where what a sentence states differs between two consecutive releases whose records ran on different
    Pythons, a sentence that says both changed: the difference may be torch's or Python's."""
    pairs = []
    for older, newer in zip(found, found[1:]):
        a, b = older.environment.get("python"), newer.environment.get("python")
        if a and b and a != b and item.stated(values[older.release]) != item.stated(values[newer.release]):
            pairs.append(f"between torch {older.release} and {newer.release}, Python changed too ({a} → {b})")
    if not pairs:
        return ""
    text = "; ".join(pairs)
    return f" {text[:1].upper()}{text[1:]}, so what differs there may be Python's doing as well as torch's."


@dataclass
class Highlight:
    notable: Notable
    sentence: str
    found: list[records.Record]  # the fresh records, oldest first
    changes: list[releases.Change]
    detail: str = ""


def review(outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS,
           notable: tuple[Notable, ...] | None = None) -> list[tuple[Notable, Highlight | None, str]]:
    """Each notable change (NOTABLE unless given) with its Highlight: its sentence and the diffs of its sections.
    Where the records no longer show it, None and why: its snippet is gone, or it has fresh records on fewer
    than two releases, or its releases now agree (tests/test_changelog.py checks that none is, on the committed
    records). One whose record lacks what it reads raises ChangelogError, which fails the build."""
    out = []
    for item in NOTABLE if notable is None else notable:
        if not (snippets / item.snippet).is_file():
            out.append((item, None, f"snippets/{item.snippet} is gone"))
            continue
        found = sorted(releases.comparable(item.snippet, "cpu", outputs, snippets),
                       key=lambda r: records.version_key(r.release))
        if len(found) < 2:
            fresh = ", ".join(r.release for r in found) or "none"
            out.append((item, None, f"it has fresh CPU records on {len(found)} release(s) ({fresh}), and a change "
                                    f"needs two"))
            continue
        values = {}
        for record in found:
            try:
                values[record.release] = item.read(record)
            except (KeyError, AssertionError, IndexError, TypeError) as error:
                raise ChangelogError(f"versions page: notable change '{item.name}' cannot read the torch "
                                     f"{record.release} record of {item.snippet}: {error} (scripts/changelog.py "
                                     f"NOTABLE)") from None
        sentence = item.say(values)
        if not sentence:
            out.append((item, None, "its releases' records now agree"))
            continue
        sentence += python_changed(item, found, values)
        changes = releases.changes(item.snippet, list(item.sections), "cpu", outputs, snippets)
        out.append((item, Highlight(item, sentence, found, changes, item.detail(values) if item.detail else ""), ""))
    return out


def highlights(outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS,
               notable: tuple[Notable, ...] | None = None) -> list[Highlight]:
    """The notable changes (NOTABLE unless given) the records still show (review)."""
    return [found for _, found, _ in review(outputs, snippets, notable) if found]


# ------------------------------------------------------------------------------------------------ the page


@dataclass
class Site:
    """What the versions page reads from the site, handed in by scripts/directives.py (`md:changes`)."""

    outputs: Path  # docs/outputs, every release's records
    snippets: Path
    link: Callable[[str], str]  # a page under docs/ -> its Markdown link from the versions page
    shown: list[tuple[str, str, str, str | None]]  # (page, title, snippet, section) of each md:output, nav order
    compares: list[tuple[str, str, str, str, str]]  # (page, title, snippet, key A, key B) of each CPU md:compare
    pages: list[tuple[str, str, str]]  # (page, title, Markdown) of every page, nav order
    anchor: Callable[[str, str | None], str]  # the id an output's line links to: (snippet, section) -> id
    duration: Callable[[float], str]  # microseconds as the site shows a time
    # (key, draw(colors, style, narrow) -> SVG, alt, caption) -> the numbered figure's Markdown; None: none
    figure: Callable[[str, Callable[[dict, dict, bool], str], str, str], str] | None = None
    names: dict = field(default_factory=dict)  # (snippet, key A, key B) -> the page's words for it (what=)


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


def timing_section(site: Site, timed: list[Timed], sweeps: int = 0) -> list[str]:
    """The versions page's first section: each timed comparison, release by release, as a chart and a table."""
    steady = sum(row.steady for row in timed)
    refused = sum(len(row.refused) for row in timed)
    elsewhere = sum(len(row.elsewhere) for row in timed)
    ordered = sorted({r for row in timed for r in [*row.by_release, *row.refused, *row.elsewhere]},
                     key=records.version_key)
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
            elif release in row.elsewhere:
                cells.append(f"not compared: made on another machine ({row.elsewhere[release]})")
            else:
                cells.append("–")
        label = short(row).replace('|', '/') if row.what else f"`{short(row)}`"  # code wraps at _ on a phone
        rows.append(f"| [{row.title}]({site.link(row.page)}) | {label} | "
                    + " | ".join(cells) + " |")
    summary = (f"Of the {len(timed)} timed comparisons the chapters make on the CPU, {steady} point the same way "
               "in every release's record compared (faster, slower, or about the same), judged by the site's one "
               "rule. "
               "The releases were recorded on different days, and a comparison is judged release by release only "
               "between records whose CPU reports the same model and caches (and, where recorded, vector "
               "instruction set; the last table lists them), whose timings still move between processes "
               f"([how timings are taken]({site.link('reproduce.md')}#how-timings-are-taken))."
               + (f" {elsewhere} record{'s were' if elsewhere != 1 else ' was'} made on another machine than the "
                  f"first release's record of the same snippet, and {'are' if elsewhere != 1 else 'is'} not "
                  "compared: a CPU with other caches can change how two timings compare (which one fits in "
                  "cache), and would read as a release that changed." if elsewhere else "")
               + (f" {refused} record{'s are' if refused != 1 else ' is'} not compared: the medians of their fresh "
                  "processes spread more than "
                  f"{measures.UNSTEADY:g} times, where quiet processes agree within about 2 times, so the machine "
                  "was busy while they ran." if refused else "")
               + (f" {sweeps} more compare one timing at two sizes (a sweep's growth, not one way of running "
                  f"against another) and are left to their pages." if sweeps else ""))
    figure = ""
    if site.figure is not None and any(row.by_release for row in timed):
        key = hashlib.sha256(Path(__file__).read_bytes() + repr([vars(row) for row in timed]).encode()).hexdigest()
        figure = site.figure(key, lambda colors, style, narrow: chart(timed, colors, style, narrow), describe(timed),
                             "Each comparison's ratio on each release (a marker per release, log scale); the "
                             "shaded band is the CPU's floor of about the same, as Reproduce states the rule.")
    return ["## Timings, release by release", "", summary, "", figure, "\n".join(rows), ""]


def stack_table(site: Site, roots: dict[str, Path]) -> str:
    """One row per release: its records, when they were made, and the rest of the stack they were made with."""
    lines = ["| torch | records | made | Python | triton | JAX | numpy |", "|---|---|---|---|---|---|---|"]
    machines = ["| torch | machine: CPU, caches, vector capability where recorded | records |", "|---|---|---|"]
    for release, root in sorted(roots.items(), key=lambda item: records.version_key(item[0]), reverse=True):
        made = records.find_records("cpu", root, site.snippets)
        fresh = sum(r.state == "fresh" for r in made)
        dates = sorted(r.date for r in made)
        counts: dict[str, int] = {}
        for record in made:
            counts[record.machine] = counts.get(record.machine, 0) + 1
        for machine, count in sorted(counts.items(), key=lambda m: -m[1]):
            machines.append(f"| {release} | {machine} | {count} |")
        stack = [", ".join(sorted({str(r.environment.get(key)) for r in made if r.environment.get(key)})) or "–"
                 for key in releases.STACK]
        main = " (the site's)" if release == records.MAIN else ""
        lines.append(f"| {release}{main} | {fresh} fresh of {len(made)} | {dates[0]} to {dates[-1]} | "
                     + " | ".join(stack) + " |")
    return "\n".join(lines) + "\n\nThe machines that made them:\n\n" + "\n".join(machines)


def home(site: Site, snippet: str) -> tuple[str, str] | None:
    """(page, title) of the first chapter that shows a snippet, in nav order."""
    return next(((src, title) for src, title, text in site.pages if re.search(
        rf"<!--\s*md:[\w-]+\s+{re.escape(snippet)}[\s:]", text)), None)


def diff_block(change: releases.Change, link: str, by: int = 4) -> str:
    """One diff, with the pair of releases and whatever else changed between their records."""
    also = releases.stack_changes(change.older, change.newer)
    cause = (f" Besides torch, {', '.join(also)} changed between the two records: a line may differ because of "
             f"any of them." if also else "")
    return indent(f"{link}`-` torch {change.older.release}, `+` torch {change.newer.release}; a line of context "
                  f"either side.{cause}\n\n" + fenced("\n".join(change.lines), "diff"), by)


def where(change: releases.Change) -> str:
    return f"`{change.snippet}`" + (f" · `{change.section}`" if change.section else "")


def highlight_section(site: Site, found: list[Highlight], anchored: set[str]) -> list[str]:
    """Each notable change: its sentence, and folded under it the lines that differ (or a table)."""
    out = ["## Behaviour changes that matter", "",
           "Each sentence is written from every release's records; the fold under it holds the lines that differ.", ""]
    for item in found:
        page = home(site, item.notable.snippet)
        link = f"On [{page[1]}]({site.link(page[0])}). " if page else ""
        anchors = []
        for change in item.changes:
            anchor = site.anchor(change.snippet, change.section)
            if anchor not in anchored:
                anchored.add(anchor)
                anchors.append(f'<span id="{anchor}"></span>')
        out += [*anchors, f"**{item.notable.name}.** {item.sentence}", ""]  # an output's line lands on it
        if item.changes:
            title = (f"The lines that differ: `{item.notable.snippet}`, torch "
                     f"{releases.names_of([r.release for r in item.found])}")
            bodies = [(f"    **{where(change)}, torch {change.older.release} → {change.newer.release}**\n\n"
                       + diff_block(change, link if i == 0 else "") + "\n") for i, change in enumerate(item.changes)]
            out += [f'??? abstract mlc-recorded "{title}"', "", *bodies, ""]
        if item.detail:
            also = [f"torch {a.release} → {b.release}: {', '.join(stack)}" for a, b in zip(item.found, item.found[1:])
                    if (stack := releases.stack_changes(a, b))]
            cause = (f" Besides torch, these changed between the records ({'; '.join(also)}): a case may differ "
                     f"because of any of them." if also else "")
            out += [f'??? abstract mlc-recorded "The cases that differ: `{item.notable.snippet}`"', "",
                    indent(f"{link}{cause}\n\n{item.detail}"), ""]
    return out


def render(site: Site) -> str:
    """The generated page "What changed between versions": the timed comparisons release by release, the
    notable behaviour changes in a sentence each, then (folded) every other output and count that differs,
    the outputs that do not, and the records compared."""
    roots = {release: root for release, root in records.release_roots(site.outputs).items()
             if records.find_records("cpu", root)}
    if len(roots) < 2:
        return "Only one torch release has CPU records so far, so nothing can be compared yet.\n"
    out: list[str] = []
    everything = collect(site.compares, site.outputs, site.snippets, site.names)
    timed = [row for row in everything if not sizes_of_one_timing(row)]
    if timed:
        out += timing_section(site, timed, len(everything) - len(timed))
    notable = highlights(site.outputs, site.snippets)
    anchored: set[str] = set()
    if notable:
        out += highlight_section(site, notable, anchored)
    highlighted = {(change.snippet, change.section) for item in notable for change in item.changes}
    unchanged, seen, diffs = [], set(), []
    for src, title, snippet, section in site.shown:
        if (snippet, section) in seen or not (site.snippets / snippet).is_file():
            continue
        seen.add((snippet, section))
        found = releases.changes(snippet, [section], "cpu", site.outputs, site.snippets)
        link = site.link(src)
        if not found:
            unchanged.append(f"[{title}]({link}): `{snippet}`" + (f" · `{section}`" if section else ""))
            continue
        if (snippet, section) in highlighted:
            continue
        anchor = site.anchor(snippet, section)
        if anchor not in anchored:
            anchored.add(anchor)
            diffs.append(f'    <span id="{anchor}"></span>\n')
        for change in found:
            diffs.append(f'    ??? abstract mlc-recorded "{title}: {where(change)}, '
                         f'{releases.label(change.older, change.newer)}"\n\n'
                         + diff_block(change, f"On [{title}]({link}). ", 8) + "\n")
    counted = []
    for snippet in records.find_snippets(site.snippets):
        found = releases.comparable(snippet, "cpu", site.outputs, site.snippets)
        for key, values in releases.counts(found) if len(found) > 1 else []:
            ordered = sorted(values, key=records.version_key)
            counted.append(f"| `{snippet}` | `{key}` | " + " → ".join(
                f"{release}: {shown_value(values[release])}" for release in ordered) + " |")
    out += ["## Everything else", ""]
    folds = sum(not line.lstrip().startswith("<span") for line in diffs)
    if diffs:
        out += [f'??? abstract "{folds} other {"outputs differ" if folds != 1 else "output differs"} between '
                f'consecutive releases"', "",
                "    In the order of the chapters; open one for the lines that differ.", "", *diffs]
    if counted:
        table = "\n".join(["| Snippet | Key | By release |", "|---|---|---|", *counted])
        out += [f'??? info mlc-recorded "{len(counted)} values in the records\' `results.json` differ"', "",
                "    Whole numbers, words and flags; measurements are in the timings above.", "",
                indent(table), ""]
    if unchanged:
        out += [f'??? success "{len(unchanged)} outputs differ only in addresses, hashes, measured numbers and '
                'generated names"', "", indent("\n".join(f"- {item}" for item in unchanged)), ""]
    out += ["### The records compared", "", stack_table(site, roots), ""]
    return "\n".join(out) + "\n"
