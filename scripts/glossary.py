"""The glossary (docs/glossary.md), as tooltips on every other page.

The glossary is a Markdown definition list: a term line ("SM, SMs": the forms a page may write), then its
definition. Each form becomes a Markdown abbreviation (`*[SM]: ...`, Python-Markdown's `abbr`), appended to every
page, so the term's first sentence shows on hover and on tap (Material's `content.tooltips`). A page that says
"kernel" forty times would be underlined forty times: after rendering, only the first use of each term keeps its
tooltip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PAGE = "glossary.md"
DEFINITION = re.compile(r"^(?P<term>\S[^\n]*)\n:   (?P<text>.+?)(?=\n\n|\Z)", re.MULTILINE | re.DOTALL)
ABBR = re.compile(r'<abbr title="(?P<title>[^"]*)">(?P<text>.*?)</abbr>', re.DOTALL)


@dataclass(frozen=True)
class Term:
    forms: tuple[str, ...]  # as a page may write it: "SM", "SMs"
    definition: str  # Markdown, as the glossary has it

    @property
    def tooltip(self) -> str:
        """The definition's first sentence, as plain text."""
        text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", " ".join(self.definition.split()))
        text = re.sub(r"[`*]", "", text)
        first = re.split(r"(?<=[a-z0-9)])\. ", text, maxsplit=1)[0]
        return first.rstrip(".") + "."


def terms(docs: Path) -> list[Term]:
    text = (docs / PAGE).read_text()
    return [Term(tuple(f.strip() for f in m["term"].split(",")), m["text"]) for m in DEFINITION.finditer(text)]


def abbreviations(docs: Path) -> str:
    """The Markdown abbreviation lines for every form of every term, longest form first."""
    lines = [(form, term.tooltip) for term in terms(docs) for form in term.forms]
    lines.sort(key=lambda line: -len(line[0]))
    return "\n" + "".join(f"\n*[{form}]: {tip}" for form, tip in lines) + "\n"


HEADING = re.compile(r"<h(?P<level>[1-6])\b.*?</h(?P=level)>", re.DOTALL)


def first_use_only(html: str) -> str:
    """Keep each term's tooltip on its first use in the page's prose; later uses, and every use in a
    heading (a title is not where a term is explained), are plain text."""
    html = HEADING.sub(lambda heading: ABBR.sub(lambda m: m["text"], heading.group(0)), html)
    seen: set[str] = set()

    def once(match: re.Match) -> str:
        if match["title"] in seen:
            return match["text"]
        seen.add(match["title"])
        return match.group(0)

    return ABBR.sub(once, html)
