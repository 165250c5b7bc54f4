"""What the torch releases made differently of the same snippet, read from their records.

Each release's records live in their own folder (scripts/records.py). Two records of one snippet on one device
are compared only when both were made from the snippet as it is now (fresh), so a difference is the release's
and not the snippet's. Before comparing, what changes from run to run on any release is set aside:

- object addresses and hashes,
- numbers with a decimal point (timings, bandwidths, shares: measurements, compared in the timing table),
- the numbering torch gives what it generates (buf3, __compiled_fn_7, __resume_at_30_2, graph ids).

What is left (messages, traced ops, guards, bytecode, generated code, counts) is what a release changed.
The mkdocs hook's directives render it: under an output on a page, and on "What changed between versions".
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from scripts import records

# A number with a point after these words is a version, which a release may change: it is kept.
VERSION_BEFORE = re.compile(r"(?:version|PTX|ISA|torch|triton|Python|CUDA|jax)[\s=]*\Z", re.IGNORECASE)
RUN_TO_RUN = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hash>"),
    (re.compile(r"(?<![\w.,])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?"), "<n>"),  # 2,076,818 or 1,281.7
    (re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?"),
     lambda m: m.group(0) if VERSION_BEFORE.search(m.string, max(0, m.start() - 12), m.start()) else "<n>"),
    (re.compile(r"\b\d+(?=\s*(?:us|µs|ms|ns|s|GB/s|TB/s|[GT]FLOP/s|%)(?!\w))"), "<n>"),  # measured, whole
    (re.compile(r"\b(after|in) \d+ calls\b"), r"\1 <n> calls"),  # a break-even from timings
    (re.compile(r"\b(U?R|U?P)\d+\b"), r"\1<i>"),  # the registers a compiler allocated
    (re.compile(r"\b(__compiled_fn|__resume_at|__transformed_code|__temp|graph|buf|arg|primals|tangents|getitem)"
                r"((?:_\d+)+|\d+)\b"), r"\1<i>"),
    (re.compile(r"\b(graph_id|compile_id|frame_id)[=:]\s*\d+"), r"\1=<i>"),
    (re.compile(r"\[\d+/\d+\]"), "[<i>/<i>]"),  # Dynamo's frame/compile ids in log lines
]


VERSIONS = {"torch", "triton", "jax", "jaxlib", "numpy", "python"}  # each record's provenance names them
# Besides torch, what a record's environment names that can change what a snippet prints, as a reader spells it.
STACK = {"python": "Python", "triton": "triton", "jax": "JAX", "numpy": "numpy"}


def stack_changes(older: records.Record, newer: records.Record) -> list[str]:
    """Every version besides torch's that differs between two records ('Python 3.12.1 → 3.11.7'): a difference
    between them may be any of these, not torch's alone."""
    a, b = older.environment, newer.environment
    return [f"{name} {a.get(key)} → {b.get(key)}" for key, name in STACK.items()
            if a.get(key) and b.get(key) and str(a[key]) != str(b[key])]


def label(older: records.Record, newer: records.Record) -> str:
    """'torch 2.11.0 → 2.13.0', with every other version that changed between the two records."""
    also = stack_changes(older, newer)
    return f"torch {older.release} → {newer.release}" + (f" (and {', '.join(also)})" if also else "")


def normalise(text: str) -> str:
    """The text with what differs from run to run replaced by placeholders, and without spaces: a table's
    alignment follows the widths of its numbers."""
    for pattern, placeholder in RUN_TO_RUN:
        text = pattern.sub(placeholder, text)
    return "\n".join("".join(line.split()) for line in text.strip().splitlines())


def comparable(snippet: str, device: str, outputs=records.OUTPUTS, snippets=records.SNIPPETS) -> list[records.Record]:
    """The fresh records of one snippet on one device, one per release: the main release first, then newest
    first. Records of a snippet's older code are left out: what differs there is the snippet."""
    return [r for r in records.releases_of(snippet, device, outputs, snippets) if r.state == "fresh"]


