"""Compute, memory, overhead: the three regimes of a kernel, measured, and a roofline.

    python snippets/dissecting/regimes.py

Counts the FLOPs (torch.utils.flop_counter) and the bytes (each aten op's inputs and
outputs) of each example, for its arithmetic intensity. Times a tiny and a large
element-wise op, a copy and a large matmul with the site's one method, and builds this
machine's roofline from the copy bandwidth and the matmul rate it measured; places the
chapters' examples on it. Last, mode="max-autotune": the GEMM choices Inductor
benchmarks for a Linear + ReLU, and which one wins. Runs on CUDA when torch sees a GPU,
else on the CPU, with smaller sizes.
"""

import math
import re

import torch
from torch._inductor import select_algorithm
from torch._inductor.utils import is_big_gpu, run_and_get_code
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from torch.utils import benchmark
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {"device": device}


# --8<-- [start:count]
# FlopCounterMode has formulas for matrix products (2*M*N*K for an M x K by K x N
# product), convolutions and attention, and none for element-wise ops or reductions.
# For every other op we count one FLOP per output value,
# five for softmax (max, subtract, exp, sum, divide): a floor, since sin or exp cost
# many instructions each.
PER_ELEMENT = {"_softmax": 5}


class Traffic(TorchDispatchMode):
    """Sees every aten op eager runs: the bytes it reads and writes, its output size."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view:  # a view moves no bytes and launches nothing
            tensors = [t for t in tree_leaves((args, kwargs, out))
                       if isinstance(t, torch.Tensor)]
            first_out = next(t for t in tree_leaves(out) if isinstance(t, torch.Tensor))
            self.ops.append({"op": func.overloadpacket.__name__,
                             "bytes": sum(t.nbytes for t in tensors),
                             "values": first_out.numel()})
        return out


def count(fn, *args):
    """FLOPs of fn, and the bytes moved by eager (one kernel per op, each reading
    its inputs from memory and writing its output back) or by one fused kernel
    (each input read once, the output written once)."""
    with FlopCounterMode(display=False) as counter, Traffic() as traffic:
        out = fn(*args)
    matmul_flops = {op.__name__: n for op, n in
                    counter.get_flop_counts().get("Global", {}).items()}
    for op in traffic.ops:
        op["flops"] = matmul_flops.get(op["op"]) or (
            op["values"] * PER_ELEMENT.get(op["op"], 1))
    flops = sum(op["flops"] for op in traffic.ops)
    eager_bytes = sum(op["bytes"] for op in traffic.ops)
    fused_bytes = sum(t.nbytes for t in tree_leaves((args, out))
                      if isinstance(t, torch.Tensor))
    return {"ops": traffic.ops, "flops": flops,
            "eager_bytes": eager_bytes, "fused_bytes": fused_bytes,
            "eager_intensity": flops / eager_bytes,
            "fused_intensity": flops / fused_bytes}
# --8<-- [end:count]


# --8<-- [start:examples]
def add(x, y):  # one element-wise op: reads 2 values, writes 1, 1 FLOP
    return x + y


def matmul(a, b):  # 2*N^3 FLOPs on 3 N x N matrices
    return a @ b


def complex_activation(x, y):  # Eager mode chapter: six element-wise ops
    return torch.relu((torch.sin(x) * torch.cos(y) + x) * y)


def linear_relu(x, w, b):  # Graph mode chapter: matmul, bias, ReLU
    return torch.relu(x @ w + b)


# The chapters' sizes: bf16 and larger on a GPU; fp32 and smaller on a CPU.
big = device == "cuda"
N_ACT = 64 * 2**20 if big else 32 * 2**20  # values per tensor: as in the Eager chapter
M, N, K = (8192, 8192, 512) if big else (1024, 1024, 256)  # linear_relu
N_MM = 8192 if big else 1024  # the large matmul, N x N x N
mm_dtype = torch.bfloat16 if big else torch.float32
torch.manual_seed(0)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=device, dtype=dtype)


EXAMPLES = {
    "add": (add, (randn(2**24), randn(2**24))),
    "complex_activation": (complex_activation, (randn(N_ACT), randn(N_ACT))),
    "linear_relu": (linear_relu, (randn(M, K, dtype=mm_dtype),
                                  randn(K, N, dtype=mm_dtype) / K**0.5,
                                  randn(N, dtype=mm_dtype))),
    "matmul": (matmul, (randn(N_MM, N_MM, dtype=mm_dtype),
                        randn(N_MM, N_MM, dtype=mm_dtype))),
}
# --8<-- [end:examples]

# --8<-- [start:intensity]
counts = {name: count(fn, *args) for name, (fn, args) in EXAMPLES.items()}
print(f"{'example':<19} {'eager ops':<34} {'FLOPs':>9} {'FLOP/byte':>10} "
      f"{'fused':>7}")
for name, c in counts.items():
    ops = " ".join(op["op"] for op in c["ops"])
    print(f"{name:<19} {ops:<34} {c['flops']:9.3g} {c['eager_intensity']:10.3g} "
          f"{c['fused_intensity']:7.3g}")
# --8<-- [end:intensity]
results["counts"] = counts
results["bytes_ratio"] = {name: c["eager_bytes"] / c["fused_bytes"]
                         for name, c in counts.items()}
results["intensity"] = {name: {"eager": c["eager_intensity"],
                               "fused": c["fused_intensity"]}
                        for name, c in counts.items()}


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


def show(label, m, extra=""):
    print(f"{label:<26} median {m.median * 1e6:11,.1f} us  "
          f"(IQR {m.iqr * 1e6:,.1f} us, n={len(m.times)}){extra}")
# --8<-- [end:measure]


# --8<-- [start:overhead]
# One element-wise op, x + y, from 16 values to far past the caches (2**25 fp32
# values are 128 MiB a tensor; 2**28 on a GPU). Bytes moved: 12 per value. The
# output is allocated once, before the timing, as the copy's below is: a fresh
# 128 MiB buffer on every call would add the cost of the allocator (and, on a CPU,
# of the page faults of its new memory) to what we want to see.
def add_into(out, x, y):
    torch.add(x, y, out=out)


# A CPU ends at 2**25 (128 MiB a tensor, 4x a 32 MiB L3): there the bytes come from
# DRAM, and the copy below is timed at that size.
sizes = [2**k for k in range(4, 29, 4)] if device == "cuda" else \
    [2**k for k in range(4, 25, 4)] + [2**25]
# Every size in the same rounds, so each is compared with the smallest fairly.
operands = {n: (randn(n), randn(n), randn(n)) for n in sizes}
sweep = list(measure({n: (add_into, out, x, y)
                      for n, (x, y, out) in operands.items()}).values())
for n, m in zip(sizes, sweep):
    show(f"x + y, n = {n:,}", m, f"  {12 * n / m.median / 1e9:8.2f} GB/s")
# --8<-- [end:overhead]
results["sweep"] = {"sizes": sizes, "timing": sweep,
                    "gbps": [12 * n / m.median / 1e9 for n, m in zip(sizes, sweep)],
                    "ns_per_value": [m.median * 1e9 / n for n, m in zip(sizes, sweep)],
                    # the largest size whose call took less than twice the smallest's
                    "within_twice_up_to": max(n for n, m in zip(sizes, sweep)
                                              if m.median < 2 * sweep[0].median)}


# --8<-- [start:roofs]
# The two roofs of this machine, measured: a copy (read n values, write n: the rate of
# plain data movement, a reference an op may pass a little) and a large matmul (the
# most FLOP/s).
def copy_into(dst, src):
    dst.copy_(src)


# At the sweep's largest size, so x + y is set against a copy of its own tensors.
n = sizes[-1]
src, dst = randn(n), randn(n)
m_copy, m_mm = measure({"copy": (copy_into, dst, src),
                        "matmul": (matmul, *EXAMPLES["matmul"][1])}).values()
copy_gbps = 8 * n / m_copy.median / 1e9
show(f"copy, n = {n:,}", m_copy, f"  {copy_gbps:8.2f} GB/s")
add_gbps = 12 * n / sweep[-1].median / 1e9
print(f"x + y at n = {n:,} moves {add_gbps:.2f} GB/s: "
      f"{add_gbps / copy_gbps:.0%} of the copy's bandwidth")
mm_tflops = counts["matmul"]["flops"] / m_mm.median / 1e12
show(f"matmul {N_MM}^3, {str(mm_dtype)[6:]}", m_mm, f"  {mm_tflops:8.3f} TFLOP/s")
ridge = mm_tflops * 1e12 / (copy_gbps * 1e9)
print(f"ridge point: {ridge:.1f} FLOP/byte; below it an op is memory-bound")
# --8<-- [end:roofs]
results["timing"] = {"copy": m_copy, "add": sweep[-1], "add_tiny": sweep[0],
                     "matmul": m_mm}
results["copy_gbps"], results["add_gbps"] = copy_gbps, add_gbps
results["add_share_of_copy"] = add_gbps / copy_gbps
results["matmul_tflops"], results["ridge"] = mm_tflops, ridge
# The threads the roofs were measured on: measure() gives Timer all of torch's.
hardware = (torch.cuda.get_device_name() if device == "cuda"
            else f"this CPU ({torch.get_num_threads()} threads)")
results["regimes_roofline"] = {
    "label": f"{hardware}, measured", "bandwidth_gbps": copy_gbps,
    "peak_tflops": mm_tflops,
    "points": [{"label": label, "intensity": counts[name]["eager_intensity"],
                "tflops": counts[name]["flops"] * scale / m.median / 1e12,
                "measured": True}
               for label, name, scale, m in [
                   ("x + y, 16 values", "add", 16 / 2**24, sweep[0]),
                   (f"x + y, {sizes[-1]:,} values", "add", sizes[-1] / 2**24,
                    sweep[-1]),
                   (f"matmul {N_MM}^3", "matmul", 1, m_mm)]]}


# --8<-- [start:roofline]
# The chapters' examples, eager and compiled, on those roofs. Eager's intensity
# counts every op's bytes; compiled is placed at the fused intensity (each input
# read once, the output written once), the least traffic a kernel can have. The gain
# at the roof is the gain if every kernel, eager and fused, ran at its roof: not a
# bound, since eager ops may run further below their roof than the fused kernel.
def bound_us(flops, num_bytes):
    """A kernel's time at this machine's roofs: its bytes at the copy bandwidth, or
    its FLOPs at the matmul rate, whichever is longer."""
    return max(num_bytes / (copy_gbps * 1e9), flops / (mm_tflops * 1e12)) * 1e6


points, chapters = [], {}
for name in ("complex_activation", "linear_relu"):
    fn, args = EXAMPLES[name]
    c = counts[name]
    eager_bound = sum(bound_us(op["flops"], op["bytes"]) for op in c["ops"])
    fused_bound = bound_us(c["flops"], c["fused_bytes"])
    print(f"{name}: at the roofs, eager {eager_bound:,.1f} us, one fused kernel "
          f"{fused_bound:,.1f} us: a gain at the roof of "
          f"{eager_bound / fused_bound:.2f}x")
    chapters[name] = {"eager_bound_us": eager_bound, "fused_bound_us": fused_bound,
                      "fusion_bound": eager_bound / fused_bound}
    if name == "linear_relu":
        # Inductor's default: a library GEMM that writes its product, then one kernel
        # that reads it back for the epilogue and writes the result. On a GPU the GEMM
        # is a plain mm and the kernel adds the bias and applies the ReLU (counted
        # here: eager's add moves the same bytes); on a CPU the bias goes into the
        # library's addmm and the kernel applies only the ReLU: the same bytes. Only a
        # GEMM template (max-autotune) keeps the epilogue inside the GEMM.
        gemm, after = c["ops"][0], c["ops"][1:]
        split = (bound_us(gemm["flops"], gemm["bytes"])
                 + bound_us(sum(op["flops"] for op in after), after[0]["bytes"]))
        print(f"{'':<{len(name)}}  library GEMM + one kernel after it: "
              f"{split:,.1f} us at the roofs, a gain of {eager_bound / split:.2f}x")
        chapters[name] |= {"library_gemm_bound_us": split,
                           "library_gemm_fusion_bound": eager_bound / split}
    compiled = torch.compile(fn)
    compiled(*args)  # compiled before the timing: a first call that compiles would
    # leave measure() one call per block for this side and many for eager's
    timed = measure({"eager": (fn, *args), "compiled": (compiled, *args)})
    for kind, m in timed.items():
        intensity = c["eager_intensity" if kind == "eager" else "fused_intensity"]
        tflops = c["flops"] / m.median / 1e12
        roof = min(mm_tflops, copy_gbps * intensity / 1e3)
        show(f"  {kind}", m, f"  {tflops:.3g} TFLOP/s, {tflops / roof:.0%} of the roof")
        points.append({"label": f"{name}, {kind}", "intensity": intensity,
                       "tflops": tflops, "measured": True})
    chapters[name]["timing"] = timed
# --8<-- [end:roofline]
results["chapters"] = chapters
results["roofline"] = {"label": f"{hardware}, measured", "bandwidth_gbps": copy_gbps,
                       "peak_tflops": mm_tflops, "points": points}
results["hardware"] = hardware


# --8<-- [start:autotune]
# mode="max-autotune" benchmarks GEMM choices: the library's (cuBLAS, oneDNN/MKL)
# and Inductor's own templates (Triton on a GPU, C++ on a CPU), and keeps the
# fastest. A template can apply the bias and ReLU before its one write.
try:
    big_gpu = is_big_gpu(0)  # asks GPU 0 for its number of SMs
    why = f"{torch.cuda.get_device_properties(0).multi_processor_count} SMs"
except (AssertionError, RuntimeError) as error:  # no GPU to ask
    big_gpu, why = False, f"{type(error).__name__}: {error}"
print(f"is_big_gpu(): {big_gpu} ({why})")
print(f"max-autotune sets {torch._inductor.list_mode_options('max-autotune')}")

benchmarked = {}  # the op Inductor tuned -> {choice: its time in ms}


def keep_timings(timings, name, *_):  # Inductor calls this after each benchmark
    benchmarked[name] = {choice.name: ms for choice, ms in timings.items()
                         if math.isfinite(ms)}  # a choice that failed gets inf


select_algorithm.add_feedback_saver(keep_timings)
layer = torch.nn.Sequential(torch.nn.Linear(K, N), torch.nn.ReLU())
layer = layer.to(device, mm_dtype)
x = randn(M, K, dtype=mm_dtype)
# Frozen weights (inference) let the CPU templates pack them; the caches are off so
# the benchmark runs here rather than being read from an earlier run.
settings = {"freezing": True, "fx_graph_cache": False, "autotune_local_cache": False}
# A line of call() that launches a kernel: a library call or a generated kernel.
LAUNCH = (r"^\s+(?:\w+ = )?(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?"
          r"|cpp_fused_\w+|triton_\w+)(?:\.run)?\(")


# A function of its own per mode: Dynamo keeps compiled code per code object, so
# both compiled layers stay as compiled (a reset between them would throw the
# first away, and its next call would compile again, unfrozen, inside the timing).
def default(x):
    return layer(x)


def max_autotune(x):
    return layer(x)


MODES = {"default": "default", "max_autotune": "max-autotune-no-cudagraphs"}
CALLS = {"default": default, "max_autotune": max_autotune}
launched, compiled_layers = {}, {}
with torch.no_grad(), torch._inductor.config.patch(settings):
    for key, mode in MODES.items():
        compiled_layers[key] = torch.compile(CALLS[key], mode=mode)
        out, codes = run_and_get_code(compiled_layers[key], x)
        # The kernels call() launches, in order, from the generated code.
        launched[key] = re.findall(LAUNCH, "\n".join(codes), re.MULTILINE)
        print(f"{mode}: call() launches {', '.join(launched[key])}")
    same = torch.allclose(out.float(), layer(x).float(), rtol=2e-2, atol=2e-2)
for op, timings in benchmarked.items():
    best = min(timings.values())
    print(f"benchmarked for {op}:")
    for choice, ms in sorted(timings.items(), key=lambda item: item[1])[:6]:
        print(f"    {choice:<34} {ms:8.4f} ms  {best / ms:6.1%}")
print(f"max-autotune output matches eager: {same}")
# --8<-- [end:autotune]
select_algorithm.clear_feedback_savers()
tuned = launched["max_autotune"]
results["autotune"] = {
    "is_big_gpu": big_gpu, "is_big_gpu_reason": why,
    "mode_options": {key.replace(".", "_"): value for key, value in
                     torch._inductor.list_mode_options("max-autotune").items()},
    "launches": launched,
    "launches_text": {key: ", ".join(names) for key, names in launched.items()},
    "benchmarked": benchmarked,
    "winners": {op: min(t, key=t.get) for op, t in benchmarked.items()},
    "winner": next((min(t, key=t.get) for t in benchmarked.values()), None),
    "choices": next((len(t) for t in benchmarked.values()), 0),
    "template_won": not any(name.startswith(("extern_kernels", "torch.ops"))
                            for name in tuned),
    "matches_eager": same}


# --8<-- [start:autotune_timing]
with torch.no_grad():
    tuned_timing = measure({key: (compiled, x)
                            for key, compiled in compiled_layers.items()})
for key, m in tuned_timing.items():
    show(MODES[key], m)
if device == "cuda":  # the kernels each compiled layer really ran, from the profiler
    ran = {}
    for key, compiled in compiled_layers.items():
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            compiled(x)
            sync()
        ran[key] = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
        print(f"{MODES[key]} ran: {'; '.join(name[:48] for name in ran[key])}")
# --8<-- [end:autotune_timing]
results["autotune"]["timing"] = tuned_timing
if device == "cuda":
    results["autotune"]["ran"] = ran
    results["autotune"]["ran_text"] = {key: ", ".join(names)
                                       for key, names in ran.items()}
