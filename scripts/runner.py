"""Run one snippet as `__main__` and collect what its record needs, so the snippet itself holds only the lesson.

    python scripts/runner.py SNIPPET FOLDER

runs SNIPPET with FOLDER/files as its working folder and writes, beside what the recorder captures:

    FOLDER/sections.json        what each named section printed (`# --8<-- [start:NAME]` ... `[end:NAME]`),
                                found from the line of the snippet's top-level statement being executed;
                                text printed outside every section is filed under ""
    FOLDER/files/results.json   the snippet's module-level `results` dict, if it has one
    FOLDER/files/...            whatever the snippet wrote to its working folder

A snippet fills `results` with plain values, and with a few objects the runner knows how to keep:

    torch.utils.benchmark.Measurement   {"work", "threads", "median_us", "iqr_us", "q1_us", "q3_us", "n",
                                         "times_us"}: "work" is the Timer's label
    torch.profiler.profile              its Chrome trace, saved as <key>.trace.json (host and path fields
                                        dropped); the value becomes {"trace": "<key>.trace.json"}
    torch.fx.GraphModule or Graph,      the graphs as text, saved as <key>.fxgraph.txt;
      or a list of them                 the value becomes {"fxgraph": "<key>.fxgraph.txt", "graphs": n}
    tensors, numpy values, tuples,      plain numbers and lists; dtypes, devices and paths as text
      sets, dtypes, devices, paths
    results["files"] = {NAME: text}     each text saved as the file NAME beside results.json (compiler
                                        output too long for results.json); the value becomes the names

<key> is the value's dotted place in `results` ("traces.eager"). A reader who copies a snippet out and runs
it sees the same output and is left with a clean folder. The recorder runs this file in a fresh process;
the tests call `run()` in theirs. Standard library only (torch is used where the snippet brought it); the
record's file names are defined here, and scripts/records.py reads them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.util
import io
import json
import math
import os
import re
import runpy
import sys
import threading
from pathlib import Path
from typing import Any

# A run's folder, as a record keeps it (scripts/records.py reads these names from here): what the snippet
# printed, what each section printed, and the snippet's working folder with its results.
STDOUT, SECTIONS, FILES, RESULTS = "stdout.txt", "sections.json", "files", "results.json"

MARKER = re.compile(r"#\s*--8<--\s*\[(start|end):([\w-]+)\]")
TRACE_PRIVATE = ("host_name", "hostName", "traceName", "distributedInfo")


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
            if name in starts or name in spans:
                raise ValueError(f"line {number}: section '{name}' starts twice")
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


# --------------------------------------------------------------------------------------- keeping results


class Keeper:
    """Turns a snippet's `results` into JSON, saving traces and graphs as files beside it."""

    def __init__(self, folder: Path):
        self.folder = folder

    def keep(self, value: Any, key: str) -> Any:
        if key == "files" and isinstance(value, dict):
            return self.files(value)
        kind = type(value)
        name = f"{kind.__module__}.{kind.__qualname__}"
        if isinstance(value, dict):
            return {str(k): self.keep(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if name == "torch.utils.benchmark.utils.common.Measurement":
            return timing(value)
        if name == "torch.profiler.profiler.profile":
            return {"trace": self.trace(value, key)}
        graphs = graph_texts(value)
        if graphs is not None:
            file = f"{key}.fxgraph.txt"
            (self.folder / file).write_text("\n".join(graphs))
            return {"fxgraph": file, "graphs": len(graphs)}
        if isinstance(value, (list, tuple, set, frozenset)):
            items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
            return [self.keep(v, f"{key}.{i}") for i, v in enumerate(items)]
        if hasattr(value, "tolist") and callable(value.tolist):  # tensors, numpy arrays and scalars
            return self.keep(value.tolist(), key)
        if name in ("torch.dtype", "torch.device") or isinstance(value, Path):
            return str(value)
        place = "results" + "".join(f"[{part!r}]" for part in key.split("."))
        raise TypeError(f"{place} holds a {name}, which the runner cannot keep: store plain values "
                        f"(see scripts/runner.py)")

    def files(self, texts: dict) -> list[str]:
        for name, text in texts.items():
            if "/" in name or name.startswith(".") or name == RESULTS:
                raise ValueError(f"results['files'][{name!r}]: a file name of its own, without folders")
            if not isinstance(text, (str, bytes)):
                raise TypeError(f"results['files'][{name!r}] holds a {type(text).__name__}: give text or bytes")
            data = text.encode() if isinstance(text, str) else text
            (self.folder / name).write_bytes(data)
        return sorted(texts)

    def trace(self, prof, key: str) -> str:
        file = f"{key}.trace.json"
        path = self.folder / file
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        for field in TRACE_PRIVATE:
            trace.pop(field, None)
        path.write_text(json.dumps(trace))
        return file


def timing(m) -> dict:
    """A torch.utils.benchmark Measurement as the site's timing record, in microseconds."""
    median, iqr = m.median, m.iqr  # computes the quartiles, which _p25 and _p75 then hold
    q1, q3 = getattr(m, "_p25", None), getattr(m, "_p75", None)
    spec = m.task_spec
    return {
        "work": spec.label or spec.stmt,  # what was timed, as the snippet's measure() named it
        "threads": spec.num_threads,
        "median_us": median * 1e6,
        "iqr_us": iqr * 1e6,
        "q1_us": (q1 if q1 is not None else median - iqr / 2) * 1e6,
        "q3_us": (q3 if q3 is not None else median + iqr / 2) * 1e6,
        "n": len(m.times),
        "times_us": [t * 1e6 for t in m.times],
    }


def graph_texts(value) -> list[str] | None:
    """The printed graph(s) of an FX GraphModule, Graph, or a non-empty list of them; else None."""
    def text(item):
        name = type(item).__module__
        if not name.startswith("torch.fx"):
            return None
        graph = getattr(item, "graph", item)
        return str(graph) if type(graph).__name__ == "Graph" else None

    if isinstance(value, (list, tuple)):
        texts = [text(v) for v in value]
        return texts if texts and all(t is not None for t in texts) else None
    single = text(value)
    return [single] if single is not None else None


# ------------------------------------------------------------------------------------- around timed calls

TIMER_MODULE = "torch.utils.benchmark.utils.timer"
MEASURING = ("timeit", "blocked_autorange", "adaptive_autorange", "autorange", "repeat")
# Inductor's benchmarks of its kernel choices (a reduction's configs, max-autotune's GEMMs): under the lock
# too, so a process is never stopped halfway through one (the pause would count against that choice).
BENCHMARKING_MODULE = "torch._inductor.runtime.benchmarking"
BENCHMARKING = ("benchmark", "benchmark_gpu", "benchmark_cpu", "benchmark_gpu_with_cuda_graph")
TIMED = "timed.json"  # what happened around the timed calls; the recorder moves it into the manifest


def _sibling(name: str):
    """scripts/<name>.py, loaded by path: the runner runs as a file, and the snippet's folder leads sys.path."""
    spec = importlib.util.spec_from_file_location(f"_runner_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TimedCalls:
    """Around every measuring call of a torch.utils.benchmark Timer: the recorder's lock, so the call has the
    machine alone (scripts/alone.py, when the recorder runs snippets side by side), and the GPU's clocks,
    power and temperature before and after it (scripts/nvml.py, where a GPU is visible). With the lock, also
    around Inductor's own benchmarks of its choices (not drained: they warm up and synchronise by themselves).
    Installed when the snippet imports the Timer (or Inductor its benchmarker), so the snippet's own imports
    come in its order."""

    def __init__(self, lock_folder: str | None, gpu):
        alone = _sibling("alone") if lock_folder else None
        self.lock = alone.Lock(Path(lock_folder), alone.gpu_drain(gpu)) if alone else None
        self.gpu = gpu
        self.clocks: dict[str, dict[str, list]] = {}
        self.inside = threading.local()  # a measuring call inside another, on this thread

    @classmethod
    def wanted(cls) -> TimedCalls | None:
        lock_folder = os.environ.get("MLC_ALONE")
        # MLC_NO_NVML=1 leaves the driver's library alone (should a box's NVML misbehave).
        reads = os.environ.get("CUDA_VISIBLE_DEVICES") != "" and not os.environ.get("MLC_NO_NVML")
        gpu = _sibling("nvml").Reader.open() if reads else None
        return cls(lock_folder, gpu) if lock_folder or gpu else None

    def patch(self, timer_class) -> None:
        for name in MEASURING:
            setattr(timer_class, name, self.wrap(getattr(timer_class, name)))

    def patch_benchmarking(self, module) -> None:
        """Every benchmarking method of Inductor's benchmarker classes (those the module defines)."""
        for cls in [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__]:
            for name in BENCHMARKING:
                if name in vars(cls):
                    setattr(cls, name, self.wrap(vars(cls)[name], timer=False))

    def wrap(self, method, timer: bool = True):
        @functools.wraps(method)
        def measuring(owner, *args, **kwargs):
            if getattr(self.inside, "depth", 0):  # inside another measuring call: the outer one holds and reads
                return method(owner, *args, **kwargs)
            self.inside.depth = 1
            try:
                with self.lock.hold(drain=timer) if self.lock else contextlib.nullcontext():
                    before = self.gpu.read() if self.gpu and timer else None
                    result = method(owner, *args, **kwargs)
                    if before is not None:
                        self.note(owner._task_spec.label or owner._task_spec.stmt, before, self.gpu.read())
                    return result
            finally:
                self.inside.depth = 0
        return measuring

    def note(self, work: str, *readings: dict) -> None:
        """Each reading's range over every call that timed `work` (a clock that moved shows as a range)."""
        kept = self.clocks.setdefault(work, {})
        for reading in readings:
            for key, value in reading.items():
                if value is None:
                    continue
                low, high = kept.get(key, [value, value])
                kept[key] = [min(low, value), max(high, value)]

    def finish(self, folder: Path) -> None:
        if self.lock:
            self.lock.close()
        said = {"alone": self.lock.stats if self.lock else None, "clocks": self.clocks or None}
        said = {k: v for k, v in said.items() if v}
        if said:
            (folder / TIMED).write_text(json.dumps(said, indent=1) + "\n")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` once `name` has been imported (by whoever imports it first)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            self.then(module)
        spec.loader.exec_module = exec_module
        return spec


# ------------------------------------------------------------------------------------------------ running


def run(snippet: str | Path, folder: Path, capture_stdout: bool = True) -> dict[str, Any]:
    """Execute the snippet as `__main__` with folder/files as its working folder; write sections.json,
    files/results.json and (with capture_stdout) stdout.txt into folder. Returns the snippet's globals."""
    path = str(Path(snippet).resolve())
    spans = section_lines(Path(path).read_text())
    folder = Path(folder).resolve()
    files = folder / FILES
    files.mkdir(parents=True, exist_ok=True)
    capture = SectionedStdout(sys.stdout, path, spans)
    saved_stdout, saved_argv, saved_cwd = sys.stdout, sys.argv, os.getcwd()
    sys.stdout, sys.argv = capture, [path]
    os.chdir(files)
    try:
        module_globals = runpy.run_path(path, run_name="__main__")
        results = module_globals.get("results")
        if results is not None:
            if not isinstance(results, dict):
                raise TypeError(f"{snippet}: `results` must be a dict, not {type(results).__name__}")
            kept = Keeper(files).keep(results, "")
            (files / RESULTS).write_text(json.dumps(kept, indent=1) + "\n")
    finally:
        sys.stdout.flush()
        sys.stdout, sys.argv = saved_stdout, saved_argv
        os.chdir(saved_cwd)
        sections = {name: "".join(parts) for name, parts in capture.sections.items()}
        (Path(folder) / SECTIONS).write_text(json.dumps(sections, indent=1) + "\n")
        if capture_stdout:
            (Path(folder) / STDOUT).write_text("".join(capture.parts))
    return module_globals


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: runner.py SNIPPET FOLDER", file=sys.stderr)
        return 2
    snippet, folder = argv[1], argv[2]
    # As with `python SNIPPET`: the snippet's own folder comes first on the import path.
    sys.path[0] = str(Path(snippet).resolve().parent)
    timed = TimedCalls.wanted()
    if timed:
        sys.meta_path.insert(0, _AfterImport(TIMER_MODULE, lambda module: timed.patch(module.Timer)))
        if timed.lock:
            sys.meta_path.insert(0, _AfterImport(BENCHMARKING_MODULE, timed.patch_benchmarking))
    try:
        run(snippet, Path(folder), capture_stdout=False)
    finally:
        if timed:
            timed.finish(Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
