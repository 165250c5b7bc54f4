"""Kernel fusion: torch.compile turns the six element-wise ops of complex_activation
into one kernel, which moves a fifth of the bytes.

    python snippets/optimizations/fusion.py

Profiles one eager and one compiled call, times eager, compiled, eager writing into
preallocated outputs, and a plain copy (a reference bandwidth) on the same inputs
with one method, and prints the fused kernel Inductor generated (Triton on CUDA,
C++ on CPU). Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import re
import resource

import torch
from torch._inductor.utils import run_and_get_code
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {}
results["device"] = device


# --8<-- [start:compile]
def complex_activation(x, y):  # the six ops of the Eager mode chapter
    a = torch.sin(x)
    b = torch.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return torch.relu(e)


# 64 * 2**20 fp32 values are 256 MiB per tensor on CUDA, 5x an H100's 50 MB L2; a CPU
# gets 32 * 2**20 (128 MiB), 4x a 32 MiB L3. Every pass over a tensor goes to DRAM.
N = 64 * 2**20 if device == "cuda" else 32 * 2**20
x = torch.randn(N, device=device)
y = torch.randn(N, device=device)

# On CPU the profiler sees no row for a generated C++ kernel unless Inductor adds one.
with torch._inductor.config.patch({"cpp.enable_kernel_profile": device == "cpu"}):
    compiled_activation = torch.compile(complex_activation)
    # The first call compiles; run_and_get_code also returns the module Inductor wrote.
    out, (output_code,) = run_and_get_code(compiled_activation, x, y)

expected = complex_activation(x, y)
max_error = (out - expected).abs().max().item()
# Rounding is relative: measure the difference in float32's spacing (one unit in
# the last place, ULP) at the largest output.
largest = expected.abs().max()
ulp = (torch.nextafter(largest, largest + 1) - largest).item()
print(f"compiled == eager: {torch.allclose(out, expected, atol=1e-5)} "
      f"(largest difference {max_error:.1e}, {max_error / ulp:g} ULP "
      f"of the largest output, {largest:.1f})")
# --8<-- [end:compile]
results["allclose"] = torch.allclose(out, expected, atol=1e-5)
results["max_error"] = max_error
results["largest_output"] = largest.item()
results["max_error_ulps"] = max_error / ulp
results["n"] = N
results["tensor_mib"] = N * x.element_size() / 2**20


# --8<-- [start:profile]
def profile_call(fn):
    for _ in range(3):  # warm up: the first calls after compiling pay one-time costs
        fn(x, y)
    sync()
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)  # the kernels the GPU ran
    with profile(activities=activities) as prof:
        fn(x, y)
        sync()
    return prof


def work(prof):
    """The aten ops a call ran (allocations are not work on the data), and its kernels:
    on CUDA those the GPU ran; on CPU the rows enable_kernel_profile adds for
    generated code (an eager CPU op does its work itself, with no kernel row)."""
    events = prof.events()
    ops = [e.name for e in events if e.name.startswith("aten::")
           and e.cpu_parent is None and "empty" not in e.name]
    if device == "cuda":
        kernels = [e.name for e in events if e.device_type == DeviceType.CUDA]
    else:
        kernels = [e.name for e in events if "cpp_fused" in e.name]
    # "void at::native::kernel<...>(...)" -> "at::native::kernel"; graph_N: see below
    kernels = [re.sub(r"graph_\d+_", "graph_N_", k.removeprefix("void "))
               .split("<")[0].split("(")[0][:60] for k in kernels]
    return ops, kernels


traces = {"eager": profile_call(complex_activation),
          "compiled": profile_call(compiled_activation)}
found = {name: work(prof) for name, prof in traces.items()}
for name, (ops, kernels) in found.items():
    print(f"{name}: {len(ops)} aten ops {ops}")
    what = "GPU kernels" if device == "cuda" else "generated kernels"
    print(f"{'':{len(name)}}  {len(kernels)} {what} {kernels}")
# --8<-- [end:profile]
results["traces"] = traces
results["profile"] = {
    name: {"ops": ops, "op_count": len(ops), "kernels": kernels,
           "kernel_count": len(kernels)}
    for name, (ops, kernels) in found.items()
}


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


# --8<-- [start:timing]
copy_to = torch.empty_like(x)
timing = measure({
    "eager": (complex_activation, x, y),
    "compiled": (compiled_activation, x, y),
    "copy": (copy_to.copy_, x),  # a reference bandwidth: one read, one write
})

# Bytes that cross the memory bus per call, in passes over N fp32 values (4 N bytes):
#   eager: sin, cos, relu read 1 tensor and write 1; mul, add, mul read 2 and write 1
#          -> 9 reads + 6 writes = 15 passes, in 6 kernels
#   fused: read x, read y, write the result -> 3 passes, in 1 kernel
#   copy:  read x, write the copy            -> 2 passes, in 1 kernel
tensor_bytes = N * x.element_size()
passes = {"eager": 15, "compiled": 3, "copy": 2}
gbps = {name: passes[name] * tensor_bytes / m.median / 1e9
        for name, m in timing.items()}
for name, m in timing.items():
    print(f"{name:>8}: {m.median * 1e6:8,.0f} us median, IQR {m.iqr * 1e6:6,.0f} us, "
          f"n = {len(m.times)}; {passes[name]:2} passes, "
          f"{passes[name] * tensor_bytes / 2**20:4.0f} MiB at {gbps[name]:5,.0f} GB/s")
print(f"eager moves {passes['eager'] // passes['compiled']}x the bytes and takes "
      f"{timing['eager'].median / timing['compiled'].median:.1f}x the time")
# --8<-- [end:timing]
results["passes"] = passes
results["timing"] = timing
results["bandwidth_gbps"] = gbps
results["time_ratio"] = timing["eager"].median / timing["compiled"].median
# A model, not a measurement: each version's bytes at the copy's measured bandwidth.
results["at_copy_bandwidth_us"] = {
    name: passes[name] / passes["copy"] * timing["copy"].median * 1e6
    for name in ("eager", "compiled")}


# --8<-- [start:outputs]
def complex_activation_out(x, y, outputs):
    """The same six eager ops, each writing into a tensor allocated once, before the
    timing: the same 15 passes and 6 kernels, but no allocation inside the call."""
    a, b, c, d, e, result = outputs
    torch.sin(x, out=a)
    torch.cos(y, out=b)
    torch.mul(a, b, out=c)
    torch.add(c, x, out=d)
    torch.mul(d, y, out=e)
    return torch.clamp_min(e, 0, out=result)  # relu(e) is clamp_min(e, 0)


def page_faults(fn, *args, calls=3):
    """Minor page faults per call: the OS mapping a fresh page on its first touch."""
    fn(*args)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn(*args)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


@torch.compile
def complex_activation_into(x, y, out):
    """The fused kernel, storing its result into a tensor allocated once: Inductor
    writes straight into `out`, so the call allocates nothing."""
    return out.copy_(complex_activation(x, y))


outputs = [torch.empty_like(x) for _ in range(6)]
# All four in the same rounds: with and without allocating, eager and compiled.
timing_out = measure({"eager": (complex_activation, x, y),
                      "eager_out": (complex_activation_out, x, y, outputs),
                      "compiled": (compiled_activation, x, y),
                      "compiled_out": (complex_activation_into, x, y, outputs[0])})
faults = {"eager": page_faults(complex_activation, x, y),
          "eager_out": page_faults(complex_activation_out, x, y, outputs),
          "compiled": page_faults(compiled_activation, x, y),
          "compiled_out": page_faults(complex_activation_into, x, y, outputs[0])}
for name, m in timing_out.items():
    print(f"{name:>12}: {m.median * 1e6:8,.0f} us median, IQR {m.iqr * 1e6:6,.0f} us, "
          f"n = {len(m.times)}; {faults[name]:8,.0f} page faults per call")
# --8<-- [end:outputs]
results["page_faults"] = faults
results["timing_out"] = timing_out
# Of eager's time, the share that allocating fresh outputs (and faulting their pages
# in) costs; the same for the compiled call's one output.
results["allocation_share"] = {
    kind: 1 - timing_out[f"{kind}_out"].median / timing_out[kind].median
    for kind in ("eager", "compiled")}
for kind in ("eager_out", "compiled_out"):
    passes_of = passes["eager" if kind == "eager_out" else "compiled"]
    gbps[kind] = passes_of * tensor_bytes / timing_out[kind].median / 1e9
results["share_of_copy"] = {name: gbps[name] / gbps["copy"] for name in gbps}


# --8<-- [start:kernel]
def generated_kernels(code):
    """The kernel sources in Inductor's output module: Triton on CUDA, C++ on CPU."""
    triton = re.findall(r"@triton\.jit\n(def .*?)\n'''", code, re.S)
    cpp = re.findall(r"cpp_pybinding\(.*?r'''\n(.*?)\n'''", code, re.S)
    return triton + cpp


# Each kernel is handed to async_compile, which compiles them in parallel (a pool of
# threads or processes) while the module loads: it saves compile time, not run time.
names = re.findall(r"^(\w+) = async_compile\.\w+\(", output_code, re.M)
kernels = generated_kernels(output_code)
print(f"# {len(kernels)} generated kernel(s): {names}")
for source in kernels:
    # Kernel names come from the ops they fuse, the same on every run, but for
    # graph_N: N counts the graphs of the process that generated the code, and a
    # copy from Inductor's cache keeps that process's N.
    print(re.sub(r"graph_\d+_", "graph_N_", source))
# --8<-- [end:kernel]
step = re.search(r"x0\+=static_cast<int64_t>\((\d+)L\)", output_code)
results["kernel"] = {
    "count": len(kernels),
    "names": names,
    "vector_step": int(step.group(1)) if step else None,
    "vector_bits": int(step.group(1)) * 8 * x.element_size() if step else None,
    "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    "unroll_in_source": "unroll" in "".join(kernels),
}
