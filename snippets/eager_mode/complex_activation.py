"""Eager mode: six element-wise ops, six kernels, six round trips through memory.

    python snippets/eager_mode/complex_activation.py

Runs on CUDA when torch sees a GPU, else on the CPU. Writes the profiler trace (open it in
Perfetto) and results.json to $SNIPPET_OUTPUT_DIR, or to a fresh temporary folder.
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

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="eager-"))
results = {}

# --8<-- [start:function]
def complex_activation(x, y):
    # One eager op per line: one kernel that reads its inputs from memory
    # and writes its output back to memory.
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

# 20 * 2**20 fp32 values are 80 MiB per tensor, far bigger than any cache: every op
# goes to DRAM. A CPU gets 4 * 2**20 (16 MiB), still bigger than its last-level cache.
N = 20 * 2**20 if device == "cuda" else 4 * 2**20
x = torch.randn(N, device=device)
y = torch.randn(N, device=device)
complex_activation(x, y)  # warm-up: pays one-time costs (CUDA context, kernel loading)
sync()
mib = N * x.element_size() / 2**20
print(f"device: {device}, N = {N:,} fp32 values ({mib:.0f} MiB per tensor)")
# --8<-- [end:setup]
results.update(device=device, n=N, tensor_mib=mib)

# --8<-- [start:dispatch]
# When does the call return, and when does its result exist? Median of 50 calls.
returned, finished = [], []
for _ in range(50):
    start = time.perf_counter()
    out = complex_activation(x, y)  # on CUDA: queues six kernels, returns
    returned.append(time.perf_counter() - start)
    sync()  # now wait until the device has run them all
    finished.append(time.perf_counter() - start)

returned_us = statistics.median(returned) * 1e6
finished_us = statistics.median(finished) * 1e6
print(f"call returned after   {returned_us:9.1f} us")
print(f"result ready after    {finished_us:9.1f} us")
ahead = 1 - returned_us / finished_us
print(f"the CPU was free for {100 * ahead:.0f}% of the time the device worked")
# --8<-- [end:dispatch]
results["dispatch"] = {"returned_us": returned_us, "finished_us": finished_us}

# --8<-- [start:profile]
activities = [ProfilerActivity.CPU]
if device == "cuda":
    activities.append(ProfilerActivity.CUDA)
with profile(activities=activities) as prof:
    with record_function("complex_activation"):
        complex_activation(x, y)
    sync()
prof.export_chrome_trace(str(OUT / "eager_trace.json"))

events = prof.events()
region = next(e for e in events if e.name == "complex_activation")
t0 = region.time_range.start
# The ops the function called directly (relu's inner clamp_min is a child of relu).
ops = [e for e in events if e.cpu_parent is region]
# On CUDA each op launched a kernel that ran later on the GPU; a CPU op does the work.
kernels = [e for e in events if e.device_type == DeviceType.CUDA]
ops.sort(key=lambda e: e.time_range.start)
kernels.sort(key=lambda e: e.time_range.start)


def span(e):  # (start relative to the region, duration), in microseconds
    return e.time_range.start - t0, e.time_range.end - e.time_range.start


def end(e):
    return e.time_range.end - t0


def short(name):  # "void at::native::elementwise_kernel<...>(...)" -> "at::native::..."
    return name.removeprefix("void ").split("<")[0].split("(")[0][:40]


print(f"{'CPU side: ops called':<42} {'start(us)':>10} {'took(us)':>9}")
for e in ops:
    print("  {:<40} {:>10.1f} {:>9.1f}".format(e.name, *span(e)))
if kernels:
    print(f"{'GPU side: kernels run':<42} {'start(us)':>10} {'took(us)':>9}")
    for e in kernels:
        print("  {:<40} {:>10.1f} {:>9.1f}".format(short(e.name), *span(e)))

work = kernels or ops  # what actually touched the data
what = "kernels" if kernels else "ops"
busy_us = sum(span(e)[1] for e in work)
cpu_done_us, work_done_us = end(ops[-1]), end(work[-1])
first_us = span(ops[0])[1]
others_us = statistics.median(span(e)[1] for e in ops[1:])
print(f"{len(ops)} ops called, {len(kernels)} GPU kernels launched")
print(f"time spent in the {len(work)} {what}: {busy_us:.1f} us")
print(f"CPU done calling at {cpu_done_us:.1f} us; {what} done at {work_done_us:.1f} us")
print(f"first op took {first_us:.1f} us on the CPU, the others {others_us:.1f} us (median)")
# --8<-- [end:profile]
results["profile"] = {
    "ops": [e.name for e in ops],
    "op_count": len(ops),
    "kernel_count": len(kernels),
    "busy_us": busy_us,
    "cpu_done_us": cpu_done_us,
    "work_done_us": work_done_us,
    "first_op_us": first_us,
    "other_ops_median_us": others_us,
}

# --8<-- [start:traffic]
# Each op streams whole tensors through memory: (tensors read, tensors written).
passes = {"sin(x)": (1, 1), "cos(y)": (1, 1), "a * b": (2, 1),
          "c + x": (2, 1), "d * y": (2, 1), "relu(e)": (1, 1)}
for op, (r, w) in passes.items():
    print(f"  {op:<8} reads {r * mib:4.0f} MiB, writes {w * mib:3.0f} MiB")
eager_bytes = sum(r + w for r, w in passes.values()) * N * x.element_size()
least_bytes = 3 * N * x.element_size()  # read x, read y, write the result: the minimum
print(f"eager moves {eager_bytes / 2**20:.0f} MiB; reading x, y and writing the result once "
      f"is {least_bytes / 2**20:.0f} MiB ({eager_bytes / least_bytes:.0f}x less)")

# Time the function, and a plain copy (read N, write N): the bandwidth this device reaches.
dst = torch.empty_like(x)
eager = benchmark.Timer("f(x, y)", globals={"f": complex_activation, "x": x, "y": y})
copy = benchmark.Timer("dst.copy_(x)", globals={"dst": dst, "x": x})
eager, copy = eager.blocked_autorange(min_run_time=1), copy.blocked_autorange(min_run_time=1)
copy_gbps = 2 * N * x.element_size() / copy.median / 1e9
eager_gbps = eager_bytes / eager.median / 1e9
share = eager_gbps / copy_gbps
print(f"copy bandwidth: {copy_gbps:.0f} GB/s (median of {len(copy.times)} timings)")
print(f"eager: {eager.median * 1e6:.0f} us median (IQR {eager.iqr * 1e6:.0f} us), "
      f"{eager_gbps:.0f} GB/s = {100 * share:.0f}% of copy bandwidth")
print(f"at copy bandwidth the eager traffic needs {eager_bytes / copy_gbps / 1e3:.0f} us, "
      f"the least traffic {least_bytes / copy_gbps / 1e3:.0f} us")
# --8<-- [end:traffic]
results["traffic"] = {
    "eager_mib": eager_bytes / 2**20,
    "least_mib": least_bytes / 2**20,
    "ratio": eager_bytes / least_bytes,
    "eager_us": eager.median * 1e6,
    "eager_iqr_us": eager.iqr * 1e6,
    "copy_gbps": copy_gbps,
    "eager_gbps": eager_gbps,
    "eager_share_of_copy": share,
    "eager_traffic_at_copy_us": eager_bytes / copy_gbps / 1e3,
    "least_traffic_at_copy_us": least_bytes / copy_gbps / 1e3,
}

# For scripts/render_assets.py: eager's bandwidth against the copy bandwidth measured above.
results["figures"] = {"bandwidth": {
    "kind": "bandwidth", "title": "complex_activation in eager mode, achieved bandwidth",
    "peak_gbps": copy_gbps, "peak_label": "copy_ bandwidth", "bars": [{"label": "eager", "gbps": eager_gbps}],
}}
(OUT / "results.json").write_text(json.dumps(results, indent=2))
