"""Record what every snippet prints and keeps, on this machine, under docs/outputs/<device>/ (or, with another
torch release than the site's main one, under docs/outputs/torch-<release>/<device>/).

Run it from the repository root, with a Python that has torch (the README's set-up makes .venv):

    python -m scripts.regenerate                        # every stale snippet, on the best device present
    python -m scripts.regenerate --device cpu           # CPU records, also on a GPU box
    python -m scripts.regenerate --only 'eager_mode/*' --force
    python -m scripts.regenerate --list --device cuda   # the state of each CUDA record; runs nothing
    python -m scripts.regenerate --archive records.tar.gz   # also pack this device's records into one file
    python -m scripts.regenerate --unpack records.tar.gz    # put a packed set of records in place

Each snippet runs in a fresh process (scripts/runner.py) with compiler caches of its own (Inductor, Triton,
the C++ precompiled header), so a cold or warm compile claim never depends on what ran before. A snippet
that times something (its results hold a timing) then runs again in more fresh processes (--processes, 5 by
default), each with new empty caches too, so every process compiles from cold, as the first did. Each
timing in its record pools every process, and a number the processes measured differently is their median
(scripts/records.py merge_runs); what it prints and its files come from the first process. The record
layout and the words fresh, stale, failed, corrupt and missing belong to scripts/records.py.

Text is scrubbed of what is private to the machine (repo, home and temp paths, user and host names, object
addresses). A record is replaced only once its new run has succeeded, by renaming a finished folder into
place: a failing snippet, a timeout or a killed run leaves the previous record as it was, and the failed
run's output is kept under .cache/regenerate/failed/ for reading. A snippet whose record is fresh is skipped
unless --force. With --jobs N, up to N snippets run at a time, in the priority order, and each call of a
benchmark Timer pauses the others until it has timed (scripts/alone.py; the manifest's side_by_side and
timed_sections say so); a snippet that times in a way the lock does not cover (budget.runs_alone) runs alone.

This module is the command line and the run loop; a record's manifest and the scrubbing of private text are
scripts/manifest.py's, packing and unpacking scripts/packing.py's, the budget's plan scripts/budget.py's, the
environment of a snippet's process scripts/run_env.py's. run_one runs one snippet from a RunSpec.

Needs only the Python standard library and what the snippets import (torch, triton, numpy, matplotlib).
Exit status: 0 all recorded or fresh, 1 some snippet failed, 2 bad arguments (nothing written), 130 stopped.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib import util
from pathlib import Path

from scripts import alone, budget, compiler_setup, manifest, measures, packing, records, run_env, skips
from scripts.manifest import GENERIC_USERS, environment, scrub_tree, scrubber, version_of  # noqa: F401 (theirs)
from scripts.packing import pack, swap_into_place, unpack  # noqa: F401 (the CLI's, and callers')
from scripts.records import DEVICES, ROOT
from scripts.runner import TIMED

RUNNER = Path(__file__).resolve().parent / "runner.py"
# The recorder's own CPU runs of the snippets as they are, noted for the suite: the check right after a record
# reads that run instead of running the snippet again (tests/test_facts.py test_fresh_run).
RECORDED = records.CACHE / "runs" / "recorded"


def shown(path: Path) -> str:
    """A path as people read it: relative to the repository where it can be."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class UsageError(Exception):
    """Bad input: reported on one line, exit status 2, nothing written."""


# ---------------------------------------------------------------------------------------------- snippets


def select(snippets: list[str], patterns: list[str] | None) -> list[str]:
    if not patterns:
        return snippets
    chosen = []
    for pattern in patterns:
        hits = [s for s in snippets if fnmatch.fnmatch(s, pattern) or fnmatch.fnmatch(s[:-3], pattern)]
        if not hits:
            raise UsageError(f"--only {pattern!r} matches no snippet under snippets/ (try --list)")
        chosen += [s for s in hits if s not in chosen]
    return sorted(chosen)


# ----------------------------------------------------------------------------------------- environment


def cuda_available() -> bool:
    # Importing torch costs a second or two; skip it where there is plainly no NVIDIA driver.
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists():
        return False
    import torch

    return torch.cuda.is_available()


# ---------------------------------------------------------------------------------------- atomic writes


def recover(device_dir: Path) -> None:
    """Tidy after a killed run: put back a record caught between the two renames, drop half-made ones."""
    if not device_dir.exists():
        return
    for path in sorted(device_dir.rglob(".*")):
        if not path.is_dir():
            continue
        match = re.fullmatch(r"\.(.+)\.(old|new)-\d+", path.name)
        if not match:
            continue
        final = path.with_name(match.group(1))
        if match.group(2) == "old" and not final.exists():
            path.rename(final)
        else:
            shutil.rmtree(path, ignore_errors=True)


