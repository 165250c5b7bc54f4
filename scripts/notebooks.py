"""Each chapter's companion notebook, built from its page, its snippets and their records; no GPU needed.

The mkdocs hook builds them in every build (the site's notebooks/<page path, / as __>.ipynb), cached by
content under .cache/notebooks/; they are never committed. To have them outside a build:

    python -m scripts.notebooks                 # write every notebook to .cache/notebooks/notebooks/
    python -m scripts.notebooks --out DIR       # ... or to DIR

A notebook is its chapter. Every page under docs/ that includes snippet sections
(`--8<-- "snippets/x/y.py:SECTION"` in a fenced code block that is not a ```markdown example) gets one:

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
import ast
import base64
import builtins
import hashlib
import html
import re
import sys
import textwrap
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
from nbformat import v4

from scripts import directives, records
from scripts.directives import fence_blocks, fence_mask
from scripts.runner import section_lines

ROOT = records.ROOT
DOCS = ROOT / "docs"
CACHE = ROOT / ".cache" / "notebooks"  # src_dir of the built notebooks: CACHE/notebooks/<name>.ipynb
FOLDER = "notebooks"  # where they sit in the site
SKIP_DIRS = ("outputs", "notebooks", "figures", "assets")
# The code that builds a notebook: a change to it rebuilds every notebook.
CODE = [Path(__file__), Path(directives.__file__), ROOT / "scripts" / "plots.py", ROOT / "scripts" / "diagrams.py"]

INCLUDE = re.compile(r"""^[ \t]*--8<--[ \t]+(["'])snippets/(?P<snippet>[^"':]+\.py)"""
                     r"""(?::(?P<section>[^"']+))?\1[ \t]*$""")
# What the recorder and the suite set before a snippet starts, as a cell a reader sees and runs first.
TRITON_SETUP = """\
# Without a GPU, this chapter's Triton kernels run in Triton's interpreter (on NumPy),
# which must be chosen before triton is first imported: as the site's records were made.
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")"""
ADMONITION = re.compile(r"""^(?P<indent>[ \t]*)(?P<mark>!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+)"""
                        r"""(?P<classes>(?:[ \t]+[\w-]+)*)(?:[ \t]+"(?P<title>[^"]*)")?[ \t]*$""")
TAB = re.compile(r"""^(?P<indent>[ \t]*)===(?P<new>!)?[+]?[ \t]+"(?P<title>[^"]*)"[ \t]*$""")
HEADING = re.compile(r"^#{1,6}[ \t]+\S")
JAX_SECTION = ("## The same in JAX\n\nOn the site these cells sit in JAX tabs beside the PyTorch code above; "
               "here they run after it, in the order the chapter shows them.")
CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\[\]]*\])*\])\((?P<target>[^()\s]+)(?P<rest>(?:\s+\"[^\"]*\")?)\)")
ATTR_LIST = re.compile(r"[ \t]*\{:?[ \t]*[.#][^}\n]*\}")


class NotebookError(Exception):
    """A page the builder cannot turn into a notebook; the message names the page."""


@cache
def site_name() -> str:
    return site_config()[2]


# ------------------------------------------------------------------------------------------- snippets


def bound_names(tree: ast.AST) -> set[str]:
    """Every name a piece of code binds anywhere in it: assignments, loop and `with` targets, functions,
    classes, their arguments, imports and caught exceptions (scopes aside: a lenient test)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def is_plumbing(node: ast.stmt) -> bool:
    """A statement that only feeds the recorder: it assigns to, updates or reads the `results` dict."""
    return any(isinstance(n, ast.Name) and n.id == "results" for n in ast.walk(node))


BODIES = ("body", "orelse", "finalbody")


@dataclass
class Snippet:
    """One snippet file: its lines, its sections, and the lines a notebook leaves out."""

    name: str
    lines: list[str]
    sections: dict[str, tuple[int, int]]  # name -> (first, last) line, 1-based, markers excluded
    drop: set[int] = field(default_factory=set)  # plumbing, marker and docstring lines
    passes: dict[int, str] = field(default_factory=dict)  # a line that becomes `pass` (an emptied block)
    done: int = 0  # the last line already in a cell

    @classmethod
    def load(cls, name: str) -> Snippet:
        path = records.SNIPPETS / name
        source = path.read_text()
        snippet = cls(name, source.splitlines(), section_lines(source))
        for number, line in enumerate(snippet.lines, start=1):
            if "--8<--" in line and re.search(r"\[(start|end):", line):
                snippet.drop.add(number)
        body = ast.parse(source, filename=str(path)).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            snippet.drop_lines(body[0])  # the module docstring: the notebook's prose says it
        snippet.prune(body, top=True)
        snippet.check_dropped(body)
        return snippet

    def check_dropped(self, body: list[ast.stmt]) -> None:
        """The plumbing rule's other half: a statement left out of the notebook may bind no name that the code
        kept in it reads, or a reader's run stops with a NameError on a branch the recorder never took."""
        kept = ast.parse(self.text(1, len(self.lines)))
        read = {n.id for n in ast.walk(kept) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        read -= bound_names(kept) | set(dir(builtins))  # what kept code defines for itself is no loss
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if not isinstance(node, ast.stmt) or not self.dropped(node):
                continue
            if lost := sorted((bound_names(node) & read) - {"results"}):
                raise NotebookError(
                    f"snippets/{self.name}:{node.lineno}: the notebook leaves this statement out (it touches "
                    f"`results`), but only it defines {', '.join(f'`{name}`' for name in lost)}, which code the "
                    f"notebook keeps reads; keep `results` out of it")

    def dropped(self, node: ast.stmt) -> bool:
        """Whether every line of a statement is left out of the notebook."""
        first, last = self.span(node)
        return set(range(first, last + 1)) <= self.drop

    @staticmethod
    def span(node: ast.stmt) -> tuple[int, int]:
        return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]), node.end_lineno

    def drop_lines(self, node: ast.stmt, comments: bool = False) -> None:
        first, last = self.span(node)
        self.drop.update(range(first, last + 1))
        if comments:  # the comment block right above a dropped statement explains the plumbing
            number = first - 1
            while number >= 1 and self.lines[number - 1].strip().startswith("#") \
                    and "--8<--" not in self.lines[number - 1]:
                self.drop.add(number)
                number -= 1

    def prune(self, body: list[ast.stmt], top: bool = False) -> bool:
        """Drop the plumbing in a block; True when nothing else is left in it."""
        left = 0
        for node in body:
            if self.inside_section(node):
                left += 1  # shown code is shown as written; the protocol keeps plumbing out of it
                continue
            inner = [getattr(node, name) for name in BODIES if getattr(node, name, None)]
            inner += [[h] for h in getattr(node, "handlers", [])]
            header = [v for name, v in ast.iter_fields(node) if name not in BODIES and name != "handlers"]
            header_reads = any(is_plumbing(p) for v in header for p in (v if isinstance(v, list) else [v])
                               if isinstance(p, ast.AST))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not inner:
                if is_plumbing(node):
                    self.drop_lines(node, comments=top)
                    continue
            elif header_reads or all([self.prune(block) for block in inner]):
                self.drop_lines(node, comments=top)
                continue
            else:
                for block in inner:
                    if block and all(self.dropped(n) for n in block):
                        first = self.span(block[0])[0]
                        indent = re.match(r"[ \t]*", self.lines[first - 1]).group(0)
                        self.passes[first] = indent + "pass"
            left += 1
        return left == 0

    def inside_section(self, node: ast.stmt) -> bool:
        first, last = self.span(node)
        return any(a <= first and last <= b for a, b in self.sections.values())

    def section(self, name: str) -> tuple[int, int]:
        if name not in self.sections:
            known = ", ".join(sorted(self.sections)) or "none"
            raise NotebookError(f"snippets/{self.name} has no section '{name}' (its sections: {known})")
        return self.sections[name]

    def text(self, first: int, last: int, dedent: bool = False) -> str:
        """The source of lines first..last without markers and plumbing, blank runs squeezed."""
        out = [self.passes.get(n, self.lines[n - 1].rstrip()) for n in range(first, last + 1)
               if n not in self.drop or n in self.passes]
        text = "\n".join(out)
        if dedent:
            text = textwrap.dedent(text)
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


# ------------------------------------------------------------------------------------------- pages


@dataclass
class Include:
    snippet: str
    section: str | None


def is_example(info: str) -> bool:
    """A ```markdown fence shows page source as text: the snippet lines in it are an example."""
    return re.match(r"\{?\.?(markdown|md)\b", info) is not None


def includes(lines: list[str]) -> list[Include]:
    return [Include(m.group("snippet"), m.group("section")) for m in map(INCLUDE.match, lines) if m]


def page_includes(text: str) -> list[Include]:
    """Every snippet section a page shows, in page order (examples in ```markdown fences left out)."""
    lines = text.splitlines()
    found = []
    for start, end, info, _ in fence_blocks(lines):
        if not is_example(info):
            found += includes(lines[start + 1:end])
    return found


def page_snippets(text: str) -> set[str]:
    """The snippets a page shows, each once."""
    return {include.snippet for include in page_includes(text)}


def out_of_order(text: str) -> list[str]:
    """For each snippet a page shows out of file order (or twice), one line saying how."""
    problems = []
    shown: dict[str, list[str]] = {}
    for include in page_includes(text):
        if include.section:
            shown.setdefault(include.snippet, []).append(include.section)
    for name, sections in shown.items():
        path = records.SNIPPETS / name
        order = list(section_lines(path.read_text())) if path.is_file() else []
        if [s for s in order if s in sections] != sections:
            problems.append(f"snippets/{name}: the page shows {', '.join(sections)}; the file holds "
                            f"{', '.join(s for s in order if s in sections)}")
    return problems


def chapter_pages() -> list[Path]:
    return [page for page in sorted(DOCS.rglob("*.md"))
            if page.relative_to(DOCS).parts[0] not in SKIP_DIRS and page_includes(page.read_text())]


def notebook_name(page: Path) -> str:
    """Its path in the site, e.g. notebooks/dissecting__graphs.ipynb for docs/dissecting/graphs.md."""
    return f"{FOLDER}/" + page.relative_to(DOCS).with_suffix("").as_posix().replace("/", "__") + ".ipynb"


def block_end(lines: list[str], start: int, indent: str) -> int:
    """The index after the indented body that starts below lines[start]."""
    inner = len(indent.expandtabs(4)) + 4
    end, last = start + 1, start
    while end < len(lines):
        line = lines[end]
        if line.strip() and len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) < inner:
            break
        if line.strip():
            last = end
        end += 1
    return last + 1


