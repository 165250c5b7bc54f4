"""The one mkdocs hook (named in mkdocs.yml `hooks:`): expands the record directives in chapter Markdown.

Directives sit in HTML comments, so a page read on GitHub stays clean. Records are read through
scripts/records.py; figures are drawn by scripts/plots.py and scripts/diagrams.py at build time, cached by
content under .cache/figures/, and copied into the built site.

    <!-- md:output SNIPPET[:SECTION] [lang=LANG | lang=cuda:LANG,cpu:LANG] -->
        The recorded stdout (of one named section) in a content tab per recorded device, recorded devices
        only, each with its provenance line; a warning where the snippet changed since. A page whose
        outputs lack a device says so once, under its title.

    <!-- md:value SNIPPET KEY [device=cuda|cpu] [fmt=SPEC] [scale=FACTOR] [unit=TEXT] [yes=TEXT no=TEXT] -->
        One value of the record's results (a dotted key), inline. device= defaults to cuda; fmt= is a Python
        format spec (default: integers as they are, other numbers to 3 significant digits); scale= multiplies
        first; yes=/no= name a true/false value. A device with no record fails the build: prose about a
        device belongs inside an md:recorded block.

    <!-- md:compare SNIPPET KEY_A KEY_B [device=cuda|cpu] -->
        Words bound to two timings (dicts with median_us, q1_us, q3_us): "2.3× faster", "1.5× slower" or
        "about the same", for B against A, by the rule in scripts/records.py `judge`.

    <!-- md:hardware SNIPPET [device=cuda|cpu] -->
        The GPU's (or CPU's) name, from the record.

    <!-- md:recorded SNIPPET [device=cuda|cpu] -->   (alone on its line)
    ...shown when that record exists...
    <!-- md:else -->                                 (optional)
    ...shown when it does not...
    <!-- md:end -->

    <!-- md:figure SNIPPET NAME [kind=KIND OPTION=VALUE ...] [device=cuda|cpu] caption="TEXT" -->
        A numbered figure with its caption, drawn from each recorded device's record (or one device's): a
        profiler timeline (NAME timeline), an FX graph kept in results (NAME is its dotted key; a Mermaid
        diagram), or a chart (kind=bars|speedup|lines|roofline, see scripts/plots.py), light and dark.

    <!-- md:records -->
        A table of every snippet's record on each device: state, date, hardware, versions.

An unknown directive or option, a missing snippet, section, key or record, or a bad format fails the build
with one line naming the page and the directive.
"""

from __future__ import annotations

import hashlib
import html
import re
import shlex
import shutil
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

try:
    from scripts import diagrams, plots, records
except ModuleNotFoundError:
    # The `mkdocs` command loads this file by its path, outside its package; load the package the same way.
    import importlib.util

    _here = Path(__file__).resolve().parent
    _spec = importlib.util.spec_from_file_location("scripts", _here / "__init__.py",
                                                   submodule_search_locations=[str(_here)])
    sys.modules["scripts"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["scripts"])
    from scripts import diagrams, plots, records

DEVICES, LABELS = records.DEVICES, records.LABELS
FIGURE_CACHE = records.ROOT / ".cache" / "figures"
# A directive's options may run over several lines (a long caption), but never past its own "-->".
ARGS = r"(?P<args>(?:(?!-->).)*?)"
DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)<!--\s*md:(?P<name>[\w-]+)" + ARGS + r"-->[ \t]*$",
                       re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"<!--\s*md:(?P<name>[\w-]+)" + ARGS + r"-->", re.DOTALL)
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
CONDITIONAL = ("recorded", "else", "end")


class DirectiveError(Exception):
    pass


class Page:
    """What the directives of one page share: its URL, its figure count, the devices its outputs lack."""

    def __init__(self, src_uri: str, url: str, snippets: Path = records.SNIPPETS, outputs: Path = records.OUTPUTS):
        self.src_uri, self.url, self.snippets, self.outputs = src_uri, url, snippets, outputs
        self.figures = 0
        self.lacking: set[str] = set()
        self.drawn: dict[str, str] = {}  # site path -> cached file, copied into the site after the build

    def record(self, snippet: str, device: str) -> records.Record:
        if not (self.snippets / snippet).is_file():
            raise DirectiveError(f"snippet 'snippets/{snippet}' does not exist")
        return records.record(snippet, device, self.outputs, self.snippets)

    def recorded(self, snippet: str) -> list[records.Record]:
        """The records of a snippet, one per device that has one, in DEVICES order."""
        found = [r for r in (self.record(snippet, d) for d in DEVICES) if r.exists]
        if not found:
            raise DirectiveError(f"snippets/{snippet} has no record on any device: run "
                                 f"{records.remake_hint(snippet, 'cpu')}")
        self.lacking |= {d for d in DEVICES if d not in {r.device for r in found}}
        for r in found:
            try:
                r.validate()
            except records.CorruptRecord as error:
                raise DirectiveError(str(error)) from None
        return found

    def link(self, path: str) -> str:
        """A link for raw HTML, from this page's URL to a path of the built site."""
        return get_relative_url(path, self.url or ".")

    def md_link(self, path: str) -> str:
        """A link for Markdown, from this page's source to a file under docs/: mkdocs checks and rewrites it."""
        return get_relative_url(path, self.src_uri)


