"""The `md:` directive language of the chapters: its grammar, its checks, the md:recorded conditionals, and
the expansion of a page's directives by a table of renderers handed to it. It imports no renderer and no
mkdocs, so the recorder (scripts/budget.py, scripts/reproducibility.py) reads the pages' directives with it
on a machine that has nothing but torch. The renderers, for the two targets a chapter is built into (the
site's page and the chapter's notebook), are scripts/render.py's; records are read through scripts/records.py.

Directives sit in HTML comments, so a page read on GitHub stays clean.

    <!-- md:output SNIPPET[:SECTION] [lang=LANG | lang=cuda:LANG,cpu:LANG] -->
        The recorded stdout (of one named section). On the page: a content tab per recorded device, each
        with its provenance line, and a warning where the snippet changed since; a page whose outputs lack
        a device says so once, under its title. In the notebook: the output of the record the notebook
        shows (CUDA where recorded, else CPU), left out where it already sits under its code cell.

    <!-- md:value SNIPPET KEY [device=cuda|cpu] [release=VERSION] [fmt=SPEC] [scale=FACTOR] [unit=TEXT]
         [yes=TEXT no=TEXT] -->
        One value of the record's results (a dotted key), inline. Without device=, the CUDA record where
        one exists, else the CPU's; fmt= is a Python format spec (default: integers as they are, other
        numbers to 3 significant digits); scale= multiplies first; yes=/no= name a true/false value. A
        device= with no record fails the build: prose about a device belongs inside an md:recorded block.

    <!-- md:compare SNIPPET KEY_A KEY_B [device=cuda|cpu] [what=TEXT why=TEXT size=KEY] -->
        Words bound to two timings (dicts with median_us, q1_us, q3_us): "2.3× faster", "1.5× slower" or
        "about the same", for B against A, by the rule in scripts/measures.py `judge`.

    <!-- md:hardware SNIPPET [device=cuda|cpu] -->
        The GPU's (or CPU's) name, from the record.

    <!-- md:recorded SNIPPET [device=cuda|cpu] [stale=yes|no] -->   (alone on its line; device= defaults to cuda)
    ...shown when that record exists (with stale=yes: exists and was made by older code than the snippet's;
    stale=no: exists and is not stale), so a sentence about an old record's defect goes when it is remade...
    <!-- md:else -->                                 (optional)
    ...shown when it does not...
    <!-- md:end -->

    <!-- md:figure SNIPPET NAME [kind=KIND OPTION=VALUE ...] [device=cuda|cpu] caption="TEXT" -->
        A numbered figure with its caption, drawn from each recorded device's record (or one device's): a
        profiler timeline (NAME timeline), an FX graph kept in results (NAME is its dotted key; an SVG
        diagram drawn by graphviz-pure), or a chart of one of the kinds the renderers hand to `expand`
        (scripts/plots.py OPTIONS: every kind and the options each reads), light and dark on the page,
        light in the notebook.

    <!-- md:records -->
        A table of every snippet's record on each device: state, date, hardware, versions.

    <!-- md:changes -->
        The versions page: the timed comparisons release by release, the behaviour changes that matter
        (scripts/changelog.py NOTABLE), and every other output and count that differs (scripts/releases.py).

    <!-- md:findings [part=table|model] -->   <!-- md:coverage -->
        The site's findings, a chart and a table of every described CPU comparison with each row's GPU model
        (scripts/findings.py), or (part=model) each GPU comparison's measured gain against the model's;
        what was measured where, said once for the whole site (Home).

    <!-- md:atlas SNIPPET [part=lookup|table] [kind=...] [device=cuda|cpu] -->
        The graph-break or recompile atlas (scripts/atlas.py): its case table, or the box that finds the
        case of a pasted message.

    <!-- md:explorer SNIPPET KERNEL -->
        A compiler explorer for one kernel of a line-map record (snippets/gpu_code/line_maps.py): the
        kernel's Python beside each compiler stage of the chosen target, lines linked by the compilers' own
        source locations (docs/assets/javascripts/explorer.js highlights them), and a table of what each
        source line cost in SASS per target. In the notebook: the table of one target.

Any directive may run over several lines (a long caption), but never past its own "-->". A block
directive (output, figure, records, and the md:recorded markers) stands alone on its lines; value, compare
and hardware sit inside a sentence. An unknown directive or option, a missing snippet, section, key or
record, or a bad format raises DirectiveError with one line naming the page and the directive. Directives
inside fenced code blocks are code and stay as written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from scripts import chapters, records
from scripts.chapters import fenced_segments

DEVICES = records.DEVICES

# ------------------------------------------------------------------------------------------------ grammar

ARGS = r"(?P<args>(?:(?!-->).)*?)"
BLOCK = re.compile(r"^(?P<indent>[ \t]*)<!--\s*md:(?P<name>[\w-]+)" + ARGS + r"-->[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"<!--\s*md:(?P<name>[\w-]+)" + ARGS + r"-->", re.DOTALL)


@dataclass(frozen=True)
class Spec:
    """What one directive takes: where it may stand, its positional arguments, its options."""

    place: str  # "block", "inline" or "conditional" (a block that chooses text)
    positional: tuple[str, ...]
    options: tuple[str, ...] = ()

    def usage(self, name: str) -> str:
        return " ".join([f"md:{name}", *self.positional, *(f"[{o}=]" for o in self.options)])


FIGURE = ("kind", "caption", "device")  # every figure's options; each kind adds its own (KINDS)
# A figure kind -> the options it reads, as the renderers define them (scripts/plots.py OPTIONS).
Kinds = Mapping[str, tuple[str, ...]]
SPECS = {
    "output": Spec("block", ("SNIPPET[:SECTION]",), ("lang",)),
    "figure": Spec("block", ("SNIPPET", "NAME"), FIGURE),
    "records": Spec("block", ()),
    "changes": Spec("block", ()),
    "findings": Spec("block", (), ("part",)),
    "coverage": Spec("block", ()),
    "explorer": Spec("block", ("SNIPPET", "KERNEL")),
    "atlas": Spec("block", ("SNIPPET",), ("kind", "device", "part")),
    "value": Spec("inline", ("SNIPPET", "KEY"), ("device", "fmt", "scale", "unit", "yes", "no", "release")),
    "compare": Spec("inline", ("SNIPPET", "KEY_A", "KEY_B"), ("device", "what", "size", "why", "range")),
    "hardware": Spec("inline", ("SNIPPET",), ("device",)),
    "recorded": Spec("conditional", ("SNIPPET",), ("device", "stale")),
    "else": Spec("conditional", ()),
    "end": Spec("conditional", ()),
}


class DirectiveError(Exception):
    """A directive that cannot be rendered; the message is one line."""


@dataclass
class Directive:
    name: str
    args: list[str]  # the positional arguments
    options: dict[str, str]


def parse(name: str, text: str, kinds: Kinds | None = None) -> Directive:
    """Check one directive against its spec: the positional arguments first, then NAME=VALUE options. An
    md:figure's kind= and its options are checked against `kinds`, which its renderer defines; without them
    a figure cannot be checked, and only the directives that need none (every other) may be read."""
    if name == "figure" and kinds is None:
        raise DirectiveError("md:figure is read with its kinds (scripts/render.py expand)")
    spec = SPECS.get(name)
    if spec is None:
        raise DirectiveError(f"unknown directive 'md:{name}' (known: {', '.join(f'md:{n}' for n in SPECS)})")
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise DirectiveError(f"cannot read its arguments: {error}") from None
    count = len(spec.positional)
    if len(words) < count or any("=" in word for word in words[:count]):
        raise DirectiveError(f"md:{name} takes {' '.join(spec.positional)}" if count
                             else f"md:{name} takes no arguments")
    allowed = spec.options
    found: dict[str, str] = {}
    for word in words[count:]:
        key, sep, value = word.partition("=")
        found[key] = value
        if name == "figure" and key == "kind" and value not in kinds:
            raise DirectiveError(f"kind={value} is not one of {', '.join(kinds)}")
    if name == "figure":
        kind = found.get("kind", "timeline" if words[1] == "timeline" else None)
        allowed = FIGURE + tuple(kinds.get(kind, ()))
    for word in words[count:]:
        key, sep, _ = word.partition("=")
        if not sep or key not in allowed:
            if not allowed:
                raise DirectiveError(f"md:{name} takes no arguments" if not count
                                     else f"unknown option '{word}' (md:{name} takes no options)")
            raise DirectiveError(f"unknown option '{word}' (known: {', '.join(f'{a}=' for a in sorted(allowed))})")
    if "device" in found and found["device"] not in DEVICES:
        raise DirectiveError(f"device={found['device']}: expected {' or '.join(DEVICES)}")
    return Directive(name, words[:count], found)


def block_names(markdown: str) -> list[str]:
    """The block directives (output, figure, records) standing outside code in some Markdown."""
    return [m.group("name") for code, text in fenced_segments(markdown) if not code
            for m in BLOCK.finditer(text) if SPECS.get(m.group("name"), Spec("", ())).place == "block"]


def split_reference(reference: str) -> tuple[str, str | None]:
    snippet, _, section = reference.partition(":")
    if not snippet.endswith(".py"):
        raise DirectiveError(f"'{reference}' must name a snippet file ending in .py")
    return snippet, section or None


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



# ----------------------------------------------------------------------------------------------- the site


def site_pages(docs: Path) -> list[tuple[str, str, str]]:
    """(page, its title, its Markdown) of every page (scripts/chapters.py `pages`: mkdocs.yml's nav order)."""
    found = []
    for name in chapters.pages(docs):
        text = (docs / name).read_text()
        body = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)  # YAML front matter
        title = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), Path(name).stem)
        found.append((name, title, text))
    return found


