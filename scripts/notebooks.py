"""Each chapter's companion notebook, built from its page, its snippets and their records; no GPU needed.

The mkdocs hook builds them in every build (the site's notebooks/<page path, / as __>.ipynb), cached by
content under .cache/notebooks/; they are never committed. To have them outside a build:

    python -m scripts.notebooks                 # write every notebook to .cache/notebooks/notebooks/
    python -m scripts.notebooks --out DIR       # ... or to DIR

A notebook is its chapter. Every page under docs/ that includes snippet sections gets one (scripts/chapters.py
says which pages, which sections each notebook runs and which plumbing it leaves out):

- a first cell with the chapter's title, a link back to the chapter, and where the outputs were recorded;
- where a snippet imports triton, a visible cell that chooses Triton's interpreter when torch sees no GPU,
  as the snippets do before they import it;
- its prose as Markdown cells, a new cell at each heading. Admonitions become a bold title over the quoted
  body, quiz questions a collapsed <details>, and of each set of content tabs the first tab is kept in place
  (the PyTorch one); the JAX tabs go, in order, to a section of their own at the end. The `md:` directives
  are rendered for the notebook by scripts/directives.py, the module that renders them for the page, so a
  notebook reads as its page;
- each included section as a code cell with what it printed in the snippet's record (CUDA where recorded,
  else CPU) as its output, and before it, collapsed (`jupyter.source_hidden`, tag `hide-input`), the lines
  of the snippet between the previous shown section and this one: the code the page does not show, in file
  order, without the recording plumbing (every statement that fills or reads the `results` dict, the section
  markers and the module docstring). So a notebook runs each snippet top to bottom, as its file does, and
  a page must show a snippet's sections in file order, and (in its first tabs) one snippet's sections
  together, since all run in one namespace (NotebookError otherwise).

The same pages, snippets and records give the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import os
import re
import sys
from pathlib import Path

import nbformat
from nbformat import v4

from scripts import chapters, directives, records, render
from scripts.chapters import (
    ChapterError,
    Include,
    Snippet,
    chapter_pages,
    fence_blocks,
    fence_mask,
    includes,
    is_example,
    notebook_name,
    out_of_order,
    page_includes,
    page_snippets,
    page_url,
    site_name,
    site_url,
)

ROOT = records.ROOT
CACHE = ROOT / ".cache" / "notebooks"  # src_dir of the built notebooks: CACHE/notebooks/<name>.ipynb
# The code that builds a notebook: a change to it rebuilds every notebook.
CODE = [Path(__file__), Path(chapters.__file__), Path(directives.__file__), Path(render.__file__),
        ROOT / "scripts" / "plots.py", ROOT / "scripts" / "diagrams.py"]

# What the recorder and the suite set before a snippet starts, as a cell a reader sees and runs first.
TRITON_SETUP = """\
# Without a GPU, this chapter's Triton kernels run in Triton's interpreter (on NumPy),
# which must be chosen before triton is first imported: as the site's records were made.
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")"""
HEADING = re.compile(r"^#{1,6}[ \t]+\S")
JAX_SECTION = ("## The same in JAX\n\nOn the site these cells sit in JAX tabs beside the PyTorch code above; "
               "here they run after it, in the order the chapter shows them.")
CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\[\]]*\])*\])\((?P<target>[^()\s]+)(?P<rest>(?:\s+\"[^\"]*\")?)\)")
ATTR_LIST = re.compile(r"[ \t]*\{:?[ \t]*[.#][^}\n]*\}")
# A drawn illustration's phone copy: the site's CSS shows one of the two by width; a notebook has no such CSS,
# so it keeps the wide drawing only.
PHONE_DRAWING = re.compile(r"""<svg\b[^>]*\bclass="[^"]*\bmlc-narrow\b[^"]*"[^>]*>.*?</svg>\n?""", re.DOTALL)


class NotebookError(ChapterError):
    """A page the builder cannot turn into a notebook; the message names the page."""


class NotebookPage(render.Page):
    """The directives' page while a notebook is built: the outputs that already sit under their code cells,
    and the images attached to the Markdown cell being built."""

    target = render.NOTEBOOK

    def __init__(self, src_uri: str, url: str, **where):
        super().__init__(src_uri, url, **where)
        self.shown: set[tuple[str, str | None]] = set()  # (snippet, section) of each code cell so far
        self.attachments: dict[str, dict] = {}

    def under_code(self, snippet: str, section: str | None) -> bool:
        return (snippet, section) in self.shown

    def attach(self, name: str, mime: str, data: bytes) -> str:
        self.attachments[name] = {mime: base64.b64encode(data).decode()}
        return f"attachment:{name}"


# ------------------------------------------------------------------------------------------- pages


def as_markdown(admonition: re.Match, body: list[str]) -> list[str]:
    """An admonition as a bold title over the quoted body, a collapsed one (a quiz question) as an HTML
    <details> with the title as its summary."""
    title = admonition.group("title")
    if title is None:
        title = admonition.group("kind").replace("-", " ").capitalize()
    # A snippet include must stay at the top level to become a cell, a block directive to be
    # rendered: such a body is not quoted.
    quoted = not includes(body) and not directives.block_names("\n".join(body))
    if admonition.group("mark") == "???" and quoted:  # collapsed on the site: collapsed here too
        summary = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(title or "Details"))
        return ["<details>", f"<summary><b>{summary}</b></summary>", "", *body, "", "</details>"]
    return ([f"**{title}**", ""] if title else []) + ([f"> {b}".rstrip() for b in body] if quoted else body)


# ------------------------------------------------------------------------------------------- links


def site_link(target: str, page: str, notebook: str, site: str | None = None) -> str:
    """A link written in docs/<page>, made absolute on the site at `site` (the published site's address unless
    told), so it works from the notebook's page in the site and from a downloaded copy (Colab, VS Code) alike."""
    if re.match(r"^[a-z][a-z0-9+.-]*:|^/", target):
        return target
    path, hash_, anchor = target.partition("#")
    # A heading of the chapter (`#quiz`): the notebook's headings get other ids, so link the chapter's.
    src = Path(page).parent.joinpath(path).as_posix() if path else page
    parts: list[str] = []
    for part in src.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    src = "/".join(parts)
    url = page_url(src) if src.endswith(".md") else src
    return (site or site_url()).rstrip("/") + "/" + url.lstrip("/") + hash_ + anchor


def caption_as_markdown(prose: str) -> str:
    """A page's HTML figure caption (<p class="mlc-caption"><strong>Title.</strong> text</p>) as Markdown."""
    def plain(match: re.Match) -> str:
        inner = " ".join(match.group(1).split())
        inner = re.sub(r"</?strong>", "**", inner)
        return re.sub(r"<code>(.*?)</code>", r"`\1`", inner)

    return re.sub(r'<p class="mlc-caption">(.*?)</p>', plain, prose, flags=re.DOTALL)


def outside_code(text: str, change) -> str:
    """Apply change() to the text outside inline code spans and fenced blocks."""
    out = []
    for is_code, part in chapters.fenced_segments(text):
        out.append(part if is_code else outside_spans(part, change))
    return "".join(out)


def outside_spans(prose: str, change) -> str:
    """Code spans stand aside as placeholders, so a link whose text is code (`[`f.py`](f.py)`) is one link."""
    spans = [m.group(0) for m in CODE_SPAN.finditer(prose)]
    numbered = iter(range(len(spans)))
    changed = change(CODE_SPAN.sub(lambda _: f"\x00{next(numbered)}\x00", prose))
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], changed)


# ------------------------------------------------------------------------------------------- cells


def cell_id(kind: str, text: str, taken: set[str]) -> str:
    base = f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    taken.add(name)
    return name


def best_record(snippet: str) -> records.Record | None:
    """The record whose outputs a notebook shows: CUDA where it exists, else CPU."""
    for device in records.DEVICES:
        record = records.record(snippet, device)
        if record.exists and record.state in ("fresh", "stale"):
            return record
    return None


