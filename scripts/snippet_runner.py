"""Run one snippet as `__main__` and split what it prints by the named sections of its source.

The recorder runs every snippet through this file in a fresh process, and the tests call `run()` in-process,
so both see the same thing. A page can then show the output of one section next to that section's code:

    python scripts/snippet_runner.py snippets/eager_mode/complex_activation.py SECTIONS.json

A write to `sys.stdout` belongs to the section that holds the line of the snippet's top-level statement
being executed at that moment (`# --8<-- [start:NAME]` ... `# --8<-- [end:NAME]`); text printed outside
every section is filed under "". Text written straight to file descriptor 1 by native code is not seen here,
only in the recorder's whole-stdout capture.
"""

from __future__ import annotations

import io
import json
import re
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER = re.compile(r"#\s*--8<--\s*\[(start|end):([\w-]+)\]")


def section_lines(source: str) -> dict[str, tuple[int, int]]:
    """Map each named section to its first and last line (1-based, markers excluded)."""
    starts: dict[str, int] = {}
    spans: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        match = MARKER.search(line)
        if not match:
            continue
        kind, name = match.groups()
        if kind == "start":
            starts[name] = number + 1
        elif name in starts:
            spans[name] = (starts.pop(name), number - 1)
        else:
            raise ValueError(f"line {number}: section '{name}' ends but never starts")
    if starts:
        raise ValueError(f"section(s) never end: {', '.join(sorted(starts))}")
    return spans


class SectionedStdout(io.TextIOBase):
    """A stdout that passes text on and also files it under the section being executed."""

    def __init__(self, inner, path: str, spans: dict[str, tuple[int, int]]):
        self._inner = inner
        self._path = path
        # Innermost section first, so a nested section wins over the one around it.
        self._spans = sorted(spans.items(), key=lambda item: item[1][1] - item[1][0])
        self.sections: dict[str, list[str]] = {}
        self.parts: list[str] = []

    def _section(self) -> str:
        frame = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "<module>" and code.co_filename == self._path:
                for name, (first, last) in self._spans:
                    if first <= frame.f_lineno <= last:
                        return name
                return ""
            frame = frame.f_back
        return ""

    def write(self, text: str) -> int:
        self.sections.setdefault(self._section(), []).append(text)
        self.parts.append(text)
        return self._inner.write(text)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class SnippetRun:
    stdout: str
    sections: dict[str, str]
    globals: dict[str, Any] = field(repr=False)


def run(path: str | Path) -> SnippetRun:
    """Execute the snippet in this process as `__main__`; return its stdout, whole and by section."""
    path = str(Path(path).resolve())
    spans = section_lines(Path(path).read_text())
    capture = SectionedStdout(sys.stdout, path, spans)
    saved_stdout, saved_argv = sys.stdout, sys.argv
    sys.stdout, sys.argv = capture, [path]
    try:
        module_globals = runpy.run_path(path, run_name="__main__")
    finally:
        sys.stdout.flush()
        sys.stdout, sys.argv = saved_stdout, saved_argv
    sections = {name: "".join(parts) for name, parts in capture.sections.items()}
    return SnippetRun(stdout="".join(capture.parts), sections=sections, globals=module_globals)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: snippet_runner.py SNIPPET SECTIONS_JSON", file=sys.stderr)
        return 2
    snippet, sections_file = argv[1], argv[2]
    # The snippet's own folder comes first on sys.path, as with `python SNIPPET`.
    sys.path[0] = str(Path(snippet).resolve().parent)
    result = run(snippet)
    Path(sections_file).write_text(json.dumps(result.sections, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