# ----------------------------------------------------------------------------------------------- options


def split_reference(reference: str) -> tuple[str, str | None]:
    snippet, _, section = reference.partition(":")
    if not snippet.endswith(".py"):
        raise DirectiveError(f"'{reference}' must name a snippet file ending in .py")
    return snippet, section or None


def options(args: list[str], allowed: set[str]) -> dict[str, str]:
    found = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or name not in allowed:
            raise DirectiveError(f"unknown option '{arg}' (known: {', '.join(f'{a}=' for a in sorted(allowed))})")
        found[name] = value
    return found


def device_option(found: dict[str, str]) -> str:
    device = found.get("device", "cuda")
    if device not in DEVICES:
        raise DirectiveError(f"device={device}: expected {' or '.join(DEVICES)}")
    return device


def tabs(bodies: list[tuple[str, str]]) -> str:
    """Content tabs, one per (device, Markdown); `===!` starts a new set, so two outputs never merge."""
    out = []
    for i, (device, text) in enumerate(bodies):
        indented = "\n".join("    " + line if line else "" for line in text.splitlines())
        out.append(f'{"===!" if i == 0 else "==="} "{LABELS[device]}"\n\n{indented}')
    return "\n\n".join(out) + "\n"


def provenance(page: Page, record: records.Record) -> str:
    link = page.link(f"{records.site_path(record.snippet, record.device)}/{records.MANIFEST}")
    return f'<p class="provenance">{html.escape(record.provenance())} · <a href="{link}">record</a></p>'


def stale_warning(record: records.Record) -> str:
    if record.state != "stale":
        return ""
    return (f'!!! warning "Stale record"\n\n    `snippets/{record.snippet}` changed after this was recorded on '
            f"{LABELS[record.device]}. Remake it with `{records.remake_hint(record.snippet, record.device)}`.\n\n")


# -------------------------------------------------------------------------------------------- directives


def render_output(args: list[str], page: Page) -> str:
    if not args:
        raise DirectiveError("md:output takes SNIPPET[:SECTION] [lang=...]")
    snippet, section = split_reference(args[0])
    languages = dict.fromkeys(DEVICES, "text")
    for device, language in parse_languages(options(args[1:], {"lang"}).get("lang")).items():
        languages[device] = language
    bodies = []
    for record in page.recorded(snippet):
        if section is None:
            text = record.stdout
        elif section in record.sections:
            text = record.sections[section]
        else:
            raise DirectiveError(f"the {record.device} record of {snippet} printed nothing in section '{section}'")
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
        # Output wraps at the column (.mlc-output in extra.css), code-like output too.
        block = f"{fence}{{ .{languages[record.device]} .mlc-output }}\n{text.rstrip()}\n{fence}"
        bodies.append((record.device, stale_warning(record) + block + "\n\n" + provenance(page, record)))
    return tabs(bodies)


def parse_languages(value: str | None) -> dict[str, str]:
    if not value:
        return {}
    found = {}
    for item in value.split(","):
        device, sep, language = item.rpartition(":")
        if sep and device not in DEVICES:
            raise DirectiveError(f"lang={value}: '{device}' is not a device ({', '.join(DEVICES)})")
        for key in [device] if sep else DEVICES:
            found[key] = language
    return found


