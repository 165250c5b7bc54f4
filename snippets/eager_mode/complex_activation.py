"""Eager mode: six element-wise ops, six kernels, six round trips through memory.

    python snippets/eager_mode/complex_activation.py

Profiles one call and counts the bytes each op moves. Runs on CUDA when torch sees a
GPU, else on the CPU. The Optimizations chapter times these same inputs, eager beside
compiled.
"""

import re
import statistics

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

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

# 64 * 2**20 fp32 values are 256 MiB per tensor, 5x an H100's 50 MB L2; a CPU gets
# 32 * 2**20 (128 MiB), 4x a 32 MiB L3. Every op's passes go to DRAM.
N = 64 * 2**20 if device == "cuda" else 32 * 2**20
x = torch.randn(N, device=device)
y = torch.randn(N, device=device)
# Warm-up: the first call pays one-time costs. On CUDA (its context already made
# for x and y) CUDA loads each kernel on its first launch, and the caching allocator
# gets the outputs' memory from cudaMalloc, then keeps it for later calls. On a CPU
# the first parallel op starts OpenMP's threads.
complex_activation(x, y)
sync()
mib = N * x.element_size() / 2**20
print(f"device: {device}, N = {N:,} fp32 values ({mib:.0f} MiB per tensor)")
# --8<-- [end:setup]
results["device"] = device
results["n"] = N
results["tensor_mib"] = mib

# --8<-- [start:profile]
activities = [ProfilerActivity.CPU]
if device == "cuda":
    activities.append(ProfilerActivity.CUDA)  # also record what ran on the GPU
with profile(activities=activities) as prof:
    with record_function("complex_activation"):  # a named region around the call
        complex_activation(x, y)
    sync()  # on CUDA, wait here until the GPU has run what the call queued

events = prof.events()
region = next(e for e in events if e.name == "complex_activation")
t0 = region.time_range.start
# The ops the function called (relu's inner clamp_min is a child of relu), and on
# CUDA the kernels they launched, which ran later on the GPU. A CPU op does the work.
ops = [e for e in events if e.cpu_parent is region]
# The named region shows on the GPU's timeline too, as an annotation spanning its
# kernels; it is not a kernel.
kernels = [e for e in events
           if e.device_type == DeviceType.CUDA and not e.is_user_annotation]
ops.sort(key=lambda e: e.time_range.start)
kernels.sort(key=lambda e: e.time_range.start)


def span(e):  # (start relative to the region, duration), in microseconds
    return e.time_range.start - t0, e.time_range.end - e.time_range.start


def end(e):  # when it ended, relative to the region, in microseconds
    return e.time_range.end - t0


def short(name):  # "void at::native::kernel<...>(...)" -> "at::native::kernel"
    return re.sub(r"^void ", "", name).split("<")[0].split("(")[0][:60]


print(f"{'CPU side: ops called':<46} {'start(us)':>10} {'took(us)':>9}")
for e in ops:
    print("  {:<44} {:>10.1f} {:>9.1f}".format(e.name, *span(e)))
if kernels:  # some CUDA kernel names are 41 characters and up
    print(f"{'GPU side: kernels run':<46} {'start(us)':>10} {'took(us)':>9}")
    for e in kernels:
        print("  {:<44} {:>10.1f} {:>9.1f}".format(short(e.name), *span(e)))

work = kernels or ops  # what actually touched the data
what = "kernels" if kernels else "ops"
busy_us = sum(span(e)[1] for e in work)
returned_us = end(ops[-1])  # the last op returned: the call is over for Python
ready_us = end(work[-1])  # the last kernel ended: the result exists
first_us = span(ops[0])[1]
others_us = statistics.median(span(e)[1] for e in ops[1:])
print(f"{len(ops)} ops called, {len(kernels)} GPU kernels launched")
print(f"time spent in the {len(work)} {what}: {busy_us:.1f} us")
print(f"call returned at {returned_us:.1f} us, result ready at {ready_us:.1f} us")
print(f"first op: {first_us:.1f} us on the CPU; the others: {others_us:.1f} us median")
# --8<-- [end:profile]
results["traces"] = {"eager": prof}
results["profile"] = {
    "ops": [e.name for e in ops],
    "op_count": len(ops),
    "kernel_count": len(kernels),
    "busy_us": busy_us,
    "returned_us": returned_us,
    "ready_us": ready_us,
    "cpu_free_share": 1 - returned_us / ready_us,
    "first_op_us": first_us,
    "other_ops_median_us": others_us,
}

# --8<-- [start:traffic]
# Each op streams whole tensors through memory: (tensors read, tensors written).
passes = {"sin(x)": (1, 1), "cos(y)": (1, 1), "a * b": (2, 1),
          "c + x": (2, 1), "d * y": (2, 1), "relu(e)": (1, 1)}
for op, (r, w) in passes.items():
    print(f"  {op:<8} reads {r * mib:4.0f} MiB, writes {w * mib:3.0f} MiB")
eager_passes = sum(r + w for r, w in passes.values())  # 9 reads + 6 writes = 15
least_passes = 3  # read x, read y, write the result: what any implementation must move
print(f"eager: {eager_passes} passes over N values, {eager_passes * mib:.0f} MiB; "
      f"the least is {least_passes} passes, {least_passes * mib:.0f} MiB "
      f"({eager_passes // least_passes}x less)")
# --8<-- [end:traffic]
results["traffic"] = {
    "eager_passes": eager_passes,
    "least_passes": least_passes,
    "eager_mib": eager_passes * mib,
    "least_mib": least_passes * mib,
    "ratio": eager_passes / least_passes,
}
