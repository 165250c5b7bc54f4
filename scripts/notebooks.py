"""Build each chapter's companion notebook, docs/notebooks/<page path, / as __>.ipynb; no GPU needed.

    python -m scripts.notebooks           # write every notebook; remove those whose page shows no snippet
    python -m scripts.notebooks --check   # list notebooks that differ from a fresh build; exit 1 if any
    python -m scripts.notebooks --run docs/notebooks/eager-mode.ipynb
                                          # run its code cells in order, as a kernel would (in the
                                          # current folder, on CUDA if torch sees a GPU, else the CPU)

A notebook is its chapter. Every page under docs/ that includes snippet sections
(`--8<-- "snippets/x/y.py:SECTION"` in a fenced code block that is not a ```markdown example) gets one:

- a first cell with the chapter's title, a link back to the chapter on the site, and where the outputs
  were recorded;
- its prose as Markdown cells, a new cell at each heading. Admonitions, quiz questions and content tabs
  become plain Markdown (a bold title, the body quoted). The record directives read as the site reads:
  `md:value`, `md:compare` and `md:hardware` become the text the mkdocs hook renders, `md:recorded` /
  `md:else` / `md:end` keep the branch the site shows, `md:figure` becomes the numbered figure with its
  caption (a chart from scripts.plots as an SVG attached to the cell, an FX graph from scripts.diagrams
  as a Mermaid diagram; a line naming it where neither can draw it), and `md:output` is left out where
  the output already sits under its code cell. Relative links point at the pages of the built site;
- each included section as a code cell holding the section's code, with what it printed in the snippet's
  record (CUDA where recorded, else CPU) as its output;
- before a section, a collapsed set-up cell (`jupyter.source_hidden`, tag `hide-input`) with the code
  of its snippet the page does not show and the section needs: all of it above the snippet's first
  shown section; between sections, only what later sections read (what only prints, or binds names
  nothing shown reads, such as a timing kept for the record, is left out); of a section the page shows
  further down, only the statements this one needs. Where another snippet's cells rebound a name this
  snippet set (`x`, `model`), the statements that bound it run again. The recording plumbing (every
  statement that fills or reads the `results` dict, and the module docstring) is left out. So the
  notebook runs top to bottom on CPU or GPU, in one namespace, like a kernel: `--run` does just that.

The directive texts come from scripts/mkdocs_hooks.py itself (its `conditionals`, its `INLINES`
renderers, its `BLOCKS` for anything else), so a notebook reads exactly as its page.

Nothing is executed and nothing depends on the date: the same pages, snippets and records give the same
bytes, so a test compares the committed notebooks with a fresh build.
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import html
import linecache
import re
import shlex
import sys
import textwrap
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
from nbformat import v4

from scripts import records
from scripts.runner import section_lines

ROOT = records.ROOT
DOCS = ROOT / "docs"
NOTEBOOKS = DOCS / "notebooks"
SNIPPETS = records.SNIPPETS
SKIP_DIRS = ("outputs", "notebooks", "figures", "assets")
SITE_NAME = re.search(r"^site_name:\s*[\"']?(.*?)[\"']?\s*$", (ROOT / "mkdocs.yml").read_text(),
                      re.MULTILINE).group(1)  # the site's name, as mkdocs.yml gives it

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
INCLUDE = re.compile(r"""^[ \t]*--8<--[ \t]+(["'])snippets/(?P<snippet>[^"':]+\.py)"""
                     r"""(?::(?P<section>[^"']+))?\1[ \t]*$""")
DIRECTIVE = re.compile(r"<!--\s*md:(?P<name>[\w-]+)(?P<args>.*?)-->")  # on one line, as the hook reads them
BLOCK_LINE = re.compile(r"^[ \t]*<!--\s*md:(?P<name>[\w-]+)(?P<args>.*?)-->[ \t]*$")
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
TAB = re.compile(r"""^(?P<indent>[ \t]*)===[!+]?[ \t]+"(?P<title>[^"]*)"[ \t]*$""")
HEADING = re.compile(r"^#{1,6}[ \t]+\S")
CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\[\]]*\])*\])\((?P<target>[^()\s]+)(?P<rest>(?:\s+\"[^\"]*\")?)\)")
ATTR_LIST = re.compile(r"[ \t]*\{:?[ \t]*[.#][^}\n]*\}")
TAG = re.compile(r"<[^>]+>")


class NotebookError(Exception):
    """A page the builder cannot turn into a notebook; the message names the page."""


# ------------------------------------------------------------------------------------------- the hook


def hook():
    """scripts/mkdocs_hooks.py: the site's own expansion of each directive, reused so the texts match."""
    from scripts import mkdocs_hooks

    return mkdocs_hooks


def hook_page(src: str, notebook: str):
    """The hook's per-page state for docs/<src>, placed at the notebook's URL: a link the hook writes
    then works from the notebook's page."""
    return hook().Page(src, page_url(notebook))


def inline_text(match: re.Match, page) -> str:
    """What the site shows for one inline directive (md:value, md:compare, md:hardware), as plain text: the
    hook renders it and the HTML it wraps the text in is taken off."""
    name = match.group("name")
    render = hook().INLINES.get(name)
    if render is None:
        raise hook().DirectiveError(f"md:{name} is not an inline directive (known: "
                                    + ", ".join(f"md:{n}" for n in hook().INLINES) + ")")
    rendered = render(shlex.split(match.group("args")), page)
    return html.unescape(TAG.sub("", rendered))


# ------------------------------------------------------------------------------------------- records


def usable(record: records.Record) -> bool:
    return record.exists and record.state in ("fresh", "stale")


@cache
def best_record(snippet: str) -> records.Record | None:
    """The record whose outputs a notebook shows: CUDA where it exists, else CPU."""
    for device in records.DEVICES:
        record = records.record(snippet, device)
        if usable(record):
            return record
    return None


# ------------------------------------------------------------------------------------------- snippets


def is_plumbing(node: ast.stmt) -> bool:
    """A statement that only feeds the recorder: it assigns to, updates or reads the `results` dict."""
    return any(isinstance(n, ast.Name) and n.id == "results" for n in ast.walk(node))


BODIES = ("body", "orelse", "finalbody")
# Calls that only make text to print: a statement made of these has no effect a later cell needs.
PRINTING = {"print", "format", "str", "repr", "len", "round", "sorted", "list", "dict", "set", "tuple",
            "enumerate", "zip", "range", "min", "max", "sum", "abs", "float", "int", "isinstance", "getattr"}


def has_effect(node: ast.AST) -> bool:
    """Whether a statement does anything but print: a call other than print() and its helpers, in the
    statement or in any statement inside it."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "print":
        return False
    if isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
        return False
    if isinstance(node, ast.stmt) and not isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        inner = [n for name in (*BODIES, "handlers") for n in (getattr(node, name, None) or [])]
        inner = [n for block in inner for n in ([block] if isinstance(block, ast.stmt) else block.body)]
        return any(has_effect(n) for n in inner) or any(has_effect(h) for h in Snippet.headers(node))
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return any(not (isinstance(c.func, ast.Name) and c.func.id in PRINTING) for c in calls)


def loads(node: ast.AST) -> set[str]:
    """The names a statement reads, not counting a function's (or lambda's) own arguments and locals."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        own = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        body = node.body if isinstance(node.body, list) else [node.body]
        outer = [*args.defaults, *[d for d in args.kw_defaults if d], *getattr(node, "decorator_list", [])]
        inner = set().union(*(loads(n) for n in body)) if body else set()
        local = {n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        return (inner - own - local) | set().union(*(loads(n) for n in outer)) if outer else inner - own - local
    found = {node.id} if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) else set()
    for child in ast.iter_child_nodes(node):
        found |= loads(child)
    return found


def root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def touched(node: ast.AST) -> set[str]:
    """The names whose objects a statement may change in place: `texts[key] = ...`, `model.flag = ...`,
    `found.append(...)`, `counts.update(...)`."""
    found = set()
    for child in ast.walk(node):
        if isinstance(child, (ast.Subscript, ast.Attribute)) and isinstance(child.ctx, (ast.Store, ast.Del)):
            found.add(root(child))
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            found.add(root(child.func.value))
    return found - {None}


def free_names(nodes: list[ast.stmt]) -> set[str]:
    """The global names a run of statements reads before binding them itself."""
    bound: set[str] = set()
    free: set[str] = set()
    for node in nodes:
        free |= loads(node) - bound
        bound |= bindings(node)
    return free


def bindings(node: ast.stmt) -> set[str]:
    """The global names a top-level statement binds; a loop's own variable aside, so that a warm-up loop
    `for _ in range(3): f(x)` counts as an effect, not as binding `_`."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    found: set[str] = set()
    skip: set[int] = set()
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(child.name)
            skip |= {id(n) for n in ast.walk(child) if n is not child}
        elif isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
            skip |= {id(n) for n in ast.walk(child.target)}
        elif isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            skip |= {id(n) for n in ast.walk(child) if n is not child}
    for child in ast.walk(node):
        if id(child) in skip:
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            found.add(child.id)  # `with profile() as prof:` binds prof here too
    return found


@dataclass
class Snippet:
    """One snippet file: its lines, its sections, and the lines a notebook leaves out."""

    name: str
    lines: list[str]
    sections: dict[str, tuple[int, int]]  # name -> (first, last) line, 1-based, markers excluded
    drop: set[int] = field(default_factory=set)  # plumbing, marker and docstring lines
    passes: dict[int, str] = field(default_factory=dict)  # a line that becomes `pass` (emptied block)
    tree: ast.Module | None = None
    page_spans: list[tuple[int, int]] = field(default_factory=list)  # the sections the page shows

    @classmethod
    def load(cls, name: str) -> Snippet:
        path = SNIPPETS / name
        source = path.read_text()
        snippet = cls(name, source.splitlines(), section_lines(source))
        tree = snippet.tree = ast.parse(source, filename=str(path))
        for number, line in enumerate(snippet.lines, start=1):
            if "--8<--" in line and re.search(r"\[(start|end):", line):
                snippet.drop.add(number)
        body = tree.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            snippet.drop_lines(body[0])  # the module docstring: the notebook's prose says it
        snippet.prune(body, top=True)
        return snippet

    def span(self, node: ast.stmt) -> tuple[int, int]:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return first, node.end_lineno

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
            header_reads = any(is_plumbing(part) for part in self.headers(node))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not inner:
                if is_plumbing(node):
                    self.drop_lines(node, comments=top)
                    continue
            elif header_reads or all([self.prune(block) for block in inner]):
                self.drop_lines(node, comments=top)
                continue
            else:
                for block in inner:
                    kept = [n for n in block if not (set(range(*self.span_incl(n))) <= self.drop)]
                    if not kept and block:
                        first = self.span(block[0])[0]
                        indent = re.match(r"[ \t]*", self.lines[first - 1]).group(0)
                        self.passes[first] = indent + "pass"
            left += 1
        return left == 0

    def skip_unneeded(self, shown: list[str]) -> None:
        """Leave out the code between and after the shown sections that no later shown code needs: what
        only prints, or binds names nothing later reads (a timing kept only for the record). Code above
        the first shown section all stays: it is the set-up. Imports, and calls made for their effect
        (`torch._dynamo.reset()`, a warm-up call), stay too."""
        spans = self.page_spans = [self.section(name) for name in shown]
        if not spans:
            return
        start = min(first for first, _ in spans)
        needed: set[str] = set()
        for node in reversed(self.tree.body):
            first, last = self.span(node)
            if set(range(first, last + 1)) <= self.drop:
                continue
            is_shown = any(a <= first and last <= b for a, b in spans)
            if not is_shown and first > start and not self.needed(node, needed):
                self.drop_lines(node, comments=True)
                continue
            needed |= loads(node)

    @staticmethod
    def needed(node: ast.stmt, needed: set[str]) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if touched(node) & needed:
            return True  # fills or changes something later code reads (`texts[key] = ...`)
        bound = bindings(node)
        if bound:
            return bool(bound & needed)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            return True  # stores into an object (x[0] = ..., model.flag = ...): an effect
        return has_effect(node)

    def with_comments(self, node: ast.stmt) -> set[int]:
        """A statement's lines and the comment lines right above it."""
        first, last = self.span(node)
        lines = set(range(first, last + 1))
        number = first - 1
        while number >= 1 and self.lines[number - 1].strip().startswith("#") and number not in self.drop:
            lines.add(number)
            number -= 1
        return lines

    def in_page_section(self, node: ast.stmt) -> bool:
        first, last = self.span(node)
        return any(a <= first and last <= b for a, b in self.page_spans)

    def span_incl(self, node: ast.stmt) -> tuple[int, int]:
        first, last = self.span(node)
        return first, last + 1

    @staticmethod
    def headers(node: ast.stmt) -> list[ast.AST]:
        """The parts of a compound statement that are not its blocks (a loop's iterable, a condition)."""
        parts = []
        for name, value in ast.iter_fields(node):
            if name in BODIES or name == "handlers":
                continue
            parts += value if isinstance(value, list) else [value]
        return [p for p in parts if isinstance(p, ast.AST)]

    def inside_section(self, node: ast.stmt) -> bool:
        first, last = self.span(node)
        return any(a <= first and last <= b for a, b in self.sections.values())

    def section(self, name: str) -> tuple[int, int]:
        if name not in self.sections:
            known = ", ".join(sorted(self.sections)) or "none"
            raise KeyError(f"snippets/{self.name} has no section '{name}' (its sections: {known})")
        return self.sections[name]

    def text(self, numbers: list[int], dedent: bool = False) -> str:
        """The source of these lines without markers and plumbing, blank runs squeezed."""
        out: list[str] = []
        previous = None
        for number in numbers:
            gap = previous is not None and any(n not in self.drop for n in range(previous + 1, number))
            if gap and out and out[-1].strip():
                out.append("")  # statements from apart in the file: a blank line between them
            previous = number
            if number in self.passes:
                out.append(self.passes[number])
            elif number not in self.drop:
                out.append(self.lines[number - 1].rstrip())
        text = "\n".join(out)
        if dedent:
            text = textwrap.dedent(text)
        text = re.sub(r"\n{4,}", "\n\n\n", text)
        return text.strip("\n")


# ------------------------------------------------------------------------------------------- pages


@dataclass
class Include:
    snippet: str
    section: str | None


def fence_blocks(lines: list[str]):
    """Yield (start, end, info, indent) for each fenced code block (end is the closing line, or the last
    line for an unclosed fence), nested fences inside a longer fence included in it."""
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, close = match.group("fence"), None
        for other in range(index + 1, len(lines)):
            closing = FENCE.match(lines[other])
            if closing and closing.group("fence")[0] == fence[0] and len(closing.group("fence")) >= len(fence) \
                    and not closing.group("info").strip():
                close = other
                break
        end = close if close is not None else len(lines) - 1
        yield index, end, match.group("info").strip(), match.group("indent")
        index = end + 1


def fence_mask(lines: list[str]) -> list[bool]:
    """True for each line inside (or opening or closing) a fenced code block."""
    mask = [False] * len(lines)
    for start, end, _, _ in fence_blocks(lines):
        for number in range(start, end + 1):
            mask[number] = True
    return mask


def is_example(info: str) -> bool:
    """A ```markdown fence shows page source as text: the snippet lines in it are an example."""
    return re.match(r"\{?\.?(markdown|md)\b", info) is not None


def includes(lines: list[str]) -> list[Include]:
    found = []
    for line in lines:
        match = INCLUDE.match(line)
        if match:
            found.append(Include(match.group("snippet"), match.group("section")))
    return found


def page_includes(text: str) -> list[Include]:
    """Every snippet section a page shows, in page order (examples in ```markdown fences left out)."""
    lines = text.splitlines()
    found = []
    for start, end, info, _ in fence_blocks(lines):
        if not is_example(info):
            found += includes(lines[start + 1:end])
    return found


def chapter_pages() -> list[Path]:
    pages = []
    for page in sorted(DOCS.rglob("*.md")):
        if page.relative_to(DOCS).parts[0] in SKIP_DIRS:
            continue
        if page_includes(page.read_text()):
            pages.append(page)
    return pages


def notebook_path(page: Path) -> Path:
    return NOTEBOOKS / (page.relative_to(DOCS).with_suffix("").as_posix().replace("/", "__") + ".ipynb")


def block_end(lines: list[str], start: int, indent: str) -> int:
    """The index after the indented body that starts below lines[start]."""
    inner = len(indent.expandtabs(4)) + 4
    end = start + 1
    last = start
    while end < len(lines):
        line = lines[end]
        if line.strip() and len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) < inner:
            break
        if line.strip():
            last = end
        end += 1
    return last + 1


