"""torch.compile's modes (default, reduce-overhead, max-autotune), a pitfall of CUDA
graphs, and the "not enough SMs" warning.

    python snippets/dissecting/bench_compile_modes.py

Prints what each mode switches on in Inductor. On CUDA it then shows that a CUDA graph's
replay overwrites the previous call's output, prints the GPU's SM count and Inductor's
is_big_gpu verdict (max-autotune's GEMM templates need 68 SMs or more), and times
matmul + softmax compiled in each mode at two sizes. On the CPU, where CUDA graphs do
nothing, it compares default with max-autotune-no-cudagraphs at one size.
"""

import contextlib
import logging
import os
import tempfile
import time
from unittest import mock

import torch
import torch._inductor
from torch._inductor.graph import GraphLowering
from torch._inductor.runtime.cache_dir_utils import cache_dir
from torch._inductor.utils import fresh_cache, is_big_gpu
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


# --8<-- [start:modes]
device = "cuda" if torch.cuda.is_available() else "cpu"
MODES = ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
print(f"device: {device}; the Inductor options each mode turns on:")
for mode in MODES:
    print(f"  {mode:<27} {torch._inductor.list_mode_options(mode) or '{} (nothing)'}")
# --8<-- [end:modes]
results["device"] = device
results["mode_options"] = {m: torch._inductor.list_mode_options(m) for m in MODES}

# --8<-- [start:pitfalls]
# reduce-overhead replays a recorded CUDA graph, whose outputs live in memory the graph
# owns: the next replay writes its outputs over the previous call's.
if device == "cuda":
    graphed = torch.compile(simple_fn, mode="reduce-overhead")
    a = torch.randn(64, 64, device=device)
    b = torch.randn(64, 64, device=device)
    for _ in range(3):
        graphed(a, b)  # warm-up runs, then the recording; later calls replay
    first = graphed(a, b)
    kept = first.clone()  # a copy survives the next replay
    second = graphed(a, b)
    try:
        print("first output, read after the next call:", first.sum().item())
        overwritten = False
    except RuntimeError as error:
        overwritten = True
        print("reading the first output after the next call:",
              str(error).splitlines()[0])
    print("the clone taken before the next call still reads:", kept.sum().item())
else:
    overwritten = None
    print("no GPU: reduce-overhead's CUDA graphs (and their pitfalls) need CUDA")
# --8<-- [end:pitfalls]
results["cudagraph_output_overwritten"] = overwritten

# Where each compile's empty kernel cache is made (kept until the timings are done:
# later calls may load kernels from these folders).
folders = tempfile.TemporaryDirectory()

# --8<-- [start:timings]
# On CUDA: three modes, at the source's size (launch overhead rules) and at one where
# the matmul does. On the CPU only default and max-autotune-no-cudagraphs differ.
SIZES = [100, 2048] if device == "cuda" else [100]
if device == "cuda":
    TIMED = ["default", "reduce-overhead", "max-autotune"]
else:
    TIMED = ["default", "max-autotune-no-cudagraphs"]
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

# Run one after another in one process, a mode would reuse what an earlier one built:
# its FX graph, its AOTAutograd graph, its autotuning results, its compiled kernels.
# So those caches are off, and each compile gets an empty kernel cache of its own
# (fresh_cache: new Inductor and Triton folders, in-memory copies dropped).
NO_CACHES = {"fx_graph_cache": False, "fx_graph_remote_cache": False,
             "autotune_local_cache": False, "autotune_remote_cache": False}
CACHES = {"fx_graph": False, "aot_autograd": False, "autotune": False,
          "kernels": "an empty folder per mode"}


@contextlib.contextmanager
def nothing_cached():
    with fresh_cache(dir=folders.name, delete=False), \
            torch._inductor.config.patch(NO_CACHES), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        yield cache_dir()  # this compile's own kernel cache


# The first compilation in a process also pays for starting the compiler: imports,
# worker pools, tables built on first use (by the matmul's lowering and autotuning,
# the reductions' code generation). Pay it here, untimed, so compile times compare
# modes: an unrelated small function that takes those paths, compiled with nothing
# cached (a cache hit would skip them, and warm nothing).
with nothing_cached():
    warm_up = torch.compile(lambda a: (a @ a).exp().sum(dim=0),
                            mode="max-autotune-no-cudagraphs")
    warm_up(torch.ones(8, 8, device=device))
