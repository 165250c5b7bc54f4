"""Autotuning a Triton kernel: what triton.autotune runs, when, and the trap in it.

    python snippets/dissecting/triton_autotune.py

A kernel that sums a vector, each program adding its block's sum into one output
with an atomic add, is tuned over two block sizes. The snippet counts how often the
autotuner runs the kernel, shows that it tunes once per value of its key, and that
a kernel which accumulates into its output returns a wrong sum unless the output is
reset between the tuning runs (reset_to_zero). On a GPU the autotuner times with
Triton's benchmarker; without one the kernel runs in Triton's interpreter
(TRITON_INTERPRET=1, set below before triton is imported), which has no GPU timer,
so a wall clock that runs each config three times takes its place.
"""

import os
import statistics
import time

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when triton is imported

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

results = {"device": device, "triton": triton.__version__}


# --8<-- [start:timer]
RUNS = 3  # runs of each config per tuning, on the interpreter
runs = []  # one entry per config timed: how many times it ran


def wall_clock(kernel_call, quantiles):
    """Time a config as the autotuner asks: median, then the two quantiles."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        kernel_call()  # one launch of the kernel with this config
        times.append((time.perf_counter() - start) * 1e3)
    runs.append(RUNS)
    return [statistics.median(times), min(times), max(times)]


def gpu_timer(kernel_call, quantiles):
    """Triton's own GPU benchmarker, the autotuner's default, counted."""
    runs.append(None)  # do_bench picks its number of runs from the kernel's time
    return triton.testing.do_bench(kernel_call, quantiles=quantiles)


# Triton's benchmarker needs a GPU; the interpreter gets the wall clock.
timer = gpu_timer if device == "cuda" else wall_clock
# --8<-- [end:timer]
results["runs_per_config"] = RUNS if device == "cpu" else None


# --8<-- [start:kernel]
CONFIGS = [triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})]


def sum_kernel(reset):
    @triton.autotune(configs=CONFIGS, key=["n"], do_bench=timer,
                     reset_to_zero=["out_ptr"] if reset else None)
    @triton.jit
    def total_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
        tl.atomic_add(out_ptr, tl.sum(x, axis=0))  # each program adds its block's sum
    return total_kernel


def total(kernel, x):
    out = torch.zeros(1, device=device)
    # The grid depends on the config being tried, so it is a function of it.
    kernel[lambda config: (triton.cdiv(x.numel(), config["BLOCK"]),)](x, out, x.numel())
    return out.item()
# --8<-- [end:kernel]


# --8<-- [start:tuning]
kernel = sum_kernel(reset=True)
seen = []
for n in [4096, 4096, 8192]:
    before = len(runs)
    got = total(kernel, torch.ones(n, device=device))
    seen.append({"n": n, "sum": got, "configs_timed": len(runs) - before,
                 "tuned_sizes": len(kernel.cache)})
    print(f"n = {n}: sum {got:.0f}, configs timed {len(runs) - before}, "
          f"sizes tuned so far {len(kernel.cache)}")
# --8<-- [end:tuning]
results["tuning"] = seen


# --8<-- [start:trap]
x = torch.ones(4096, device=device)
sums = {"expected": x.sum().item(),
        "without reset_to_zero": total(sum_kernel(reset=False), x),
        "with reset_to_zero": total(sum_kernel(reset=True), x)}
for name, value in sums.items():
    print(f"{name:<22} {value:8.0f}")
# --8<-- [end:trap]
results["sums"] = {name.replace(" ", "_"): value for name, value in sums.items()}
results["configs"] = len(CONFIGS)
