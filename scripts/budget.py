"""Regeneration in parts: GPU time may come in windows of a few minutes, so `--budget` runs what fits.

A budgeted run takes snippets in the site's priority order and never starts one that it expects not to finish
before the budget ends. It expects each to take what its last record took: its own device's record where one
exists, else the CPU record of the site's release (an estimate: a GPU runs the kernels faster, but the
compiles and the fresh processes cost about the same). A snippet with no record at all is expected to take as
long as the longest that has one.

The priority order:
1. the snippets behind the site's timed comparisons (each `md:compare` on a page): the findings come first;
2. every other snippet.
Within each group the shortest go first, so that a window records as many as it can. What a part records is
fresh at home once unpacked and committed, so the next part, from the same command, goes on where this one
stopped.

Needs only the standard library: the GPU box has no mkdocs.
"""

from __future__ import annotations

import re
from pathlib import Path

from scripts import records

DOCS = records.ROOT / "docs"
COMPARE = re.compile(r"md:compare\s+([\w/.-]+\.py)\b")
RESERVE_S = 20.0  # kept back from the budget for packing the archive and the summary


def parse(text: str) -> float:
    """Seconds from '540', '540s', '9m' or '1.5h'; ValueError for anything else or a budget of nothing."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not match:
        raise ValueError(f"{text!r} is not a time budget (say 540, 540s, 9m or 1.5h)")
    seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    if seconds <= RESERVE_S:
        raise ValueError(f"a budget of {text} leaves nothing to run after the {RESERVE_S:g} s kept for packing")
    return seconds


def compared(docs: Path = DOCS) -> set[str]:
    """The snippets that the pages' md:compare directives judge."""
    return {match.group(1) for page in sorted(docs.rglob("*.md")) for match in COMPARE.finditer(page.read_text())}


def estimates(snippets: list[str], device: str, outputs: Path = records.OUTPUTS,
              snippets_dir: Path = records.SNIPPETS) -> dict[str, tuple[float, str]]:
    """snippet -> (expected seconds, where the figure comes from)."""
    found: dict[str, tuple[float, str]] = {}
    for snippet in snippets:
        for on in dict.fromkeys((device, "cpu")):
            made = records.releases_of(snippet, on, outputs, snippets_dir)
            with_duration = [r for r in made if r.state != "corrupt"
                             and isinstance(r.manifest.get("duration_s"), (int, float))]
            if with_duration:
                found[snippet] = (float(with_duration[0].manifest["duration_s"]),
                                  f"its {records.LABELS[on]} record (torch {with_duration[0].release})")
                break
    longest = max((seconds for seconds, _ in found.values()), default=600.0)
    return {s: found.get(s, (longest, "no record yet: the longest known")) for s in snippets}


def order(snippets: list[str], expected: dict[str, tuple[float, str]], first: set[str]) -> list[str]:
    """The priority order: the compared snippets, then the rest, each group shortest first."""
    return sorted(snippets, key=lambda s: (s not in first, expected[s][0], s))


def parts(ordered: list[str], expected: dict[str, tuple[float, str]], budget_s: float
          ) -> tuple[list[list[str]], list[str]]:
    """How consecutive budgeted calls would share the work, each starting only what it expects to finish, in
    priority order; and the snippets expected to take longer than a whole budget, which no call starts."""
    room = budget_s - RESERVE_S
    too_long = [s for s in ordered if expected[s][0] > room]
    left = [s for s in ordered if s not in too_long]
    plan: list[list[str]] = []
    while left:
        part, used = [], 0.0
        for snippet in list(left):
            if used + expected[snippet][0] <= room:
                part.append(snippet)
                used += expected[snippet][0]
                left.remove(snippet)
        plan.append(part)
    return plan, too_long
