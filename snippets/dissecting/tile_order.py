"""The order of tiles: a Triton matrix product whose programs walk the output in
groups of rows (the "L2 swizzle" of Triton's matmul tutorial), against row-major order.

    python snippets/dissecting/tile_order.py

Both orders compute the same product: the kernel runs (on a GPU, or without one in
Triton's interpreter: TRITON_INTERPRET=1, set below before triton is imported) and is
compared with torch. Then a small kernel records which tile each program of an
H100-sized launch takes, in each order, and a model from the H100's published figures
counts the bytes of A and B that the first wave of programs reads.
"""

import os

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when triton is imported

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

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
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, GROUP_M: tl.constexpr):
    # C = A @ B, row-major fp32, M, N and K multiples of BLOCK: no masks.
    m, n = tile_of(tl.program_id(0), M // BLOCK, N // BLOCK, GROUP_M)
    rows = m * BLOCK + tl.arange(0, BLOCK)
    cols = n * BLOCK + tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):  # the tile's row of A, column of B, a block a step
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)
# --8<-- [end:order]


# --8<-- [start:same]
M = N = 128
K, BLOCK = 64, 32  # a 4 x 4 grid of 32 x 32 tiles
a = torch.randn(M, K, device=device)
b = torch.randn(K, N, device=device)
expected = a @ b
errors = {}
for group in (1, 2):
    c = torch.empty(M, N, device=device)
    matmul[((M // BLOCK) * (N // BLOCK),)](a, b, c, M, N, K, BLOCK=BLOCK, GROUP_M=group)
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


# --8<-- [start:wave]
# A model, not a measurement: an H100 SXM has 132 SMs (published), so the first wave is
# programs 0 to 131, one per SM. Each reads its tile's whole row of A and column of B:
# a row of tiles of A is TILE x SIZE fp16 values, 2 MiB, and so is a column of B.
SMS, BYTES = 132, 2
block_mib = TILE * SIZE * BYTES / 2**20
wave = {}
for name, grid in order.items():
    first = (grid < SMS).nonzero()  # the (m, n) of the first wave's tiles
    rows_of_a, cols_of_b = first[:, 0].unique().numel(), first[:, 1].unique().numel()
    wave[name] = {"rows_of_a": rows_of_a, "cols_of_b": cols_of_b,
                  "mib": (rows_of_a + cols_of_b) * block_mib}
    print(f"{name:>9}: the first {SMS} programs read {rows_of_a} rows of tiles of A "
          f"and {cols_of_b} columns of B: {wave[name]['mib']:.0f} MiB")
ratio = wave["row_major"]["mib"] / wave["grouped"]["mib"]
print(f"row-major order reads {ratio:.1f}x the bytes of grouped order "
      "in its first wave")
# --8<-- [end:wave]
results["wave"] = {**wave, "sms": SMS, "block_mib": block_mib, "ratio": ratio,
                   "group": GROUP, "tiles": tiles, "size": SIZE, "tile": TILE}