def plain_blocks(lines: list[str]) -> list[str]:
    """Admonitions become a bold title over the quoted body, collapsed ones (quiz questions) an HTML
    <details> with the title as its summary; content tabs a bold label over the body. Fenced code stays as it
    is (dedented with its block)."""
    mask = fence_mask(lines)
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        admonition = None if mask[index] else ADMONITION.match(line)
        tab = None if mask[index] else TAB.match(line)
        if not (admonition or tab):
            out.append(line)
            index += 1
            continue
        match = admonition or tab
        indent = match.group("indent")
        end = block_end(lines, index, indent)
        body = textwrap.dedent("\n".join(lines[index + 1:end]).expandtabs(4)).splitlines()
        body = plain_blocks(body)
        while body and not body[0].strip():
            body.pop(0)
        if admonition:
            title = admonition.group("title")
            if title is None:
                title = admonition.group("kind").replace("-", " ").capitalize()
            # A snippet include must stay at the top level to become a cell, a block directive to be
            # expanded: such a body is not quoted.
            quoted = not includes(body) and not any(BLOCK_LINE.match(b) for b in body)
            if admonition.group("mark") == "???" and quoted:  # collapsed on the site: collapsed here too
                summary = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(title or "Details"))
                block = ["<details>", f"<summary><b>{summary}</b></summary>", "", *body, "", "</details>"]
            else:
                block = ([f"**{title}**", ""] if title else []) + (
                    [f"> {b}".rstrip() for b in body] if quoted else body)
        else:
            block = [f"**{tab.group('title')}**", ""] + body
        out += [indent + b if b else "" for b in block]
        out.append("")
        index = end
    return out


