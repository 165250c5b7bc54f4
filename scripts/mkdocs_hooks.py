"""The one mkdocs hook: expands the record directives in chapter Markdown (named in mkdocs.yml `hooks:`).

Directives sit in HTML comments, so a page read on GitHub stays clean:

    <!-- md:output eager_mode/complex_activation.py:profile -->
        The recorded stdout of that snippet (of one named section, when given), in a content tab per
        recorded device, CUDA first, each with a provenance line under it; a warning where the snippet
        changed since it was recorded; "not yet recorded on CUDA" where there is no record.
        lang= highlights the output as code: lang=python, or per device: lang=cuda:python,cpu:cpp.

    <!-- md:value eager_mode/complex_activation.py profile.busy_us device=cpu fmt=,.0f -->
        One number from the snippet's recorded results.json (a dotted key), inline in prose.
        device= cuda|cpu (default cuda); fmt= a Python format spec (default: 3 significant digits);
        scale= a factor applied first (100 turns a share into a percentage); unit= text after the number
        (unit=µs), left out with it when there is no record, so the prose reads "not yet recorded on CUDA".

    <!-- md:figure eager_mode/complex_activation.py timeline -->
        A figure scripts/render_assets.py drew from the snippet's records, in a tab per device, in light
        and dark versions (Material shows the one matching the palette); a timeline links its traces
        for Perfetto. A figure drawn from an older record shows a warning.

    <!-- md:records -->
        A table of every snippet and its record on each device: hardware, versions, date, freshness.

Every page that shows snippets gets a link to its notebook (docs/notebooks/, built by render_assets.py).
An unknown directive, a snippet that does not exist, a key missing from a record or a figure never drawn
fails the build with a message naming the page and the directive.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from mkdocs.exceptions import PluginError

import regenerate
import render_assets

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
OUTPUTS = ROOT / "docs" / "outputs"
DEVICE_ORDER = ("cuda", "cpu")
DEVICE_LABEL = {"cuda": "CUDA", "cpu": "CPU"}
DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)?<!--\s*md:(?P<name>[\w-]+)(?P<args>.*?)-->", re.MULTILINE)
INLINE = re.compile(r"<!--\s*md:(?P<name>[\w-]+)(?P<args>.*?)-->")


class DirectiveError(Exception):
    pass


@dataclass
class Record:
    device: str
    folder: Path
    manifest: dict
    stale: bool

    def text(self, name: str) -> str:
        return (self.folder / name).read_text()

    def results(self) -> dict:
        path = self.folder / "files" / "results.json"
        if not path.exists():
            raise DirectiveError(f"the {self.device} record has no files/results.json")
        return json.loads(path.read_text())


def load_record(snippet: str, device: str, snippets: Path = SNIPPETS, outputs: Path = OUTPUTS) -> Record | None:
    folder = regenerate.record_dir(outputs, device, snippet)
    manifest = regenerate.read_manifest(folder)
    if manifest is None:
        return None
    return Record(device, folder, manifest, stale=manifest.get("sha256") != regenerate.source_sha256(snippets / snippet))


def provenance(record: Record, link: str) -> str:
    env = record.manifest.get("environment", {})
    if record.device == "cuda":
        hardware = f"{env.get('gpu', 'unknown GPU')} (CUDA {env.get('cuda')}, driver {env.get('driver')})"
    else:
        hardware = f"{env.get('cpu', 'unknown CPU')} ({env.get('cpu_count')} cores)"
    versions = f"torch {env.get('torch')}" + (f" · triton {env['triton']}" if env.get("triton") else "")
    date = str(record.manifest.get("date", ""))[:10]
    # A Markdown paragraph, so mkdocs checks the link to the record and rewrites it for the built site.
    return (
        f"Recorded on {hardware} · {versions} · Python {env.get('python')} · {date} · "
        f"[record]({link}/manifest.json)\n{{: .provenance }}"
    )


def split_reference(reference: str) -> tuple[str, str | None]:
    snippet, _, section = reference.partition(":")
    if not snippet.endswith(".py"):
        raise DirectiveError(f"'{reference}' must name a snippet file ending in .py")
    return snippet, section or None


def check_snippet(snippet: str, snippets: Path) -> None:
    if not (snippets / snippet).is_file():
        raise DirectiveError(f"snippet 'snippets/{snippet}' does not exist")


def output_languages(options: list[str]) -> dict[str, str]:
    languages = dict.fromkeys(DEVICE_ORDER, "text")
    for option in options:
        name, sep, value = option.partition("=")
        if name != "lang" or not sep or not value:
            raise DirectiveError(f"unknown option '{option}' (lang=LANG or lang=cuda:LANG,cpu:LANG)")
        for item in value.split(","):
            device, sep, language = item.rpartition(":")
            if sep and device not in DEVICE_ORDER:
                raise DirectiveError(f"lang={value}: '{device}' is not a device (cuda, cpu)")
            for key in [device] if sep else DEVICE_ORDER:
                languages[key] = language
    return languages


def device_tabs(snippet: str, snippets: Path, outputs: Path, body) -> str:
    """A content tab per device, CUDA first, holding body(record) or "Not yet recorded". The first tab
    starts a new tab set (===!), so two directives in a row do not merge into one set; the first device
    with a record is the tab that opens (===+)."""
    records = {device: load_record(snippet, device, snippets, outputs) for device in DEVICE_ORDER}
    opens = next((device for device in DEVICE_ORDER if records[device]), DEVICE_ORDER[0])
    tabs = []
    for device, record in records.items():
        label = DEVICE_LABEL[device]
        text = body(record) if record else f'<p class="not-recorded">Not yet recorded on {label}.</p>'
        marker = "===+" if device == opens and device != DEVICE_ORDER[0] else "===!" if not tabs else "==="
        indented = "\n".join("    " + line if line else "" for line in text.splitlines())
        tabs.append(f'{marker} "{label}"\n\n{indented}')
    return "\n\n".join(tabs) + "\n"


def render_output(args: list[str], page_path: str, snippets: Path, outputs: Path) -> str:
    if not args:
        raise DirectiveError("md:output takes SNIPPET[:SECTION] [lang=...]")
    snippet, section = split_reference(args[0])
    languages = output_languages(args[1:])
    check_snippet(snippet, snippets)
    up = "../" * page_path.count("/")

    def body(record: Record) -> str:
        if section is None:
            text = record.text("stdout.txt")
        else:
            sections = json.loads(record.text("sections.json"))
            if section not in sections:
                raise DirectiveError(f"the {record.device} record of {snippet} printed nothing in section '{section}'")
            text = sections[section]
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
        link = up + "outputs/" + record.folder.relative_to(outputs).as_posix()
        shown = f"{fence}{languages[record.device]}\n{text.rstrip()}\n{fence}\n\n{provenance(record, link)}"
        if not record.stale:
            return shown
        return (
            f'!!! warning "Stale record"\n\n'
            f"    `snippets/{snippet}` changed after this output was recorded on {DEVICE_LABEL[record.device]}. "
            f"Remake it with `python scripts/regenerate.py --device {record.device} --only {snippet}`.\n\n" + shown
        )

    return device_tabs(snippet, snippets, outputs, body)


def render_figure(args: list[str], page_path: str, snippets: Path, outputs: Path) -> str:
    if len(args) != 2:
        raise DirectiveError("md:figure takes SNIPPET NAME")
    snippet, name = args
    check_snippet(snippet, snippets)
    up = "../" * page_path.count("/")

    def body(record: Record) -> str:
        device = record.device
        source = render_assets.figure_sources(record.folder).get(name)
        if source is None:
            raise DirectiveError(f"the {device} record of {snippet} holds no data for a figure '{name}'")
        folder = render_assets.FIGURES / device / record.folder.relative_to(outputs / device)
        entry = (render_assets._read_json(folder / "figures.json") or {}).get(name)
        files = render_assets.figure_files(folder, name, source["kind"])
        if entry is None or not all(f.exists() for f in files):
            raise DirectiveError(f"figure '{name}' was never drawn for {device}: run python scripts/render_assets.py")
        where = up + folder.relative_to(render_assets.DOCS).as_posix()
        alt = entry["alt"].replace("[", "(").replace("]", ")")
        if source["kind"] == "graph":
            # Mermaid draws it in the browser; the alt text stays readable without it.
            shown = f"```mermaid\n{files[0].read_text().rstrip()}\n```\n\n{alt}\n{{: .provenance }}"
        else:
            shown = "\n".join(
                f"![{alt}]({where}/{name}.{palette}.svg#only-{palette}){{ loading=lazy }}" for palette in ("light", "dark")
            )
        if entry.get("hash") != source["hash"]:
            shown = '!!! warning "Stale figure"\n\n    Drawn from an older record: run `python scripts/render_assets.py`.\n\n' + shown
        if source["kind"] == "timeline":
            link = up + "outputs/" + record.folder.relative_to(outputs).as_posix() + "/files/"
            traces = ", ".join(f"[`{t.name}`]({link}{t.name})" for t in source["traces"])
            shown += f"\n\nThe trace: {traces}, to open in [Perfetto](https://ui.perfetto.dev).\n{{: .provenance }}"
        return shown

    return device_tabs(snippet, snippets, outputs, body)


def render_value(args: list[str], snippets: Path, outputs: Path) -> str:
    if not args:
        raise DirectiveError("md:value takes SNIPPET KEY [device=cuda|cpu] [fmt=SPEC] [scale=FACTOR] [unit=TEXT]")
    snippet, key, options = args[0], (args[1] if len(args) > 1 else None), {}
    for option in args[2:]:
        name, sep, value = option.partition("=")
        if not sep or name not in {"device", "fmt", "scale", "unit"}:
            raise DirectiveError(f"unknown option '{option}' (device=, fmt=, scale=, unit=)")
        options[name] = value
    if key is None:
        raise DirectiveError("md:value needs a KEY after the snippet")
    check_snippet(snippet, snippets)
    device = options.get("device", "cuda")
    if device not in DEVICE_ORDER:
        raise DirectiveError(f"device={device}: expected cuda or cpu")
    record = load_record(snippet, device, snippets, outputs)
    if record is None:
        return f'<span class="not-recorded">not yet recorded on {DEVICE_LABEL[device]}</span>'
    value = record.results()
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise DirectiveError(f"key '{key}' is not in the {device} record's results.json")
        value = value[part]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = value * float(options.get("scale", 1))
        text = format(value, options.get("fmt", ".3g"))
    else:
        text = str(value)
    if options.get("unit"):
        text += ("" if options["unit"] == "%" else "\u202f") + options["unit"]
    env = record.manifest.get("environment", {})
    where = env.get("gpu") if device == "cuda" else env.get("cpu")
    title = f"{key} from snippets/{snippet}, recorded on {where} on {str(record.manifest.get('date', ''))[:10]}"
    stale = ' <span class="stale" title="the snippet changed since this was recorded">(stale)</span>'
    return f'<span class="recorded" title="{html.escape(title)}">{html.escape(text)}</span>' + (
        stale if record.stale else ""
    )


def expand(markdown: str, page_path: str, snippets: Path = SNIPPETS, outputs: Path = OUTPUTS) -> str:
    """Expand every directive in a page's Markdown; raise PluginError naming the page on any mistake."""

    def fail(match: re.Match, error: Exception):
        return PluginError(f"{page_path}: {match.group(0).strip()}: {error}")

    def block(match: re.Match) -> str:
        name, args = match.group("name"), shlex.split(match.group("args"))
        if name not in BLOCKS:
            return match.group(0)  # inline directives are handled below
        try:
            rendered = BLOCKS[name](args, page_path, snippets, outputs)
        except DirectiveError as error:
            raise fail(match, error) from None
        indent = match.group("indent") or ""
        return "\n".join(indent + line if line else "" for line in rendered.splitlines())

    def inline(match: re.Match) -> str:
        name, args = match.group("name"), shlex.split(match.group("args"))
        try:
            if name == "value":
                return render_value(args, snippets, outputs)
            if name in BLOCKS:
                raise DirectiveError(f"md:{name} must stand at the start of a line of its own")
            raise DirectiveError(f"unknown directive 'md:{name}' (known: md:{', md:'.join([*BLOCKS, 'value'])})")
        except DirectiveError as error:
            raise fail(match, error) from None

    parts = []
    for is_code, text in render_assets.fenced_segments(markdown):
        parts.append(text if is_code else INLINE.sub(inline, DIRECTIVE.sub(block, text)))
    return "".join(parts)