def plain_blocks(lines: list[str], aside: list[list[str]] | None = None) -> list[str]:
    """Admonitions become a bold title over the quoted body, collapsed ones (quiz questions) an HTML
    <details> with the title as its summary; of a set of content tabs, the first tab's body stays, and a later
    "JAX" tab's body goes to `aside` (the notebook's JAX section at its end). Fenced code stays as it is
    (dedented with its block)."""
    mask = fence_mask(lines)
    out: list[str] = []
    index = 0
    in_set = None  # the indent of the tab set being read
    while index < len(lines):
        line = lines[index]
        admonition = None if mask[index] else ADMONITION.match(line)
        tab = None if mask[index] else TAB.match(line)
        if not (admonition or tab):
            if line.strip() and not mask[index] and in_set is not None \
                    and len(line) - len(line.lstrip()) <= len(in_set):
                in_set = None  # prose at the set's indent ends it
            out.append(line)
            index += 1
            continue
        match = admonition or tab
        indent = match.group("indent")
        end = block_end(lines, index, indent)
        body = textwrap.dedent("\n".join(lines[index + 1:end]).expandtabs(4)).splitlines()
        body = plain_blocks(body, aside)
        while body and not body[0].strip():
            body.pop(0)
        if tab:
            first = in_set != indent or tab.group("new")
            in_set = indent
            block = body if first else []
            if not first and tab.group("title") == "JAX" and aside is not None:
                aside.append(body)
        else:
            in_set = None
            title = admonition.group("title")
            if title is None:
                title = admonition.group("kind").replace("-", " ").capitalize()
            # A snippet include must stay at the top level to become a cell, a block directive to be
            # rendered: such a body is not quoted.
            quoted = not includes(body) and not directives.block_names("\n".join(body))
            if admonition.group("mark") == "???" and quoted:  # collapsed on the site: collapsed here too
                summary = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(title or "Details"))
                block = ["<details>", f"<summary><b>{summary}</b></summary>", "", *body, "", "</details>"]
            else:
                block = ([f"**{title}**", ""] if title else []) + (
                    [f"> {b}".rstrip() for b in body] if quoted else body)
        out += [indent + b if b else "" for b in block]
        if block:
            out.append("")
        index = end
    return out