class Builder:
    def __init__(self, page: Path, site: str | None = None, where: str = ""):
        self.site = site or site_url()  # the address the notebook's links start with
        self.where = where  # a sentence for the first cell on where that address is, or ""
        self.page = page
        self.src = page.relative_to(chapters.DOCS).as_posix()
        self.notebook = notebook_name(page)
        self.state = NotebookPage(self.src, page_url(self.notebook))
        self.cells: list = []
        self.snippets: dict[str, Snippet] = {}
        self.done: dict[str, int] = {}  # snippet -> the last of its lines already in a cell
        self.ids: set[str] = set()

    def fail(self, message: str) -> NotebookError:
        return NotebookError(f"{self.src}: {message}")

    def build(self) -> nbformat.NotebookNode:
        text, meta = chapters.front_matter(self.page.read_text())
        if problems := out_of_order(text):
            raise self.fail("shows sections out of file order: " + "; ".join(problems))
        try:
            text = directives.conditionals(text, self.state)  # the branches of md:recorded the site shows
        except directives.DirectiveError as error:
            raise NotebookError(str(error)) from None
        # The page's JAX tabs, which sit beside the PyTorch code on the site, run after it here.
        lines = chapters.notebook_markdown(text, as_markdown, JAX_SECTION)
        title = meta.get("title") or next((line[2:].strip() for line in lines if line.startswith("# ")),
                                          self.page.stem)
        used = page_includes("\n".join(lines))
        runs = [i.snippet for k, i in enumerate(used) if k == 0 or used[k - 1].snippet != i.snippet]
        if again := sorted({name for name in runs if runs.count(name) > 1}):
            raise self.fail(f"comes back to snippets/{again[0]} after another snippet's code: a notebook runs "
                            f"the snippets in one namespace, one after another, so keep each one's sections together")
        self.cells.append(self.markdown(self.first_cell(title, used)))
        if any(re.search(r"^\s*(import|from) triton\b", (records.SNIPPETS / name).read_text(), re.MULTILINE)
               for name in {i.snippet for i in used}):
            self.cells.append(v4.new_code_cell(TRITON_SETUP, id=cell_id("setup", "triton", self.ids),
                                               metadata={"mlc": {"environment": True}}))
        prose: list[str] = []
        blocks = {start: (end, info) for start, end, info, _ in fence_blocks(lines)}
        index, skip_title = 0, True
        while index < len(lines):
            if index in blocks:
                end, info = blocks[index]
                found = [] if is_example(info) else includes(lines[index + 1:end])
                if found:
                    self.flush(prose)
                    for include in found:
                        self.code(include)
                else:
                    prose += lines[index:end + 1]
                index = end + 1
                continue
            line = lines[index]
            if skip_title and line.startswith("# "):
                skip_title = False  # the first cell holds the title
            else:
                if HEADING.match(line):
                    self.flush(prose)
                prose.append(line)
            index += 1
        self.flush(prose)
        notebook = v4.new_notebook(cells=self.cells, metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "mlc": {"page": self.src, "snippets": sorted({i.snippet for i in used}), "site": self.site},
        })
        nbformat.validate(notebook)
        return notebook

    def first_cell(self, title: str, used: list[Include]) -> str:
        link = site_link(Path(self.src).name, self.src, self.notebook, self.site)
        groups: dict[str, list[str]] = {}
        missing = []
        for name in dict.fromkeys(i.snippet for i in used):
            record = best_record(name)
            if record is None:
                missing.append(name)
                continue
            env = record.environment
            where = f"{records.LABELS[record.device]} ({record.hardware}) with torch {env.get('torch')}"
            groups.setdefault(where, []).append(record.date)
        parts = [f"{where}, {min(d) if min(d) == max(d) else f'{min(d)} to {max(d)}'}" for where, d in groups.items()]
        note = ("The outputs shown were recorded on " + "; ".join(parts) + "." if parts
                else "No output of this chapter has been recorded yet.")
        if missing:
            note += " Not yet recorded: " + ", ".join(f"`snippets/{m}`" for m in missing) + "."
        return (
            f"# {title}\n\n"
            f"This notebook is the chapter [{title}]({link}) of *{site_name()}*: its prose, and each piece of "
            f"code with the output the site recorded. Run it top to bottom on a CPU or a CUDA GPU; the "
            f"collapsed cells hold the parts of each snippet the chapter does not show.\n\n{note}"
            + (f"\n\n{self.where}" if self.where else "")
        )

    def flush(self, prose: list[str]) -> None:
        text = "\n".join(prose).strip("\n")
        prose.clear()
        if not text.strip():
            return
        try:
            text = render.expand(text, self.state)
        except directives.DirectiveError as error:
            raise NotebookError(str(error)) from None

        def link(match: re.Match) -> str:
            if match.group(1).startswith("!") and (embedded := self.embed(match.group("target"))):
                return f"{match.group(1)}({embedded})"
            target = site_link(match.group("target"), self.src, self.notebook, self.site)
            return f"{match.group(1)}({target}{match.group('rest')})"

        text = outside_code(text, lambda part: LINK.sub(link, part))
        text = outside_code(text, lambda part: ATTR_LIST.sub("", part))  # `{ .md-button }`: the site's styling
        text = outside_code(text, lambda part: PHONE_DRAWING.sub("", part))
        text = outside_code(text, caption_as_markdown)  # Colab and VS Code drop a styled <p>
        text = outside_code(text, lambda part: re.sub(r"\n{3,}", "\n\n", part)).strip("\n")
        # mkdocs-jupyter's table of contents mislinks headings with code in them: keep the words, drop the ticks.
        lines = text.split("\n")
        text = "\n".join(line.replace("`", "") if not fenced and line.startswith("#") else line
                         for line, fenced in zip(lines, fence_mask(lines)))
        if text.strip():
            self.cells.append(self.markdown(text, self.state.attachments))
        self.state.attachments = {}

    def embed(self, target: str) -> str | None:
        """An image of the site's own (a drawn diagram, an illustration), attached to the cell being built, so
        the notebook shows it wherever it is opened; its link (attachment:NAME), or None for another target."""
        kinds = {".svg": "image/svg+xml", ".png": "image/png"}
        if re.match(r"^[a-z][a-z0-9+.-]*:|^/", target):
            return None
        docs = chapters.DOCS
        path = (docs / Path(self.src).parent / target.split("#")[0]).resolve()
        if path.suffix not in kinds or not path.is_file() or docs.resolve() not in path.parents:
            return None
        return self.state.attach(path.name, kinds[path.suffix], path.read_bytes())

    def markdown(self, text: str, attachments: dict | None = None):
        cell = v4.new_markdown_cell(text, id=cell_id("md", text, self.ids))
        if attachments:
            cell.attachments = attachments
        return cell

    def snippet(self, name: str) -> Snippet:
        if name not in self.snippets:
            if not (records.SNIPPETS / name).is_file():
                raise self.fail(f"snippets/{name} does not exist")
            try:
                self.snippets[name] = Snippet.load(name)
            except (SyntaxError, ValueError) as error:
                raise self.fail(f"snippets/{name}: {error}") from None
        return self.snippets[name]

    def code(self, include: Include) -> None:
        snippet = self.snippet(include.snippet)
        try:
            first, last = snippet.section(include.section) if include.section else (1, len(snippet.lines))
        except ChapterError as error:
            raise self.fail(str(error)) from None
        hidden = snippet.text(self.done.get(include.snippet, 0) + 1, first - 1)
        if hidden.strip():
            self.cells.append(v4.new_code_cell(hidden, id=cell_id("setup", include.snippet + hidden, self.ids),
                                               metadata={"jupyter": {"source_hidden": True},
                                                         "tags": ["hide-input"],
                                                         "mlc": {"snippet": include.snippet, "setup": True}}))
        self.done[include.snippet] = last
        source = snippet.text(first, last, dedent=True)
        record = best_record(include.snippet)
        outputs, metadata = [], {"mlc": {"snippet": include.snippet, "section": include.section}}
        if record is not None:
            printed = record.sections.get(include.section, "") if include.section else record.stdout
            if printed:
                outputs.append(v4.new_output("stream", name="stdout", text=printed))
            metadata["mlc"]["recorded"] = record.device
        self.cells.append(v4.new_code_cell(source, id=cell_id("code", f"{include}{source}", self.ids),
                                           outputs=outputs, metadata=metadata))
        self.state.shown.add((include.snippet, include.section))