def render_records(args: list[str], page_path: str, snippets: Path, outputs: Path) -> str:
    if args:
        raise DirectiveError("md:records takes no arguments")
    up = "../" * page_path.count("/")
    rows = ["| Snippet | " + " | ".join(DEVICE_LABEL[d] for d in DEVICE_ORDER) + " |",
            "|---|" + "---|" * len(DEVICE_ORDER)]
    for snippet in regenerate.find_snippets(snippets):
        cells = []
        for device in DEVICE_ORDER:
            record = load_record(snippet, device, snippets, outputs)
            if record is None:
                cells.append("*not yet recorded*")
                continue
            env = record.manifest.get("environment", {})
            where = env.get("gpu") if device == "cuda" else env.get("cpu")
            state = "**stale**" if record.stale else "fresh"
            link = up + "outputs/" + record.folder.relative_to(outputs).as_posix() + "/manifest.json"
            cells.append(
                f"{state} · [{str(record.manifest.get('date', ''))[:10]}]({link}) · {where} · "
                f"torch {env.get('torch')} · {record.manifest.get('duration_s')} s"
            )
        rows.append(f"| `{snippet}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


BLOCKS = {"output": render_output, "figure": render_figure, "records": render_records}


def notebook_link(page_path: str) -> str:
    """Lines under the page title: the page's notebook as a page, and as a file to download, where
    render_assets.py made one."""
    notebook = render_assets.notebook_path(render_assets.DOCS / page_path)
    if not notebook.exists():
        return ""
    source = notebook.relative_to(render_assets.DOCS).as_posix()
    page = "../" * page_path.count("/") + source
    # mkdocs-jupyter copies the .ipynb beside its page; a raw link, since mkdocs would rewrite a Markdown one.
    url_depth = page_path.count("/") + (0 if page_path.endswith("index.md") else 1)
    download = "../" * url_depth + f"{source[:-len('.ipynb')]}/{notebook.name}"
    return (
        f"[:material-notebook-outline: This chapter as a notebook]({page}){{ .md-button .notebook-link }} "
        f'<a class="md-button notebook-link" href="{download}" download>:material-download: Download .ipynb</a>\n\n'
    )


def on_page_markdown(markdown, page, config, files):
    markdown = expand(markdown, page.file.src_uri)
    link = notebook_link(page.file.src_uri)
    if link:
        # After the first heading, so the title stays first.
        head, sep, rest = markdown.partition("\n")
        markdown = head + sep + "\n" + link + rest if head.startswith("# ") else link + markdown
    return markdown
