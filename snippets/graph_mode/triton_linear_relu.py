"""A hand-written Triton kernel for relu(x @ W.T + b): the bias and relu applied in
registers, one write of the output.

    python snippets/graph_mode/triton_linear_relu.py

On a CUDA machine the kernel is compiled for the GPU, checked against torch, timed
against eager PyTorch and torch.compile, and the compiler's stages (Triton IR, TTGIR,
LLVM IR, PTX, SASS) are excerpted from its own artifacts. Without a GPU the kernel
runs in Triton's interpreter on NumPy (TRITON_INTERPRET=1, set below before triton is
imported) and is checked against torch; no compiler stage is made then.
"""

import os
import re

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when triton is imported

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from torch.utils import benchmark  # noqa: E402

results = {"device": device, "triton": triton.__version__}
interpreted = os.environ.get("TRITON_INTERPRET") == "1"


# --8<-- [start:kernel]
@triton.jit
def linear_bias_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,  # x: (M, K), w: (N, K) as in nn.Linear, b: (N,)
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

    # The accumulator stays in registers for the whole loop: fp32 whatever the input.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + ks
        # A BLOCK_M x BLOCK_K tile of x, a BLOCK_K x BLOCK_N tile of W.T (W is (N, K)).
        x = tl.load(x_ptr + rows[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + k[:, None] * stride_wk + cols[None, :] * stride_wn,
                    mask=(k[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)  # tensor cores on a GPU: the tile product adds into acc

    # The epilogue, still in registers: the product never goes to memory unbiased.
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    # One write of the finished tile: M x N values in all, the layer's only output.
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on,
             acc.to(out_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def kernel_args(x, weight, bias, out):
    M, K = x.shape
    N = weight.shape[0]
    return (x, weight, bias, out, M, N, K, x.stride(0), x.stride(1),
            weight.stride(0), weight.stride(1), out.stride(0), out.stride(1))


def linear_bias_relu(x, weight, bias, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, **launch):
    out = torch.empty(x.shape[0], weight.shape[0], device=x.device, dtype=x.dtype)
    # One program per output tile.
    grid = (triton.cdiv(out.shape[0], BLOCK_M), triton.cdiv(out.shape[1], BLOCK_N))
    linear_bias_relu_kernel[grid](*kernel_args(x, weight, bias, out),
                                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                  **launch)
    return out
# --8<-- [end:kernel]


# --8<-- [start:check]
# A GPU gets a large fp16 layer and big tiles; the interpreter gets 256^3 in fp32
# and 64^3 tiles (smaller tiles make it much slower).
M, N, K = (8192, 8192, 4096) if device == "cuda" else (256, 256, 256)
dtype = torch.float16 if device == "cuda" else torch.float32
tiles = {}
if device == "cuda":
    tiles = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)
torch.manual_seed(0)
x = torch.randn(M, K, device=device, dtype=dtype)
weight = torch.randn(N, K, device=device, dtype=dtype) / K**0.5
bias = torch.randn(N, device=device, dtype=dtype)

out = linear_bias_relu(x, weight, bias, **tiles)  # on a GPU, the first call compiles
expected = torch.relu(x.float() @ weight.float().T + bias.float())
max_error = (out.float() - expected).abs().max().item()
tolerance = 2e-2 if dtype == torch.float16 else 1e-4
how = " (Triton interpreter)" if interpreted else ""
print(f"{M} x {K} @ ({N} x {K}).T + bias, relu, {dtype} on {device}{how}")
print(f"grid: {triton.cdiv(M, tiles.get('BLOCK_M', 64))} x "
      f"{triton.cdiv(N, tiles.get('BLOCK_N', 64))} programs")
print(f"max |triton - torch| = {max_error:.2e} (tolerance {tolerance:g}): "
      f"{'match' if max_error <= tolerance else 'MISMATCH'}")
print(f"negative outputs: {(out < 0).sum().item()}, "
      f"zeros from relu: {(out == 0).float().mean().item():.0%}")
# --8<-- [end:check]
results["check"] = {"m": M, "n": N, "k": K, "dtype": dtype, "max_error": max_error,
                    "tolerance": tolerance, "match": max_error <= tolerance,
                    "interpreted": interpreted}


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


# --8<-- [start:benchmark]
if device == "cuda":
    def eager(x, weight, bias):
        return torch.relu(torch.nn.functional.linear(x, weight, bias))

    def triton_kernel(x, weight, bias):
        return linear_bias_relu(x, weight, bias, **tiles)

    compiled_torch = torch.compile(eager)
    compiled_torch(x, weight, bias)  # compile before timing
    flop = 2 * M * N * K
    timings = measure({name: (fn, x, weight, bias) for name, fn in [
        ("eager", eager), ("compiled", compiled_torch), ("triton", triton_kernel)]})
    tflops = {}
    for name, m in timings.items():
        tflops[name] = flop / m.median / 1e12
        print(f"{name:<9} {m.median * 1e6:8.1f} us median (IQR {m.iqr * 1e6:.1f} us, "
              f"n = {len(m.times)}), {tflops[name]:6.1f} TFLOP/s")
else:
    print("not timed: the interpreter runs the kernel as NumPy on the CPU, so its "
          "speed says nothing about the kernel")
# --8<-- [end:benchmark]
if device == "cuda":
    results["timing"] = timings
    results["tflops"] = tflops


def sass_of(compiled):
    """SASS, from disassembling the cubin with the cuobjdump that triton ships."""
    try:
        return compiled.asm["sass"]  # recent triton disassembles on first access
    except KeyError:
        from triton.tools.disasm import get_sass

        return get_sass(compiled.asm["cubin"])


def shorten(line, width=44):
    """One line of a stage, without MLIR locations or SASS control codes, cut."""
    line = re.sub(r"\s*loc\(#?[^)]*\)", "", line)
    line = re.sub(r"^[-\w]+:[-\w]+:[-\w]+:[-\w]+:\w+\s+", "", line.strip())
    return line if len(line) <= width else line[: width - 3] + "..."


# --8<-- [start:pipeline]
# The tile product `tt.dot` at each stage, down to the tensor-core instructions.
STAGES = [
    ("ttir", r"tt\.dot "),
    ("ttgir", r"warp_group_dot|tc_gen5_mma|tt\.dot "),
    ("llir", r"wgmma\.mma_async|tcgen05\.mma|mma\.sync"),
    ("ptx", r"wgmma\.mma_async|tcgen05\.mma|mma\.sync"),
    ("sass", r"HGMMA|UTC\w*MMA|HMMA"),
]
pipeline = {}
if device == "cuda":
    # warmup() compiles without launching (here it finds the kernel the launches
    # above compiled) and returns it, with every stage's text in .asm.
    compiled = linear_bias_relu_kernel.warmup(
        *kernel_args(x, weight, bias, out), grid=(1,), **tiles)
    for key, pattern in STAGES:
        text = sass_of(compiled) if key == "sass" else compiled.asm[key]
        found = [line for line in text.splitlines() if re.search(pattern, line)]
        pipeline[key] = {"lines": len(text.splitlines()), "matches": len(found),
                         "first": shorten(found[0]) if found else None}
        print(f"{key:<5} {len(text.splitlines()):6,} lines, {len(found):4} matmul "
              f"lines, first: {pipeline[key]['first']}")
    pipeline["shared_bytes"] = compiled.metadata.shared
    print(f"cubin: {len(compiled.asm['cubin']):,} bytes; "
          f"{compiled.metadata.shared:,} bytes of shared memory per program")
else:
    print("Triton IR -> TTGIR -> LLVM IR -> PTX -> SASS are made when triton compiles")
    print("for a GPU target, which needs no GPU; this run used the interpreter, which")
    print("runs the kernel's Python on NumPy and compiles nothing.")
# --8<-- [end:pipeline]
results["pipeline"] = pipeline