def exclusive(device_dir: Path):
    """One regeneration writes a device's records at a time; a second one waits its turn."""
    return records.exclusive(device_dir / ".lock",
                             f"waiting for another regeneration writing to {shown(device_dir)} ...")


def check_writable(device_dir: Path) -> None:
    try:
        device_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=device_dir):
            pass
    except OSError as error:
        raise UsageError(f"cannot write records to {device_dir}: {error.strerror or error}") from None


# ---------------------------------------------------------------------------------------------- running


COMPILER_CACHES = run_env.COMPILER_CACHES


def snippet_env(scratch: Path, device: str, source: str = "", setup: Path | None = None) -> tuple[dict, dict]:
    """The environment of one snippet's process, and the overrides a manifest lists: compiler caches of
    its own, and what run_env decides for the device (on a CPU no GPU, and Triton's interpreter for a snippet
    that launches Triton kernels). With a `setup` (scripts/compiler_setup.py: the suite's runs), its Inductor
    cache starts from the machine's vector-ISA test programs and its $TMPDIR is the shared one, holding
    the precompiled header."""
    caches = dict(zip(COMPILER_CACHES, (
        str(scratch / "cache" / "inductor"),
        str(scratch / "cache" / "triton"),
        str(scratch / "tmp"),  # Inductor keeps its precompiled C++ header under $TMPDIR
    )))
    (scratch / "tmp").mkdir(parents=True, exist_ok=True)
    if setup is not None:
        compiler_setup.seed(setup, Path(caches["TORCHINDUCTOR_CACHE_DIR"]))
        caches["TMPDIR"] = str(setup / compiler_setup.HEADERS)
    overrides = run_env.overrides(device, source)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **caches, **overrides)
    for name in ("TORCH_LOGS", *run_env.unset(device, source)):
        env.pop(name, None)
    return env, overrides


@dataclass(frozen=True)
class RunSpec:
    """What one snippet's run needs to know (run_one): its device, where the snippets are, where its record
    and a failed run's output go, how many fresh processes a timed snippet gets, the limit on each process,
    the monotonic time a --budget ends (None without one), and the compiler set-up its processes start from
    (None: none, as a reader's first run; the suite's runs, which time no compile a check reads, share one)."""

    device: str
    outputs_dir: Path
    failed_dir: Path
    snippets_dir: Path = records.SNIPPETS
    processes: int = records.PROCESSES
    timeout: float = 900.0
    deadline: float | None = None
    setup: Path | None = None

    @classmethod
    def of(cls, args) -> RunSpec:
        """The spec the command line asks for."""
        return cls(args.device, args.outputs_dir, args.failed_dir, args.snippets_dir, args.processes, args.timeout,
                   getattr(args, "deadline", None))


def time_left(spec: RunSpec) -> float:
    """The per-snippet limit, cut to what is left of a --budget."""
    if spec.deadline is None:
        return spec.timeout
    return max(1.0, min(spec.timeout, spec.deadline - time.monotonic()))


RUNNING: set[subprocess.Popen] = set()  # snippet processes now running, from any thread


def stop_all() -> None:
    """Kill every snippet process still running (those of --jobs' other threads on Ctrl-C or SIGTERM)."""
    for process in list(RUNNING):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def launch(command: list[str], cwd: Path, env: dict, out: Path, err: Path, timeout: float) -> tuple[int | None, str]:
    """Run one snippet process, its output to files; (exit status or None, reason)."""
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
        RUNNING.add(process)
        try:
            status = process.wait(timeout=timeout)
            return status, f"exit status {status}"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None, f"timed out after {timeout:.3g} s"
        except BaseException:  # Ctrl-C or SIGTERM: stop the snippet too
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            RUNNING.discard(process)