# ------------------------------------------------------------------------------------------- links


@cache
def site_config() -> tuple[bool, str]:
    """(use_directory_urls, site_dir) as mkdocs.yml sets them."""
    from mkdocs.utils import yaml_load

    with open(ROOT / "mkdocs.yml") as handle:
        config = yaml_load(handle) or {}
    return config.get("use_directory_urls", True), str(ROOT / config.get("site_dir", "site"))


def page_url(src: str) -> str:
    """The URL (relative to the site root) mkdocs gives docs/<src>; a notebook's as mkdocs-jupyter does."""
    from mkdocs.structure.files import File

    use_directory_urls, site_dir = site_config()
    file = File(src, str(DOCS), site_dir, use_directory_urls)
    if src.endswith(".ipynb"):
        from mkdocs_jupyter.plugin import NotebookFile

        return NotebookFile(file, use_directory_urls, site_dir).url
    return file.url


def site_link(target: str, page: str, notebook: str) -> str:
    """A link written in docs/<page>, made to work from the notebook's page in the built site."""
    from mkdocs.utils import get_relative_url

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
    return get_relative_url(url or ".", page_url(notebook)) + hash_ + anchor


def rewrite_links(text: str, page: str, notebook: str) -> str:
    def link(match: re.Match) -> str:
        return f"{match.group(1)}({site_link(match.group('target'), page, notebook)}{match.group('rest')})"

    return outside_code(text, lambda part: LINK.sub(link, part))


