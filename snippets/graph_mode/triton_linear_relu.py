"""A hand-written Triton kernel for relu(x @ W.T + b): one kernel, the bias and relu applied in registers.

    python snippets/graph_mode/triton_linear_relu.py

On a CUDA machine the kernel is compiled for the GPU, checked against torch, timed against eager PyTorch
and torch.compile, and the compiler's stages (Triton IR, TTGIR, LLVM IR, PTX, SASS) are shown from its own
artifacts. Without a GPU the snippet sets TRITON_INTERPRET=1 itself (before importing triton), so the same
kernel runs in Triton's interpreter on NumPy and is checked against torch; there are no compiler stages to
show then. Writes results.json to $SNIPPET_OUTPUT_DIR or to a fresh temporary folder.
"""

import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before triton is imported

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from torch.utils import benchmark  # noqa: E402

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="triton_linear_relu-"))
results = {"device": device, "triton": triton.__version__}


# --8<-- [start:kernel]
@triton.jit
def linear_bias_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,  # x: (M, K), w: (N, K) as in nn.Linear, b: (N,), out: (M, N)
    M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # Each program instance computes one BLOCK_M x BLOCK_N tile of the output.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)

    # The accumulator lives in registers for the whole loop: fp32, whatever the input type.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + ks
        # Read a BLOCK_M x BLOCK_K tile of x and a BLOCK_K x BLOCK_N tile of W.T (W is stored (N, K)).
        x = tl.load(x_ptr + rows[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + k[:, None] * stride_wk + cols[None, :] * stride_wn,
                    mask=(k[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)  # tensor cores on a GPU: the tile product is added into acc

    # The epilogue, still in registers: the matmul result never goes to memory before bias and relu.
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    # One write of the finished tile: M x N values in all, the only output traffic of the whole layer.
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on,
             acc.to(out_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def linear_bias_relu(x, weight, bias, block_m=64, block_n=64, block_k=64, **launch):
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty(M, N, device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))  # one program per output tile
    compiled = linear_bias_relu_kernel[grid](
        x, weight, bias, out, M, N, K,
        x.stride(0), x.stride(1), weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, **launch,
    )
    return out, compiled  # on a GPU, `compiled` is the CompiledKernel with every stage's artifact
# --8<-- [end:kernel]


# --8<-- [start:check]
# A GPU gets a large fp16 layer and big tiles; the interpreter gets 256 x 256 x 256 in fp32 and 64^3 tiles.
M, N, K = (8192, 8192, 4096) if device == "cuda" else (256, 256, 256)
dtype = torch.float16 if device == "cuda" else torch.float32
tiles = dict(block_m=128, block_n=128, block_k=64, num_warps=8, num_stages=3) if device == "cuda" else {}
torch.manual_seed(0)
x = torch.randn(M, K, device=device, dtype=dtype)
weight = torch.randn(N, K, device=device, dtype=dtype) / K**0.5
bias = torch.randn(N, device=device, dtype=dtype)

start = time.perf_counter()
out, compiled = linear_bias_relu(x, weight, bias, **tiles)  # on a GPU the first launch also compiles
if device == "cuda":
    torch.cuda.synchronize()
first_call_s = time.perf_counter() - start
expected = torch.relu(torch.nn.functional.linear(x.float(), weight.float(), bias.float()))
max_error = (out.float() - expected).abs().max().item()
tolerance = 2e-2 if dtype == torch.float16 else 1e-4
print(f"{M} x {K} @ ({N} x {K}).T + bias, relu, {dtype} on {device}"
      f"{' (Triton interpreter)' if os.environ.get('TRITON_INTERPRET') == '1' else ''}")
print(f"grid: {triton.cdiv(M, tiles.get('block_m', 64))} x {triton.cdiv(N, tiles.get('block_n', 64))} programs; "
      f"first call {first_call_s:.2f} s")
print(f"max |triton - torch| = {max_error:.2e} (tolerance {tolerance:g}): "
      f"{'match' if max_error <= tolerance else 'MISMATCH'}")
print(f"negative outputs: {(out < 0).sum().item()}, zeros from relu: {(out == 0).float().mean().item():.0%}")
# --8<-- [end:check]
results["check"] = {"m": M, "n": N, "k": K, "dtype": str(dtype), "max_error": max_error, "tolerance": tolerance,
                    "match": max_error <= tolerance, "first_call_s": first_call_s,
                    "interpreted": os.environ.get("TRITON_INTERPRET") == "1"}


# --8<-- [start:benchmark]
if device == "cuda":
    def eager(x, weight, bias):
        return torch.relu(torch.nn.functional.linear(x, weight, bias))

    compiled_torch = torch.compile(eager)
    compiled_torch(x, weight, bias)  # compile before timing
    flop = 2 * M * N * K
    bench = {}
    for name, fn in [("eager", eager), ("torch.compile", compiled_torch),
                     ("triton kernel", lambda x, w, b: linear_bias_relu(x, w, b, **tiles)[0])]:
        t = benchmark.Timer("fn(x, w, b)", globals={"fn": fn, "x": x, "w": weight, "b": bias}).blocked_autorange(
            min_run_time=1)
        bench[name.replace(".", "_").replace(" ", "_")] = {"median_us": t.median * 1e6, "iqr_us": t.iqr * 1e6, "tflops": flop / t.median / 1e12,
                       "timings": len(t.times)}
        print(f"{name:<14} {t.median * 1e6:8.1f} us median (IQR {t.iqr * 1e6:.1f} us, {len(t.times)} timings), "
              f"{flop / t.median / 1e12:6.1f} TFLOP/s")
    results["benchmark"] = bench
else:
    print("timing skipped: the interpreter runs the kernel as NumPy on the CPU, so its speed says nothing "
          "about the kernel")
# --8<-- [end:benchmark]


def excerpt(text, pattern, count=3, width=110):
    """The first `count` lines matching `pattern`, without MLIR location suffixes, cut to `width`."""
    lines = [re.sub(r"\s*loc\(#?[^)]*\)", "", line).strip() for line in text.splitlines() if re.search(pattern, line)]
    return [line if len(line) <= width else line[: width - 3] + "..." for line in lines[:count]]


def sass_of(compiled):
    """SASS comes from disassembling the cubin with cuobjdump (shipped with triton); None if that fails."""
    try:
        if "sass" in compiled.asm or hasattr(type(compiled.asm), "__missing__"):
            return compiled.asm["sass"]  # recent triton disassembles lazily on first access
        from triton.tools.disasm import get_sass

        return get_sass(compiled.asm["cubin"])
    except (KeyError, ImportError, OSError, subprocess.CalledProcessError, RuntimeError) as error:
        print(f"SASS unavailable: {type(error).__name__}: {error}")
        return None


# --8<-- [start:pipeline]
# What to look for in each stage: the tile matmul, the bias-add and relu, and the single store.
STAGES = [
    ("ttir", "Triton IR", r"tt\.dot|tt\.store|maxnumf|maximumf"),
    ("ttgir", "TTGIR (GPU layouts)", r"^#(blocked|mma)|warp_group_dot|tt\.dot |local_alloc"),
    ("llir", "LLVM IR", r"wgmma\.mma_async|mma\.sync|llvm\.maxnum|store"),
    ("ptx", "PTX", r"wgmma\.mma_async|mma\.sync|max\.f32|st\.global"),
    ("sass", "SASS", r"HGMMA|HMMA|FMNMX|STG"),
]
pipeline = {}
if device == "cuda":
    artifacts = dict(compiled.asm)
    artifacts["sass"] = sass_of(compiled)
    for key, title, pattern in STAGES:
        text = artifacts.get(key)
        if text is None:
            continue
        lines = excerpt(text, pattern)
        pipeline[key] = {"lines": len(text.splitlines()), "bytes": len(text.encode()),
                         "matches": len([line for line in text.splitlines() if re.search(pattern, line)]),
                         "excerpt": lines}
        print(f"--- {title}: {len(text.splitlines()):,} lines, {len(text.encode()):,} bytes")
        for line in lines:
            print(f"    {line}")
    cubin = compiled.asm["cubin"]
    pipeline["cubin"] = {"bytes": len(cubin)}
    print(f"--- cubin (the binary the driver loads): {len(cubin):,} bytes; "
          f"{compiled.n_regs} registers per thread, {compiled.n_spills} spills, "
          f"{compiled.metadata.shared:,} bytes of shared memory per program")
    pipeline["n_regs"], pipeline["n_spills"], pipeline["shared_bytes"] = (
        compiled.n_regs, compiled.n_spills, compiled.metadata.shared)
else:
    print("Triton IR -> TTGIR -> LLVM IR -> PTX -> SASS exist only when triton compiles for a GPU;")
    print("under TRITON_INTERPRET=1 the kernel's Python runs on NumPy arrays and none of these stages is made.")
# --8<-- [end:pipeline]
results["pipeline"] = pipeline

(OUT / "results.json").write_text(json.dumps(results, indent=2))
