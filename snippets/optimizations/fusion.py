"""Kernel fusion: torch.compile turns the six element-wise ops of complex_activation into one kernel.

    python snippets/optimizations/fusion.py

Profiles eager and compiled calls, times both the same way, counts the bytes each moves, and prints the
fused kernel Inductor generated (Triton on CUDA, C++ on CPU). Runs on CUDA when torch sees a GPU, else on
the CPU. Writes the two profiler traces and results.json to $SNIPPET_OUTPUT_DIR, or to a temporary folder.
"""

import json
import os
import re
import statistics
import tempfile
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from torch.utils import benchmark
from torch._inductor.utils import run_and_get_code

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="fusion-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {"device": device}


# --8<-- [start:compile]
def complex_activation(x, y):  # the same six ops as in the Eager mode chapter
    a = torch.sin(x)
    b = torch.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return torch.relu(e)


# 80 MiB per fp32 tensor on CUDA, 16 MiB on a CPU runner: both far bigger than the caches.
N = 20 * 2**20 if device == "cuda" else 4 * 2**20
x = torch.randn(N, device=device)
y = torch.randn(N, device=device)

# On CPU the profiler sees no row for a generated C++ kernel unless Inductor is asked to add one.
with torch._inductor.config.patch({"cpp.enable_kernel_profile": device == "cpu"}):
    compiled_activation = torch.compile(complex_activation)
    # The first call compiles; run_and_get_code also hands back the Python module Inductor wrote.
    out, (output_code,) = run_and_get_code(compiled_activation, x, y)

max_error = (out - complex_activation(x, y)).abs().max().item()
print(f"compiled == eager: {torch.allclose(out, complex_activation(x, y), atol=1e-5)} "
      f"(largest difference {max_error:.1e})")
# --8<-- [end:compile]
results["max_error"] = max_error
results["allclose"] = torch.allclose(out, complex_activation(x, y), atol=1e-5)


# --8<-- [start:profile]
def profile_calls(fn, name):
    for _ in range(20):  # warm up: the first calls after compiling still pay one-time costs
        fn(x, y)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        fn(x, y)
        sync()
    prof.export_chrome_trace(str(OUT / f"{name}_trace.json"))
    events = prof.events()
    # aten ops that compute (allocations such as aten::empty_strided are not work on the data)
    ops = [e.name for e in events if e.name.startswith("aten::") and "empty" not in e.name
           and e.cpu_parent is None]
    if device == "cuda":  # the kernels that ran on the GPU
        kernels = [e.name for e in events if e.device_type == DeviceType.CUDA]
    else:  # on CPU a generated kernel only shows as the row enable_kernel_profile adds
        kernels = [e.name for e in events if "cpp_fused" in e.name]
    print(f"{name}: {len(ops)} aten ops {ops}")
    print(f"{' ' * len(name)}  {len(kernels)} {'GPU kernels' if device == 'cuda' else 'generated kernels'} "
          f"{[k.split('<')[0].removeprefix('void ')[:60] for k in kernels]}")
    return ops, kernels


eager_ops, eager_kernels = profile_calls(complex_activation, "eager")
compiled_ops, compiled_kernels = profile_calls(compiled_activation, "compiled")
# --8<-- [end:profile]
results["profile"] = {
    "eager_ops": eager_ops,
    "eager_op_count": len(eager_ops),
    "eager_kernel_count": len(eager_kernels),
    "compiled_ops": compiled_ops,
    "compiled_op_count": len(compiled_ops),
    "compiled_kernels": compiled_kernels,
    "compiled_kernel_count": len(compiled_kernels),
}

# --8<-- [start:timing]
# Bytes that cross the memory bus, in passes over N fp32 values:
#   eager: sin, cos, relu read 1 and write 1; the mul, add, mul read 2 and write 1 -> 9 reads + 6 writes = 15
#   fused: read x, read y, write the result                                           -> 3
tensor_bytes = N * x.element_size()
eager_bytes, fused_bytes = 15 * tensor_bytes, 3 * tensor_bytes