# ------------------------------------------------------------------------------------------- files


def build(page: Path, site: str | None = None, where: str = "") -> str:
    """The notebook of one page, as the bytes it is written with: its links start with `site` (the published
    site's address unless told), and `where`, if any, says in its first cell where that is."""
    return nbformat.writes(Builder(page, site, where).build()) + "\n"


def where_the_site_is(site: str, published: bool, serving: bool) -> str:
    """What a notebook's first cell says about the address its links start with: nothing on the published site;
    the address `mkdocs serve` served; or, for a build without the published address (SITE_URL), that its
    links are paths under the site it came from."""
    if published:
        return ""
    if serving:
        return f"Its links lead to the site as `mkdocs serve` showed it, at {site}, when this copy was made."
    return (f"This copy was built without the site's published address (`SITE_URL`), so its links start with "
            f"{site}, where `mkdocs serve` shows the site from a checkout of its repository. Opened from a copy "
            f"of the site served elsewhere, each link is the same path under that site's address.")


# Directives that read records across the site, not only the snippets they name.
SITE_WIDE = ("records", "changes", "findings", "coverage", "atlas")


def made_from(page: Path, text: str) -> tuple[list[str], list[Path]]:
    """The snippets whose files and records a page's notebook is made from (those it includes and those its
    directives name; every snippet where a directive reads across the site), and the images it embeds."""
    names = page_snippets(text)
    for is_code, part in chapters.fenced_segments(text):
        for match in [] if is_code else directives.INLINE.finditer(part):
            if match.group("name") in SITE_WIDE:
                names = set(records.find_snippets())
                break
            words = match.group("args").split()
            if words and words[0].split(":")[0].endswith(".py"):
                names.add(words[0].split(":")[0])
    images = [page.parent / m.group("target").split("#")[0] for m in LINK.finditer(text) if m.group(1)[0] == "!"]
    return sorted(names), [i for i in images if i.is_file()]


