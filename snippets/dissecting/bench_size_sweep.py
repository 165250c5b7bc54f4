"""Eager against compiled matmul + softmax over a range of sizes, and where (if anywhere) compiled wins.

    python snippets/dissecting/bench_size_sweep.py

Runs on CUDA when torch sees a GPU (sizes 64 to 4096), else on the CPU (64 to 1024, to stay quick).
Each size is compiled for its own static shape and warmed up; both sides are timed with
torch.utils.benchmark.Timer, taking turns. Prints the table and writes it, with the crossover, to results.json in
$SNIPPET_OUTPUT_DIR (or a fresh temporary folder), ready for a plot.
"""

import json
import os
import statistics
import tempfile
from pathlib import Path

import torch
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="bench_size_sweep-"))
results = {}


def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)


# --8<-- [start:sweep]
device = "cuda" if torch.cuda.is_available() else "cpu"
SIZES = [64, 128, 256, 512, 1024, 2048, 4096] if device == "cuda" else [64, 128, 256, 512, 1024]
ROUNDS = 3  # eager and compiled take turns, so a change in machine load hits both sides alike
min_run_time = 0.2 if device == "cuda" else 0.07  # per round and side
threads = 1  # Timer's default, for both sides: on a small shared CPU, OpenMP teams wait for parked threads


def per_call_times(fn, x, y):
    timer = benchmark.Timer("fn(x, y)", globals={"fn": fn, "x": x, "y": y}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time).times  # warms up and synchronises itself


def quartiles_us(times):
    return [q * 1e6 for q in statistics.quantiles(times, n=4)]  # first quartile, median, third quartile


rows = []
for n in SIZES:
    x = torch.randn(n, n, device=device)
    y = torch.randn(n, n, device=device)
    # A fresh static-shape compile per size, as a model with fixed shapes gets. Without the reset, the
    # second size would make Dynamo recompile for dynamic shapes and later sizes would share that kernel.
    torch._dynamo.reset()
    compiled_fn = torch.compile(simple_fn, dynamic=False)
    compiled_fn(x, y)  # compile outside the timing
    eager_times, compiled_times = [], []
    for _ in range(ROUNDS):
        eager_times += per_call_times(simple_fn, x, y)
        compiled_times += per_call_times(compiled_fn, x, y)
    row = {"n": n}
    for side, times in (("eager", eager_times), ("compiled", compiled_times)):
        q1, median, q3 = quartiles_us(times)
        row.update({f"{side}_us": median, f"{side}_iqr_us": q3 - q1, f"{side}_q1_us": q1, f"{side}_q3_us": q3,
                    f"{side}_timings": len(times)})
    row["speedup"] = row["eager_us"] / row["compiled_us"]
    rows.append(row)

print(f"device: {device}, {threads} CPU thread; median (IQR) of {ROUNDS} alternating Timer rounds per side")
print(f"{'n':>6} {'eager us':>20} {'compiled us':>20} {'speedup':>8}")
for r in rows:
    print(f"{r['n']:>6} {r['eager_us']:>11,.1f} ({r['eager_iqr_us']:>6,.1f}) "
          f"{r['compiled_us']:>11,.1f} ({r['compiled_iqr_us']:>6,.1f}) {r['speedup']:>7.2f}x")
# --8<-- [end:sweep]
results.update(device=device, sizes=SIZES, threads=threads, sweep=rows)

# --8<-- [start:crossover]
# The crossover: the first size at which the compiled median beats the eager median.
faster = [r["n"] for r in rows if r["compiled_us"] < r["eager_us"]]
crossover = faster[0] if faster else None
print("sizes where compiled is faster:", ", ".join(map(str, faster)) or "none")
print(f"crossover: {crossover if crossover else 'none in range'}")
small = rows[0]
print(f"at n = {small['n']}, compiled costs {small['compiled_us'] - small['eager_us']:+.1f} us per call "
      f"against eager's {small['eager_us']:.1f} us")
best = max(rows, key=lambda r: r["speedup"])
print(f"best speedup: {best['speedup']:.2f}x at n = {best['n']}")
# --8<-- [end:crossover]
results["faster_at"] = faster
results["crossover"] = crossover
results["crossover_text"] = str(crossover) if crossover else "none in range"
results["smallest"] = {"n": small["n"], "compiled_minus_eager_us": small["compiled_us"] - small["eager_us"]}
results["best"] = {"n": best["n"], "speedup": best["speedup"]}
# The data for the page's plot (drawn by the site's build scripts): medians with the IQR shaded.
results["figures"] = {"sweep": {
    "kind": "sweep", "title": f"matmul + softmax on {device}: median time per call (IQR shaded)",
    "x_label": "n (two n x n fp32 matrices)", "y_label": "time per call (us)", "x": SIZES,
    "series": [{"label": side, "y": [r[f"{side}_us"] for r in rows], "lo": [r[f"{side}_q1_us"] for r in rows],
                "hi": [r[f"{side}_q3_us"] for r in rows]} for side in ("eager", "compiled")],
    "mark": {"x": crossover, "label": "crossover"},
}}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
