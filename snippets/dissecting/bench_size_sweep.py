"""Eager against compiled matmul + softmax over a range of sizes.

    python snippets/dissecting/bench_size_sweep.py

Runs on CUDA when torch sees a GPU (sizes 64 to 4096), else on the CPU (64 to 1024, to
stay quick). Each size is compiled for its own static shape and warmed up; both sides
are timed the site's way, in the same rounds: median and IQR.
"""

import torch
from torch.utils import benchmark

results = {}


def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)


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
    pair = measure({"eager": (simple_fn, x, y), "compiled": (compiled_fn, x, y)})
    eager.append(pair["eager"])
    compiled.append(pair["compiled"])

print(f"device: {device}; median (IQR) of n timings per side, "
      f"{torch.get_num_threads()} CPU threads")
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
