"""What a chapter is, said once: a page under docs/, the snippet sections it shows, and its notebook.

The mkdocs hook, the notebook builder (scripts/notebooks.py), the directives (scripts/directives.py) and the
tests read these facts from here:

- a snippet's **sections**: `# --8<-- [start:NAME]` ... `# --8<-- [end:NAME]`. scripts/runner.py reads them
  inside the snippet's own process (standard library only), so the marker and `section_lines` are its and
  this module takes them from there;
- **code fences** in Markdown (``` or ~~~, a shorter fence inside a longer one part of it): what is code on
  a page, so that directives and includes shown as code stay code;
- **includes**: `--8<-- "snippets/x/y.py:SECTION"` in a fenced code block that is not a ```markdown example;
  a page shows each snippet's sections in file order;
- **chapters**: the pages under docs/ that include snippet sections, and the site's settings, read from
  mkdocs.yml once;
- **notebooks**: a chapter's notebook is notebooks/<page path, / as __>.ipynb. It reads the page as its
  notebook does (of each set of content tabs the first tab in place, the JAX tabs after the rest, the others
  left out), and runs each snippet it shows top to bottom, less the recording plumbing;
- the **plumbing rule**: a statement that names the `results` dict only feeds the recorder, and a notebook
  leaves it out (with the comments right above it), unless it sits in a shown section; a statement left out
  may bind no name that the code kept reads (ChapterError otherwise), or a reader's run stops with a
  NameError on a branch the recorder never took.
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import textwrap
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from scripts import records
from scripts.runner import MARKER, section_lines

ROOT = records.ROOT
DOCS = ROOT / "docs"
SKIP_DIRS = ("outputs", "notebooks", "figures", "assets")  # folders of docs/ that hold no chapter
FOLDER = "notebooks"  # where the notebooks sit in the site
PLUMBING = "results"  # the dict a snippet fills for its record

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
INCLUDE = re.compile(r"""^[ \t]*--8<--[ \t]+(["'])snippets/(?P<snippet>[^"':]+\.py)"""
                     r"""(?::(?P<section>[^"']+))?\1[ \t]*$""")
ADMONITION = re.compile(r"""^(?P<indent>[ \t]*)(?P<mark>!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+)"""
                        r"""(?P<classes>(?:[ \t]+[\w-]+)*)(?:[ \t]+"(?P<title>[^"]*)")?[ \t]*$""")
TAB = re.compile(r"""^(?P<indent>[ \t]*)===(?P<new>!)?[+]?[ \t]+"(?P<title>[^"]*)"[ \t]*$""")
ASIDE_TAB = "JAX"  # a later tab a notebook runs after the rest; other later tabs it leaves out


class ChapterError(Exception):
    """A chapter, snippet or section that breaks the rules above; the message names the file."""


# ------------------------------------------------------------------------------------------- fences


def fence_blocks(lines: list[str]):
    """Yield (start, end, info, indent) for each fenced code block (end is the closing line, or the last line
    of an unclosed fence); a shorter fence inside a longer one is part of it."""
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


def fenced_segments(markdown: str) -> list[tuple[bool, str]]:
    """Markdown as (inside a fenced code block?, text) runs, so that directives shown as code stay code."""
    lines = markdown.splitlines(keepends=True)
    mask = fence_mask([line.rstrip("\n") for line in lines])
    segments: list[tuple[bool, str]] = []
    for line, code in zip(lines, mask):
        if segments and segments[-1][0] == code:
            segments[-1] = (code, segments[-1][1] + line)
        else:
            segments.append((code, line))
    return segments


# ------------------------------------------------------------------------------------------- includes


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
    """The snippets a page shows, each once (in every tab, the tabs its notebook leaves out too)."""
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


# ------------------------------------------------------------------------------------------- the site


@cache
def config(root: Path) -> dict:
    """mkdocs.yml of the tree at root, read once (site_url from SITE_URL where the environment sets it, as
    the publishing workflow does); {} where there is none, or where mkdocs is not installed (the GPU box: the
    recorder then reads the pages in path order, see `pages`)."""
    path = root / "mkdocs.yml"
    try:
        from mkdocs.utils import yaml_load
    except ImportError:
        return {}
    if not path.is_file():
        return {}
    with open(path) as handle:
        return yaml_load(handle) or {}


def nav(root: Path = ROOT) -> list[str]:
    """The pages mkdocs.yml's nav lists, in order, as paths under docs/."""
    found: list[str] = []

    def walk(entry) -> None:
        if isinstance(entry, str):
            if entry.endswith(".md"):
                found.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                walk(value)
        elif isinstance(entry, list):
            for item in entry:
                walk(item)

    walk(config(root).get("nav", []))
    return found


def site_name() -> str:
    return config(ROOT)["site_name"]


def site_url() -> str:
    return config(ROOT).get("site_url") or "http://127.0.0.1:8000/"


def page_url(src: str) -> str:
    """The URL (relative to the site root) mkdocs gives docs/<src>; a notebook's as mkdocs-jupyter does."""
    from mkdocs.structure.files import File

    use_directory_urls = config(ROOT).get("use_directory_urls", True)
    site_dir = str(ROOT / config(ROOT).get("site_dir", "site"))
    file = File(src, str(DOCS), site_dir, use_directory_urls)
    if src.endswith(".ipynb"):
        from mkdocs_jupyter.plugin import NotebookFile

        return NotebookFile(file, use_directory_urls, site_dir).url
    return file.url


def front_matter(text: str) -> tuple[str, dict]:
    """A page's Markdown and its YAML front matter (the page's settings, not its prose), as mkdocs reads them."""
    from mkdocs.utils.meta import get_data

    return get_data(text)


# ------------------------------------------------------------------------------------------- chapters


def pages(docs: Path | None = None) -> list[str]:
    """The site's one page list: every Markdown page under docs/ (its path there) but those of SKIP_DIRS, in
    the order of mkdocs.yml's nav, then the others by path (all by path where mkdocs is not installed)."""
    docs = docs or DOCS
    listed = nav(docs.parent)
    names = [p.relative_to(docs).as_posix() for p in docs.rglob("*.md")
             if p.relative_to(docs).parts[0] not in SKIP_DIRS]
    return sorted(names, key=lambda name: (listed.index(name) if name in listed else len(listed), name))


def chapter_pages() -> list[Path]:
    """Every page under docs/ that shows snippet sections, in path order."""
    return [DOCS / name for name in sorted(pages(), key=lambda name: Path(name).parts)
            if page_includes((DOCS / name).read_text())]


def notebook_name(page: Path) -> str:
    """Its path in the site, e.g. notebooks/dissecting__graphs.ipynb for docs/dissecting/graphs.md."""
    return f"{FOLDER}/" + page.relative_to(DOCS).with_suffix("").as_posix().replace("/", "__") + ".ipynb"


def notebooks() -> dict[str, str]:
    """Each chapter's notebook (its path in the site) -> the chapter (its path under docs/)."""
    return {notebook_name(page): page.relative_to(DOCS).as_posix() for page in chapter_pages()}


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


Admonition = Callable[[re.Match, list[str]], list[str]]


def notebook_lines(lines: list[str], aside: list[list[str]] | None = None,
                   admonition: Admonition | None = None) -> list[str]:
    """A page's lines as its notebook reads them: of a set of content tabs, the first tab's body stays in
    place and a later "JAX" tab's body goes to `aside` (the notebook runs it after the rest); the other
    tabs are left out. An admonition becomes admonition(its match, its dedented body), by default its body.
    Fenced code stays as it is (dedented with its block)."""
    mask = fence_mask(lines)
    out: list[str] = []
    index = 0
    in_set = None  # the indent of the tab set being read
    while index < len(lines):
        line = lines[index]
        found = None if mask[index] else ADMONITION.match(line)
        tab = None if mask[index] else TAB.match(line)
        if not (found or tab):
            if line.strip() and not mask[index] and in_set is not None \
                    and len(line) - len(line.lstrip()) <= len(in_set):
                in_set = None  # prose at the set's indent ends it
            out.append(line)
            index += 1
            continue
        match = found or tab
        indent = match.group("indent")
        end = block_end(lines, index, indent)
        body = textwrap.dedent("\n".join(lines[index + 1:end]).expandtabs(4)).splitlines()
        body = notebook_lines(body, aside, admonition)
        while body and not body[0].strip():
            body.pop(0)
        if tab:
            first = in_set != indent or tab.group("new")
            in_set = indent
            block = body if first else []
            if not first and tab.group("title") == ASIDE_TAB and aside is not None:
                aside.append(body)
        else:
            in_set = None
            block = admonition(found, body) if admonition else body
        out += [indent + b if b else "" for b in block]
        if block:
            out.append("")
        index = end
    return out


def notebook_markdown(text: str, admonition: Admonition | None = None, aside_title: str = "") -> list[str]:
    """A page's Markdown (front matter and md:recorded branches resolved) as its notebook reads it, the
    aside tabs' bodies at the end under aside_title."""
    aside: list[list[str]] = []
    lines = notebook_lines(text.splitlines(), aside, admonition)
    if aside:
        lines += ["", aside_title, ""] + [line for body in aside for line in [*body, ""]]
    return lines


def notebook_snippets(page: Path) -> list[str]:
    """The snippets a chapter's notebook runs, in the order it runs them. (An include inside an md:recorded
    branch counts whichever branch the records choose.)"""
    text, _ = front_matter(page.read_text())
    return list(dict.fromkeys(i.snippet for i in page_includes("\n".join(notebook_markdown(text)))))


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


def is_plumbing(node: ast.AST) -> bool:
    """A statement that only feeds the recorder: it assigns to, updates or reads the `results` dict."""
    return any(isinstance(n, ast.Name) and n.id == PLUMBING for n in ast.walk(node))


def plumbing_lines(code: str) -> list[int]:
    """The lines (1-based) of some code that name the `results` dict, the plumbing rule's mark. A piece of a
    snippet that is not Python on its own (a notebook's hidden cell may end inside a block) is read by
    Python's tokenizer instead: comments and strings are not code either way."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return sorted({t.start[0] for t in tokens if t.type == tokenize.NAME and t.string == PLUMBING})
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == PLUMBING})


BODIES = ("body", "orelse", "finalbody")


@dataclass
class Snippet:
    """One snippet file: its lines, its sections, and the lines a notebook leaves out."""

    name: str
    lines: list[str]
    sections: dict[str, tuple[int, int]]  # name -> (first, last) line, 1-based, markers excluded
    drop: set[int]  # plumbing, marker and docstring lines
    passes: dict[int, str]  # a line that becomes `pass` (an emptied block)

    @classmethod
    def load(cls, name: str) -> Snippet:
        """snippets/<name>, with what its notebook leaves out; ChapterError where the plumbing rule fails,
        ValueError where its sections do not pair, SyntaxError where it is not Python."""
        path = records.SNIPPETS / name
        source = path.read_text()
        snippet = cls(name, source.splitlines(), section_lines(source), set(), {})
        for number, line in enumerate(snippet.lines, start=1):
            if MARKER.search(line):
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
            if lost := sorted((bound_names(node) & read) - {PLUMBING}):
                raise ChapterError(
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
                    and not MARKER.search(self.lines[number - 1]):
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
            raise ChapterError(f"snippets/{self.name} has no section '{name}' (its sections: {known})")
        return self.sections[name]

    def text(self, first: int, last: int, dedent: bool = False) -> str:
        """The source of lines first..last without markers and plumbing, blank runs squeezed."""
        out = [self.passes.get(n, self.lines[n - 1].rstrip()) for n in range(first, last + 1)
               if n not in self.drop or n in self.passes]
        text = "\n".join(out)
        if dedent:
            text = textwrap.dedent(text)
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")