def site_directives(docs: Path, name: str, pages: list | None = None) -> list[tuple[str, str, Directive]]:
    """(page, title, directive) of every md:<name> on the site's pages (outside code), in nav order. `pages`:
    site_pages(docs) where the caller read them already."""
    found = []
    for src, title, text in site_pages(docs) if pages is None else pages:
        for is_code, segment in fenced_segments(text):
            pattern = BLOCK if SPECS[name].place == "block" else INLINE
            for match in [] if is_code else pattern.finditer(segment):
                if match.group("name") == name:
                    found.append((src, title, parse(name, match.group("args"))))
    return found


def site_outputs(docs: Path, pages: list | None = None) -> list[tuple[str, str, str, str | None]]:
    """(page, title, snippet, section) of every md:output on the site, in nav order."""
    return [(src, title, *split_reference(d.args[0])) for src, title, d in site_directives(docs, "output", pages)]


def site_compares(docs: Path, pages: list | None = None) -> list[tuple[str, str, str, str, str, str]]:
    """(page, title, snippet, key A, key B, what) of every CPU md:compare on the site, in nav order; `what` is its
    what= ("" where it has none)."""
    return [(src, title, *d.args, d.options.get("what", ""))
            for src, title, d in site_directives(docs, "compare", pages) if d.options.get("device", "cuda") == "cpu"]


