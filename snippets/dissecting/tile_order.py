"""The order of tiles: a Triton matrix product whose programs walk the output in
groups of rows (the "L2 swizzle" of Triton's matmul tutorial), against row-major order.

    python snippets/dissecting/tile_order.py

Both orders compute the same product: the kernel runs (on a GPU, or without one in
Triton's interpreter: TRITON_INTERPRET=1, set below before triton is imported) and is
compared with torch. Then a small kernel records which tile each program of an
H100-sized launch takes, in each order; the product is compiled for sm_90 (no GPU
needed) to see how many of its programs an H100's SM holds at once; and a model from
the H100's published figures counts the bytes of A and B that each wave of programs
reads from DRAM, against the time of its arithmetic.
"""

import os
import re
import subprocess
from pathlib import Path

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when triton is imported

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.interpreter import InterpretedFunction  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

# The interpreter swaps triton.language's functions for its own while a kernel runs, and
# (triton 3.7) leaves some swapped after a kernel calls a @jit helper such as tile_of.
# The compiler further down needs the originals: keep them.
LANGUAGE = (tl, tl.core, tl.standard, tl.math, tl.tensor,
            tl.core.tensor_descriptor_base)
originals = [(part, dict(vars(part))) for part in LANGUAGE]

results = {"device": device, "triton": triton.__version__}
interpreted = os.environ.get("TRITON_INTERPRET") == "1"
results["ran"] = "Triton's interpreter on the CPU" if interpreted else device


# --8<-- [start:order]
@triton.jit
def tile_of(pid, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """The output tile (row, column) that program `pid` computes. GROUP_M = 1 is
    row-major order; GROUP_M = g walks down g rows of tiles before moving right."""
    in_group = GROUP_M * tiles_n  # programs per group of GROUP_M rows
    first_m = (pid // in_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last group may be shorter
    m = first_m + (pid % in_group) % rows
    n = (pid % in_group) // rows
    return m, n


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr,
           GROUP_M: tl.constexpr):
    # C = A @ B, row-major; M and N multiples of BLOCK, K of BLOCK_K: no masks.
    m, n = tile_of(tl.program_id(0), M // BLOCK, N // BLOCK, GROUP_M)
    rows = m * BLOCK + tl.arange(0, BLOCK)
    cols = n * BLOCK + tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), tl.float32)
    for k in range(0, K, BLOCK_K):  # the tile's row of A, column of B, a slab a step
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(c_ptr.dtype.element_ty))
# --8<-- [end:order]


