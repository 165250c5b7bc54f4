"""Regeneration in parts: GPU time may come in windows of a few minutes, so `--budget` runs what fits.

A budgeted run takes snippets in the site's priority order and never starts one that it expects not to finish
before the budget ends. It expects each to take what its last record took: its own device's record where one
exists, else the CPU record of the site's release (an estimate: a GPU runs the kernels faster, but the
compiles and the fresh processes cost about the same). A snippet with no record at all is expected to take as
long as the longest that has one.

The priority order:
1. the snippets a reader needs most on a GPU (READER_ORDER), in that order;
2. the other snippets behind the site's timed comparisons (each `md:compare` on a page);
3. every other snippet.
Within the last two groups the shortest go first, so that a window records as many as it can.

A snippet that times something runs in records.PROCESSES fresh processes. Where its estimate comes from a
CPU record that holds no timing but its code times something (it times on a GPU only), the estimate is that
record's duration once per process. What a part records is
fresh at home once unpacked and committed, so the next part, from the same command, goes on where this one
stopped.

A snippet that a budget stops before it finishes (its estimate was short: a CPU record's duration says little of
a GPU's autotuning, say) leaves what it showed in <release>/<device>/budget-stops.json (note_stop): how long it
ran, how many of its processes finished, and the least it would have needed. The archive carries that file
home, and later plans expect at least that much, so the same snippet is not started short again.

Needs only the standard library and the recorder's modules: the GPU box has no mkdocs.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from scripts import directives, records

DOCS = records.ROOT / "docs"
RESERVE_S = 20.0  # kept back from the budget for packing the archive and the summary
# The comparisons a GPU reader needs first (issue 48: the findings' workloads, then the chapters' timed
# lessons), before every other snippet.
READER_ORDER = ("optimizations/fusion.py", "dissecting/regimes.py", "eager_mode/complex_activation.py",
                "dissecting/bench_compile_modes.py", "graph_mode/when_not_to_compile.py",
                "dissecting/bench_small_matmul_softmax.py", "optimizations/relayout.py",
                "dissecting/bench_size_sweep.py", "dissecting/dynamic_shapes.py", "graph_mode/graph_breaks.py")
# What a snippet's code calls to make the timings (median_us) that the recorder repeats in fresh processes.
REPEATED = re.compile(r"benchmark\.Timer|\bdo_bench\b")
# Timing that the lock of scripts/alone.py does not cover (it wraps a benchmark Timer's calls only): a clock
# read around a compile, Python's timeit, Triton's do_bench, and an autotuner's benchmarks inside a compile.
UNCOVERED = re.compile(r"perf_counter|\btime\.time\(\)|\bimport timeit\b|\btimeit\.|\bdo_bench\b|autotune")


def runs_alone(snippet: str, snippets_dir: Path = records.SNIPPETS) -> bool:
    """Whether a snippet must run with nothing beside it under `--jobs`: its code times in a way the lock that
    pauses the others (scripts/alone.py) does not cover. A snippet whose code cannot be read runs alone."""
    path = snippets_dir / snippet
    return not path.is_file() or bool(UNCOVERED.search(path.read_text()))


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
    """The snippets that the pages' md:compare directives judge (read with the directives' grammar)."""
    return {d.args[0] for _, _, d in directives.site_directives(docs, "compare")}


def estimates(snippets: list[str], device: str, outputs: Path = records.OUTPUTS,
              snippets_dir: Path = records.SNIPPETS) -> dict[str, tuple[float, str]]:
    """snippet -> (expected seconds, where the figure comes from)."""
    found: dict[str, tuple[float, str]] = {}
    made_on_device: dict[str, str] = {}  # snippet -> the date of its record on `device`
    for snippet in snippets:
        for on in dict.fromkeys((device, "cpu")):
            made = records.releases_of(snippet, on, outputs, snippets_dir)
            with_duration = [r for r in made if r.state != "corrupt"
                             and isinstance(r.manifest.get("duration_s"), (int, float))]
            if with_duration:
                record = with_duration[0]
                seconds, whence = float(record.manifest["duration_s"]), f"its {records.LABELS[on]} record"
                source = snippets_dir / snippet
                if (on != device and not any(records.timings_in(record.results)) and source.is_file()
                        and REPEATED.search(source.read_text())):
                    seconds *= records.PROCESSES  # it times on the GPU only: one run per fresh process
                    whence += f" × {records.PROCESSES} processes"
                found[snippet] = (seconds, f"{whence} (torch {record.release})")
                if on == device:
                    made_on_device[snippet] = str(record.manifest.get("date", ""))
                break
    stopped = stops_of(device, outputs)
    for snippet, seen in stopped.items():
        answered = made_on_device.get(snippet, "") > seen["date"]  # a record made since: its duration is known
        if snippet in found and not answered and seen["at_least_s"] > found[snippet][0]:
            found[snippet] = (float(seen["at_least_s"]), f"a budget stopped it on {records.LABELS[device]} after "
                                                          f"{seen['ran_s']:.0f} s (torch {seen['torch']})")
    longest = max((seconds for seconds, _ in found.values()), default=600.0)
    return {s: found.get(s, (longest, "no record yet: the longest known")) for s in snippets}


def at_least(ran_s: float, detail: str, processes: int) -> float:
    """The least a snippet stopped by a budget after `ran_s` seconds would have needed, from the recorder's
    reason ("timed out after 77.9 s in process 2 of 5"): the processes that finished took what they took, and
    each one left takes at least as long as their mean and as the one cut short ran."""
    cut = re.search(r"timed out after ([\d.]+) s", detail)
    cut_s = float(cut.group(1)) if cut else ran_s
    which = re.search(r"in process (\d+) of (\d+)", detail)
    number, total = (int(which.group(1)), int(which.group(2))) if which else (1, processes)
    done = number - 1
    before = max(ran_s - cut_s, 0.0)
    each = max(before / done if done else 0.0, cut_s)
    return before + (total - done) * each if which else max(ran_s, cut_s)


def note_stop(device_dir: Path, snippet: str, ran_s: float, detail: str, processes: int, torch: str) -> dict:
    """Keep, beside the device's records, that a budget stopped `snippet` and the least it would have needed."""
    seen = {"torch": torch, "ran_s": round(ran_s, 1), "detail": detail.splitlines()[0] if detail else "",
            "at_least_s": round(at_least(ran_s, detail, processes), 1),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    records.keep_stops(device_dir, {snippet: seen})
    return seen


def stops_of(device: str, outputs: Path = records.OUTPUTS) -> dict[str, dict]:
    """snippet -> what a budget's stop showed it needs on `device`, over every release's records (the largest)."""
    found: dict[str, dict] = {}
    for root in records.release_roots(outputs).values():
        path = root / device / records.STOPS
        for snippet, seen in (json.loads(path.read_text()) if path.is_file() else {}).items():
            if snippet not in found or seen["at_least_s"] > found[snippet]["at_least_s"]:
                found[snippet] = seen
    return found


def order(snippets: list[str], expected: dict[str, tuple[float, str]], first: set[str]) -> list[str]:
    """The priority order: READER_ORDER's, then the other compared snippets, then the rest, each of the last
    two groups shortest first."""
    def key(s: str):
        if s in READER_ORDER:
            return (0, READER_ORDER.index(s), 0.0, s)
        return (1 if s in first else 2, 0, expected[s][0], s)
    return sorted(snippets, key=key)


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
