"""Does a page's verdict survive a second regeneration? Remake the CPU records that the pages compare timings
from, several times from scratch, and report each `md:compare` verdict and how far its ratio moved.

    python -m scripts.reproducibility                 # 3 regenerations of every snippet a CPU md:compare reads
    python -m scripts.reproducibility --runs 5 --only 'optimizations/*'
    python -m scripts.reproducibility --report-only   # the table from the regenerations already made
    python -m scripts.reproducibility --committed     # the committed records count as the first run

Each regeneration is a full `scripts.regenerate --device cpu --force` of those snippets (the site's method:
every timed snippet in its fresh processes, compile caches of its own) into .cache/reproducibility/run-N/,
never into docs/outputs. The report, as a Markdown table, goes to stdout and to
.cache/reproducibility/report.md: for each comparison, the verdict and the ratio in every run, the largest
ratio over the smallest, and whether it stays within the goals (no verdict changes direction; no ratio moves
by more than GOAL_RATIO). It is a benchmark, reported as figures: it asserts nothing.

Run it while nothing else runs: two things timing at once on 2 cores spoil each other's numbers.
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import sys
import time
from pathlib import Path

from scripts import measures, records, regenerate
from scripts.directives import site_compares  # the grammar alone: no renderer, no mkdocs

WHERE = records.CACHE / "reproducibility"
GOAL_RATIO = measures.SAME_WITHIN  # a verdict survives a re-run only if its ratio drifts less than the band


def comparisons(docs: Path = records.ROOT / "docs") -> list[dict]:
    """Every CPU md:compare on the site: page, snippet, the two keys (read with scripts/directives.py)."""
    return [{"page": src, "snippet": snippet, "a": a, "b": b}
            for src, _, snippet, a, b, _ in site_compares(docs)]


def report(rows: list[dict], runs: list[Path]) -> str:
    lines = [f"| page | snippet: A → B | {' | '.join(f'run {i + 1}' for i in range(len(runs)))} | moved | goals |",
             "|---|---|" + "---|" * len(runs) + "---|---|"]
    held = 0
    for row in rows:
        cells, ratios, directions = [], [], set()
        for folder in runs:
            record = records.record(row["snippet"], "cpu", folder)
            try:
                a, b = record.value(row["a"]), record.value(row["b"])
            except (KeyError, records.CorruptRecord):
                cells.append("—")
                continue
            words, ratio, cell = measures.verdict(a, b, "cpu")
            ratios.append(ratio)
            directions.add(measures.direction(words))
            cells.append(cell)
        moved = max(ratios) / min(ratios) if ratios else float("nan")
        ok = len(ratios) == len(runs) and not {1, -1} <= directions and moved <= GOAL_RATIO
        held += ok
        lines.append(f"| {row['page']} | {row['snippet']}: {row['a']} → {row['b']} | {' | '.join(cells)} | "
                     f"{moved:.2f}× | {'held' if ok else '**missed**'} |")
    lines.append("")
    lines.append(f"{held} of {len(rows)} comparisons held both goals over {len(runs)} regenerations "
                 f"(no change of direction; ratio moved by at most {GOAL_RATIO}×). Each cell: the verdict, "
                 f"the median per-process ratio A/B, and its range across the processes of that run.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.reproducibility", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="regenerations to make (default 3)")
    parser.add_argument("--only", action="append", metavar="GLOB", help="snippets to consider (repeatable)")
    parser.add_argument("--report-only", action="store_true", help="report on the regenerations already made")
    parser.add_argument("--committed", action="store_true",
                        help="count the committed CPU records (docs/outputs) as the first run, made by "
                             "`scripts.regenerate` just before: only --runs minus 1 more are made")
    args = parser.parse_args(argv)

    rows = comparisons()
    if args.only:
        rows = [r for r in rows if any(fnmatch.fnmatch(r["snippet"], g) or fnmatch.fnmatch(r["snippet"][:-3], g)
                                       for g in args.only)]
    if not rows:
        print("reproducibility: no CPU md:compare matches", file=sys.stderr)
        return 2
    snippets = sorted({r["snippet"] for r in rows})
    runs = [WHERE / f"run-{i + 1}" for i in range(args.runs)]
    if args.committed:
        runs[0] = records.OUTPUTS
    if not args.report_only:
        started = time.monotonic()
        for number, folder in enumerate(runs, start=1):
            if folder == records.OUTPUTS:
                continue
            print(f"== regeneration {number}/{args.runs}: {len(snippets)} snippets", flush=True)
            shutil.rmtree(folder, ignore_errors=True)
            only = [arg for s in snippets for arg in ("--only", s)]
            status = regenerate.main(["--device", "cpu", "--force", *only, "--outputs-dir", str(folder),
                                      "--failed-dir", str(folder / "failed")])
            if status not in (0, 1):
                return status
        print(f"regenerations made in {time.monotonic() - started:.0f} s", flush=True)
    table = report(rows, runs)
    WHERE.mkdir(parents=True, exist_ok=True)
    (WHERE / "report.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
