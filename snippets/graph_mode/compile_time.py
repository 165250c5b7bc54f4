"""Graph mode: torch.compile a small module; the first call pays for compiling.

    python snippets/graph_mode/compile_time.py

Times the first call of a compiled Linear + ReLU module four times: twice with
Inductor's FX graph cache off, twice with it on, forgetting the compiled code in
between. Counts the compiler processes (g++ on a CPU, ptxas and gcc for Triton on a
GPU) each of those compiles starts. Then times steady-state calls of eager and
compiled. Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import collections
import os
import sys
import time

import torch
from torch._dynamo.utils import counters
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:model]
class SimpleModel(torch.nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.linear(x))


model = SimpleModel().to(device).eval()
x = torch.randn(32, 512, device=device)
compiled_model = torch.compile(model)  # returns at once: nothing is compiled yet
# --8<-- [end:model]


# --8<-- [start:count]
# Python tells audit hooks about every process it starts: count the compilers.
COMPILERS = {"g++", "c++", "gcc", "cc", "clang", "clang++", "ptxas"}
started = collections.Counter()


def count_compilers(event, args):
    if event == "subprocess.Popen":
        program = os.path.basename(str(args[0]))
        if program in COMPILERS:
            started[program] += 1


sys.addaudithook(count_compilers)
# --8<-- [end:count]


def timed_call(fn):
    start = time.perf_counter()
    with torch.no_grad():
        out = fn(x)
    if device == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


# --8<-- [start:first_call]
with torch.no_grad():
    # Warm eager up, so the first compile is not billed for what any first call pays:
    # on CUDA (its context already made by .to(device)) the cuBLAS handle, loading
    # each kernel on its first launch and the allocator's first cudaMalloc; on a CPU,
    # starting OpenMP's threads.
    model(x)
first = {}
# 1. The first compile in this process, with Inductor's FX graph cache off.
# 2. The same again after torch._dynamo.reset(): Dynamo and Inductor run again, but
#    the generated kernel's source is the same, so Inductor's kernel code cache
#    (in memory, and the built library on disk) has it: no compiler runs.
# 3, 4. With the FX graph cache on: the first stores the compiled graph if it is not
#    there yet, the second finds it, so only Dynamo's tracing is left to do.
steps = [("first compile in this process", False), ("compile again", False),
         ("graph cache on", True), ("graph cache on, again", True)]
for step, cache in steps:
    torch._dynamo.reset()  # forget compiled code in this process; disk caches stay
    counters.clear()
    started.clear()
    # compile_threads=1: compile in this process (not in a pool of workers), so the
    # audit hook sees every compiler it starts.
    with torch._inductor.config.patch(fx_graph_cache=cache, compile_threads=1):
        out, seconds = timed_call(compiled_model)
    hits = counters["inductor"]["fxgraph_cache_hit"]
    misses = counters["inductor"]["fxgraph_cache_miss"]
    first[step] = {"s": seconds, "compilers": sum(started.values()),
                   "programs": dict(started), "cache_hits": hits,
                   "cache_misses": misses}
    runs = ", ".join(f"{n} {p}" for p, n in sorted(started.items())) or "none"
    note = f"; graph cache: {hits} hit, {misses} miss" if cache else ""
    print(f"first call, {step + ':':<31} {seconds * 1e3:8.1f} ms; "
          f"compilers run: {runs}{note}")
with torch.no_grad():
    same = torch.allclose(out, model(x), rtol=1e-4, atol=1e-4)
print(f"compiled output matches eager: {same}")
# --8<-- [end:first_call]
results["first_call"] = {
    "uncached_s": first["first compile in this process"]["s"],
    "again_s": first["compile again"]["s"],
    "cached_s": first["graph cache on, again"]["s"],
    "cached_hits": first["graph cache on, again"]["cache_hits"],
    "compilers_first": first["first compile in this process"]["compilers"],
    "compilers_again": first["compile again"]["compilers"],
    "compilers_cache_on": first["graph cache on"]["compilers"],
    "compilers_cache_hit": first["graph cache on, again"]["compilers"],
    "steps": first, "matches_eager": same,
}


def measure(candidates, rounds=10):
    """The site's one method. `candidates` maps a name to (fn, *args). Each is warmed
    up and given a block of calls; then one block of each is timed in turn, round
    after round (A, B, A, B, ...), so a burst of load from elsewhere hits all alike.
    Returns name -> Measurement, per call. Timer runs on 1 thread unless told, so it
    is told: all of torch's threads. The recorder repeats the whole snippet in fresh
    processes, so the spread that judges a comparison includes theirs."""
    def work(fn, args):  # what was timed: "compiled f(float32[1024, 256], ...)"
        inner = getattr(fn, "_orig_mod", fn)
        compiled = inner is not fn or hasattr(fn, "_torchdynamo_orig_callable")
        kind = "compiled " if compiled else ""
        shapes = ", ".join(f"{str(a.dtype)[6:]}{list(a.shape)}" for a in args
                           if isinstance(a, torch.Tensor))
        return f"{kind}{getattr(inner, '__name__', type(inner).__name__)}({shapes})"

    timers = {name: benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                    label=work(fn, args),
                                    num_threads=torch.get_num_threads())
              for name, (fn, *args) in candidates.items()}
    calls = {name: timer.blocked_autorange(min_run_time=0.2).number_per_run
             for name, timer in timers.items()}  # warm-up; picks calls per block
    blocks = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            blocks[name].append(timer.timeit(calls[name]))
    return {name: benchmark.Measurement.merge(b)[0] for name, b in blocks.items()}


# --8<-- [start:steady]
with torch.no_grad():
    timings = measure({"eager": (model, x), "compiled": (compiled_model, x)})
for name, m in timings.items():
    print(f"{name:<9} steady state: {m.median * 1e6:8.1f} us median "
          f"(IQR {m.iqr * 1e6:.1f} us, n = {len(m.times)})")
first_s = first["first compile in this process"]["s"]
calls = first_s / timings["compiled"].median
print(f"the first compile took as long as {calls:,.0f} steady-state compiled calls")
# --8<-- [end:steady]
results["timing"] = timings
results["first_call_in_steady_calls"] = calls
