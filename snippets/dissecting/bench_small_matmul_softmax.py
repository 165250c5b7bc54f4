"""Benchmarking done right, on a 100x100 matmul + softmax where the compiled function is the slower one.

    python snippets/dissecting/bench_small_matmul_softmax.py

Runs on CUDA when torch sees a GPU, else on the CPU. Times the first calls one by one (the first compiled
call is the compilation), then eager and compiled with torch.utils.benchmark.Timer: warmed up,
synchronised, repeated, reported as median and spread. Writes results.json to $SNIPPET_OUTPUT_DIR, or to
a fresh temporary folder.
"""

import json
import os
import tempfile
import time
from pathlib import Path

import torch
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="bench_small_matmul_softmax-"))
results = {}

# --8<-- [start:setup]
def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)


device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
N = 100  # the size of the original article: 2 * 100**3 = 2 MFLOP for the matmul, 40 kB per matrix
x = torch.rand(N, N, device=device)
y = torch.rand(N, N, device=device)
compiled_fn = torch.compile(simple_fn)
# One CPU thread for every timing in this snippet, eager and compiled alike (why: see the Timer section).
threads, saved_threads = 1, torch.get_num_threads()
torch.set_num_threads(threads)
print(f"device: {device}, two {N}x{N} fp32 matrices, {threads} CPU thread")
# --8<-- [end:setup]
results.update(device=device, n=N)

# --8<-- [start:first_calls]
# Time single calls, one by one, the way a quick experiment does. The first compiled call traces the
# function, decomposes, fuses and generates code, then runs it. The FX graph cache is off so the whole
# pipeline runs here (a warm cache would hide most of it); compiled kernels may still come from disk.
def time_call(fn):
    sync()
    start = time.perf_counter()
    fn(x, y)
    sync()  # on CUDA the call only queued kernels: wait for them, or we time the queueing
    return time.perf_counter() - start


with torch._inductor.config.patch(fx_graph_cache=False):
    compiled_calls = [time_call(compiled_fn) for _ in range(5)]
eager_calls = [time_call(simple_fn) for _ in range(5)]
print("call          " + "".join(f"{i:>11}" for i in range(1, 6)))
print("eager (us)    " + "".join(f"{t * 1e6:11.1f}" for t in eager_calls))
print("compiled (us) " + "".join(f"{t * 1e6:11.1f}" for t in compiled_calls))
compile_s = compiled_calls[0] - min(compiled_calls[1:])
print(f"the first compiled call took {compiled_calls[0]:.2f} s: about {compile_s:.2f} s of it was compiling")
print(f"a mean over these 5 calls says compiled takes {sum(compiled_calls) / 5 * 1e6:,.0f} us per call")
# --8<-- [end:first_calls]
results["first_calls"] = {
    "eager_us": [t * 1e6 for t in eager_calls],
    "compiled_us": [t * 1e6 for t in compiled_calls],
    "compile_s": compile_s,
    "compiled_mean_us": sum(compiled_calls) / 5 * 1e6,
}

# --8<-- [start:timer]
# Timer runs the statement in blocks, sizes the blocks so the clock's own cost vanishes, warms up first
# and synchronises CUDA around each block. It also sets torch's CPU thread count while it measures
# (num_threads, 1 unless told otherwise), and the compiled C++ kernel's OpenMP team follows it. Give both
# sides the same count. We keep 1: on a small shared CPU, a team of 2 keeps waiting for a thread the OS
# has parked, and a call of tens of microseconds can take milliseconds.
min_run_time = 1.0 if device == "cuda" else 0.3


def measure(fn):
    timer = benchmark.Timer("fn(x, y)", globals={"fn": fn, "x": x, "y": y}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time)


eager = measure(simple_fn)
compiled = measure(compiled_fn)
for name, m in (("eager", eager), ("compiled", compiled)):
    print(f"{name:<9} median {m.median * 1e6:7.1f} us  IQR {m.iqr * 1e6:5.1f} us  "
          f"({len(m.times)} timings of {m.number_per_run} calls each)")
speedup = eager.median / compiled.median
print(f"speedup (eager / compiled): {speedup:.2f}x; compiled costs {(compiled.median - eager.median) * 1e6:+.1f} us "
      f"per call; paying back the compile takes "
      + (f"{compile_s / (eager.median - compiled.median):,.0f} calls" if speedup > 1 else "forever"))
# --8<-- [end:timer]
results["timer"] = {
    "eager_us": eager.median * 1e6,
    "eager_iqr_us": eager.iqr * 1e6,
    "eager_blocks": len(eager.times),
    "compiled_us": compiled.median * 1e6,
    "compiled_iqr_us": compiled.iqr * 1e6,
    "compiled_blocks": len(compiled.times),
    "threads": threads,
    "speedup": speedup,
    "compiled_minus_eager_us": (compiled.median - eager.median) * 1e6,
}
results["max_abs_error"] = (compiled_fn(x, y) - simple_fn(x, y)).abs().max().item()

torch.set_num_threads(saved_threads)
(OUT / "results.json").write_text(json.dumps(results, indent=2))
