"""Benchmarking done right, on a 100x100 matmul + softmax (the source article's size).

    python snippets/dissecting/bench_small_matmul_softmax.py

Runs on CUDA when torch sees a GPU, else on the CPU. Times the first calls one by one,
the way a quick experiment does (the first compiled call compiles, and pays the
process's one-time compiler start-up), then eager and compiled the site's way: warmed
up, synchronised, timed in the same rounds, median and IQR.
"""

import time

import torch
from torch.utils import benchmark

results = {}

# --8<-- [start:measure]
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
# --8<-- [end:measure]


# --8<-- [start:setup]
def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)


device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
N = 100  # the source article's size: a 2 MFLOP matmul, 40 kB per matrix
x = torch.rand(N, N, device=device)
y = torch.rand(N, N, device=device)
compiled_fn = torch.compile(simple_fn)
print(f"device: {device}, two {N}x{N} fp32 matrices")
# --8<-- [end:setup]
results["device"] = device
results["n"] = N

# --8<-- [start:first_calls]
# Time single calls, one by one, as the source article does. The first compiled call
# traces the function, decomposes, fuses and generates code, then runs it. The FX graph
# cache is off so the whole pipeline runs here (a warm cache would hide most of it).
def time_call(fn):
    sync()
    start = time.perf_counter()
    fn(x, y)
    sync()  # on CUDA the call only queued kernels: wait for them, not for the queueing
    return time.perf_counter() - start


with torch._inductor.config.patch(fx_graph_cache=False):
    compiled_calls = [time_call(compiled_fn) for _ in range(5)]
eager_calls = [time_call(simple_fn) for _ in range(5)]
print("call          " + "".join(f"{i:>11}" for i in range(1, 6)))
print("eager (us)    " + "".join(f"{t * 1e6:11.1f}" for t in eager_calls))
print("compiled (us) " + "".join(f"{t * 1e6:11.1f}" for t in compiled_calls))
print(f"the first compiled call took {compiled_calls[0]:.2f} s")
mean_us = sum(compiled_calls) / 5 * 1e6
print(f"a mean over these 5 calls says compiled takes {mean_us:,.0f} us per call")
# --8<-- [end:first_calls]
results["first_calls"] = {
    "eager_us": [t * 1e6 for t in eager_calls],
    "compiled_us": [t * 1e6 for t in compiled_calls],
    "compile_s": compiled_calls[0],
    "compiled_mean_us": mean_us,
}


# --8<-- [start:timer]
# Timer sets torch's CPU thread count while it measures (1 unless told), so measure()
# tells it torch's own: another count would fail a Dynamo guard, and Timer would time a
# kernel recompiled for that count.
eager, compiled = measure({"eager": (simple_fn, x, y),
                           "compiled": (compiled_fn, x, y)}).values()
for name, m in (("eager", eager), ("compiled", compiled)):
    print(f"{name:<9} median {m.median * 1e6:7.1f} us  IQR {m.iqr * 1e6:5.1f} us  "
          f"n = {len(m.times)}")
print(f"eager / compiled medians: {eager.median / compiled.median:.2f}; compiled minus "
      f"eager: {(compiled.median - eager.median) * 1e6:+.1f} us per call")
# --8<-- [end:timer]
results["timing"] = {"eager": eager, "compiled": compiled}
results["compiled_minus_eager_us"] = (compiled.median - eager.median) * 1e6
results["max_abs_error"] = (compiled_fn(x, y) - simple_fn(x, y)).abs().max().item()
