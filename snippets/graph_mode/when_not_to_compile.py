"""When compiling pays, and when it does not: the break-even call count, and a model
too small to gain.

    python snippets/graph_mode/when_not_to_compile.py

For a fusable function (four element-wise ops on a large tensor) the compile time is
measured (in a process an unrelated compile has warmed), the per-call saving is timed,
and their ratio gives the number of calls after which compiling has paid for itself.
Then a tiny function on a tiny tensor is timed eager and compiled. Runs on CUDA when
torch sees a GPU, else on the CPU.
"""

import math
import time

import torch
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {"device": device}


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


def show(name, m):
    print(f"{name:<15} {m.median * 1e6:9.1f} us median "
          f"(IQR {m.iqr * 1e6:.1f} us, n = {len(m.times)})")


# --8<-- [start:break_even]
def bias_gelu_residual(x, b, residual):
    # Eager: four kernels (add, gelu, mul, add), each a full pass over memory.
    # Compiled: one fused pass.
    return torch.nn.functional.gelu(x + b) * 0.5 + residual


# 16384 x 1024 fp32 is 64 MiB a tensor. On Linux, glibc's malloc maps a block that big
# fresh from the OS every time (its mmap threshold adapts, but never past 32 MiB), in
# every process alike; for a few MiB, it maps or reuses memory depending on what the
# process freed before, and eager's time follows.
rows = 16384
x, residual = (torch.randn(rows, 1024, device=device) for _ in range(2))
b = torch.randn(1024, device=device)
bias_gelu_residual(x, b, residual)  # eager warm-up
sync()

# The first Inductor compile in a process pays one-time costs (imports, the
# precompiled C++ header, compile workers) that a long-running program pays once: an
# unrelated compile pays them here, with the same caches, so what is timed is this
# function's own compile. The FX graph and AOTAutograd caches are off, or a graph an
# earlier run compiled would be loaded instead; Inductor's kernel cache has no switch
# of its own (only force_disable_caches, which also drops the precompiled header).
inductor, functorch = torch._inductor.config, torch._functorch.config
with inductor.patch(fx_graph_cache=False), functorch.patch(enable_autograd_cache=False):
    torch.compile(lambda a, b: torch.tanh(a @ b))(torch.randn(8, 16, device=device),
                                                  torch.randn(16, 4, device=device))
    off = inductor.force_disable_caches  # all off, the kernel cache too
    caches = {"FX graph": inductor.fx_graph_cache and not off,
              "AOTAutograd": functorch.enable_autograd_cache and not off,
              "Inductor's kernel": not off}
    torch._dynamo.reset()
    compiled = torch.compile(bias_gelu_residual)
    start = time.perf_counter()
    compiled(x, b, residual)
    sync()
    first_call_s = time.perf_counter() - start
print("process warmed by an unrelated compile first; caches: " + ", ".join(
    f"{name} {'on' if on else 'off'}" for name, on in caches.items()))
eager_m, compiled_m = measure({"eager": (bias_gelu_residual, x, b, residual),
                               "compiled": (compiled, x, b, residual)}).values()
show("eager", eager_m)
show("compiled", compiled_m)
saving_s = eager_m.median - compiled_m.median
compile_s = first_call_s - compiled_m.median  # the first call also ran the function
print(f"compile time in a warm process (first call minus one run): {compile_s:.2f} s")
if saving_s > 0:
    break_even = math.ceil(compile_s / saving_s)
    print(f"saving {saving_s * 1e6:.1f} us per call (medians): "
          f"compiling pays off after {break_even:,} calls")
else:
    break_even = None
    print("the compiled median is not below eager's: compiling never pays off here")
# --8<-- [end:break_even]
results["timing"] = {"eager": eager_m, "compiled": compiled_m}
results["break_even"] = {"compile_s": compile_s, "first_call_s": first_call_s,
                         "saving_us": saving_s * 1e6, "calls": break_even,
                         "pays_off": break_even is not None}
results["caches"] = {"fx_graph": caches["FX graph"],
                     "aot_autograd": caches["AOTAutograd"],
                     "inductor_kernel": caches["Inductor's kernel"]}


# --8<-- [start:tiny]
def tiny(x):
    return x * 2 + 1  # two ops on eight numbers: nothing worth fusing


small = torch.randn(8, device=device)
compiled_tiny = torch.compile(tiny)
compiled_tiny(small)  # compile before timing
tiny_eager, tiny_compiled = measure({"eager": (tiny, small),
                                     "compiled": (compiled_tiny, small)}).values()
show("tiny, eager", tiny_eager)
show("tiny, compiled", tiny_compiled)
print(f"median compiled / median eager: {tiny_compiled.median / tiny_eager.median:.2f}")
# --8<-- [end:tiny]
results["tiny"] = {"eager": tiny_eager, "compiled": tiny_compiled}