# --------------------------------------------------------------------------------------------- expanding


def conditionals(markdown: str, page) -> str:
    """Keep the branch of each md:recorded ... md:else ... md:end block that matches the records. `page` is
    the renderers' page (scripts/render.py Page): its src_uri names it, its record(snippet, device) reads."""
    out: list[str] = []
    state = None  # None outside a block, else (keeping this branch?, the opening directive)
    for is_code, text in fenced_segments(markdown):
        if is_code:
            if state is None or state[0]:
                out.append(text)
            continue
        position = 0
        for match in BLOCK.finditer(text):
            if match.group("name") not in ("recorded", "else", "end"):
                continue
            if state is None or state[0]:
                out.append(text[position:match.start()])
            position = match.end() + (1 if text[match.end():match.end() + 1] == "\n" else 0)
            directive = " ".join(match.group(0).split())
            try:
                d = parse(match.group("name"), match.group("args"))
                if d.name == "recorded":
                    if state is not None:
                        raise DirectiveError("md:recorded blocks do not nest; close the first with md:end")
                    record = page.record(d.args[0], d.options.get("device", "cuda"))
                    keep = record.exists
                    if "stale" in d.options:
                        if d.options["stale"] not in ("yes", "no"):
                            raise DirectiveError(f"stale= is yes or no, not {d.options['stale']!r}")
                        keep = keep and (record.state == "stale") == (d.options["stale"] == "yes")
                    state = (keep, directive)
                elif state is None:
                    raise DirectiveError(f"md:{d.name} without an md:recorded before it")
                elif d.name == "else":
                    state = (not state[0], state[1])
                else:
                    state = None
            except DirectiveError as error:
                raise DirectiveError(f"{page.src_uri}: {directive}: {error}") from None
        if state is None or state[0]:
            out.append(text[position:])
    if state is not None:
        raise DirectiveError(f"{page.src_uri}: {state[1]}: never closed with <!-- md:end -->")
    return "".join(out)


Renderer = Callable[[Directive, object], str]


def expand(markdown: str, page, renderers: Mapping[str, Renderer], kinds: Kinds) -> str:
    """Render every directive of some Markdown with `renderers` (a directive's name -> its renderer, which
    takes the directive and the page), figure kinds checked against `kinds`; a mistake raises DirectiveError
    naming the page and the directive."""

    def render(match: re.Match, place: str) -> str:
        name = match.group("name")
        try:
            d = parse(name, match.group("args"), kinds)
            if SPECS[name].place != place:
                raise DirectiveError(f"md:{name} must stand alone on its own line" if place == "inline"
                                     else f"md:{name} goes inside a sentence")
            return renderers[name](d, page)
        except (DirectiveError, ValueError) as error:
            raise DirectiveError(f"{page.src_uri}: {' '.join(match.group(0).split())}: {error}") from None

    def block(match: re.Match) -> str:
        if SPECS.get(match.group("name"), Spec("", ())).place != "block":
            return match.group(0)  # inline directives are handled below
        indent = match.group("indent") or ""
        return "\n".join(indent + line if line else "" for line in render(match, "block").splitlines())

    markdown = conditionals(markdown, page)
    parts = []
    for is_code, text in fenced_segments(markdown):
        parts.append(text if is_code else INLINE.sub(lambda m: render(m, "inline"), BLOCK.sub(block, text)))
    return "".join(parts)