# ------------------------------------------------------------------------------------------- links


@cache
def site_config() -> tuple[bool, str, str, str]:
    """(use_directory_urls, site_dir, site_name, site_url) as mkdocs.yml sets them (site_url from SITE_URL
    where the environment sets it, as the publishing workflow does)."""
    from mkdocs.utils import yaml_load

    with open(ROOT / "mkdocs.yml") as handle:
        config = yaml_load(handle) or {}
    return (config.get("use_directory_urls", True), str(ROOT / config.get("site_dir", "site")), config["site_name"],
            config.get("site_url") or "http://127.0.0.1:8000/")


def page_url(src: str) -> str:
    """The URL (relative to the site root) mkdocs gives docs/<src>; a notebook's as mkdocs-jupyter does."""
    from mkdocs.structure.files import File

    use_directory_urls, site_dir, *_ = site_config()
    file = File(src, str(DOCS), site_dir, use_directory_urls)
    if src.endswith(".ipynb"):
        from mkdocs_jupyter.plugin import NotebookFile

        return NotebookFile(file, use_directory_urls, site_dir).url
    return file.url


def site_link(target: str, page: str, notebook: str) -> str:
    """A link written in docs/<page>, made absolute on the published site, so it works from the notebook's page
    in the site and from a downloaded copy (Colab, VS Code) alike."""
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
    return site_config()[3].rstrip("/") + "/" + url.lstrip("/") + hash_ + anchor


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
    for is_code, part in directives.fenced_segments(text):
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
    def __init__(self, page: Path):
        self.page = page
        self.src = page.relative_to(DOCS).as_posix()
        self.notebook = notebook_name(page)
        self.state = directives.Page(self.src, page_url(self.notebook), target=directives.NOTEBOOK)
        self.cells: list = []
        self.snippets: dict[str, Snippet] = {}
        self.ids: set[str] = set()

    def fail(self, message: str) -> NotebookError:
        return NotebookError(f"{self.src}: {message}")

    def build(self) -> nbformat.NotebookNode:
        from mkdocs.utils.meta import get_data

        text, meta = get_data(self.page.read_text())  # front matter is the page's settings, not its prose
        if problems := out_of_order(text):
            raise self.fail("shows sections out of file order: " + "; ".join(problems))
        try:
            text = directives.conditionals(text, self.state)  # the branches of md:recorded the site shows
        except directives.DirectiveError as error:
            raise NotebookError(str(error)) from None
        aside: list[list[str]] = []
        lines = plain_blocks(text.splitlines(), aside)
        if aside:  # the page's JAX tabs, which sit beside the PyTorch code on the site, run after it here
            lines += ["", JAX_SECTION, ""] + [line for body in aside for line in [*body, ""]]
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
            "mlc": {"page": self.src, "snippets": sorted({i.snippet for i in used})},
        })
        nbformat.validate(notebook)
        return notebook

    def first_cell(self, title: str, used: list[Include]) -> str:
        link = site_link(Path(self.src).name, self.src, self.notebook)
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
        )

    def flush(self, prose: list[str]) -> None:
        text = "\n".join(prose).strip("\n")
        prose.clear()
        if not text.strip():
            return
        try:
            text = directives.expand(text, self.state)
        except directives.DirectiveError as error:
            raise NotebookError(str(error)) from None

        def link(match: re.Match) -> str:
            if match.group(1).startswith("!") and (embedded := self.embed(match.group("target"))):
                return f"{match.group(1)}(attachment:{embedded})"
            return f"{match.group(1)}({site_link(match.group('target'), self.src, self.notebook)}{match.group('rest')})"

        text = outside_code(text, lambda part: LINK.sub(link, part))
        text = outside_code(text, lambda part: ATTR_LIST.sub("", part))  # `{ .md-button }`: the site's styling
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
        the notebook shows it wherever it is opened; its attachment name, or None for another target."""
        kinds = {".svg": "image/svg+xml", ".png": "image/png"}
        if re.match(r"^[a-z][a-z0-9+.-]*:|^/", target):
            return None
        path = (DOCS / Path(self.src).parent / target.split("#")[0]).resolve()
        if path.suffix not in kinds or not path.is_file() or DOCS.resolve() not in path.parents:
            return None
        self.state.attachments[path.name] = {kinds[path.suffix]: base64.b64encode(path.read_bytes()).decode()}
        return path.name

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
        except NotebookError as error:
            raise self.fail(str(error)) from None
        hidden = snippet.text(snippet.done + 1, first - 1)
        if hidden.strip():
            self.cells.append(v4.new_code_cell(hidden, id=cell_id("setup", include.snippet + hidden, self.ids),
                                               metadata={"jupyter": {"source_hidden": True},
                                                         "tags": ["hide-input"],
                                                         "mlc": {"snippet": include.snippet, "setup": True}}))
        snippet.done = last
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


def build(page: Path) -> str:
    """The notebook of one page, as the bytes it is written with."""
    return nbformat.writes(Builder(page).build()) + "\n"


def inputs_key(page: Path) -> str:
    """A digest of everything a page's notebook is made from: the page, its snippets, their records'
    manifests (a new record writes a new one) and the code that builds it."""
    digest = hashlib.sha256()
    text = page.read_text()
    parts = [page.relative_to(DOCS).as_posix().encode(), text.encode(), *(p.read_bytes() for p in CODE)]
    for name in sorted(page_snippets(text)):
        path = records.SNIPPETS / name
        parts.append(path.read_bytes() if path.is_file() else name.encode())
        for device in records.DEVICES:
            manifest = records.record(name, device).folder / records.MANIFEST
            parts.append(manifest.read_bytes() if manifest.is_file() else b"-")
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def write_all(out: Path = CACHE) -> list[str]:
    """Build every chapter's notebook into out/notebooks/, rebuilding only those whose inputs changed, and
    remove the others; return their names. A page that cannot become a notebook raises NotebookError."""
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for page in chapter_pages():
        name = notebook_name(page)
        path, key_file = out / name, (out / name).with_suffix(".key")
        key = inputs_key(page)
        if not (path.is_file() and key_file.is_file() and key_file.read_text() == key):
            directives.write_atomically(path, build(page))
            directives.write_atomically(key_file, key)
        names.append(name)
    for stale in folder.iterdir():
        if stale.suffix in (".ipynb", ".key") and f"{FOLDER}/{stale.with_suffix('.ipynb').name}" not in names:
            stale.unlink()
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=CACHE, help=f"write into OUT/{FOLDER}/ (default: {CACHE})")
    args = parser.parse_args(argv)
    try:
        names = write_all(args.out.resolve())
    except NotebookError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in names:
        print(args.out / name)
    print(f"notebooks: {len(names)} built in {args.out / FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
