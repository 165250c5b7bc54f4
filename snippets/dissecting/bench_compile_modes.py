"""torch.compile's modes (default, reduce-overhead, max-autotune) and the "not enough SMs" warning.

    python snippets/dissecting/bench_compile_modes.py

Prints what each mode switches on in Inductor. On CUDA it then prints the GPU's SM count and Inductor's
is_big_gpu verdict (max-autotune's GEMM templates need 68 SMs or more), and times matmul + softmax compiled
in each mode at two sizes, with compile time apart. On the CPU, where CUDA graphs do nothing, it compares
default with max-autotune-no-cudagraphs at one size.
Writes results.json to $SNIPPET_OUTPUT_DIR, or to a fresh temporary folder.
"""

import json
import logging
import os
import tempfile
import time
from pathlib import Path

import torch
import torch._inductor
from torch._inductor.utils import is_big_gpu, run_and_get_code
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="bench_compile_modes-"))
results = {}


def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)


# --8<-- [start:modes]
device = "cuda" if torch.cuda.is_available() else "cpu"
MODES = ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
print(f"device: {device}; the Inductor options each mode turns on:")
for mode in MODES:
    print(f"  {mode:<27} {torch._inductor.list_mode_options(mode) or '{} (nothing)'}")
# --8<-- [end:modes]
results.update(device=device, mode_options={m: torch._inductor.list_mode_options(m) for m in MODES})

# --8<-- [start:sms]
MIN_SMS = 68  # Inductor's threshold in torch._inductor.utils.is_big_gpu (an RTX 3080 has 68)
if device == "cuda":
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    # is_big_gpu logs "Not enough SMs to use max_autotune_gemm mode" when it says no; catch that line.
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    inductor_log = logging.getLogger("torch._inductor.utils")
    inductor_log.addHandler(handler)
    getattr(is_big_gpu, "cache_clear", lambda: None)()  # it remembers its answer: ask afresh
    try:
        big = is_big_gpu(0)
    finally:
        inductor_log.removeHandler(handler)
    print(f"{torch.cuda.get_device_name()}: {sms} SMs; is_big_gpu: {big} (needs >= {MIN_SMS})")
    print("warning logged:", next((m for m in seen if "SMs" in m), "none"))
    print("max-autotune may choose Triton GEMM templates for matmuls" if big else
          "max-autotune keeps the matmul on cuBLAS and only tunes the generated kernels")
else:
    sms, big, seen = None, None, []
    print("no GPU: the SM check (and the warning) only apply to max-autotune on CUDA")
# --8<-- [end:sms]
results.update(sms=sms, min_sms=MIN_SMS, is_big_gpu=big, sm_warning=any("SMs" in m for m in seen))

# --8<-- [start:timings]
# On CUDA: the three modes, at the article's size (launch overhead rules) and at one where the matmul
# does. On the CPU, CUDA graphs do nothing, so only default and max-autotune-no-cudagraphs differ.
SIZES = [100, 2048] if device == "cuda" else [100]
TIMED = ["default", "reduce-overhead", "max-autotune"] if device == "cuda" else ["default", "max-autotune-no-cudagraphs"]
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
min_run_time = 0.5 if device == "cuda" else 0.2
threads = 1  # Timer's default, for both sides: on a small shared CPU, OpenMP teams wait for parked threads


def measure(fn, x, y):
    timer = benchmark.Timer("fn(x, y)", globals={"fn": fn, "x": x, "y": y}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time)


# The first compilation in a process also pays for starting the compiler itself (imports, worker pools,
# the C++ header). Pay it here, untimed, so the compile times below compare modes, not their order.
torch.compile(simple_fn)(torch.ones(8, 8, device=device), torch.ones(8, 8, device=device))
torch._dynamo.reset()

timings = {}
for n in SIZES:
    x = torch.randn(n, n, device=device)
    y = torch.randn(n, n, device=device)
    eager = measure(simple_fn, x, y)
    timings[n] = {"eager": {"median_us": eager.median * 1e6, "iqr_us": eager.iqr * 1e6}}
    print(f"n = {n}: eager {eager.median * 1e6:9.1f} us (IQR {eager.iqr * 1e6:.1f})")
    for mode in TIMED:
        compiled_fn = torch.compile(simple_fn, mode=mode, dynamic=False)
        # run_and_get_code resets Dynamo, compiles on this first call and hands back the generated code.
        # The FX graph cache is off so every mode pays its full compile (autotuning included).
        with torch._inductor.config.patch(fx_graph_cache=False):
            sync()
            start = time.perf_counter()
            _, code = run_and_get_code(compiled_fn, x, y)
            sync()
            compile_s = time.perf_counter() - start
        m = measure(compiled_fn, x, y)
        source = "\n".join(code)
        # A matmul left to the vendor library is an extern_kernels.mm call; a Triton GEMM template is
        # a generated triton_tem_ kernel.
        matmul = "extern mm" if "extern_kernels.mm(" in source else (
            "Triton template" if "triton_tem_" in source else "generated template")
        timings[n][mode] = {"median_us": m.median * 1e6, "iqr_us": m.iqr * 1e6, "compile_s": compile_s,
                            "speedup": eager.median / m.median, "matmul": matmul}
        print(f"  {mode:<26} {m.median * 1e6:9.1f} us (IQR {m.iqr * 1e6:.1f}), {eager.median / m.median:5.2f}x, "
              f"compile {compile_s:5.1f} s, matmul: {matmul}")
# --8<-- [end:timings]
results["timings"] = {str(n): t for n, t in timings.items()}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
