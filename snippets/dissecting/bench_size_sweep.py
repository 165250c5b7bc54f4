"""Eager against compiled matmul + softmax over a range of sizes.

    python snippets/dissecting/bench_size_sweep.py

Runs on CUDA when torch sees a GPU (sizes 64 to 4096), else on the CPU (64 to 1024, to
stay quick). Each size is compiled for its own static shape and warmed up; both sides
are timed the site's way: 25 timings, median and IQR.
"""

import torch
from torch.utils import benchmark

results = {}


def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)


def measure(fn, *args, timings=25):
    """The site's one method: warm up, then `timings` timings of a block of calls;
    median and IQR (torch.utils.benchmark syncs CUDA around each block)."""
    timer = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args})
    block = timer.blocked_autorange(min_run_time=0.2)  # warm-up; picks calls per block
    (m,) = benchmark.Measurement.merge(
        [timer.timeit(block.number_per_run) for _ in range(timings)])
    return m


# --8<-- [start:sweep]
device = "cuda" if torch.cuda.is_available() else "cpu"
SIZES = [64, 128, 256, 512, 1024] + ([2048, 4096] if device == "cuda" else [])
eager, compiled = [], []  # one Measurement per size
for n in SIZES:
    x = torch.randn(n, n, device=device)
    y = torch.randn(n, n, device=device)
    # A fresh static-shape compile per size, as a model with fixed shapes gets. Without
    # the reset, the second size would make Dynamo recompile for dynamic shapes, and
    # later sizes would share that kernel.
    torch._dynamo.reset()
    compiled_fn = torch.compile(simple_fn, dynamic=False)
    compiled_fn(x, y)  # compile outside the timing
    eager.append(measure(simple_fn, x, y))
    compiled.append(measure(compiled_fn, x, y))

print(f"device: {device}; median (IQR) of n timings per side, one CPU thread")
header = ["size", "eager us", "compiled us", "eager/compiled", "n"]
print("{:>6} {:>20} {:>20} {:>15} {:>4}".format(*header))
for size, e, c in zip(SIZES, eager, compiled):
    print(f"{size:>6} {e.median * 1e6:>11,.1f} ({e.iqr * 1e6:>6,.1f}) "
          f"{c.median * 1e6:>11,.1f} ({c.iqr * 1e6:>6,.1f}) "
          f"{e.median / c.median:>14.2f}x {min(len(e.times), len(c.times)):>4}")
# --8<-- [end:sweep]
results["device"] = device
results["sizes"] = SIZES
results["timing"] = {"eager": eager, "compiled": compiled}
results["smallest"] = {
    "n": SIZES[0],
    "compiled_minus_eager_us": (compiled[0].median - eager[0].median) * 1e6,
}