def inputs_key(page: Path, site: str = "", where: str = "") -> str:
    """A digest of everything a page's notebook is made from: the page, the snippets it includes or names,
    their records' manifests in every release (a new record writes a new one), the images it embeds, the
    code that builds it, and the site's address its links use."""
    digest = hashlib.sha256()
    digest.update(f"{site}\n{where}".encode())
    text = page.read_text()
    names, images = made_from(page, text)
    parts = [page.relative_to(chapters.DOCS).as_posix().encode(), text.encode(), *(p.read_bytes() for p in CODE),
             *(p.read_bytes() for p in images)]
    roots = records.release_roots().values()
    for name in names:
        path = records.SNIPPETS / name
        parts.append(path.read_bytes() if path.is_file() else name.encode())
        for root in roots:
            for device in records.DEVICES:
                manifest = records.record_dir(name, device, root) / records.MANIFEST
                parts.append(manifest.read_bytes() if manifest.is_file() else b"-")
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def write_all(out: Path = CACHE, site: str | None = None, where: str = "", only: list[str] | None = None) -> list[str]:
    """Build every chapter's notebook into out/notebooks/, rebuilding only those whose inputs changed, and
    remove the others; return their names. Links start with `site` (the published address unless told) and
    `where` says in the first cell where that is. A page that cannot become a notebook raises ChapterError.
    With `only` (notebook names), build just those and leave the folder's others as they are."""
    site = site or site_url()
    folder = out / chapters.FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for page in chapter_pages():
        name = notebook_name(page)
        if only is not None and name not in only:
            continue
        path, key_file = out / name, (out / name).with_suffix(".key")
        key = inputs_key(page, site, where)
        if not (path.is_file() and key_file.is_file() and key_file.read_text() == key):
            render.write_atomically(path, build(page, site, where))
            render.write_atomically(key_file, key)
        names.append(name)
    if only is not None:
        return names
    for stale in folder.iterdir():
        if stale.suffix in (".ipynb", ".key") and f"{chapters.FOLDER}/{stale.with_suffix('.ipynb').name}" not in names:
            stale.unlink()
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=CACHE, help=f"write into OUT/{chapters.FOLDER}/ (default: {CACHE})")
    parser.add_argument("--name", action="append", metavar="NAME",
                        help=f"build only this notebook ({chapters.FOLDER}/<name>.ipynb; may be repeated)")
    args = parser.parse_args(argv)
    try:
        # As the site's build without SITE_URL: the first cell says which address the links start with.
        names = write_all(args.out.resolve(), where=where_the_site_is(site_url(), bool(os.environ.get("SITE_URL")),
                                                                       serving=False), only=args.name)
    except ChapterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in names:
        print(args.out / name)
    print(f"notebooks: {len(names)} built in {args.out / chapters.FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