# --8<-- [start:same]
M = N = 128
K, BLOCK, BLOCK_K = 64, 32, 16  # a 4 x 4 grid of 32 x 32 tiles, 4 slabs along K
a = torch.randn(M, K, device=device)
b = torch.randn(K, N, device=device)
expected = a @ b
errors = {}
for group in (1, 2):
    c = torch.empty(M, N, device=device)
    matmul[((M // BLOCK) * (N // BLOCK),)](a, b, c, M, N, K, BLOCK=BLOCK,
                                          BLOCK_K=BLOCK_K, GROUP_M=group)
    errors[group] = (c - expected).abs().max().item()
    print(f"GROUP_M = {group}: max |C - A @ B| = {errors[group]:.1e}")
# --8<-- [end:same]
results["same"] = {"max_error": errors, "tiles": [M // BLOCK, N // BLOCK]}


# --8<-- [start:launch]
@triton.jit
def record_tiles(out_ptr, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    m, n = tile_of(pid, tiles_m, tiles_n, GROUP_M)
    tl.store(out_ptr + m * tiles_n + n, pid)  # which program computes tile (m, n)


# An H100-sized product: 8192 x 8192 x 8192 in fp16, in 128 x 128 tiles.
SIZE, TILE, GROUP = 8192, 128, 8
tiles = SIZE // TILE  # 64 x 64 tiles, one program each
order = {}
for name, group in (("row_major", 1), ("grouped", GROUP)):
    launched = torch.full((tiles, tiles), -1, dtype=torch.int32, device=device)
    record_tiles[(tiles * tiles,)](launched, tiles, tiles, GROUP_M=group)
    order[name] = launched.cpu()
    print(f"{name}: the programs of the top-left 8 x 8 tiles")
    for row in order[name][:8, :8].tolist():
        print("  " + " ".join(f"{pid:4d}" for pid in row))
# --8<-- [end:launch]
results["order"] = {name: grid.tolist() for name, grid in order.items()}


def undo_interpreter(originals):
    """Make triton.language compilable again after the interpreter ran kernels: put
    back the functions it left swapped, and give the compiler the JITFunction of each
    of triton's own @jit library functions (tl.max, tl.zeros), which under
    TRITON_INTERPRET=1 are interpreter wrappers. Without that variable, nothing
    changes."""
    for part, members in originals:
        for name in set(vars(part)) - set(members):
            delattr(part, name)
        for name, value in members.items():
            if vars(part).get(name) is not value:
                setattr(part, name, value)
    for module in (tl, tl.core, tl.standard, tl.math):
        for name, value in list(vars(module).items()):
            if isinstance(value, InterpretedFunction):
                setattr(module, name, JITFunction(value.fn))


undo_interpreter(originals)
if not isinstance(tile_of, JITFunction):  # the interpreter's wrapper: the compiler
    tile_of = JITFunction(tile_of.fn)  # needs the JITFunction matmul calls


# --8<-- [start:compile]
def compile_ahead(kernel, types, constants, cc=90, **options):
    """Compile a kernel ahead of time for compute capability cc (90: an H100's
    sm_90): no GPU needed."""
    # Under TRITON_INTERPRET=1, @triton.jit gives the interpreter's wrapper; the
    # compiler takes a JITFunction of the same Python function.
    if not isinstance(kernel, JITFunction):
        kernel = JITFunction(kernel.fn)
    signature = {**types, **{name: "constexpr" for name in constants}}
    # Every pointer and size is a multiple of 16: a launch infers this from its
    # arguments; here we state it.
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(types))}
    source = ASTSource(fn=kernel, signature=signature, constexprs=constants,
                       attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", cc, 32), options=options)


CUOBJDUMP = Path(triton.backends.nvidia.__file__).parent / "bin" / "cuobjdump"


def registers(cubin):
    """Registers per thread, from the cuobjdump that triton ships. It reads a file:
    give it an in-memory one, so nothing is left on disk."""
    fd = os.memfd_create("kernel.cubin")
    try:
        os.write(fd, cubin)
        done = subprocess.run([str(CUOBJDUMP), "-res-usage", f"/proc/self/fd/{fd}"],
                              pass_fds=(fd,), capture_output=True, text=True,
                              check=True)
    finally:
        os.close(fd)
    return int(re.search(r"REG:(\d+)", done.stdout).group(1))


# An H100's published per-SM limits (CUDA's occupancy rules for compute capability
# 9.0): a model, not a measurement.
SM90 = {"registers": 65536, "warps": 64, "programs": 32,
        "shared_bytes": 228 * 1024, "shared_reserved": 1024}


def programs_per_sm(registers, shared_bytes, num_warps):
    """Programs (CTAs) resident per SM, and the limits that bind."""
    per_warp = -(-registers * 32 // 256) * 256  # allocated per warp, 256 at a time
    shared = -(-shared_bytes // 128) * 128 + SM90["shared_reserved"]
    limits = {"registers": SM90["registers"] // per_warp // num_warps,
              "threads": SM90["warps"] // num_warps,
              "programs": SM90["programs"],
              "shared memory": SM90["shared_bytes"] // shared}
    programs = min(limits.values())
    return programs, " and ".join(k for k, v in limits.items() if v == programs)
# --8<-- [end:compile]


# --8<-- [start:build]
# The kernel as an H100 would run the model's product: fp16, 128 x 128 tiles, slabs
# of 64 along K, 8 warps, 3 stages. Its registers and shared memory decide how many
# programs an SM holds at once.
types = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16",
         "M": "i32", "N": "i32", "K": "i32"}
SLAB, WARPS, STAGES = 64, 8, 3
build = compile_ahead(matmul, types, {"BLOCK": TILE, "BLOCK_K": SLAB, "GROUP_M": GROUP},
                      num_warps=WARPS, num_stages=STAGES)
regs, shared = registers(build.asm["cubin"]), build.metadata.shared
per_sm, binding = programs_per_sm(regs, shared, WARPS)
print(f"compiled for sm_90: {regs} registers a thread, {shared:,} B of shared memory; "
      f"an SM holds {per_sm} programs, limited by {binding}")
# --8<-- [end:build]
results["build"] = {"registers": regs, "shared_bytes": shared, "per_sm": per_sm,
                    "limited_by": binding, "slab": SLAB, "num_warps": WARPS,
                    "num_stages": STAGES}


# --8<-- [start:wave]
# A model, not a measurement, from an H100 SXM's published figures: 132 SMs, 50 MiB
# of L2, 3.35 TB/s of HBM3, 989 TFLOP/s of dense fp16. A wave is the programs the SMs
# hold at once. Each reads its tile's whole row of A and column of B, 2 MiB each, one
# slab of 64 along K at a time. If a wave's programs walk K together, only the current
# slab of each row and column is live in L2, and each is read from DRAM once.
SMS, L2_BYTES, DRAM_BYTES_PER_S, FLOPS_PER_S = 132, 50 * 2**20, 3.35e12, 989e12
block_bytes = TILE * SIZE * 2  # a row of tiles of A, or a column of B
slab_bytes = TILE * SLAB * 2  # the part of one that a K step reads
waves = {}
for key, held in (("one_per_sm", 1), ("build", per_sm)):  # and as many as fit
    programs = SMS * held
    compute_us = programs * 2 * TILE * TILE * SIZE / FLOPS_PER_S * 1e6
    wave = waves[key] = {"programs": programs, "per_sm": held, "compute_us": compute_us}
    print(f"{programs} programs a wave ({held} per SM): arithmetic "
          f"{compute_us:.1f} us at 989 TFLOP/s")
    for name, grid in order.items():
        first = (grid < programs).nonzero()  # the (m, n) of the wave's tiles
        rows, cols = first[:, 0].unique().numel(), first[:, 1].unique().numel()
        dram = (rows + cols) * block_bytes
        wave[name] = {"rows_of_a": rows, "cols_of_b": cols, "mib": dram / 2**20,
                      "mb": dram / 1e6, "live_kib": (rows + cols) * slab_bytes / 2**10,
                      "dram_us": dram / DRAM_BYTES_PER_S * 1e6}
        wave[name]["of_arithmetic"] = wave[name]["dram_us"] / compute_us
        wave[name]["memory_bound"] = wave[name]["dram_us"] > compute_us
        w = wave[name]
        print(f"  {name:>9}: {rows} rows of A, {cols} columns of B; "
              f"{w['live_kib']:,.0f} KiB live in L2; {w['mib']:.0f} MiB from DRAM, "
              f"{w['dram_us']:.1f} us at 3.35 TB/s")
    wave["ratio"] = wave["row_major"]["mib"] / wave["grouped"]["mib"]
# --8<-- [end:wave]
results["wave"] = {**waves, "sms": SMS, "l2_mib": L2_BYTES / 2**20,
                   "l2_mb": L2_BYTES / 1e6, "block_mib": block_bytes / 2**20,
                   "slab_kib": slab_bytes / 2**10, "group": GROUP, "tiles": tiles,
                   "size": SIZE, "tile": TILE, "programs": SMS * per_sm}
