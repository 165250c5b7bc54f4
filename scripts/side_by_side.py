"""Does `regenerate --jobs` change a record's timings? One timed snippet recorded twice in fresh scratch
folders: alone, then beside other snippets with the lock of scripts/alone.py pausing them while it times. The
report gives each timing's median both ways, their ratio, and each way's per-process medians, so the answer
is read against the record's own spread.

    python -m scripts.side_by_side --device cuda --snippet optimizations/fusion.py --jobs 8 --into check.json
    python -m scripts.side_by_side --device cpu --snippet dissecting/bench_size_sweep.py --jobs 2

Companions (`--beside`, repeatable globs) default to the longest-running snippets whose records time nothing
and which may run side by side, as many as fill the other jobs twice. Nothing under docs/outputs changes;
the report goes to --into (default: docs/outputs/<device>/side-by-side-check.json, for committing with the
records). Standard library only, like the recorder it drives.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import budget, measures, records


def companions(snippet: str, device: str, count: int) -> list[str]:
    """The longest snippets that time nothing and may run side by side (their last record's duration)."""
    found = []
    for other in records.find_snippets():
        if other == snippet or budget.runs_alone(other):
            continue
        made = [r for r in records.releases_of(other, "cpu") if r.state != "corrupt"]
        if made and not any(records.timings_in(made[0].results)):
            found.append((float(made[0].manifest.get("duration_s", 0)), other))
    return [name for _, name in sorted(found, reverse=True)[:count]]


def record(device: str, only: list[str], jobs: int, processes: int, into: Path) -> float:
    command = [sys.executable, "-m", "scripts.regenerate", "--device", device, "--force", "--jobs", str(jobs),
               "--processes", str(processes), "--outputs-dir", str(into / "outputs"),
               "--failed-dir", str(into / "failed"), *[a for name in only for a in ("--only", name)]]
    print("+", " ".join(command[1:]), flush=True)
    started = time.monotonic()
    done = subprocess.run(command, cwd=records.ROOT)
    if done.returncode != 0:
        raise SystemExit(f"side_by_side: the recorder failed (exit {done.returncode}); its output is above")
    return time.monotonic() - started


def timings(folder: Path, snippet: str, device: str) -> tuple[dict, dict]:
    made = records.Record(snippet, device, records.record_dir(snippet, device, folder / "outputs"))
    return dict(records.timings_in(made.results)), made.manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=records.DEVICES, required=True)
    parser.add_argument("--snippet", required=True, help="a timed snippet, as dir/name.py")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--processes", type=int, default=records.PROCESSES)
    parser.add_argument("--beside", action="append", metavar="GLOB", help="companions (default: chosen)")
    parser.add_argument("--into", type=Path)
    args = parser.parse_args(argv)
    if args.snippet not in records.find_snippets():
        parser.error(f"no snippet {args.snippet} under snippets/")
    if budget.runs_alone(args.snippet):
        parser.error(f"{args.snippet} times what the lock cannot see (budget.runs_alone): it never runs beside "
                     f"others, so there is nothing to check")
    if args.jobs < 2:
        parser.error("--jobs must be 2 or more: side by side is the point")
    beside = ([s for s in records.find_snippets() if any(fnmatch.fnmatch(s, g) for g in args.beside)]
              if args.beside else companions(args.snippet, args.device, 2 * (args.jobs - 1)))
    into = args.into or records.OUTPUTS / args.device / "side-by-side-check.json"
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as scratch:
        alone_dir, together_dir = Path(scratch) / "alone", Path(scratch) / "together"
        alone_s = record(args.device, [args.snippet], 1, args.processes, alone_dir)
        # The timed snippet first in the list, so it starts while its companions start.
        together_s = record(args.device, [args.snippet, *beside], args.jobs, args.processes, together_dir)
        alone_t, alone_m = timings(alone_dir, args.snippet, args.device)
        together_t, together_m = timings(together_dir, args.snippet, args.device)
    rows = {}
    for key, timing in alone_t.items():
        other = together_t[key]
        rows[key] = {"work": timing.get("work"), "alone_us": timing["median_us"], "beside_us": other["median_us"],
                     "beside_over_alone": other["median_us"] / timing["median_us"],
                     "alone_process_medians_us": timing.get("process_medians_us"),
                     "beside_process_medians_us": other.get("process_medians_us"),
                     "verdict": measures.judge(timing, other, args.device)}  # the site's rule, beside vs alone
    report = {"snippet": args.snippet, "device": args.device, "jobs": args.jobs, "processes": args.processes,
              "beside": beside, "alone_s": round(alone_s, 1), "together_s": round(together_s, 1),
              "environment": alone_m.get("environment"), "lock": together_m.get("timed_sections"),
              "side_by_side": together_m.get("side_by_side"), "timings": rows}
    into.parent.mkdir(parents=True, exist_ok=True)
    into.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\n{args.snippet} on {args.device}, alone and beside {len(beside)} others ({args.jobs} jobs): "
          f"{alone_s:.0f} s and {together_s:.0f} s of recording")
    for key, row in rows.items():
        print(f"  {key:<40} alone {row['alone_us']:>10.1f} us  beside {row['beside_us']:>10.1f} us  "
              f"x{row['beside_over_alone']:.3f}  ({row['verdict']})")
    print(f"report: {into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