def repeat(source: Path, work: Path, scratch: Path, env: dict, args: RunSpec, progress) -> tuple[int | None, str]:
    """Run a snippet that times something again in fresh processes (records.PROCESSES in all), each with empty
    compiler caches of its own as the first had (a compile time is then the same quantity in every process),
    and pool each timing over every process into results.json."""
    results_path = work / records.FILES / records.RESULTS
    first = json.loads(results_path.read_text()) if results_path.exists() else {}
    if args.processes < 2 or not any(records.timings_in(first)):
        return 0, ""
    runs = [first]
    timed = [read_timed(work)]
    progress(f"process 1/{args.processes} done; it times something, so it runs in {args.processes - 1} more")
    for number in range(2, args.processes + 1):
        progress(f"process {number}/{args.processes}")
        again = scratch / f"repeat-{number}"
        (again / records.FILES).mkdir(parents=True)
        command = [sys.executable, str(RUNNER), str(source), str(again)]
        cold, _ = snippet_env(again, args.device, source.read_text(), args.setup)
        cold = {**env, **{name: cold[name] for name in COMPILER_CACHES}}
        status, reason = launch(command, again / records.FILES, cold, again / records.STDOUT, again / "stderr.txt",
                                time_left(args))
        if status != 0:
            shutil.copy(again / "stderr.txt", work / "stderr.txt")
            return status, f"{reason} in process {number} of {args.processes}"
        runs.append(json.loads((again / records.FILES / records.RESULTS).read_text()))
        timed.append(read_timed(again))
        shutil.rmtree(again, ignore_errors=True)
    (work / TIMED).write_text(json.dumps(manifest.merge_timed(timed)) + "\n")
    try:
        results_path.write_text(json.dumps(measures.merge_runs(runs), indent=1) + "\n")
    except (KeyError, IndexError, TypeError) as error:
        return 1, (f"a later process kept other timings than the first ({error}): "
                   f"a snippet must time the same things every run")
    return 0, ""


def read_timed(folder: Path) -> dict:
    """What the runner wrote about a process's timed calls (the lock, the GPU's clocks), removed from the
    run's folder: the manifest keeps it, not the record's files."""
    path = folder / TIMED
    if not path.is_file():
        return {}
    said = json.loads(path.read_text())
    path.unlink()
    return said


def settle(running: list[concurrent.futures.Future]) -> list[concurrent.futures.Future]:
    """The futures still running; one that ended raising raises here."""
    for future in running:
        if future.done():
            future.result()
    return [future for future in running if not future.done()]


def not_run(work: Path, device: str, why: str) -> tuple[int, str]:
    """The record of a snippet this stack cannot run (scripts/skips.py): the one line that says why."""
    (work / records.STDOUT).write_text(why + "\n")
    (work / records.SECTIONS).write_text(json.dumps({"": why + "\n"}, indent=1) + "\n")
    results = {"device": device, "cannot_run": why}
    (work / records.FILES / records.RESULTS).write_text(json.dumps(results, indent=1) + "\n")
    return 0, why


def ran_on(work: Path, device: str) -> tuple[int, str] | None:
    """A failure when the snippet says it ran on another device than the record's (a GPU run whose JAX
    found no GPU, say): its results would be filed under the wrong device."""
    path = work / records.FILES / records.RESULTS
    said = json.loads(path.read_text()).get("device") if path.exists() else None
    if said is not None and said != device:
        message = f"it ran on {said}, not {device}: its record would be filed under the wrong device"
        (work / "stderr.txt").open("a").write(message + "\n")
        return 1, message
    return None