def outside_code(text: str, change) -> str:
    """Apply change() to the text outside inline code spans and fenced blocks."""
    lines = text.split("\n")
    mask = fence_mask(lines)
    out, prose = [], []

    def flush():
        if prose:
            joined = "\n".join(prose)
            # Code spans stand aside as placeholders, so a link whose text is code (`[`f.py`](f.py)`)
            # is still one link to change.
            spans: list[str] = []

            def stand_aside(match: re.Match) -> str:
                spans.append(match.group(0))
                return f"\x00{len(spans) - 1}\x00"

            changed = change(CODE_SPAN.sub(stand_aside, joined))
            out.append(re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], changed))
            prose.clear()

    for line, fenced in zip(lines, mask):
        if fenced:
            flush()
            out.append(line)
        else:
            prose.append(line)
    flush()
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- cells


def cell_id(kind: str, text: str, taken: set[str]) -> str:
    base = f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    taken.add(name)
    return name


@dataclass
class Builder:
    page: Path
    src: str = ""
    notebook: str = ""
    cells: list = field(default_factory=list)
    snippets: dict[str, Snippet] = field(default_factory=dict)
    emitted: dict[str, set[int]] = field(default_factory=dict)
    shown: set[tuple[str, str | None]] = field(default_factory=set)
    figures: int = 0
    ids: set[str] = field(default_factory=set)
    attachments: dict = field(default_factory=dict)  # images drawn for the prose cell being built
    writer: dict[str, tuple] = field(default_factory=dict)  # global name -> (snippet, statement) last bound it
    bound: dict[str, dict[str, list]] = field(default_factory=dict)  # snippet -> name -> statements

    def __post_init__(self):
        self.src = self.page.relative_to(DOCS).as_posix()
        self.notebook = notebook_path(self.page).relative_to(DOCS).as_posix()
        self.state = hook_page(self.src, self.notebook)

    def fail(self, message: str) -> NotebookError:
        return NotebookError(f"{self.src}: {message}")

    # ------------------------------------------------------------------- the page, in order

    def build(self) -> nbformat.NotebookNode:
        from mkdocs.utils.meta import get_data

        text, meta = get_data(self.page.read_text())  # front matter is the page's settings, not its prose
        try:
            text = hook().conditionals(text, self.state)  # the branches of md:recorded the site shows
        except Exception as error:  # the hook's PluginError already names the page
            raise NotebookError(str(error)) from None
        lines = plain_blocks(text.splitlines())
        title = meta.get("title") or next((line[2:].strip() for line in lines if line.startswith("# ")),
                                          self.page.stem)
        used = page_includes("\n".join(lines))
        for name in dict.fromkeys(i.snippet for i in used):
            sections = [i.section for i in used if i.snippet == name and i.section]
            try:
                self.snippet(name).skip_unneeded(list(dict.fromkeys(sections)))
            except KeyError as error:
                raise self.fail(str(error.args[0])) from None
        self.cells.append(self.markdown(self.first_cell(title, used)))
        if any(re.search(r"^\s*(import|from) triton\b", "\n".join(self.snippet(name).lines), re.MULTILINE)
               for name in {i.snippet for i in used}):
            self.cells.append(v4.new_code_cell(TRITON_SETUP, id=cell_id("setup", "triton", self.ids),
                                               metadata={"mlc": {"environment": True}}))
        prose: list[str] = []
        skip_title = True
        blocks = {start: (end, info) for start, end, info, _ in fence_blocks(lines)}
        index = 0
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
        if groups:
            parts = []
            for where, dates in groups.items():
                span = min(dates) if min(dates) == max(dates) else f"{min(dates)} to {max(dates)}"
                parts.append(f"{where}, {span}")
            note = "The outputs shown were recorded on " + "; ".join(parts) + "."
        else:
            note = "No output of this chapter has been recorded yet."
        if missing:
            note += " Not yet recorded: " + ", ".join(f"`snippets/{m}`" for m in missing) + "."
        return (
            f"# {title}\n\n"
            f"This notebook is the chapter [{title}]({link}) of *{SITE_NAME}*: its prose, and each piece of "
            f"code with the output the site recorded. Run it top to bottom on a CPU or a CUDA GPU; the "
            f"collapsed cells hold the parts of each snippet the chapter does not show.\n\n{note}"
        )

    def flush(self, prose: list[str]) -> None:
        text = "\n".join(prose).strip("\n")
        prose.clear()
        if not text.strip():
            return
        text = self.expand(text)
        text = rewrite_links(text, self.src, self.notebook)
        text = outside_code(text, lambda part: ATTR_LIST.sub("", part))  # `{ .md-button }`: the site's styling
        text = outside_code(text, lambda part: re.sub(r"\n{3,}", "\n\n", part)).strip("\n")
        # mkdocs-jupyter's table of contents mislinks headings with code in them: keep the words, drop the ticks.
        text = "\n".join(line.replace("`", "") if not fenced and line.startswith("#") else line
                         for line, fenced in zip(text.split("\n"), fence_mask(text.split("\n"))))
        if text.strip():
            self.cells.append(self.markdown(text, self.attachments))
        self.attachments = {}

    def markdown(self, text: str, attachments: dict | None = None):
        cell = v4.new_markdown_cell(text, id=cell_id("md", text, self.ids))
        if attachments:
            cell.attachments = attachments
        return cell

    # ------------------------------------------------------------------- directives in prose

    def expand(self, text: str) -> str:
        lines = text.split("\n")
        mask = fence_mask(lines)
        out = []
        for line, fenced in zip(lines, mask):
            match = None if fenced else BLOCK_LINE.match(line)
            name = match.group("name") if match else None
            if name in ("output", "figure") or name in hook().BLOCKS:
                args = shlex.split(match.group("args"))
                indent = re.match(r"[ \t]*", line).group(0)
                if name == "output":
                    block = self.output(args)
                elif name == "figure":
                    block = self.figure(args)
                else:  # another of the hook's blocks (md:records): its Markdown, as the site has it
                    try:
                        block = hook().BLOCKS[name](args, self.state).splitlines()
                    except (hook().DirectiveError, ValueError) as error:
                        raise self.fail(f"{line.strip()}: {error}") from None
                out += [indent + b if b else "" for b in block]
            else:
                out.append(line)
        return outside_code("\n".join(out), self.inline)

    def inline(self, text: str) -> str:
        def one(match: re.Match) -> str:
            try:
                return inline_text(match, self.state)
            except (hook().DirectiveError, ValueError) as error:
                raise self.fail(f"{match.group(0).strip()}: {error}") from None

        return DIRECTIVE.sub(one, text)

    def output(self, args: list[str]) -> list[str]:
        if not args:
            raise self.fail("md:output needs SNIPPET[:SECTION]")
        snippet, _, section = args[0].partition(":")
        if (snippet, section or None) in self.shown:
            return []  # it sits under its code cell
        record = best_record(snippet)
        if record is None:
            return [f"*The output of `snippets/{snippet}` has not been recorded yet.*"]
        text = record.sections.get(section, "") if section else record.stdout
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
        return [f"{fence}text", *text.rstrip("\n").split("\n"), fence, "",
                f"*Recorded on {records.LABELS[record.device]} ({record.hardware}).*"]

    def figure(self, args: list[str]) -> list[str]:
        """The figure drawn from the record the notebook shows (CUDA where recorded, else CPU), numbered and
        captioned as on the site; a line naming it where it cannot be drawn here."""
        if len(args) < 2:
            raise self.fail("md:figure needs SNIPPET NAME")
        snippet, name = args[0], args[1]
        options = dict(a.split("=", 1) for a in args[2:] if "=" in a)
        caption = options.pop("caption", "").strip()
        self.figures += 1
        label = f"**Figure {self.figures}.** " + (caption or f"`{name}`")
        record = best_record(snippet)
        if record is None:
            return [f"{label} *(`{name}` of `snippets/{snippet}`: not yet recorded.)*"]
        where = f"*(Drawn from the {records.LABELS[record.device]} record of `snippets/{snippet}`.)*"
        drawn = self.draw(record, name, options)
        if drawn is None:
            return [f"{label} *(`{name}`, drawn from the {records.LABELS[record.device]} record of "
                    f"`snippets/{snippet}` on the chapter's page.)*"]
        return [*drawn, "", f"{label} {where}"]

    def draw(self, record: records.Record, name: str, options: dict) -> list[str] | None:
        """An FX graph kept in the results as a Mermaid diagram (scripts.diagrams), a chart as an SVG image
        attached to the cell (scripts.plots); None where neither can draw it."""
        diagram = hook().fx_diagram(record, name, options)
        if diagram is not None:
            mermaid, alt = diagram
            return ["```mermaid", *mermaid.rstrip().split("\n"), "```", "", f"*{alt}*"]
        from scripts import plots

        try:
            svg, alt = plots.render(record, name, options, "light")
        except plots.FigureError:  # the site's build names the problem; here a line stands in
            return None
        key = f"figure-{self.figures}-{name}.svg"
        self.attachments[key] = {"image/svg+xml": base64.b64encode(svg.encode()).decode()}
        alt = alt.replace("[", "(").replace("]", ")").replace("\n", " ")
        return [f"![{alt}](attachment:{key})"]

    # ------------------------------------------------------------------- code

    def needed_before(self, snippet: Snippet, lines: list[int], shown: list[int]) -> list[int]:
        """Of the snippet's code above a section that has not run yet, what runs first, in a collapsed
        cell: all the code the page does not show (set-up) and, of sections the page shows further down,
        only the statements this section needs. The rest waits for its turn."""
        candidates = self.statements(snippet, lines)
        later = [node for node in candidates if snippet.in_page_section(node)]
        need = free_names(self.statements(snippet, shown))
        take: list[ast.stmt] = []
        for node in reversed(candidates):
            if node in later and not (bindings(node) & need):
                continue
            take.append(node)
            need |= loads(node)
        # Set-up that reads what a waiting section binds waits with it.
        waiting = set().union(*(bindings(n) for n in later if n not in take)) if later else set()
        keep: set[int] = set()
        for node in reversed(take):
            if node not in later and loads(node) & waiting:
                waiting |= bindings(node)
                continue
            keep |= snippet.with_comments(node)
        skipped = {n for node in candidates if not (snippet.with_comments(node) & keep)
                   for n in snippet.with_comments(node)}
        in_sections = {n for a, b in snippet.page_spans for n in range(a, b + 1)}
        return [n for n in lines if n in keep or (n not in skipped and n not in in_sections)]

    def statements(self, snippet: Snippet, lines) -> list[ast.stmt]:
        """The top-level statements of a snippet that start on these lines and are not left out."""
        lines = set(lines)
        return [node for node in snippet.tree.body
                if snippet.span(node)[0] in lines and not set(range(*snippet.span_incl(node))) <= snippet.drop]

    def ran(self, snippet: Snippet, lines) -> None:
        """Note the names these lines bind: from now on they hold this snippet's values."""
        for node in self.statements(snippet, lines):
            for name in bindings(node):
                self.writer[name] = (snippet.name, ast.dump(node))
                self.bound.setdefault(snippet.name, {}).setdefault(name, []).append(node)

    def restore(self, snippet: Snippet, lines) -> set[int]:
        """The lines of this snippet's statements that bound names its next code reads and that another
        snippet has rebound since (run again, with what they read in turn)."""
        own = self.bound.get(snippet.name, {})
        again: set[int] = set()
        todo = free_names(self.statements(snippet, lines))
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in own:
                continue
            seen.add(name)
            writer, statement = self.writer.get(name, (snippet.name, ""))
            same = {ast.dump(node) for node in own[name] if isinstance(node, (ast.Import, ast.ImportFrom))}
            if writer == snippet.name or statement in same:
                # Still this snippet's (or the very same import): but a function of it reads its globals
                # when called, and those may have been rebound.
                for node in own[name]:
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        todo |= loads(node)
                continue
            for node in own[name]:
                first, last = snippet.span(node)
                if first not in again:
                    again.update(range(first, last + 1))
                    todo |= free_names([node])
        return again

    def snippet(self, name: str) -> Snippet:
        if name not in self.snippets:
            if not (SNIPPETS / name).is_file():
                raise self.fail(f"snippets/{name} does not exist")
            try:
                self.snippets[name] = Snippet.load(name)
            except (SyntaxError, ValueError) as error:
                raise self.fail(f"snippets/{name}: {error}") from None
            self.emitted[name] = set()
        return self.snippets[name]

    def code(self, include: Include) -> None:
        snippet = self.snippet(include.snippet)
        if include.section is None:
            first, last = 1, len(snippet.lines)
        else:
            try:
                first, last = snippet.section(include.section)
            except KeyError as error:
                raise self.fail(str(error.args[0])) from None
        done = self.emitted[include.snippet]
        shown = list(range(first, last + 1))
        before = self.needed_before(snippet, [n for n in range(1, first) if n not in done], shown)
        # Another snippet's cells may have rebound names this one set earlier (`x`, `model`): its
        # statements that bound them run again first.
        again = self.restore(snippet, before + shown)
        lines = sorted(set(before) | again)
        hidden = snippet.text(lines)
        done.update(before)
        self.ran(snippet, lines)
        if hidden.strip():
            self.cells.append(v4.new_code_cell(hidden, id=cell_id("setup", include.snippet + hidden, self.ids),
                                               metadata={"jupyter": {"source_hidden": True},
                                                         "tags": ["hide-input"],
                                                         "mlc": {"snippet": include.snippet, "setup": True}}))
        done.update(shown)
        self.ran(snippet, shown)
        source = snippet.text(shown, dedent=True)
        record = best_record(include.snippet)
        outputs, metadata = [], {"mlc": {"snippet": include.snippet, "section": include.section}}
        if record is not None:
            printed = record.sections.get(include.section, "") if include.section else record.stdout
            if printed:
                outputs.append(v4.new_output("stream", name="stdout", text=printed))
            metadata["mlc"]["recorded"] = record.device
        self.cells.append(v4.new_code_cell(source, id=cell_id("code", f"{include}{source}", self.ids),
                                           outputs=outputs, metadata=metadata))
        self.shown.add((include.snippet, include.section))