def render_figure(args: list[str], page: Page) -> str:
    if len(args) < 2:
        raise DirectiveError('md:figure takes SNIPPET NAME [kind=... options] caption="..."')
    snippet, name = args[0], args[1]
    found = options(args[2:], {"kind", "caption", "keys", "labels", "unit", "line", "line_label", "x", "base",
                               "other", "series", "xlabel", "ylabel", "logy", "key", "device"})
    caption = found.pop("caption", "").strip()
    only = found.pop("device", None)
    if only is not None and only not in DEVICES:
        raise DirectiveError(f"device={only}: expected {' or '.join(DEVICES)}")
    if not caption:
        raise DirectiveError('md:figure needs caption="one line saying what to see"')
    page.figures += 1
    bodies = []
    shown_records = [r for r in page.recorded(snippet) if only is None or r.device == only]
    if not shown_records:
        raise DirectiveError(f"there is no {LABELS[only]} record of {snippet}: put the figure inside md:recorded")
    for record in shown_records:
        diagram = fx_diagram(record, name, found)
        if diagram is not None:
            mermaid, alt = diagram
            shown = f"```mermaid\n{mermaid.rstrip()}\n```\n\n" + f'<p class="mlc-alt">{html.escape(alt)}</p>'
        else:
            shown = draw(page, record, name, found)
        bodies.append((record.device, stale_warning(record) + shown))
    figure = tabs(bodies) if len(bodies) > 1 else bodies[0][1] + "\n"
    number = f'<p class="mlc-caption"><strong>Figure {page.figures}.</strong> {html.escape(caption)}</p>'
    return f'<div class="mlc-figure" markdown>\n\n{figure}\n{number}\n\n</div>\n'


def fx_diagram(record: records.Record, name: str, found: dict[str, str]) -> tuple[str, str] | None:
    """(Mermaid source, alt text) when NAME is an FX graph kept in the record's results; None for a chart."""
    if "kind" in found or name == "timeline":
        return None
    try:
        kept = record.value(name)
    except KeyError:
        raise DirectiveError(f"{name} is not kept in the {record.device} record's results") from None
    if not (isinstance(kept, dict) and "fxgraph" in kept):
        return None
    return diagrams.fx_to_mermaid(record.file(kept["fxgraph"]).read_text())


def draw(page: Page, record: records.Record, name: str, found: dict[str, str]) -> str:
    """Both palettes' SVGs of one chart, from the cache when the record and the drawing code are unchanged."""
    digest = hashlib.sha256()
    for part in (Path(plots.__file__).read_bytes(), repr(sorted(found.items())).encode(), name.encode(),
                 *(p.read_bytes() for p in sorted(record.files.glob("*.json")) if p.is_file())):
        digest.update(hashlib.sha256(part).digest())
    key = digest.hexdigest()[:20]
    FIGURE_CACHE.mkdir(parents=True, exist_ok=True)
    images = []
    alt = ""
    for palette in plots.PALETTES:
        cached = FIGURE_CACHE / f"{key}.{palette}.svg"
        alt_file = FIGURE_CACHE / f"{key}.alt.txt"
        if not cached.exists() or not alt_file.exists():
            try:
                svg, alt = plots.render(record, name, found, palette)
            except plots.FigureError as error:
                raise DirectiveError(f"the {record.device} record: {error}") from None
            cached.write_text(svg)
            alt_file.write_text(alt)
        alt = alt_file.read_text()
        site_path = f"figures/{key}.{palette}.svg"
        page.drawn[site_path] = str(cached)
        src = page.link(site_path)
        images.append(
            f'<a class="mlc-zoom" href="{src}" title="Open the figure at full size">'
            f'<img src="{src}#only-{palette}" alt="{html.escape(alt)}" loading="lazy"></a>'
        )
    traces = plots.traces(record) if name == "timeline" else []
    links = ""
    if traces:
        base = f"{records.site_path(record.snippet, record.device)}/{records.FILES}/"
        listed = ", ".join(f'<a href="{page.link(base + t.name)}"><code>{t.name}</code></a>' for t in traces)
        perfetto = '<a href="https://ui.perfetto.dev">Perfetto</a>'
        links = f'\n<p class="provenance">The traces, to open in {perfetto}: {listed}</p>'
    return "\n".join(images) + links + "\n"