def run_one(snippet: str, args: RunSpec, env_info: dict, progress=lambda text: None,
            side_by_side: int = 1) -> tuple[bool, float, str]:
    """Run one snippet into a hidden folder beside its record (again in fresh processes if it times
    something); swap it in if every run succeeded. `side_by_side`: how many snippets the recorder ran at once
    while this one ran (--jobs), said in its manifest."""
    source = args.snippets_dir / snippet
    final = records.record_dir(snippet, args.device, args.outputs_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.with_name(f".{final.name}.new-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    (work / records.FILES).mkdir(parents=True)
    scratch = Path(tempfile.mkdtemp(prefix="regenerate-"))
    scrub = scrubber([scratch, work, *([args.setup] if args.setup else [])])
    env, overrides = snippet_env(scratch, args.device, source.read_text(), args.setup)
    command = [sys.executable, str(RUNNER), str(source), str(work)]
    started = time.monotonic()
    try:
        why_not = skips.cannot_run(snippet, env)
        if why_not:
            status, reason = not_run(work, args.device, why_not)
        else:
            status, reason = launch(command, work / records.FILES, env, work / records.STDOUT,
                                    work / "stderr.txt", time_left(args))
        if status == 0 and not why_not:
            status, why = repeat(source, work, scratch, env, args, progress)
            reason = why or reason
        if status == 0:
            status, reason = ran_on(work, args.device) or (status, reason)
    except BaseException:  # drop the half-made record
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    duration = time.monotonic() - started
    shutil.rmtree(scratch, ignore_errors=True)
    scrub_tree(work, scrub)
    results_path = work / records.FILES / records.RESULTS
    try:
        unsteady = measures.unsteady_timings(json.loads(results_path.read_text())) if results_path.is_file() else {}
    except (ValueError, AttributeError):
        unsteady = {}

    timed = manifest.merge_timed([read_timed(work)])
    moved = manifest.clock_moved(timed)
    made = manifest.make(snippet, source, args.device, status, duration, env_info, overrides, work / records.FILES,
                         side_by_side, unsteady, timed, moved)
    (work / records.MANIFEST).write_text(json.dumps(made, indent=2) + "\n")
    if status != 0:
        kept = records.record_dir(snippet, args.device, args.failed_dir)
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(work), kept)
        tail = (kept / "stderr.txt").read_text(errors="replace").strip().splitlines()[-15:]
        detail = "\n".join("      " + line for line in tail)
        return False, duration, f"{reason}; output kept in {shown(kept)}\n{detail}"
    swap_into_place(work, final)
    # A success supersedes an earlier failure of the same snippet.
    shutil.rmtree(records.record_dir(snippet, args.device, args.failed_dir), ignore_errors=True)
    if args.snippets_dir.resolve() == records.SNIPPETS and args.outputs_dir.resolve().is_relative_to(records.OUTPUTS):
        note_recorded(snippet, args, env_info)  # a record of this repository: the suite's check reuses it
    return True, duration, why_not or unsteady_warning(unsteady) or (
        f"CLOCK MOVED while timing {', '.join(moved)} (its manifest's timed_sections)" if moved else "")


def run_key(source: Path, env_info: dict, env) -> str:
    """What a CPU run of a snippet here depends on: its source, the code that runs it and writes its manifest,
    every installed package, this machine (its manifest environment) and the settings of env that change a
    run and that no one decides for it (run_env.settings). Not the probe the recorder adds to the environment:
    it is what a call cost here when it was measured (with the time it was), which the suite's check, asking
    for the environment without it, could never match."""
    code = [RUNNER, Path(records.__file__), Path(__file__), Path(manifest.__file__), Path(run_env.__file__)]
    machine = {name: value for name, value in env_info.items() if name != "probe"}
    return records.content_key(source, *code, run_env.installed(), json.dumps(machine, sort_keys=True),
                               json.dumps(sorted(run_env.settings(env).items())))


def note_path(snippet: str, env_info: dict, where: Path) -> Path:
    """One note per snippet and torch release: recording a snippet on torch 2.13 after 2.15 keeps 2.15's
    note, which the main environment's check reads."""
    return where / f"{snippet.replace('/', '__')}@{env_info.get('torch', '')}.json"


def note_recorded(snippet: str, spec: RunSpec, env_info: dict, env=os.environ, where: Path = RECORDED) -> None:
    """Note a CPU record just made of a snippet of this repository, for recorded_run."""
    if spec.device != "cpu":
        return
    folder = records.record_dir(snippet, "cpu", spec.outputs_dir)
    note = {"key": run_key(spec.snippets_dir / snippet, env_info, env), "record": str(folder.resolve())}
    where.mkdir(parents=True, exist_ok=True)
    path = note_path(snippet, env_info, where)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(note) + "\n")
    os.replace(partial, path)


def recorded_run(snippet: str, env_info: dict, env, where: Path = RECORDED,
                 snippets_dir: Path = records.SNIPPETS) -> Path | None:
    """The folder of the recorder's own CPU run of a snippet, made here (note_recorded) from the snippet as it
    is, by the same code, installs and settings: the run the suite's check would make; None where there is
    none (a clean clone has none)."""
    path = note_path(snippet, env_info, where)
    if not path.is_file():
        return None
    note = json.loads(path.read_text())
    folder = Path(note["record"])
    if note.get("key") != run_key(snippets_dir / snippet, env_info, env) or not folder.is_dir():
        return None
    record = records.Record(snippet, "cpu", folder, snippets_dir)
    return folder if record.state == "fresh" and record.manifest.get("exit_status") == 0 else None


def unsteady_warning(unsteady: dict[str, list[float]]) -> str:
    """The line a record made under load gets (its manifest says "unsteady"); empty for a steady one."""
    if not unsteady:
        return ""
    said = "; ".join(f"{key}: process medians {low:,.1f} to {high:,.1f} µs ({high / low:.0f}×)"
                     for key, (low, high) in unsteady.items())
    return (f"UNSTEADY, its processes disagree beyond {measures.UNSTEADY:g}× ({said}): made while something "
            f"else ran; remake it on a quiet machine before committing it")