# The same method for both: warm-up, then blocked_autorange repeats until min_run_time and reports the
# median and the interquartile range of its timings (it synchronises CUDA around each block).
min_run_time = 1.0 if device == "cuda" else 0.3
copy_dst = torch.empty_like(x)
timers = {
    "eager": benchmark.Timer("f(x, y)", globals={"f": complex_activation, "x": x, "y": y}),
    "compiled": benchmark.Timer("f(x, y)", globals={"f": compiled_activation, "x": x, "y": y}),
    "copy": benchmark.Timer("dst.copy_(x)", globals={"dst": copy_dst, "x": x}),  # read N, write N
}
times = {name: timer.blocked_autorange(min_run_time=min_run_time) for name, timer in timers.items()}
copy_gbps = 2 * tensor_bytes / times["copy"].median / 1e9
print(f"copy_ of one tensor: {copy_gbps:,.0f} GB/s ({len(times['copy'].times)} timings)")
for name, moved in [("eager", eager_bytes), ("compiled", fused_bytes)]:
    m = times[name]
    gbps = moved / m.median / 1e9
    print(f"{name:>8}: {m.median * 1e6:8,.0f} us median, IQR {m.iqr * 1e6:6,.0f} us ({len(m.times)} timings); "
          f"moves {moved / 2**20:4.0f} MiB at {gbps:6,.0f} GB/s = {100 * gbps / copy_gbps:3.0f}% of copy")
print(f"compiled is {times['eager'].median / times['compiled'].median:.1f}x faster "
      f"and moves {eager_bytes // fused_bytes}x fewer bytes")
# --8<-- [end:timing]
results["timing"] = {
    "copy_gbps": copy_gbps,
    "eager_mib": eager_bytes / 2**20,
    "fused_mib": fused_bytes / 2**20,
    "speedup": times["eager"].median / times["compiled"].median,
}
for name, moved in [("eager", eager_bytes), ("compiled", fused_bytes)]:
    m = times[name]
    results["timing"][name] = {
        "median_us": m.median * 1e6,
        "iqr_us": m.iqr * 1e6,
        "timings": len(m.times),
        "gbps": moved / m.median / 1e9,
        "share_of_copy": moved / m.median / 1e9 / copy_gbps,
    }


# --8<-- [start:kernel]
def generated_kernels(code):
    """The kernel sources inside Inductor's output module: Triton functions on CUDA, C++ on CPU."""
    triton = re.findall(r"@triton\.jit\n(def .*?)\n'''", code, re.S)
    cpp = re.findall(r"cpp_pybinding\(.*?r'''\n(.*?)\n'''", code, re.S)
    return triton + cpp


kernels = generated_kernels(output_code)
print(f"# {len(kernels)} generated kernel(s)")
for source in kernels:
    source = re.sub(r"graph_\d+_", "graph_N_", source)  # a per-process counter, not part of the kernel
    print(source)
# --8<-- [end:kernel]
results["generated_kernel_count"] = len(kernels)
results["generated_kernel_names"] = re.findall(r"\b((?:triton_\w+|cpp)_fused_\w+)\s*=\s*async_compile", output_code)

# Figures scripts/render_assets.py draws from this record: times with their spread, and bandwidth
# against the copy bandwidth measured above.
quartiles = {name: statistics.quantiles(times[name].times, n=4) for name in ("eager", "compiled")}
results["figures"] = {
    "times": {
        "kind": "bars", "title": "complex_activation, median time per call (bars: interquartile range)",
        "unit": "µs", "bars": [{"label": name, "value": times[name].median * 1e6,
                                "lo": quartiles[name][0] * 1e6, "hi": quartiles[name][2] * 1e6}
                               for name in ("eager", "compiled")],
    },
    "bandwidth": {
        "kind": "bandwidth", "title": "complex_activation, achieved bandwidth", "peak_gbps": copy_gbps,
        "peak_label": "copy_ bandwidth", "bars": [{"label": name, "gbps": results["timing"][name]["gbps"]}
                                                  for name in ("eager", "compiled")],
    },
}
(OUT / "results.json").write_text(json.dumps(results, indent=2))