torch._dynamo.reset()  # drops the pitfall's graph too: each mode starts from nothing
print("caches: FX graph, AOTAutograd and autotune off; kernels: an empty one per mode")

timings, compile_s, matmul, wrote = {}, {}, {}, {}  # per size, per mode
for n in SIZES:
    x = torch.randn(n, n, device=device)
    y = torch.randn(n, n, device=device)
    compile_s[n], matmul[n], wrote[n] = {}, {}, {}
    candidates = {"eager": (simple_fn, x, y)}
    for mode in TIMED:
        compiled_fn = torch.compile(simple_fn, mode=mode, dynamic=False)
        code = []  # Inductor hands each graph's generated Python here
        with nothing_cached() as folder, \
                mock.patch.object(GraphLowering, "save_output_code", code.append):
            # The call that compiles, autotuning included. One wall-clock reading: a
            # compile happens once. A new mode is a new backend to Dynamo: it traces
            # again, and keeps each mode's graph beside the others' for the timings.
            sync()
            start = time.perf_counter()
            compiled_fn(x, y)
            sync()
            compile_s[n][mode] = time.perf_counter() - start
            wrote[n][mode] = sum(len(files) for _, _, files in os.walk(folder))
        candidates[mode] = (compiled_fn, x, y)
        # A matmul left to the vendor library is an extern_kernels.mm call; a Triton
        # GEMM template is a generated triton_tem_ kernel.
        source = "\n".join(code)
        matmul[n][mode] = ("extern mm" if "extern_kernels.mm(" in source else
                           "Triton template" if "triton_tem_" in source else
                           "generated")
    print(f"size {n}: files each compile wrote into its own kernel cache: "
          + ", ".join(f"{mode} {count}" for mode, count in wrote[n].items()))
    timings[n] = measure(candidates)  # eager and every mode in the same rounds

    print(f"size {n}: median (IQR), timings; eager/mode medians, compile time, matmul")
    eager = timings[n]["eager"]
    for mode, m in timings[n].items():
        extra = "" if mode == "eager" else (
            f" {eager.median / m.median:5.2f}x, compile {compile_s[n][mode]:5.1f} s, "
            f"{matmul[n][mode]}")
        print(f"  {mode:<26} {m.median * 1e6:9.1f} us ({m.iqr * 1e6:6.1f}), "
              f"{len(m.times)}{extra}")
folders.cleanup()
# --8<-- [end:timings]
results["sizes"] = SIZES
results["timed_modes"] = TIMED
results["timing"] = {str(n): t for n, t in timings.items()}
results["compile_s"] = {str(n): t for n, t in compile_s.items()}
results["matmul"] = {str(n): m for n, m in matmul.items()}
results["caches"] = CACHES
results["kernel_cache_files"] = {str(n): w for n, w in wrote.items()}

# --8<-- [start:sms]
MIN_SMS = 68  # Inductor's threshold in torch._inductor.utils.is_big_gpu (an RTX 3080's)
if device == "cuda":
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    # is_big_gpu logs "Not enough SMs to use max_autotune_gemm mode" when it says no.
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    inductor_log = logging.getLogger("torch._inductor.utils")
    inductor_log.addHandler(handler)
    getattr(is_big_gpu, "cache_clear", lambda: None)()  # it remembers its answer
    try:
        big = is_big_gpu(0)
    finally:
        inductor_log.removeHandler(handler)
    print(f"{torch.cuda.get_device_name()}: {sms} SMs; is_big_gpu: {big} "
          f"(needs >= {MIN_SMS})")
    print("warning logged:", next((m for m in seen if "SMs" in m), "none"))
    print("max-autotune may choose Triton GEMM templates for matmuls" if big else
          "max-autotune keeps matmuls on cuBLAS and only tunes the generated kernels")
else:
    sms, big, seen = None, None, []
    print("no GPU: the SM check (and the warning) only apply to max-autotune on CUDA")
# --8<-- [end:sms]
results["sms"] = sms
results["min_sms"] = MIN_SMS
results["is_big_gpu"] = big
results["sm_warning"] = any("SMs" in m for m in seen)