def list_states(args, chosen: list[str]) -> int:
    """One line per snippet with its record's state on the device, then a count line; by default one column
    and one count line per torch release that has records (and the main one, and the one installed)."""
    label = records.LABELS[args.device]
    if args.outputs_dir is not None:  # one folder of records
        roots = {"": args.outputs_dir}
        print(f"{label} records under {shown(args.outputs_dir / args.device)}/:")
    else:
        roots = {release: root for release, root in records.release_roots().items()
                 if release == records.MAIN or records.find_records(args.device, root)}
        if (running := records.release_of(version_of("torch"))) and running not in roots:
            roots[running] = records.release_root(running)
        print(f"{label} records under {shown(records.OUTPUTS)}/, by the torch release that made them "
              f"(torch-<release>/ for all but the main one):")
        print("  " + "  ".join(f"{'torch ' + release:13}" for release in roots))
    counts = {release: dict.fromkeys(records.STATES, 0) for release in roots}
    unsteady, drafts = dict.fromkeys(roots, 0), dict.fromkeys(roots, 0)
    for snippet in chosen:
        cells, notes = [], []
        for release, root in roots.items():
            failed = args.failed_dir or records.release_root(release, records.FAILED)
            record = records.Record(snippet, args.device, records.record_dir(snippet, args.device, root),
                                    args.snippets_dir, failed)
            state = record.state
            counts[release][state] += 1
            if state == "fresh" and record.draft:
                drafts[release] += 1
                state = "draft"  # fresh, but made in one process: the next run without --processes 1 remakes it
            cells.append(f"{state:{8 if release == '' else 13}}")
            if spread := measures.unsteady_of(record):
                unsteady[release] += 1
                notes.append(f"unsteady{f' in torch {release}' if release else ''}: "
                             + ", ".join(f"{key} {low:,.1f}–{high:,.1f} µs" for key, (low, high) in spread.items()))
        print(f"  {'  '.join(cells)} {snippet}" + "".join(f"  ({note})" for note in notes))
    for release, count in counts.items():
        summary = ", ".join(f"{n} {state}" for state, n in count.items() if n)
        summary += f" ({drafts[release]} of them drafts, made in one process)" if drafts[release] else ""
        summary += f"; {unsteady[release]} unsteady (made under load)" if unsteady[release] else ""
        main = " (main)" if release == records.MAIN else ""
        print(f"{label}{f', torch {release}{main}' if release else ''}: {len(chosen)} snippets: {summary}")
    return 0


def list_plan(args, chosen: list[str]) -> int:
    """How budgeted calls would record the snippets that are not fresh: the priority order, each part's
    snippets and expected seconds, from the last records' durations."""
    device = args.device
    # The records this machine's torch would make, as a budgeted run here judges them.
    outputs = args.outputs_dir or records.release_root(records.release_of(version_of("torch")))
    todo = [s for s in chosen if (r := records.Record(s, device, records.record_dir(s, device, outputs),
                                                      args.snippets_dir)).state != "fresh" or r.draft]
    expected = budget.estimates(todo, device, args.records_base, args.snippets_dir)
    first = budget.compared()
    plan, too_long = budget.parts(budget.order(todo, expected, first), expected, args.budget)
    if not todo:
        print(f"all {len(chosen)} {records.LABELS[device]} records are fresh: nothing to make")
        return 0
    print(f"{len(todo)} of {len(chosen)} {records.LABELS[device]} records to make, in calls of --budget "
          f"{args.budget:g} s ({budget.RESERVE_S:g} s of each kept for packing); each expected to take what its "
          f"last record took (an estimate), one at a time: with --jobs the others share the machine while one "
          f"marked 'alone' runs by itself, so a part makes at least this much:")
    for number, part in enumerate(plan, start=1):
        print(f"part {number}: {len(part)} snippets, about {sum(expected[s][0] for s in part):.0f} s")
        for snippet in part:
            mark = ("compared" if snippet in first else "") + (" alone" if budget.runs_alone(
                snippet, args.snippets_dir) else "")
            print(f"  {expected[snippet][0]:7.1f} s  {mark.strip():<14}  {snippet}  ({expected[snippet][1]})")
    for snippet in too_long:
        print(f"no part: {snippet} is expected to take {expected[snippet][0]:.0f} s, more than a whole budget")
    return 0


