"""The renderers of the `md:` directives (scripts/directives.py is their grammar), for the two targets a chapter
is built into: the site's page and the chapter's notebook. `expand` hands the grammar this module's table of
renderers (RENDER) and the figure kinds (scripts/plots.py OPTIONS).

Records are read through scripts/records.py; charts are drawn by scripts/plots.py and FX graphs by
scripts/diagrams.py, cached by content under .cache/figures/.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from mkdocs.utils import get_relative_url

from scripts import (
    atlas,
    changelog,
    chapters,
    diagrams,
    directives,
    explorer,
    findings,
    measures,
    plots,
    records,
    releases,
    skips,
)
from scripts.directives import (
    Directive,
    DirectiveError,
    parse_languages,
    site_compares,
    site_directives,
    site_outputs,
    site_pages,
    split_reference,
)

DEVICES, LABELS = records.DEVICES, records.LABELS
FIGURE_CACHE = records.CACHE / "figures"
# The drawing code as this process loaded it, for the figure cache's keys: read at draw time instead, a file
# edited during a build would file drawings made by the old code under the new code's key.
PLOTS_CODE, FINDINGS_CODE = (Path(module.__file__).read_bytes() for module in (plots, findings))
PAGE, NOTEBOOK = "page", "notebook"  # the two targets

# ------------------------------------------------------------------------------------------------- a page


class Page:
    """What the directives of one page share while it is rendered for the site: its source and URL, its
    figure count, and the figures drawn for it. A notebook's page (scripts/notebooks.py NotebookPage) has
    target NOTEBOOK and keeps the notebook's own state: which outputs sit under code cells, and the images
    attached to the cell being built."""

    target = PAGE

    def __init__(self, src_uri: str, url: str, snippets: Path = records.SNIPPETS, outputs: Path = records.OUTPUTS,
                 docs: Path = chapters.DOCS):
        self.src_uri, self.url, self.snippets, self.outputs = src_uri, url, snippets, outputs
        self.docs = docs  # every page, for the directives that read across the site (md:changes)
        self.figures = 0
        self.same_said: dict[str, str] = {}  # device -> the releases an output was first said to print alike on
        self.drawn: dict[str, str] = {}  # site path -> cached file, copied into the site after the build
        self.pooled: set[tuple[str, str]] = set()  # (snippet, device) whose pooled figures a fold has shown

    def under_code(self, snippet: str, section: str | None) -> bool:
        """Whether a notebook already shows this output under its code cell; a page shows every output."""
        return False

    def attach(self, name: str, mime: str, data: bytes) -> str:
        """A notebook attaches an image to the cell being built and links to it; a page links to files."""
        raise DirectiveError(f"{self.src_uri}: only a notebook attaches images ({name})")

    def record(self, snippet: str, device: str) -> records.Record:
        if not (self.snippets / snippet).is_file():
            raise DirectiveError(f"snippet 'snippets/{snippet}' does not exist")
        return records.record(snippet, device, self.outputs, self.snippets)

    def recorded(self, snippet: str, device: str | None = None) -> list[records.Record]:
        """The records a block shows: on the page one per device that has one (or `device`'s alone), in DEVICES
        order; in the notebook the first of them."""
        found = [r for r in (self.record(snippet, d) for d in DEVICES) if r.exists]
        if device is not None and found:
            found = [r for r in found if r.device == device]
            if not found:
                return []
        if not found:
            raise DirectiveError(f"snippets/{snippet} has no record on any device: run "
                                 f"{records.remake_hint(snippet, 'cpu')}")
        for r in found:
            try:
                r.validate()
            except records.CorruptRecord as error:
                raise DirectiveError(str(error)) from None
        if self.target == NOTEBOOK:
            return found[:1]
        return found

    def link(self, path: str) -> str:
        """A link for raw HTML, from this page's URL to a path of the built site."""
        return get_relative_url(path, self.url or ".")

    def md_link(self, path: str) -> str:
        """A link for Markdown, from this page's source to a file under docs/: mkdocs checks and rewrites it."""
        return get_relative_url(path, self.src_uri)


def tabs(bodies: list[tuple[str, str]]) -> str:
    """Content tabs, one per (device, Markdown); `===!` starts a new set, so two outputs never merge."""
    out = []
    for i, (device, text) in enumerate(bodies):
        indented = "\n".join("    " + line if line else "" for line in text.splitlines())
        out.append(f'{"===!" if i == 0 else "==="} "{LABELS[device]}"\n\n{indented}')
    return "\n\n".join(out) + "\n"


def stale_warning(record: records.Record) -> str:
    if record.state != "stale":
        return ""
    # Folded, its title saying what a reader must know: four open warnings cost a long page a screen.
    return (f'??? warning "Stale record: the snippet changed after this was recorded on {LABELS[record.device]}"'
            f"\n\n    What follows comes from the older `snippets/{record.snippet}`. "
            f"Remake it with `{records.remake_hint(record.snippet, record.device)}`.\n\n")


def fenced(text: str, info: str) -> str:
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


# --------------------------------------------------------------------------------------------- the blocks


def render_output(d: Directive, page: Page) -> str:
    snippet, section = split_reference(d.args[0])
    languages = dict.fromkeys(DEVICES, "text")
    languages.update(parse_languages(d.options.get("lang")))
    if page.under_code(snippet, section):
        return ""  # it sits under its code cell
    bodies = []
    for record in page.recorded(snippet):
        if section is None:
            text = record.stdout
        elif section in record.sections:
            text = record.sections[section]
        else:
            raise DirectiveError(f"the {record.device} record of {snippet} printed nothing in section '{section}'")
        if page.target == NOTEBOOK:
            return fenced(text, "text") + f"\n\n*Recorded on {LABELS[record.device]} ({record.hardware}).*\n"
        # Output wraps at the column (.mlc-output in extra.css), code-like output too; a table does not.
        block = fenced(text, f"{{ .{languages[record.device]} .mlc-output }}")
        if width := table_width(text):
            block = f'<div class="mlc-columns" style="--mlc-cols: {width}">\n\n{block}\n\n</div>'
        line = output_line(page, record, section)
        pooled = ""  # under the snippet's first timed output on the page: the table holds all its timings
        if PRINTED_TIME.search(text) and (snippet, record.device) not in page.pooled:
            page.pooled.add((snippet, record.device))
            pooled = pooled_table(record)
        bodies.append((record.device, stale_warning(record) + block + "\n\n" + line + pooled))
    return tabs(bodies)


COLUMN_GAP = re.compile(r"\S {2,}(?=\S)")  # two spaces or more between words: aligned columns


def table_width(text: str) -> int:
    """The widest line of an output that prints aligned columns (most of its lines have two gaps of two spaces
    or more), else 0. Wrapped, such a table loses its columns (tile_order's 8 x 8 grid at 390 px): it is shown
    unwrapped, in a font that shrinks to fit the column down to a floor, then scrolls (extra.css)."""
    lines = [line for line in text.splitlines() if line.strip()]
    aligned = sum(len(COLUMN_GAP.findall(line.strip())) >= 2 for line in lines)
    return max(map(len, lines)) if aligned >= 3 and 2 * aligned >= len(lines) else 0


PRINTED_TIME = re.compile(r"\d\s*(?:µs|us|ms|s)\b")  # an output that prints a time


def output_line(page: Page, record: records.Record, section: str | None) -> str:
    """One line under an output: where and when it was recorded (the whole provenance on the record's link),
    which process printed it, and whether the other torch releases printed the same."""
    parts = [html.escape(f"{record.hardware} · torch {record.release} · {record.date}")]
    processes = max((t.get("processes", 1) for _, t in records.timings_in(record.results)), default=1)
    if processes > 1:
        parts.append(f"printed by the first of {processes} processes")
    if spread := measures.unsteady_of(record):  # made while something else ran (scripts/measures.py UNSTEADY)
        said = ", ".join(f"{key} from {duration(low)} to {duration(high)}" for key, (low, high) in spread.items())
        parts.append(f'<span class="unsteady" title="{html.escape(said)}">unsteady: its processes disagreed beyond '
                     f"{measures.UNSTEADY:g}× ({html.escape(said)})</span>")
    link = page.link(f"{record.site_path}/{records.MANIFEST}")
    parts.append(f'<a href="{link}" title="{html.escape(record.provenance())}">record</a>')
    found = releases.comparable(record.snippet, record.device, page.outputs, page.snippets)
    compared = len(found) > 1 and found[0].folder == record.folder
    if not compared and record.device in page.same_said:  # not covered by the page's "the same" above
        parts.append("not compared with other releases")
    if compared:
        groups = releases.grouped(found, section)
        others = [r for group in groups[1:] for r in group]
        if not others:  # said once a page: later outputs alike on the same releases say nothing
            names = releases.names(found[1:])
            said = page.same_said.get(record.device)
            if said is None:
                page.same_said[record.device] = names
                parts.append(f"the same on torch {names}, as is every {record.device.upper()} output below that "
                             f"says nothing of it")
            elif said != names:
                parts.append(f"the same on torch {names}")
        else:
            anchor = page.link("versions/") + "#" + change_anchor(record.snippet, section)
            parts.append(f'<a href="{anchor}">torch {releases.names(others)} printed it otherwise</a>')
    return f'<p class="provenance">{" · ".join(parts)}</p>'


def change_anchor(snippet: str, section: str | None) -> str:
    """The versions page's anchor for one output's changes between releases."""
    return "changed-" + re.sub(r"[^a-z0-9]+", "-", f"{snippet.removesuffix('.py')} {section or ''}".lower()).strip("-")


def pooled_table(record: records.Record) -> str:
    """Folded under a timed output: each timing pooled over every process, the figures the text quotes."""
    timed = [(key, t) for key, t in records.timings_in(record.results) if t.get("processes", 1) > 1]
    if not timed:
        return ""
    rows = [f"| `{key}` | {duration(t['median_us'])} | {duration(t.get('q1_us', t['median_us']))} – "
            f"{duration(t.get('q3_us', t['median_us']))} | {duration(min(t['process_medians_us']))} – "
            f"{duration(max(t['process_medians_us']))} |" for key, t in timed]
    return (f'\n\n??? info mlc-recorded "Pooled over {timed[0][1]["processes"]} processes: the figures the text '
            f'quotes"\n\n    | Timing | Median | Quartiles | Process medians |\n    |---|---|---|---|\n'
            + "\n".join("    " + row for row in rows) + "\n")


TIME_UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def duration(microseconds: float) -> str:
    """A time in the site's units: µs below 10 ms, ms below 10 s, s above, to about three figures."""
    return in_units(microseconds * 1e-6, "µs", None)


def in_units(seconds: float, unit: str, spec: str | None) -> str:
    """A time as the site shows it: values of 10 ms or more in ms, of 10 s or more in s; smaller ones in the
    unit (and format) the page asked for."""
    for name, limit in (("s", 10.0), ("ms", 10e-3)):
        if seconds >= limit and TIME_UNITS[unit] < TIME_UNITS[name]:
            value = seconds / TIME_UNITS[name]
            return format(value, ",.0f" if value >= 100 else ".1f") + "\u202f" + name
    value = seconds / TIME_UNITS[unit]
    return format(value, spec or (",.0f" if value >= 100 else ".3g")) + "\u202f" + unit


def indent(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line if line else "" for line in text.splitlines())


def render_figure(d: Directive, page: Page) -> str:
    snippet, name = d.args
    found = dict(d.options)
    caption = found.pop("caption", "").strip()
    only = found.pop("device", None)
    if not caption:
        raise DirectiveError('md:figure needs caption="one line saying what to see"')
    page.figures += 1
    shown_records = page.recorded(snippet, only)
    if not shown_records:
        raise DirectiveError(f"there is no {LABELS[only]} record of {snippet}: put the figure inside md:recorded")
    if page.target == NOTEBOOK:
        record = shown_records[0]
        drawn = figure_for_notebook(page, record, name, found)
        return (f"{drawn}\n\n**Figure {page.figures}.** {caption} "
                f"*(Drawn from the {LABELS[record.device]} record of `snippets/{snippet}`.)*\n")
    bodies = []
    for record in shown_records:
        diagram = fx_diagram(record, name, found)
        if diagram is not None:
            shown = diagram_image(page, *diagram) + "\n"
        else:
            shown = draw(page, record, name, found)
        bodies.append((record.device, stale_warning(record) + shown))
    figure = tabs(bodies) if len(bodies) > 1 else bodies[0][1] + "\n"
    number = f'<p class="mlc-caption"><strong>Figure {page.figures}.</strong> {html.escape(caption)}</p>'
    return f'<div class="mlc-figure" markdown>\n\n{figure}\n{number}\n\n</div>\n'


def fx_diagram(record: records.Record, name: str, found: dict[str, str]) -> tuple[str, str] | None:
    """(DOT source, alt text) when NAME is an FX graph kept in the record's results; None for a chart."""
    if "kind" in found or name == "timeline":
        return None
    try:
        kept = record.value(name)
    except KeyError:
        raise DirectiveError(f"{name} is not kept in the {record.device} record's results") from None
    if not (isinstance(kept, dict) and "fxgraph" in kept):
        return None
    return diagrams.fx_to_dot(record.file(kept["fxgraph"]).read_text())


def diagram_svg(dot: str) -> Path:
    """The diagram's SVG, drawn by graphviz-pure (scripts/diagrams.py), from the cache when drawn before."""
    try:
        return diagrams.cached(dot, FIGURE_CACHE)
    except diagrams.DiagramError as error:
        raise DirectiveError(str(error)) from None


def diagram_image(page: Page, dot: str, alt: str) -> str:
    """An FX graph's SVG as an image at its natural size (CSS scales it down to a narrow column), linking
    to itself at full size; one file for both palettes (the dark one inverts it, assets/stylesheets)."""
    svg = diagram_svg(dot)
    site_path = f"figures/{svg.name}"
    page.drawn[site_path] = str(svg)
    src = page.link(site_path)
    width, height = diagrams.size(svg.read_text())
    return (f'<a class="mlc-zoom" href="{src}" title="Open the figure at full size">'
            f'<img class="mlc-diagram" src="{src}" alt="{html.escape(alt)}" width="{width:g}" '
            f'height="{height:g}" loading="lazy"></a>')


def chart(record: records.Record, name: str, found: dict[str, str]) -> tuple[str, dict[str, Path]]:
    """(alt text, {palette: SVG file}) of one chart, from the cache when the record and the drawing code are
    unchanged."""
    key = records.content_key(PLOTS_CODE, repr(sorted(found.items())), name,
                              *(p for p in sorted(record.files.glob("*.json")) if p.is_file()))
    FIGURE_CACHE.mkdir(parents=True, exist_ok=True)
    files = {palette: FIGURE_CACHE / f"{key}.{palette}.svg" for palette in plots.PALETTES}
    alt_file = FIGURE_CACHE / f"{key}.alt.txt"
    for palette, cached in files.items():
        if not cached.exists() or not alt_file.exists():
            try:
                svg, alt = plots.render(record, name, found, palette)
            except plots.FigureError as error:
                raise DirectiveError(f"the {record.device} record: {error}") from None
            write_atomically(cached, svg)  # builds and test workers may draw the same figure at once
            write_atomically(alt_file, alt)
    return alt_file.read_text(), files


def write_atomically(path: Path, text: str) -> None:
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(text)
    os.replace(part, path)


def linked_images(page: Page, files: dict[str, Path], alt: str) -> list[str]:
    """Each palette's drawn SVG as an image linking to itself at full size, copied into the site's figures/."""
    images = []
    for palette, cached in files.items():
        site_path = f"figures/{cached.name}"
        page.drawn[site_path] = str(cached)
        src = page.link(site_path)
        images.append(f'<a class="mlc-zoom" href="{src}" title="Open the figure at full size">'
                      f'<img src="{src}#only-{palette}" alt="{html.escape(alt)}" loading="lazy"></a>')
    return images


def draw(page: Page, record: records.Record, name: str, found: dict[str, str]) -> str:
    """Both palettes' images of one chart, each a link to itself at full size, and a profile's traces. The
    chart is drawn for the page's column and again for a phone's (plots.NARROW_PT): CSS shows one of them,
    so a phone's chart fits its column instead of scrolling sideways."""
    alt, files = chart(record, name, found)
    _, narrow = chart(record, name, {**found, "layout": "narrow"})
    images = [f'<span class="mlc-wide">{"".join(linked_images(page, files, alt))}</span>',
              f'<span class="mlc-narrow">{"".join(linked_images(page, narrow, alt))}</span>']
    traces = plots.traces(record) if name == "timeline" else []
    links = ""
    if traces:
        base = f"{record.site_path}/{records.FILES}/"
        listed = ", ".join(f'<a href="{page.link(base + t.name)}"><code>{t.name}</code></a>' for t in traces)
        perfetto = '<a href="https://ui.perfetto.dev">Perfetto</a>'
        links = f'\n<p class="provenance">The traces, to open in {perfetto}: {listed}</p>'
    return "\n".join(images) + links + "\n"


def figure_for_notebook(page: Page, record: records.Record, name: str, found: dict[str, str]) -> str:
    """An FX graph's diagram, or a chart's light SVG, attached to the cell: the page's own image."""
    diagram = fx_diagram(record, name, found)
    if diagram is not None:
        dot, alt = diagram
        drawn = diagrams.on_white(diagram_svg(dot).read_text())  # readable in a dark notebook theme too
    else:
        alt, files = chart(record, name, found)
        drawn = files["light"].read_text()
    link = page.attach(f"figure-{page.figures}-{name}.svg", "image/svg+xml", drawn.encode())
    alt = alt.replace("[", "(").replace("]", ")").replace("\n", " ")
    return f"![{alt}]({link})"


def render_records(d: Directive, page: Page) -> str:
    """Each snippet's record on each device, one column per torch release that made any (the main one always)."""
    roots = records.release_roots(page.outputs)
    columns = [(device, release, root) for device in DEVICES for release, root in roots.items()
               if release == records.MAIN or records.find_records(device, root)]
    heads = [f"{LABELS[device]}, torch {release}" for device, release, _ in columns]
    rows = ["| Snippet | " + " | ".join(heads) + " |", "|---|" + "---|" * len(columns)]
    items = []  # a phone's column: one entry a snippet, one line a record (six columns left the path 40 px)
    for snippet in records.find_snippets(page.snippets):
        cells = []
        for device, _, root in columns:
            record = records.Record(snippet, device, records.record_dir(snippet, device, root), page.snippets)
            state = record.state
            if device != "cpu" and snippet in skips.CPU_ONLY:  # a model made without a GPU: none to make
                cells.append("*CPU only*")
                continue
            if state in ("missing", "corrupt") or not record.exists:
                cells.append(f"*{state}*")
                continue
            link = page.md_link(f"{record.site_path}/{records.MANIFEST}")
            shown = f"**{state}**" if state != "fresh" else state
            cells.append(f"{shown} · [{record.date}]({link}) · {record.hardware} · "
                         f"{record.manifest.get('duration_s')} s")
        rows.append(f"| `{snippet}` | " + " | ".join(cells) + " |")
        items.append(f"- `{snippet}`\n" + "\n".join(f"    - {head}: {cell}" for head, cell in zip(heads, cells)))
    if page.target == NOTEBOOK:
        return "\n".join(rows) + "\n"
    return table_or_list("\n".join(rows), "\n".join(items))


def table_or_list(table: str, listed: str) -> str:
    """A Markdown table on a wide screen, the same as a list on a phone (CSS: mlc-wide, mlc-narrow)."""
    return (f'<div class="mlc-figure" markdown>\n<div class="mlc-wide" markdown>\n\n{table}\n\n</div>\n'
            f'<div class="mlc-narrow" markdown>\n\n{listed}\n\n</div>\n</div>\n')


def render_changes(d: Directive, page: Page) -> str:
    """md:changes, the page "What changed between versions": scripts/changelog.py writes it; this hands it the
    page's links, the record folders, what the chapters show and compare, and a way to place a figure."""

    def figure(key: str, draw, alt: str, caption: str) -> str:
        """Both palettes, for the page's column and a phone's (CSS shows one), drawn once per content."""
        digest = records.content_key(PLOTS_CODE, key)
        FIGURE_CACHE.mkdir(parents=True, exist_ok=True)
        spans = []
        for layout in plots.LAYOUTS:
            files = {palette: FIGURE_CACHE / f"releases-{digest}.{layout}.{palette}.svg" for palette in plots.PALETTES}
            for palette, cached in files.items():
                if not cached.exists():
                    colors = plots.PALETTES[palette]
                    write_atomically(cached, draw(colors, plots.style(colors), layout == "narrow"))
            spans.append(f'<span class="mlc-{layout}">{"".join(linked_images(page, files, alt))}</span>')
        page.figures += 1
        numbered = f'<p class="mlc-caption"><strong>Figure {page.figures}.</strong> {caption}</p>'
        return '<div class="mlc-figure" markdown>\n\n' + "\n".join(spans) + f"\n{numbered}\n\n</div>\n"

    pages = site_pages(page.docs)  # read once; the outputs and the comparisons are found in them
    compares = site_compares(page.docs, pages)
    try:
        return changelog.render(changelog.Site(
            page.outputs, page.snippets, page.md_link, site_outputs(page.docs, pages), [c[:5] for c in compares],
            pages, change_anchor, duration, figure if page.target != NOTEBOOK else None,
            {c[2:5]: c[5] for c in compares if c[5]}))
    except changelog.ChangelogError as error:
        raise DirectiveError(str(error)) from None


# -------------------------------------------------------------------------------------------- the inlines


def format_value(value, found: dict[str, str]) -> str:
    if isinstance(value, bool):
        if "yes" in found or "no" in found:
            return found.get("yes" if value else "no", "")
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if "scale" in found:
            try:
                value = value * float(found["scale"])
            except ValueError:
                raise DirectiveError(f"scale={found['scale']} is not a number") from None
        spec = found.get("fmt")
        if spec is None:
            if isinstance(value, int):
                return str(value)
            text = format(value, ".3g")
            return text if "e" not in text else format(value, ".0f")
        if isinstance(value, float) and value.is_integer() and spec.rstrip(",_").endswith("d"):
            value = int(value)
        try:
            return format(value, spec)
        except ValueError as error:
            raise DirectiveError(f"fmt={spec} cannot format {value!r}: {error}") from None
    return str(value)


def needed(page: Page, snippet: str, found: dict[str, str]) -> records.Record:
    # Without device=, the GPU's record where one exists, else the CPU's: a page reads on whatever was recorded.
    device = found.get("device") or ("cuda" if page.record(snippet, "cuda").exists else "cpu")
    if "release" in found:  # a value as one torch release recorded it (the versions page compares them)
        made = {r.release: r for r in releases.comparable(snippet, device, page.outputs, page.snippets)}
        if found["release"] not in made:
            raise DirectiveError(f"torch {found['release']} has no fresh {LABELS[device]} record of {snippet} "
                                 f"(fresh: {', '.join(sorted(made)) or 'none'})")
        return made[found["release"]]
    record = page.record(snippet, device)
    if not record.exists:
        raise DirectiveError(
            f"there is no {LABELS[device]} record of {snippet}: put the sentence inside "
            f"<!-- md:recorded {snippet} device={device} --> ... <!-- md:end -->"
        )
    return record


def inline_span(page: Page, record: records.Record, what: str, text: str) -> str:
    """The text, with where it came from on hover (page) or as it is (notebook); marked where stale."""
    if page.target == NOTEBOOK:
        return text + (" (stale)" if record.state == "stale" else "")
    title = f"{what}, recorded on {record.hardware} on {record.date}"
    stale = ' <span class="stale" title="the snippet changed since this was recorded">(stale)</span>'
    kind = "recorded words" if len(re.findall(r"[^\W\d_]{2,}", text)) > 2 else "recorded"  # a phrase, not a number
    return (f'<span class="{kind}" title="{html.escape(title)}">{html.escape(text)}</span>'
            + (stale if record.state == "stale" else ""))


def render_value(d: Directive, page: Page) -> str:
    snippet, key = d.args
    record = needed(page, snippet, d.options)
    try:
        value = record.value(key)
    except KeyError as error:
        raise DirectiveError(error.args[0]) from None
    unit = d.options.get("unit")
    if unit in TIME_UNITS and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            scaled = value * float(d.options.get("scale", 1))
        except ValueError:
            raise DirectiveError(f"scale={d.options['scale']} is not a number") from None
        text = in_units(scaled * TIME_UNITS[unit], unit, d.options.get("fmt"))
    else:
        text = format_value(value, d.options)
        if unit:
            text += ("" if unit == "%" else "\u202f") + unit
    return inline_span(page, record, f"{key} from snippets/{snippet}", text)


def render_compare(d: Directive, page: Page) -> str:
    snippet, key_a, key_b = d.args
    record = needed(page, snippet, d.options)
    try:
        a, b = record.value(key_a), record.value(key_b)
    except KeyError as error:
        raise DirectiveError(error.args[0]) from None
    if not all(isinstance(t, dict) and "median_us" in t for t in (a, b)):
        raise DirectiveError(f"{key_a} and {key_b} must both be timings (dicts with median_us)")
    ratio, lo, hi = measures.timing_band(a, b)
    processes = len(measures.ratios(a, b))
    spread = (f"ratio {ratio:.2f}, from {lo:.2f} to {hi:.2f} across {processes} fresh processes" if processes
              else f"ratio of medians {ratio:.2f}, {lo:.2f} to {hi:.2f} within the IQRs")
    words = measures.judge(a, b, record.device)
    if d.options.get("range") == "yes":  # the spread said in the text, where one figure would mislead
        words += f" ({range_words(words, lo, hi, processes)})"
    return inline_span(page, record, f"{key_b} against {key_a} from snippets/{snippet} ({spread})", words)


def range_words(words: str, lo: float, hi: float, processes: int) -> str:
    """md:compare's range=yes: the ratios the record's spread allows, in the verdict's own terms (N× faster or
    slower, or the plain ratio where the verdict is "about the same")."""
    where = f"across {processes} fresh processes" if processes else "within the interquartile ranges"
    direction = measures.direction(words)
    if direction == 0:
        return f"ratio {lo:.2f} to {hi:.2f} {where}"
    low, high = (lo, hi) if direction > 0 else (1 / hi, 1 / lo)
    return f"{low:.1f}× to {high:.1f}× {where}"


def render_hardware(d: Directive, page: Page) -> str:
    record = needed(page, d.args[0], d.options)
    return inline_span(page, record, "the machine", record.hardware)


def render_atlas(d: Directive, page: Page) -> str:
    """md:atlas (scripts/atlas.py), given every md:atlas on the site for its lookup."""
    return atlas.render(d, page, site_directives(page.docs, "atlas"))


def drawn_findings(name: str, data: str, draw) -> dict[bool, dict[str, Path]]:
    """{narrow: {palette: SVG}} of a findings chart, drawn by `draw(colors, narrow)` for the page's column and a
    phone's in each palette, cached by the drawing code and `data` (what it draws)."""
    digest = records.content_key(FINDINGS_CODE, PLOTS_CODE, data)
    FIGURE_CACHE.mkdir(parents=True, exist_ok=True)
    drawings = {narrow: {palette: FIGURE_CACHE / f"{'phone-' * narrow}{name}-{digest}.{palette}.svg"
                         for palette in plots.PALETTES} for narrow in (False, True)}
    for narrow, files in drawings.items():
        for palette, cached in files.items():
            if not cached.exists():
                write_atomically(cached, draw(plots.PALETTES[palette], narrow))
    return drawings


def wide_and_narrow(page: Page, drawings: dict[bool, dict[str, Path]], alt: str) -> list[str]:
    """The column's drawing and the phone's, each in both palettes; CSS shows one (mlc-wide, mlc-narrow)."""
    return [f'<span class="mlc-wide">{"".join(linked_images(page, drawings[False], alt))}</span>',
            f'<span class="mlc-narrow">{"".join(linked_images(page, drawings[True], alt))}</span>']


def render_findings(d: Directive, page: Page) -> str:
    """The site's findings: a chart of every described CPU comparison and a table of them (scripts/findings.py),
    then each row's GPU model where the model's record has it. On a phone's column (CSS: mlc-narrow) the chart
    is drawn again for that width and each table is a list, so nothing scrolls sideways."""
    found = findings.collect(site_directives(page.docs, "compare"), page.outputs, page.snippets)
    if not found:
        raise DirectiveError("no md:compare on the site says what it compares (what=)")
    if d.options.get("part", "table") == "model":
        return render_model_figure(found, page)
    if d.options.get("part", "table") != "table":
        raise DirectiveError(f"md:findings part={d.options['part']}: part is table (the default) or model")
    drawings = drawn_findings("findings", repr([vars(f) for f in found]),
                              lambda colors, narrow: findings.chart(found, colors, plots.style(colors), narrow=narrow))
    files = drawings[False]
    alt = findings.describe(found)
    predicts = any(f.gpu is not None and f.gpu.predicted is not None for f in found)
    # The CPU's verdict, ratio, range and releases share one cell: seven columns scrolled at 1280.
    rows = ["| Workload | On the CPU | Measured on a GPU "
            + ("| Model of the GPU's run |" if predicts else "|") + " Why |",
            "|---|---|---|" + ("---|" if predicts else "") + "---|"]
    items = []

    def on_gpu(f: findings.Finding) -> str:
        if f.gpu is None:
            return "not measured"
        g = f.gpu
        size = f", {g.size}" if g.size and g.size != f.size else ""
        if not g.size and g.work and not f.size:  # no size named: the inputs the GPU ran, from its record
            size = f", {g.work}"
        recompiled = f"; not the program compared: {g.recompiled}" if g.recompiled else ""
        return (f"{g.words} ({g.ratio:.2f}; {g.low:.2f}–{g.high:.2f}, {g.processes} processes) on the "
                f"{g.hardware}, torch {g.release}{size}{how_timed(g, '; ')}{recompiled}")

    def gpu_model(f: findings.Finding) -> str:
        """The model's gain at the roof for the workload the GPU timed, at its size, on that GPU."""
        if f.gpu is None:
            return ""
        p = f.gpu.predicted
        if p is None:
            return "not modelled"
        return f"{p.cell.replace('-', chr(0x2011))} ({p.model.names[p.gpu]}, {p.how}; a model)"

    for f in found:
        size = f" ({f.size})" if f.size else ""
        if f.on_cpu:
            others = ", ".join(release for release, _ in f.releases)
            agree = (f"{'same way' if f.steady else 'differs'} on {others}" if len(f.releases) > 1
                     else f"only {others} has a fresh record")
            spread = f"{f.ratio:.2f} ({f.low:.2f}–{f.high:.2f}, {f.processes} processes)"
            words = f.words
        else:
            words, spread, agree = "not measured", "", ""
        gpu = on_gpu(f)
        modelled = gpu_model(f)
        cpu_cell = f"**{words}**: {spread}; {agree}" if f.on_cpu else words
        rows.append(f"| [{f.what}]({page.md_link(f.page)}){size} | {cpu_cell} | {gpu} "
                    + (f"| {modelled} " if predicts else "") + f"| {f.why} |")
        why = f" {f.why[:1].upper()}{f.why[1:]}." if f.why else ""
        cpu = f"{f.words}, {spread}; {agree}" if f.on_cpu else "not measured on the CPU"
        model_said = f"; the model of the GPU's run: {modelled}" if predicts and modelled else ""
        items.append(f"- **[{f.what}]({page.md_link(f.page)})**{size}: {cpu}; on a GPU {gpu}{model_said}.{why}")
    cpu_rows = [f for f in found if f.on_cpu]
    steady = sum(f.steady for f in cpu_rows)
    several = sum(len(f.releases) > 1 for f in cpu_rows)
    gpus = sorted({f.gpu.hardware for f in found if f.gpu})
    both = sum(f.on_cpu and f.gpu is not None for f in found)
    summary = (f"{len(found)} comparisons, each judged by the site's one rule from its records. {len(cpu_rows)} were "
               f"measured on the CPU; of the {several} recorded fresh with more than one torch release, {steady} "
               f"point the same way on every one. "
               + (f"{both} of them were also measured on a GPU ({', '.join(gpus)}), and {len(found) - len(cpu_rows)} "
                  f"on a GPU only: every timed comparison the CUDA records hold is a row."
                  if gpus else "None was measured on a GPU."))
    tables = [("\n".join(rows), "\n".join(items))]
    modelled = [f for f in found if f.model]
    model_intro = ""
    if modelled:
        names = modelled[0].model.names
        first = next(iter(names))
        model_rows = [f"| Workload | Kernels | µs on {names[first]} | " + " | ".join(names.values()) + " |",
                      "|---|---|---|" + "---|" * len(names)]
        model_items = []
        for f in modelled:
            a_us, b_us = (f"{us:.3g}" if us >= 0.01 else "< 0.01" for us in f.model.us[first])
            kernels = f"{f.model.kernels[0]} → {f.model.kernels[1]}"
            ratios = [f.model.cell(g) for g in names]
            model_rows.append(f"| [{f.what}]({page.md_link(f.page)}) | {kernels} | {a_us} → {b_us} | "
                              + " | ".join(r.replace("-", "\u2011") for r in ratios) + " |")  # one line a cell
            model_items.append(f"- **[{f.what}]({page.md_link(f.page)})**: {kernels} kernels, {a_us} → {b_us} µs "
                               f"on {names[first]}; gain at the roof: "
                               + ", ".join(f"{name} {r}" for name, r in zip(names.values(), ratios)) + ".")
        missing = len(found) - len(modelled)
        model_intro = ("**GPU model, not measured.** Each row's workload (the same function at the same sizes and "
                       "dtype as its record) as the kernels each side would run on an NVIDIA GPU, from the CUDA code "
                       "Inductor writes and from eager's ATen ops, and the second side's gain over the first if "
                       "every kernel of both ran at its roof. "
                       + overhead_note(modelled, page)
                       + (f"{missing} rows have no model. " if missing else ""))
        tables.append(("\n".join(model_rows), "\n".join(model_items)))
    if page.target == NOTEBOOK:
        link = page.attach("findings.svg", "image/svg+xml", files["light"].read_bytes())
        text = f"![{alt}]({link})\n\n{summary}\n\n{tables[0][0]}\n"
        return text + (f"\n{model_intro}\n\n{tables[1][0]}\n" if model_intro else "")
    page.figures += 1
    images = wide_and_narrow(page, drawings, alt)
    caption = (f'<p class="mlc-caption"><strong>Figure {page.figures}.</strong> Each comparison\'s ratio on the CPU '
               f"(a dot) and, where a GPU measured it, on the GPU (a diamond, hollow where a side was timed one call "
               f"per block), each with its range over the fresh "
               f"processes (a line), on a log scale; the shaded band is the CPU's floor of about the same, "
               f"1 / {measures.FLOORS['cpu']} to {measures.FLOORS['cpu']} (a GPU's is 1 / {measures.FLOORS['cuda']} "
               f"to {measures.FLOORS['cuda']}; a record whose processes spread wider widens its own).</p>")

    def both(table: str, listed: str, summary_line: str) -> str:
        """The table on a wide screen, a list on a phone, folded under one line: the chart above says it at a
        glance, and the guide's steps stay near the top of the page."""
        return (f'<details class="abstract" markdown="1">\n<summary>{summary_line}</summary>\n\n'
                f'{table_or_list(table, listed)}\n</details>\n')

    text = ('<div class="mlc-figure" markdown>\n\n' + "\n".join(images) + f"\n{caption}\n\n</div>\n\n"
            f"{summary}\n\n"
            + both(*tables[0], "Every comparison: its verdict, ratio and range on the CPU, every release, and "
                               "what a GPU measured"))
    return text + (f"\n{model_intro}\n\n" + both(*tables[1], "The GPU model of every CPU row, by GPU")
                   if model_intro else "")


def blocks_said(g: findings.Measured) -> str:
    """How a GPU comparison's sides were timed, as far as its times tell (measures.blocks_per_process)."""
    if g.method:
        return g.method.removeprefix("both sides ")
    counts = [c for side in g.blocks for c in side]
    if counts and all(c is not None and c > 1 for c in counts):
        return "timed in blocks of many calls"
    return "timed in blocks of many calls where its times tell (no block of one call)"


def how_timed(g: findings.Measured, sep: str) -> str:
    """What a reader must know of how a GPU comparison was timed (a side timed one call per block pays its launch)
    and whether its record is stale, each part after `sep`."""
    return "".join(f"{sep}{part}" for part in (g.method, "record stale" if g.stale else "") if part)


def render_model_figure(found: list, page: Page) -> str:
    """The model against measurement (md:findings part=model): each GPU comparison the model predicts, measured
    gain against the model's, numbered; what each number is; a sentence for each that lies beyond
    findings.RESIDUAL of the model; and the GPU comparisons left out, with why."""
    points, left = findings.against_model(found)
    if not points:
        return "No GPU comparison has a model of its workload yet.\n"
    drawings = drawn_findings("model", repr([vars(p.finding) for p in points]),
                              lambda colors, narrow: findings.model_chart(points, colors, plots.style(colors),
                                                                          narrow=narrow))
    alt = findings.describe_model(points)

    made = sorted({(p.measured.hardware, p.measured.release) for p in points})
    one = len(made) == 1  # one GPU and release: said once, above the list

    def said(p) -> str:
        g, f = p.measured, p.finding
        where = f"[{f.what}]({page.md_link(f.page)})"
        on = "" if one else f" on the {g.hardware}, torch {g.release}"
        return (f"{where}: measured {g.ratio:.2f}× ({g.low:.2f}–{g.high:.2f}, {g.processes} processes"
                f"{how_timed(g, ', ')}){on}; "
                f"model ({g.predicted.how}) {p.predicted:.2f}×")

    where = f" Measured on the {made[0][0]} with torch {made[0][1]}." if one else ""
    listed = "\n".join(f"{p.number}. {said(p)}." for p in points)
    def off(q) -> str:
        return f"{max(q.factor, 1 / q.factor):.2f}× {'short of' if q.factor < 1 else 'beyond'}"

    # One sentence per workload whose points lie beyond the band, its other points (timed otherwise) beside it.
    sentences, said_for = [], set()
    for p in points:
        workload = repr(p.finding.gpu.predicted.model.us)
        if not findings.beyond(p) or workload in said_for:
            continue
        said_for.add(workload)
        same = [q for q in points if repr(q.finding.gpu.predicted.model.us) == workload]
        out = [q for q in same if findings.beyond(q)]
        text = (f"**Beyond {findings.RESIDUAL}×:** point {out[0].number} lies {off(out[0])} the model"
                + "".join(f", point {q.number} {off(q)} it" for q in out[1:]) + ".")
        timed = [q for q in out if q.measured.method]
        if timed:
            ways = "; ".join(f"point {q.number}'s sides were {q.measured.method.removeprefix('both sides ')}"
                             for q in timed)
            text += f" {ways[0].upper()}{ways[1:]}"  # str.capitalize would lower the rest
            text += (". A GPU's timer synchronizes at both ends of each block, so a call timed alone also pays "
                     "its launch and the host's work, which the model leaves out.")
        text += "".join(f" Point {q.number}, the same workload {blocks_said(q.measured)}, lies {off(q)} it."
                        for q in same if q not in out)
        sentences.append(f"- {text}")
    outside = ("\n".join(sentences) if sentences else f"Every point lies within {findings.RESIDUAL}× of the model.")
    reasons = []
    for f in left:
        g = f.gpu
        why = (f"not the program compared ({g.recompiled})" if g.recompiled
               else "overhead-bound: the model gives no ratio where a side's roof time is under what its calls "
                    "cost" if g.predicted is not None
               else "no model of its workload at the size the GPU ran")
        reasons.append(f"- [{f.what}]({page.md_link(f.page)}) ({g.words} on the {g.hardware}{how_timed(g, '; ')}): "
                       f"{why}.")
    summary = f"Left out of the figure: {len(left)} GPU comparisons, and why"
    if page.target == NOTEBOOK:
        link = page.attach("model.svg", "image/svg+xml", drawings[False]["light"].read_bytes())
        left_text = f"{summary}:\n\n" + "\n".join(reasons) if left else ""
        return f"![{alt}]({link})\n\n{where.strip()}\n\n{listed}\n\n{outside}\n\n{left_text}\n"
    left_text = (f'<details class="abstract" markdown="1">\n<summary>{summary}</summary>\n\n' + "\n".join(reasons)
                 + "\n\n</details>\n") if left else ""
    page.figures += 1
    images = wide_and_narrow(page, drawings, alt)
    caption = (f'<p class="mlc-caption"><strong>Figure {page.figures}.</strong> Measured gain (a dot; a line, its '
               f"range over the fresh processes) against the model's gain at the roof (from published "
               f"specifications), log axes: on the diagonal the model is right; the band is within "
               f"{findings.RESIDUAL}× of it.{where}</p>")
    # The numbered points fold (the figure labels them); what lies beyond the band stays in the text.
    points_text = (f'<details class="abstract" markdown="1">\n<summary>The {len(points)} points, one by one'
                   f"</summary>\n\n{listed}\n\n</details>\n")
    return ('<div class="mlc-figure" markdown>\n\n' + "\n".join(images) + f"\n{caption}\n\n</div>\n\n"
            f"{points_text}\n{outside}\n\n{left_text}\n")


def overhead_note(modelled: list, page: Page) -> str:
    """What makes a model row "overhead-bound", with the costs measured and where."""
    costs = next((f.model.overheads for f in modelled if f.model.overheads), None)
    if costs is None:
        return ""
    bound = sum(any(f.model.overhead_bound(g) for g in f.model.names) for f in modelled)
    graphs = page.md_link("dissecting/graphs.md")
    return (f"The roofs leave out what a call costs before its bytes count; the {costs.hardware}'s record of "
            f"[CUDA graphs]({graphs}) (torch {costs.release}) measured it: {costs.eager_op_us:.1f} µs per eager "
            f"op from the host, {costs.launch_us:.2f} µs of GPU time per kernel replayed in a CUDA graph, "
            f"{costs.compiled_call_us:.1f} µs per compiled call of one kernel. A row where either side's time at "
            f"the roof is under what its calls cost there (eager: its ops × the first; compiled: the third, plus "
            f"the second for each further kernel; each a lower bound) is **overhead-bound**: the roofs do not "
            f"decide its time, and the model gives it no ratio ({bound} of {len(modelled)} rows on at least one "
            f"GPU; the costs are that box's, applied to all three). ")


def render_coverage(d: Directive, page: Page) -> str:
    """What was measured where, said once for the whole site (Home): the machines that made the records, and
    each device's count of snippets recorded, from the records themselves."""
    snippets = records.find_snippets(page.snippets)
    found = {device: [r for s in snippets if (r := records.record(s, device, page.outputs, page.snippets)).exists]
             for device in DEVICES}
    cpu, cuda = found["cpu"], found["cuda"]
    if not cpu:
        raise DirectiveError("there is no CPU record to say anything about")
    machines = sorted({r.hardware for r in cpu})
    cores = sorted({str(r.environment.get("cpu_count")) for r in cpu})
    releases_made = sorted({r.release for device in DEVICES
                            for s in snippets for r in records.releases_of(s, device, page.outputs, page.snippets)},
                           key=records.version_key)
    text = (f"{len(cpu)} of the {len(snippets)} snippets were run and timed on a CPU, the "
            f"{' and '.join(machines)} ({'/'.join(cores)} cores) named under each output, with torch "
            f"{releases.names_of(releases_made)}. ")
    if cuda:
        gpus = sorted({r.hardware for r in cuda})
        text += f"{len(cuda)} were also recorded on a GPU, the {' and '.join(gpus)}; the rest were not. "
    else:
        text += ("No snippet was run on a GPU: what the pages show of GPUs is compiler output made without one "
                 "(Triton and Inductor code for named NVIDIA targets, labelled so) and models from published "
                 "specifications, labelled as models. ")
    return text + "Each output's provenance line names the machine, the versions and the day that made it.\n"


RENDER = {"output": render_output, "figure": render_figure, "records": render_records, "changes": render_changes,
          "findings": render_findings, "coverage": render_coverage, "explorer": explorer.render,
          "value": render_value, "compare": render_compare, "hardware": render_hardware, "atlas": render_atlas}



def expand(markdown: str, page: Page) -> str:
    """Render every directive of some Markdown for the page's target (scripts/directives.py `expand`, with this
    module's renderers); a mistake raises DirectiveError naming the page and the directive."""
    return directives.expand(markdown, page, RENDER, plots.OPTIONS)


def conditionals(markdown: str, page: Page) -> str:
    """The branches of md:recorded that the records choose (scripts/directives.py `conditionals`)."""
    return directives.conditionals(markdown, page)