# ------------------------------------------------------------------------------------------- files


def build(page: Path) -> str:
    """The notebook of one page, as the bytes it is written with."""
    return nbformat.writes(Builder(page).build()) + "\n"


def build_all() -> tuple[dict[Path, str], list[str]]:
    """Every chapter's notebook, and one line per page that cannot become one (its notebook is kept)."""
    built, errors = {}, []
    for page in chapter_pages():
        try:
            built[notebook_path(page)] = build(page)
        except NotebookError as error:
            errors.append(str(error))
    return built, errors


def differences(built: dict[Path, str], pages: list[Path] | None = None) -> list[str]:
    problems = []
    for path, text in built.items():
        if not path.exists():
            problems.append(f"missing  {path.relative_to(ROOT)}")
        elif path.read_text() != text:
            problems.append(f"differs  {path.relative_to(ROOT)}")
    wanted = {notebook_path(p) for p in (chapter_pages() if pages is None else pages)}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        if path not in wanted:
            problems.append(f"orphan   {path.relative_to(ROOT)} (its page shows no snippet)")
    return problems


def run(path: Path) -> None:
    """Run a notebook's code cells top to bottom in one namespace, as a Jupyter kernel does, each cell
    compiled on its own; a failing cell raises, naming the cell."""
    notebook = nbformat.read(path, as_version=4)
    namespace = {"__name__": "__main__"}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        where = cell.metadata.get("mlc", {})
        name = f"{path.name} cell {index} ({where.get('snippet')}:{where.get('section') or 'set-up'})"
        print(f"# {name}", flush=True)
        # Like IPython, keep each cell's source where `inspect` finds it (torch.jit.script reads it).
        filename = f"<{path.stem} cell {index}>"
        linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(keepends=True), filename)
        exec(compile(cell.source, filename, "exec"), namespace)  # noqa: S102 (the point: run the notebook)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="list the notebooks that differ from a fresh build; exit 1 if any")
    parser.add_argument("--run", type=Path, metavar="NOTEBOOK", help="run one notebook's code cells in order")
    args = parser.parse_args(argv)
    if args.run:
        run(args.run.resolve())
        return 0
    pages = chapter_pages()
    built, errors = build_all()
    problems = differences(built, pages)
    for error in errors:
        print(f"error    {error}", file=sys.stderr)
    if args.check:
        for problem in problems:
            print(problem)
        print(f"notebooks: {len(problems)} out of date, {len(errors)} failed"
              + (": run python -m scripts.notebooks" if problems else ""))
        return 1 if problems or errors else 0
    NOTEBOOKS.mkdir(parents=True, exist_ok=True)
    for path, text in built.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote    {path.relative_to(ROOT)}")
    wanted = {notebook_path(p) for p in pages}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        if path not in wanted:
            path.unlink()
            print(f"removed  {path.relative_to(ROOT)} (its page shows no snippet)")
    print(f"notebooks: {len(built)} built, {len(errors)} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