def regenerate(args) -> int:
    snippets = records.find_snippets(args.snippets_dir)
    if not snippets:
        raise UsageError(f"no snippets found under {args.snippets_dir}")
    chosen = select(snippets, args.only)
    if args.device == "cuda":
        for snippet in [s for s in chosen if s in skips.CPU_ONLY]:
            chosen.remove(snippet)
            if args.only or not args.list:
                print(f"not for cuda: {snippet}: {skips.CPU_ONLY[snippet]}", flush=True)
    if args.list and args.budget:
        return list_plan(args, chosen)
    if args.list:
        return list_states(args, chosen)
    device_dir = args.outputs_dir / args.device
    check_writable(device_dir)
    with exclusive(device_dir):
        recover(device_dir)
        counts = {"ran": 0, "fresh": 0, "failed": 0}
        env_info = None
        started = time.monotonic()
        made, waiting, unsteady = [], [], []
        if args.budget:
            expected = budget.estimates(chosen, args.device, args.records_base, args.snippets_dir)
            chosen = budget.order(chosen, expected, budget.compared())
            args.deadline = started + args.budget - budget.RESERVE_S
            print(f"budget {args.budget:g} s: snippets in priority order (the comparisons a GPU reader needs "
                  f"first, then the site's other timed comparisons, then the rest, shortest first); a snippet "
                  f"starts only if its last record's duration fits in what is left", flush=True)
        together: set[str] = set()
        if args.jobs > 1:  # side by side, each timed call pausing the others; what the lock cannot cover alone
            together = {s for s in chosen if not budget.runs_alone(s, args.snippets_dir)}
            print(f"--jobs {args.jobs}: {len(together)} snippet(s) run up to {args.jobs} at a time, each call "
                  f"of a benchmark Timer pausing the others until it has timed (scripts/alone.py); the "
                  f"{len(chosen) - len(together)} that time a compile or keep an autotuner's choice run alone, "
                  f"in their turn", flush=True)
        width = len(str(len(chosen)))
        printing = threading.Lock()

        def say(text: str) -> None:
            with printing:
                print(text, flush=True)

        def attempt(index: int, snippet: str, side_by_side: int) -> None:
            nonlocal env_info
            prefix = f"[{index:>{width}}/{len(chosen)}]"
            folder = records.record_dir(snippet, args.device, args.outputs_dir)
            record = records.Record(snippet, args.device, folder, args.snippets_dir, args.failed_dir)
            # A draft (made with --processes 1) is remade, unasked, by a run with more processes.
            fewer = (record.processes or args.processes) < args.processes if record.exists else False
            if not args.force and record.state == "fresh" and not fewer:
                with printing:
                    counts["fresh"] += 1
                say(f"{prefix} fresh   {snippet}")
                return
            if args.budget:
                left = args.deadline - time.monotonic()
                if expected[snippet][0] > left:
                    waiting.append(snippet)
                    say(f"{prefix} later   {snippet}: expected {expected[snippet][0]:.0f} s (from "
                        f"{expected[snippet][1]}), {max(left, 0):.0f} s of the budget left")
                    return
            with printing:
                if env_info is None:
                    probing = not os.environ.get(run_env.NO_PROBE)
                    if probing:
                        print("probe: what an empty call and a compiled one cost on this machine, in a process "
                              "of its own (scripts/probe.py; every manifest of this run keeps it) ...", flush=True)
                    started = time.monotonic()
                    env_info = environment(args.device, probe=True)
                    if probing:
                        print(f"probe: measured in {time.monotonic() - started:.1f} s", flush=True)
            say(f"{prefix} running {snippet} ..." + (f" (beside up to {side_by_side - 1} others)"
                                                      if side_by_side > 1 else ""))
            ok, duration, detail = run_one(
                snippet, RunSpec.of(args), env_info, progress=lambda text: say(f"{prefix}   ... {snippet}: {text}"),
                side_by_side=side_by_side)
            with printing:
                counts["ran" if ok else "failed"] += 1
                made.extend([snippet] if ok else [])
                unsteady.extend([snippet] if ok and detail.startswith("UNSTEADY") else [])
            verdict = "ran    " if ok else "FAILED "
            say(f"{prefix} {verdict} {snippet} in {duration:.1f} s" + (f": {detail}" if detail else ""))
            if not ok and args.budget and "timed out" in detail and time.monotonic() >= args.deadline - 1:
                seen = budget.note_stop(args.outputs_dir / args.device, snippet, duration, detail, args.processes,
                                        records.release_of(version_of("torch")))
                say(f"{prefix}   the budget stopped it: it needs at least {seen['at_least_s']:.0f} s here, which "
                    f"later plans expect ({records.STOPS}, packed with the records)")

        try:
            with alone.together(args.jobs, lambda: [p.pid for p in list(RUNNING)], stop_all) as pool:
                running: list[concurrent.futures.Future] = []
                for index, snippet in enumerate(chosen, start=1):
                    if pool is None or snippet not in together:
                        concurrent.futures.wait(running)  # its turn: the machine to itself
                        running = settle(running)
                        attempt(index, snippet, 1)
                        continue
                    while len(running := settle(running)) >= args.jobs:
                        concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                    running.append(pool.submit(attempt, index, snippet, args.jobs))
                concurrent.futures.wait(running)
                settle(running)
        except (KeyboardInterrupt, Stopped):
            if args.budget and args.archive and made:  # what finished before the stop still travels
                packed, _ = pack(args.outputs_dir, args.device, args.archive, only=made)
                print(f"stopped: packed the {packed} {args.device} records this part made into {args.archive}",
                      file=sys.stderr, flush=True)
            raise
        if args.archive and counts["failed"] and not args.pack_failed and not args.budget:
            print(f"regenerate: not packing {args.archive}: {counts['failed']} snippet(s) failed, and their "
                  f"old records would travel as if this run had made them; fix them, or add --pack-failed to "
                  f"pack them marked as failed", file=sys.stderr)
        elif args.archive:
            # A budgeted part carries what it made; the parts before it were unpacked at home already.
            # A failed run travels only when asked: in a part, the next part runs that snippet again anyway.
            carry_failed = args.pack_failed or not args.budget
            packed, failed = pack(args.outputs_dir, args.device, args.archive,
                                  args.failed_dir if carry_failed else None, only=made if args.budget else None)
            print(f"packed {packed} {args.device} records into {args.archive}"
                  + (f", with {failed} failed run(s) that mark their records failed at home" if failed else "")
                  + (f"; the {counts['failed']} that failed are not in it" if args.budget and counts["failed"]
                     and not args.pack_failed else ""))
    total = time.monotonic() - started
    print(
        f"regenerate ({args.device}): {counts['ran']} ran, {counts['fresh']} fresh, "
        f"{counts['failed']} failed in {total:.1f} s"
        + (f", {len(waiting)} left for a later part" if args.budget else "")
    )
    if unsteady:
        print(f"warning: {len(unsteady)} record(s) made unsteady, their fresh processes disagreeing beyond "
              f"{measures.UNSTEADY:g}× (their manifests say so, and their pages will): {', '.join(unsteady)}; "
              f"remake them on a quiet machine", file=sys.stderr)
    if waiting:
        print(f"budget: {len(waiting)} snippet(s) left, about {sum(expected[s][0] for s in waiting):.0f} s by "
              f"their estimates; unpack this part at home, commit it, and run the same command again to go on")
    return 1 if counts["failed"] else 0