def render_records(args: list[str], page: Page) -> str:
    if args:
        raise DirectiveError("md:records takes no arguments")
    rows = ["| Snippet | " + " | ".join(LABELS[d] for d in DEVICES) + " |", "|---|" + "---|" * len(DEVICES)]
    for snippet in records.find_snippets(page.snippets):
        cells = []
        for device in DEVICES:
            record = page.record(snippet, device)
            state = record.state
            if state in ("missing", "corrupt") or not record.exists:
                cells.append(f"*{state}*")
                continue
            env = record.environment
            link = page.md_link(f"{records.site_path(snippet, device)}/{records.MANIFEST}")
            shown = f"**{state}**" if state != "fresh" else state
            cells.append(f"{shown} · [{record.date}]({link}) · {record.hardware} · torch {env.get('torch')} · "
                         f"{record.manifest.get('duration_s')} s")
        rows.append(f"| `{snippet}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


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


def render_value(args: list[str], page: Page) -> str:
    if len(args) < 2:
        raise DirectiveError("md:value takes SNIPPET KEY [device=] [fmt=] [scale=] [unit=] [yes= no=]")
    snippet, key = args[0], args[1]
    found = options(args[2:], {"device", "fmt", "scale", "unit", "yes", "no"})
    record = needed(page, snippet, device_option(found))
    try:
        value = record.value(key)
    except KeyError as error:
        raise DirectiveError(error.args[0]) from None
    text = format_value(value, found)
    if found.get("unit"):
        text += ("" if found["unit"] == "%" else "\u202f") + found["unit"]
    return inline_span(record, f"{key} from snippets/{snippet}", text)


def needed(page: Page, snippet: str, device: str) -> records.Record:
    record = page.record(snippet, device)
    if not record.exists:
        raise DirectiveError(
            f"there is no {LABELS[device]} record of {snippet}: put the sentence inside "
            f"<!-- md:recorded {snippet} device={device} --> ... <!-- md:end -->"
        )
    return record


def inline_span(record: records.Record, what: str, text: str) -> str:
    title = f"{what}, recorded on {record.hardware} on {record.date}"
    stale = ' <span class="stale" title="the snippet changed since this was recorded">(stale)</span>'
    return (f'<span class="recorded" title="{html.escape(title)}">{html.escape(text)}</span>'
            + (stale if record.state == "stale" else ""))


def render_compare(args: list[str], page: Page) -> str:
    if len(args) < 3:
        raise DirectiveError("md:compare takes SNIPPET KEY_A KEY_B [device=]")
    snippet, key_a, key_b = args[:3]
    record = needed(page, snippet, device_option(options(args[3:], {"device"})))
    try:
        a, b = record.value(key_a), record.value(key_b)
    except KeyError as error:
        raise DirectiveError(error.args[0]) from None
    if not all(isinstance(t, dict) and "median_us" in t for t in (a, b)):
        raise DirectiveError(f"{key_a} and {key_b} must both be timings (dicts with median_us)")
    ratio, lo, hi = records.timing_band(a, b)
    processes = len(records.ratios(a, b))
    spread = (f"ratio {ratio:.2f}, from {lo:.2f} to {hi:.2f} across {processes} fresh processes" if processes
              else f"ratio of medians {ratio:.2f}, {lo:.2f} to {hi:.2f} within the IQRs")
    return inline_span(record, f"{key_b} against {key_a} from snippets/{snippet} ({spread})", records.judge(a, b))


def render_hardware(args: list[str], page: Page) -> str:
    if len(args) < 1:
        raise DirectiveError("md:hardware takes SNIPPET [device=]")
    record = needed(page, args[0], device_option(options(args[1:], {"device"})))
    return inline_span(record, "the machine", record.hardware)


BLOCKS = {"output": render_output, "figure": render_figure, "records": render_records}
INLINES = {"value": render_value, "compare": render_compare, "hardware": render_hardware}


# ------------------------------------------------------------------------------------------------ pages


def fenced_segments(markdown: str) -> list[tuple[bool, str]]:
    """Split Markdown into (inside a fenced code block?, text), so directives shown as code stay code."""
    segments: list[tuple[bool, list[str]]] = [(False, [])]
    fence = None
    for line in markdown.splitlines(keepends=True):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            segments.append((True, [line]))
        elif fence is not None:
            segments[-1][1].append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip()[len(match.group(1)):].strip():
                fence = None
                segments.append((False, []))
        else:
            segments[-1][1].append(line)
    return [(code, "".join(lines)) for code, lines in segments if lines]


def conditionals(markdown: str, page: Page) -> str:
    """Keep the branch of each md:recorded ... md:else ... md:end block that matches the records."""
    out, state = [], None  # state: None outside a block, else (keeping this branch?, directive text)
    for is_code, text in fenced_segments(markdown):
        if is_code:
            if state is None or state[0]:
                out.append(text)
            continue
        for line in text.splitlines(keepends=True):
            match = DIRECTIVE.match(line.rstrip("\n"))
            name = match.group("name") if match else None
            if name not in CONDITIONAL:
                if state is None or state[0]:
                    out.append(line)
                continue
            directive = line.strip()
            try:
                if name == "recorded":
                    if state is not None:
                        raise DirectiveError("md:recorded blocks do not nest; close the first with md:end")
                    args = shlex.split(match.group("args"))
                    if not args:
                        raise DirectiveError("md:recorded takes SNIPPET [device=]")
                    record = page.record(args[0], device_option(options(args[1:], {"device"})))
                    state = (record.exists, directive)
                elif state is None:
                    raise DirectiveError(f"md:{name} without an md:recorded before it")
                elif name == "else":
                    state = (not state[0], state[1])
                else:
                    state = None
            except DirectiveError as error:
                raise PluginError(f"{page.src_uri}: {directive}: {error}") from None
    if state is not None:
        raise PluginError(f"{page.src_uri}: {state[1]}: never closed with <!-- md:end -->")
    return "".join(out)


def expand(markdown: str, page: Page) -> str:
    """Expand every directive in a page's Markdown; raise PluginError naming the page on any mistake."""

    def fail(match: re.Match, error: Exception):
        return PluginError(f"{page.src_uri}: {match.group(0).strip()}: {error}")

    def block(match: re.Match) -> str:
        name = match.group("name")
        if name not in BLOCKS:
            return match.group(0)  # inline directives are handled below
        try:
            rendered = BLOCKS[name](shlex.split(match.group("args")), page)
        except (DirectiveError, ValueError) as error:
            raise fail(match, error) from None
        indent = match.group("indent") or ""
        return "\n".join(indent + line if line else "" for line in rendered.splitlines())

    def inline(match: re.Match) -> str:
        name = match.group("name")
        try:
            if name in INLINES:
                return INLINES[name](shlex.split(match.group("args")), page)
            if name in BLOCKS or name in CONDITIONAL:
                raise DirectiveError(f"md:{name} must stand alone on its own line")
            known = ", ".join(f"md:{n}" for n in [*BLOCKS, *INLINES, *CONDITIONAL])
            raise DirectiveError(f"unknown directive 'md:{name}' (known: {known})")
        except (DirectiveError, ValueError) as error:
            raise fail(match, error) from None

    markdown = conditionals(markdown, page)
    parts = []
    for is_code, text in fenced_segments(markdown):
        parts.append(text if is_code else INLINE.sub(inline, DIRECTIVE.sub(block, text)))
    return "".join(parts)


def notebook_link(page: Page) -> str:
    """Buttons under the title: the page's notebook as a page and as a file to download, where one exists."""
    from scripts import notebooks  # imports this module: import it only once both exist

    notebook = notebooks.notebook_path(records.ROOT / "docs" / page.src_uri)
    if not notebook.exists():
        return ""
    stem = notebook.relative_to(notebooks.DOCS).as_posix().removesuffix(".ipynb")
    as_page = page.link(stem + "/")
    download = page.link(f"{stem}/{notebook.name}")  # mkdocs-jupyter copies the .ipynb beside its page
    button = '<a class="md-button notebook-link" href="{}"{}>{}</a>'
    return (button.format(as_page, "", ":material-notebook-outline: This chapter as a notebook") + " "
            + button.format(download, " download", ":material-download: Download .ipynb") + "\n\n")


def lacking_note(page: Page) -> str:
    if not page.lacking:
        return ""
    reproduce = get_relative_url("reproduce.md", page.src_uri)  # a Markdown link: mkdocs checks and rewrites it
    missing = " or ".join(LABELS[d] for d in sorted(page.lacking, key=DEVICES.index))
    return (f'!!! note "Not yet recorded on {missing}"\n\n    The outputs on this page were recorded on '
            f"{' and '.join(LABELS[d] for d in DEVICES if d not in page.lacking)} only. A {missing} record is "
            f"made on a machine that has one; [Reproduce]({reproduce}) says how. The text about {missing} "
            f"appears once that record exists.\n\n")


# --------------------------------------------------------------------------------------------- mkdocs events

_DRAWN: dict[str, str] = {}


def on_page_markdown(markdown, page, config, files):
    state = Page(page.file.src_uri, page.url)
    markdown = expand(markdown, state)
    _DRAWN.update(state.drawn)
    head = notebook_link(state) + lacking_note(state)
    if head:
        # After the first heading, so the title stays first.
        first, sep, rest = markdown.partition("\n")
        markdown = first + sep + "\n" + head + rest if first.startswith("# ") else head + markdown
    return markdown


def on_page_content(html_text, page, config, files):
    if page.file.src_uri.startswith("notebooks/"):
        # A notebook repeats its chapter: search lands on the chapter, never on its notebook.
        page.meta["search"] = {"exclude": True}
        # nbconvert writes a Mermaid figure as a bare <pre class="mermaid">; Material renders only one
        # holding a <code>, and leaves an empty box otherwise.
        html_text = re.sub(r'<pre class="mermaid">(?!<code>)(.*?)</pre>', r'<pre class="mermaid"><code>\1</code></pre>',
                           html_text, flags=re.DOTALL)
    return html_text


def on_post_build(config):
    site = Path(config["site_dir"])
    for site_path, cached in _DRAWN.items():
        target = site / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, target)
