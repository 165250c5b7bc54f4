"""Eager mode: six element-wise ops, six kernels, six round trips through memory.

    python snippets/eager_mode/complex_activation.py

Runs on CUDA when torch sees a GPU, else on the CPU. Writes the profiler trace (open it in Perfetto) and
results.json to $SNIPPET_OUTPUT_DIR, or to a fresh temporary folder.
"""

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="complex_activation-"))
results = {}

# --8<-- [start:function]
def complex_activation(x, y):
    # Each line is one eager op: one kernel that reads its inputs from memory and writes its output back.
    a = torch.sin(x)
    b = torch.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return torch.relu(e)
# --8<-- [end:function]

# --8<-- [start:setup]
device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

# 20 * 2**20 fp32 values are 80 MiB per tensor: far bigger than any cache, so every op goes to DRAM.
# A CPU runner gets 4 * 2**20 (16 MiB per tensor), still bigger than its last-level cache.
N = 20 * 2**20 if device == "cuda" else 4 * 2**20
x = torch.randn(N, device=device)
y = torch.randn(N, device=device)
complex_activation(x, y)  # warm-up: the first call pays one-time costs (CUDA context, kernel loading)
sync()
print(f"device: {device}, N = {N:,} fp32 values ({N * x.element_size() / 2**20:.0f} MiB per tensor)")
# --8<-- [end:setup]
results.update(device=device, n=N, tensor_mib=N * x.element_size() / 2**20)

# --8<-- [start:dispatch]
# How long until the call returns, and how long until its result exists? Median of 50 calls.
returned, finished = [], []
for _ in range(50):
    start = time.perf_counter()
    out = complex_activation(x, y)  # on CUDA this only queues six kernels and returns
    returned.append(time.perf_counter() - start)
    sync()  # now wait until the device has run them all
    finished.append(time.perf_counter() - start)

returned_us = statistics.median(returned) * 1e6
finished_us = statistics.median(finished) * 1e6
print(f"call returned after   {returned_us:9.1f} us")
print(f"result ready after    {finished_us:9.1f} us")
print(f"CPU ran ahead of the device for {100 * (1 - returned_us / finished_us):.0f}% of the time")
# --8<-- [end:dispatch]
results["dispatch"] = {"returned_us": returned_us, "finished_us": finished_us}

# --8<-- [start:profile]
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
with profile(activities=activities) as prof:
    with record_function("complex_activation"):
        complex_activation(x, y)
    sync()
prof.export_chrome_trace(str(OUT / "eager_trace.json"))

events = prof.events()
region = next(e for e in events if e.name == "complex_activation")
t0 = region.time_range.start
# The six ops the Python function called (their children, such as relu's clamp_min, are inside them).
ops = sorted((e for e in events if e.cpu_parent is region), key=lambda e: e.time_range.start)
# On CUDA, each op launched one kernel that ran later on the GPU; on a CPU the op does the work itself.
kernels = sorted((e for e in events if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)


def span(e):
    return e.time_range.start - t0, e.time_range.end - e.time_range.start


print("CPU side: what the Python function called   start(us)  duration(us)")
for e in ops:
    print("  {:<40} {:>10.1f} {:>13.1f}".format(e.name, *span(e)))
if kernels:
    print("GPU side: kernels                            start(us)  duration(us)")
    for e in kernels:
        print("  {:<40} {:>10.1f} {:>13.1f}".format(e.name.split("<")[0].removeprefix("void ")[:40], *span(e)))

work = kernels or ops  # what actually touched the data
busy_us = sum(e.time_range.end - e.time_range.start for e in work)
print(f"{len(ops)} ops called, {len(kernels)} GPU kernels launched")
print(f"time spent in the {len(work)} {'kernels' if kernels else 'ops'}: {busy_us:.1f} us")
print(f"CPU finished calling at {ops[-1].time_range.end - t0:.1f} us; "
      f"the last {'kernel' if kernels else 'op'} ended at {work[-1].time_range.end - t0:.1f} us")
print(f"first op took {span(ops[0])[1]:.1f} us on the CPU; "
      f"the median of the others {statistics.median(span(e)[1] for e in ops[1:]):.1f} us")
# --8<-- [end:profile]
results["profile"] = {
    "ops": [e.name for e in ops],
    "op_count": len(ops),
    "kernel_count": len(kernels),
    "busy_us": busy_us,
    "cpu_done_us": ops[-1].time_range.end - t0,
    "work_done_us": work[-1].time_range.end - t0,
    "first_op_us": span(ops[0])[1],
    "other_ops_median_us": statistics.median(span(e)[1] for e in ops[1:]),
}

# --8<-- [start:traffic]
# Every op streams whole tensors through memory: (tensors read, tensors written), N values each.
passes = {"sin(x)": (1, 1), "cos(y)": (1, 1), "a * b": (2, 1), "c + x": (2, 1), "d * y": (2, 1), "relu(e)": (1, 1)}
tensor_bytes = N * x.element_size()
eager_bytes = sum(r + w for r, w in passes.values()) * tensor_bytes
least_bytes = 3 * tensor_bytes  # read x, read y, write the result: all any implementation must move
for op, (r, w) in passes.items():
    print(f"  {op:<8} reads {r * tensor_bytes / 2**20:4.0f} MiB, writes {w * tensor_bytes / 2**20:3.0f} MiB")
print(f"eager moves {eager_bytes / 2**20:.0f} MiB; reading x, y and writing the result once is "
      f"{least_bytes / 2**20:.0f} MiB ({eager_bytes / least_bytes:.0f}x less)")

# Time the whole function, and a plain copy (read N, write N) as the best bandwidth this device reaches.
copy_dst = torch.empty_like(x)
eager = benchmark.Timer("f(x, y)", globals={"f": complex_activation, "x": x, "y": y}).blocked_autorange(min_run_time=1)
copy = benchmark.Timer("dst.copy_(x)", globals={"dst": copy_dst, "x": x}).blocked_autorange(min_run_time=1)
copy_gbps = 2 * tensor_bytes / copy.median / 1e9
eager_gbps = eager_bytes / eager.median / 1e9
print(f"copy bandwidth: {copy_gbps:.0f} GB/s (median of {len(copy.times)} timings)")
print(f"eager: {eager.median * 1e6:.0f} us median (IQR {eager.iqr * 1e6:.0f} us), "
      f"{eager_gbps:.0f} GB/s = {100 * eager_gbps / copy_gbps:.0f}% of copy bandwidth")
print(f"at copy bandwidth, the eager traffic needs {eager_bytes / copy_gbps / 1e3:.0f} us "
      f"and the least traffic {least_bytes / copy_gbps / 1e3:.0f} us")
# --8<-- [end:traffic]
results["traffic"] = {
    "eager_mib": eager_bytes / 2**20,
    "least_mib": least_bytes / 2**20,
    "ratio": eager_bytes / least_bytes,
    "eager_us": eager.median * 1e6,
    "eager_iqr_us": eager.iqr * 1e6,
    "copy_gbps": copy_gbps,
    "eager_gbps": eager_gbps,
    "eager_share_of_copy": eager_gbps / copy_gbps,
    "eager_traffic_at_copy_us": eager_bytes / copy_gbps / 1e3,
    "least_traffic_at_copy_us": least_bytes / copy_gbps / 1e3,
}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
