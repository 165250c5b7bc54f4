"""When compiling pays, and when it does not: the break-even call count, and a model too small to gain.

    python snippets/graph_mode/when_not_to_compile.py

For a fusable function (four element-wise ops on a large tensor) the compile time is measured, the
per-call saving is timed, and their ratio gives the number of calls after which compiling has paid for
itself. Then a tiny function on a tiny tensor shows compiled code losing to eager. Runs on CUDA when torch
sees a GPU, else on the CPU; writes results.json to $SNIPPET_OUTPUT_DIR or to a fresh temporary folder.
"""

import json
import math
import os
import tempfile
import time
from pathlib import Path

import torch
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="when_not_to_compile-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {"device": device}


def timeit(fn, *args, min_run_time=0.3):
    t = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args}).blocked_autorange(min_run_time=min_run_time)
    return {"median_us": t.median * 1e6, "iqr_us": t.iqr * 1e6, "timings": len(t.times)}


# --8<-- [start:break_even]
def bias_gelu_residual(x, b, residual):
    # Eager: four kernels (add, gelu, mul, add), each a full pass over memory. Compiled: one fused pass.
    return torch.nn.functional.gelu(x + b) * 0.5 + residual


rows = 16384 if device == "cuda" else 1024
x, residual = (torch.randn(rows, 1024, device=device) for _ in range(2))
b = torch.randn(1024, device=device)
bias_gelu_residual(x, b, residual)  # eager warm-up
sync()

torch._dynamo.reset()
compiled = torch.compile(bias_gelu_residual)
with torch._inductor.config.patch(fx_graph_cache=False):  # pay the real compile, not a cache lookup
    start = time.perf_counter()
    compiled(x, b, residual)
    sync()
    first_call_s = time.perf_counter() - start
eager_t = timeit(bias_gelu_residual, x, b, residual)
compiled_t = timeit(compiled, x, b, residual)
saving_s = (eager_t["median_us"] - compiled_t["median_us"]) / 1e6
compile_s = first_call_s - compiled_t["median_us"] / 1e6  # the first call also ran the function once
print(f"eager {eager_t['median_us']:.1f} us, compiled {compiled_t['median_us']:.1f} us per call "
      f"(medians of {eager_t['timings']} and {compiled_t['timings']} timings)")
print(f"compile time (first call minus one run): {compile_s:.2f} s")
if saving_s > 0:
    break_even = math.ceil(compile_s / saving_s)
    print(f"saving {saving_s * 1e6:.1f} us per call: compiling pays off after {break_even:,} calls")
else:
    break_even = None
    print("compiled is not faster here: compiling never pays off")
# --8<-- [end:break_even]
results["break_even"] = {"eager": eager_t, "compiled": compiled_t, "compile_s": compile_s,
                         "first_call_s": first_call_s, "saving_us": saving_s * 1e6, "calls": break_even}


# --8<-- [start:tiny]
def tiny(x):
    return x * 2 + 1  # two ops on eight numbers: nothing to fuse that is worth a kernel's overhead


small = torch.randn(8, device=device)
compiled_tiny = torch.compile(tiny)
compiled_tiny(small)  # compile before timing
eager_small = timeit(tiny, small)
compiled_small = timeit(compiled_tiny, small)
slowdown = compiled_small["median_us"] / eager_small["median_us"]
print(f"tiny, eager:    {eager_small['median_us']:6.1f} us median (IQR {eager_small['iqr_us']:.1f} us)")
print(f"tiny, compiled: {compiled_small['median_us']:6.1f} us median (IQR {compiled_small['iqr_us']:.1f} us)")
print(f"compiled takes {slowdown:.2f}x the eager time: "
      f"{'slower' if slowdown > 1 else 'not slower'}; guard checks and the wrapper cost more than fusion saves")
# --8<-- [end:tiny]
results["tiny"] = {"eager": eager_small, "compiled": compiled_small, "compiled_over_eager": slowdown}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