# ------------------------------------------------------------------------------------------------- main


EXAMPLES = """examples:
  python -m scripts.regenerate --device cpu                   record every stale snippet on the CPU
  python -m scripts.regenerate --device cuda --archive cuda-records.tar.gz
                                                              on a GPU box: record, then pack for transport
  python -m scripts.regenerate --unpack cuda-records.tar.gz   put records brought home in place
  python -m scripts.regenerate --list --device cuda           the state of each CUDA record (no GPU needed)
  python -m scripts.regenerate --only 'graph_mode/*' --force  rerun some snippets even if fresh
  python -m scripts.regenerate --device cuda --budget 9m --archive part.tar.gz
                                                              one part of a short GPU window: what fits
                                                              in 9 minutes, in priority order; run it
                                                              again (after unpacking) for the next part
  python -m scripts.regenerate --list --device cuda --budget 9m
                                                              how calls of 9 minutes would share the work
  python -m scripts.regenerate --notebooks                    run each chapter's notebook whose code changed
                                                              in a fresh kernel and keep its receipt

exit status: 0 ok, 1 a snippet failed (its old record is kept), 2 bad arguments (nothing written),
130 interrupted (Ctrl-C or SIGTERM)."""


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def time_budget(text: str) -> float:
    try:
        return budget.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.regenerate",
        description="Run snippets and record their outputs under docs/outputs/<device>/.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", choices=DEVICES, help="default: cuda when torch sees one, else cpu")
    parser.add_argument("--only", action="append", metavar="GLOB",
                        help="snippets to consider, e.g. 'eager_mode/*' (repeatable)")
    parser.add_argument("--force", action="store_true", help="rerun snippets whose record is fresh")
    parser.add_argument("--list", action="store_true",
                        help="say the state of each record (fresh, stale, failed, corrupt, missing); run nothing")
    parser.add_argument("--archive", type=Path, metavar="FILE",
                        help="after running, pack all of this device's records into FILE (.tar.gz)")
    parser.add_argument("--pack-failed", action="store_true",
                        help="with --archive: pack even if some snippets failed (their records are marked failed)")
    parser.add_argument("--notebooks", action="store_true",
                        help="run the chapters' notebooks whose receipt is missing or stale (all with --force; "
                             "some with --only) in fresh kernels, and write docs/outputs/notebook-runs.json; "
                             "records nothing else")
    parser.add_argument("--unpack", type=Path, nargs="+", metavar="FILE",
                        help="put the records packed in each FILE (several parts, in order) in place under the "
                             "outputs folder; run nothing")
    parser.add_argument("--processes", type=int, default=records.PROCESSES, metavar="N",
                        help=f"fresh processes a snippet that times runs in; its timings pool them all "
                             f"(default {records.PROCESSES}; 1 for a quick look, not for records)")
    parser.add_argument("--budget", type=time_budget, metavar="TIME",
                        help="stop starting snippets that would not finish within TIME (540, 9m, 1h); run in "
                             "priority order; with --archive, pack what this call made; with --list, show how "
                             "calls of TIME would share the work")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="run up to N snippets side by side, each call of a benchmark Timer pausing the "
                             "others until it has timed; a snippet that times a compile or keeps an autotuner's "
                             "choice runs alone in its turn (default 1: one at a time); each manifest says how "
                             "it ran")
    parser.add_argument("--timeout", type=positive_seconds, default=900, metavar="S",
                        help="per-snippet limit in seconds (default 900)")
    parser.add_argument("--snippets-dir", type=Path, default=records.SNIPPETS, help=argparse.SUPPRESS)
    parser.add_argument("--outputs-dir", type=Path, help=argparse.SUPPRESS)  # default: by torch release
    parser.add_argument("--failed-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.records_base = args.outputs_dir or records.OUTPUTS  # every release's records, for --budget's estimates
    if args.unpack and (args.list or args.archive or args.only or args.force or args.device):
        parser.error("--unpack puts an archive's records in place and runs nothing: use it alone")
    if args.unpack and args.budget:
        parser.error("--unpack runs nothing, so --budget means nothing with it")
    if args.notebooks and (args.list or args.archive or args.unpack or args.budget or args.device == "cuda"):
        parser.error("--notebooks runs the chapters' notebooks on this machine's CPU: use it alone, with --force "
                     "or --only")
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, not {args.jobs}")
    if args.list and (args.archive or args.force):
        parser.error("--list runs nothing, so --archive and --force mean nothing with it")
    return args


def require_torch() -> None:
    if util.find_spec("torch") is None:
        raise UsageError(
            f"{sys.executable} has no torch, and every snippet needs it. Use the project's venv "
            f"({records.REMAKE} ..., after the README's test set-up) or a Python with torch installed"
        )


class Stopped(Exception):
    """SIGTERM, reported like Ctrl-C."""


def stop(signum, frame):
    raise Stopped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    for name in ("outputs_dir", "failed_dir", "snippets_dir"):  # a snippet runs in a folder of its own
        if getattr(args, name) is not None:
            setattr(args, name, getattr(args, name).resolve())
    # A polite kill (SIGTERM) unwinds like Ctrl-C, so the running snippet is stopped with us.
    signal.signal(signal.SIGTERM, stop)
    try:
        if args.unpack:
            outputs = args.outputs_dir or records.OUTPUTS
            for archive in args.unpack:
                try:
                    count = unpack(archive, outputs, args.failed_dir or records.FAILED)
                except packing.ArchiveError as error:
                    raise UsageError(str(error)) from None
                print(f"unpacked {count} records from {archive} into {shown(outputs)}")
            return 0
        if args.list:
            args.device = args.device or ("cuda" if cuda_available() else "cpu")
            return regenerate(args)
        require_torch()
        if args.notebooks:
            from scripts import notebook_runs  # needs the docs tools and a Jupyter kernel, as snippets do not

            try:
                return notebook_runs.regenerate(args.force, args.only)
            except notebook_runs.NoMatch as error:
                raise UsageError(str(error)) from None
        release = records.release_of(version_of("torch"))
        if args.outputs_dir is None:
            args.outputs_dir = records.release_root(release)
            if release != records.MAIN:
                print(f"torch {release} is not the site's main release ({records.MAIN}): its records go under "
                      f"{shown(args.outputs_dir)}/", flush=True)
        args.failed_dir = args.failed_dir or records.release_root(release, records.FAILED)
        if args.device == "cuda" and not cuda_available():
            raise UsageError("--device cuda, but torch sees no CUDA device on this machine "
                             "(--list --device cuda works anywhere)")
        args.device = args.device or ("cuda" if cuda_available() else "cpu")
        if args.archive and not args.archive.parent.is_dir():
            raise UsageError(f"--archive {args.archive}: folder {args.archive.parent} does not exist")
        return regenerate(args)
    except UsageError as error:
        print(f"regenerate: error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Stopped):
        print("regenerate: interrupted; records already replaced stay, the others are as they were",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`--list | head`): stop quietly, without a traceback at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