def text_of(record: records.Record, section: str | None) -> str | None:
    if section is None:
        return record.stdout
    return record.sections.get(section)


def grouped(found: list[records.Record], section: str | None) -> list[list[records.Record]]:
    """The records grouped by what the section printed, normalised; the first group holds the first record."""
    groups: dict[str | None, list[records.Record]] = {}
    for record in found:
        text = text_of(record, section)
        groups.setdefault(None if text is None else normalise(text), []).append(record)
    return list(groups.values())


def names(found: list[records.Record]) -> str:
    """'2.11.0, 2.13.0 and 2.15.0', oldest first."""
    return names_of([r.release for r in found])


def names_of(releases: list[str]) -> str:
    """Releases as a reader lists them, oldest first."""
    ordered = sorted(set(releases), key=records.version_key)
    return ", ".join(ordered[:-1]) + (" and " if len(ordered) > 1 else "") + ordered[-1]


def diff(old: str, new: str) -> list[str]:
    """The lines that differ once normalised, shown as they were printed ('-' old, '+' new, ' ' a line of
    context either side), with '…' between distant changes."""
    a, b = old.strip().splitlines(), new.strip().splitlines()
    matcher = difflib.SequenceMatcher(None, [normalise(line) for line in a], [normalise(line) for line in b],
                                      autojunk=False)
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(1):
        if out:
            out.append("…")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [f"  {line}" for line in a[i1:i2]]
            else:
                out += [f"- {line}" for line in a[i1:i2]] + [f"+ {line}" for line in b[j1:j2]]
    return out


@dataclass
class Change:
    """One section whose output differs between two releases (older, newer), fresh records both."""

    snippet: str
    section: str | None
    older: records.Record
    newer: records.Record
    lines: list[str]


def changes(snippet: str, sections: list[str | None], device: str = "cpu", outputs=records.OUTPUTS,
            snippets=records.SNIPPETS) -> list[Change]:
    """Each section that changed between consecutive releases, oldest pair first."""
    found = sorted(comparable(snippet, device, outputs, snippets), key=lambda r: records.version_key(r.release))
    out = []
    for section in sections:
        for older, newer in zip(found, found[1:]):
            a, b = text_of(older, section), text_of(newer, section)
            if a is None or b is None or normalise(a) == normalise(b):
                continue
            out.append(Change(snippet, section, older, newer, diff(a, b)))
    return out


def counts(found: list[records.Record]) -> list[tuple[str, dict[str, object]]]:
    """(dotted key, release -> value) for every whole number, short text or flag in results.json that differs
    between releases; measurements (numbers with a fraction, timings, values the processes measured
    differently) are left to the timing table, and printed listings to the diffs."""
    flat: dict[str, dict[str, object]] = {}
    for record in found:
        measured = set(record.results.get("process_values", {}))
        for key, value in leaves(record.results):
            parts = key.split(".")
            if parts[0] in ("process_values", "maps") or key in measured or parts[-1] in VERSIONS:
                continue  # measurements, the explorer's line maps, versions
            flat.setdefault(key, {})[record.release] = value
    return [(key, values) for key, values in flat.items()
            if len(values) == len(found) and len({repr(same(v)) for v in values.values()}) > 1]


def same(value):
    """A value as counts() compares it: a flag as the number it equals (False and 0 are one value), text with
    what changes from run to run set aside (the registers a compiler allocated, a generated name's number)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return normalise(value)
    if isinstance(value, list):
        return [same(v) for v in value]
    return value


def leaves(value, key: str = ""):
    if records.is_timing(value) or isinstance(value, float):
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list, float)) for v in value):
            yield key, value
        elif any(isinstance(v, (dict, list)) for v in value):
            for i, v in enumerate(value):
                yield from leaves(v, f"{key}.{i}")
    elif not isinstance(value, str) or ("\n" not in value and len(value) <= 80):
        yield key, value
