"""Triton from first principles: program ids, offsets, masks, blocks, warps and stages.

    python snippets/dissecting/triton_basics.py

Three kernels: a vector add, a fused softmax with one row per program, and the same
softmax as a persistent kernel whose loop over rows is pipelined. Each runs (on a GPU,
or without one in Triton's interpreter on NumPy: TRITON_INTERPRET=1, set below before
triton is imported) and is compared with torch. Then the softmax kernels are compiled
ahead of time for sm_90 (an H100) with different num_warps and num_stages, with no GPU
needed, to show what those two launch options change in the compiled kernel; and a
fourth kernel, a loop of tl.dot, is compiled for sm_80 (an A100) and sm_90 with 2, 3
and 4 stages, to count the shared-memory buffers each pipeline keeps.
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
# (triton 3.7) leaves some swapped after a kernel calls a @jit helper such as tl.max.
# The compiler further down needs the originals: keep them.
LANGUAGE = (tl, tl.core, tl.standard, tl.math, tl.tensor,
            tl.core.tensor_descriptor_base)
originals = [(part, dict(vars(part))) for part in LANGUAGE]

results = {"device": device, "triton": triton.__version__}
interpreted = os.environ.get("TRITON_INTERPRET") == "1"
results["ran"] = "Triton's interpreter on the CPU" if interpreted else device


# --8<-- [start:add]
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    # Each program instance handles one block of BLOCK_SIZE consecutive values.
    pid = tl.program_id(axis=0)  # which block: 0, 1, 2, ...
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # a vector of indices
    mask = offsets < n  # the last block may run past the end: mask those lanes
    x = tl.load(x_ptr + offsets, mask=mask)  # masked lanes read nothing
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)  # ... and write nothing


def add(x, y, block_size=1024):
    out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, block_size),)  # one program per block, rounded up
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=block_size)
    return out
# --8<-- [end:add]


# --8<-- [start:add_run]
n = 98_432  # not a multiple of 1024: the last of the 97 blocks is partly masked
x, y = torch.rand(n, device=device), torch.rand(n, device=device)
add_error = (add(x, y) - (x + y)).abs().max().item()
print(f"{triton.cdiv(n, 1024)} programs of 1024 values for n = {n:,}; "
      f"max error against torch: {add_error}")
# --8<-- [end:add_run]
results["add"] = {"n": n, "programs": triton.cdiv(n, 1024), "max_error": add_error}


# --8<-- [start:who]
@triton.jit
def who_kernel(out_ptr, n, BLOCK_SIZE: tl.constexpr):
    # Write, into each value, the id of the program that handled it.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, pid + tl.zeros((BLOCK_SIZE,), tl.int32),
             mask=offsets < n)
# --8<-- [end:who]


# --8<-- [start:who_run]
out = torch.full((10,), -1, dtype=torch.int32, device=device)
who_kernel[(triton.cdiv(10, 4),)](out, 10, BLOCK_SIZE=4)
print(f"n = 10, BLOCK_SIZE = 4, grid = ({triton.cdiv(10, 4)},): {out.tolist()}")
# --8<-- [end:who_run]
results["who"] = out.tolist()


# --8<-- [start:softmax]
@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row. The whole row fits in one block: BLOCK_SIZE is the
    # next power of two above n_cols, and the extra lanes are masked.
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # Masked lanes read -inf: they do not change the max, and exp(-inf) = 0.
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)  # subtract the row's max: exp cannot overflow
    numerator = tl.exp(x)
    y = numerator / tl.sum(numerator, axis=0)
    # The row was read once and is written once; max, exp and sum stayed in
    # registers. Eager torch ops would write and re-read it between steps.
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](out, x, n_cols, BLOCK_SIZE=block, num_warps=4)
    return out
# --8<-- [end:softmax]


# --8<-- [start:softmax_run]
rows, cols = (4096, 781) if device == "cuda" else (256, 781)
z = torch.randn(rows, cols, device=device)
softmax_error = (softmax(z) - torch.softmax(z, dim=1)).abs().max().item()
print(f"{rows} programs, one per row of {cols} values, BLOCK_SIZE = "
      f"{triton.next_power_of_2(cols)}; max error against torch: {softmax_error:.1e}")
# --8<-- [end:softmax_run]
results["softmax"] = {"rows": rows, "cols": cols, "max_error": softmax_error,
                      "block_size": triton.next_power_of_2(cols)}


# --8<-- [start:persistent]
@triton.jit
def softmax_persistent(out_ptr, in_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                       NUM_STAGES: tl.constexpr):
    # Fewer programs than rows: each one loops over rows pid, pid + programs, ...
    # With NUM_STAGES > 1 the compiler loads the next rows while this one is
    # being computed, into buffers in shared memory (software pipelining).
    start = tl.program_id(axis=0)
    step = tl.num_programs(axis=0)
    for row in tl.range(start, n_rows, step, num_stages=NUM_STAGES):
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        numerator = tl.exp(x)
        y = numerator / tl.sum(numerator, axis=0)
        tl.store(out_ptr + row * n_cols + cols, y, mask=mask)
# --8<-- [end:persistent]


# --8<-- [start:persistent_run]
programs = 32  # on a GPU, a few per SM; here, any number below the rows
out = torch.empty_like(z)
softmax_persistent[(programs,)](out, z, rows, cols,
                                BLOCK_SIZE=triton.next_power_of_2(cols), NUM_STAGES=3)
persistent_error = (out - torch.softmax(z, dim=1)).abs().max().item()
print(f"{programs} programs for {rows} rows; max error against torch: "
      f"{persistent_error:.1e}")
# --8<-- [end:persistent_run]
results["persistent"] = {"programs": programs, "max_error": persistent_error}


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
# --8<-- [end:compile]


def where_made():
    if device == "cuda":
        return f"on a machine with an {torch.cuda.get_device_name()}"
    return "on a machine without a GPU"


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
label = f"compiled for sm_90 {where_made()}; never run"
results["label"] = label

# --8<-- [start:warps]
# num_warps: how many warps (groups of 32 threads) run one program. The block of
# 1024 values is spread over 32 * num_warps threads; the layout says how.
types = {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_cols": "i32"}
warps, files = {}, {}
print(label)
for num_warps in (1, 4, 8, 16):
    kernel = compile_ahead(softmax_kernel, types, {"BLOCK_SIZE": 1024},
                           num_warps=num_warps)
    ttgir = kernel.asm["ttgir"]
    layout = re.search(r"#ttg\.blocked<\{sizePerThread = \[(\d+)\].*?"
                       r"warpsPerCTA = \[(\d+)\]", ttgir)
    warps[num_warps] = {
        "ttgir_num_warps": int(re.search(r'"ttg\.num-warps" = (\d+)', ttgir).group(1)),
        "size_per_thread": int(layout.group(1)),
        "warps_per_cta": int(layout.group(2)),
        "values_per_thread": 1024 // (32 * num_warps),
        "registers": registers(kernel.asm["cubin"]),
        "shared_bytes": kernel.metadata.shared}
    files[f"softmax.sm_90.num_warps_{num_warps}.ttgir"] = ttgir
    w = warps[num_warps]
    print(f"num_warps={num_warps:<2}  ttg.num-warps = {w['ttgir_num_warps']:<2}  "
          f"sizePerThread = [{w['size_per_thread']}]  warpsPerCTA = "
          f"[{w['warps_per_cta']}]  {w['values_per_thread']:>2} values/thread  "
          f"{w['registers']:>3} registers  {w['shared_bytes']:>3} B shared")
# --8<-- [end:warps]
results["warps"] = warps

# --8<-- [start:stages]
# num_stages: how many iterations of a loop are in flight. Each stage past the
# first holds one more row (1024 fp32 = 4 KiB) in shared memory.
types = {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"}
stages = {}
for num_stages in (1, 2, 3, 4):
    kernel = compile_ahead(softmax_persistent, types,
                           {"BLOCK_SIZE": 1024, "NUM_STAGES": num_stages},
                           num_warps=4)
    ttgir = kernel.asm["ttgir"]
    stages[num_stages] = {
        "async_copies": len(re.findall(r"ttg\.async_copy_global_to_local", ttgir)),
        "shared_bytes": kernel.metadata.shared,
        "registers": registers(kernel.asm["cubin"])}
    if num_stages == 3:
        files["softmax_persistent.sm_90.num_stages_3.ttgir"] = ttgir
    s = stages[num_stages]
    print(f"num_stages={num_stages}  {s['async_copies']} async copies to shared "
          f"memory  {s['shared_bytes']:>6,} B shared  {s['registers']} registers")
# --8<-- [end:stages]
results["stages"] = stages


# --8<-- [start:dot]
@triton.jit
def dot_loop(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    # One BLOCK x BLOCK tile of C = A @ B, A being BLOCK x K and B K x BLOCK: a loop
    # over K that loads a slab of each and multiplies them on the tensor cores.
    rows = tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), tl.float32)
    for k in tl.range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * BLOCK + rows[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], acc)
# --8<-- [end:dot]


# --8<-- [start:dot_stages]
# The same option on a loop of tl.dot, for three GPU generations. The TTGIR allocates
# each operand's buffers as one memdesc<N x 128 x 64 x f16>: N buffers.
types = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
GPUS = {80: "A100", 90: "H100", 100: "B200"}
dot_stages = {}
for cc, gpu in GPUS.items():
    target = dot_stages[f"sm_{cc}"] = {}
    for num_stages in (2, 3, 4):
        kernel = compile_ahead(dot_loop, types, {"BLOCK": 128, "BLOCK_K": 64}, cc=cc,
                               num_warps=4, num_stages=num_stages)
        ttgir = kernel.asm["ttgir"]
        shape = re.search(r"ttg\.local_alloc[^\n]*memdesc<([\dx]+)xf16", ttgir)
        dims = [int(d) for d in shape.group(1).split("x")]
        # mma.sync takes its operands from registers, which ttg.local_load fills from
        # shared memory; wgmma and tcgen05 read shared memory themselves, as they run.
        reads = ("shared memory (tcgen05)" if "ttng.tc_gen5_mma" in ttgir else
                 "shared memory (wgmma)" if "ttng.warp_group_dot" in ttgir else
                 "registers (mma.sync)")
        target[num_stages] = {"buffers": dims[0] if len(dims) == 3 else 1,
                              "shared_bytes": kernel.metadata.shared, "reads": reads}
    print(f"sm_{cc} ({gpu}): tl.dot reads its operands from {reads}")
    for num_stages, d in target.items():
        print(f"  num_stages={num_stages}  buffers of A and of B: {d['buffers']}  "
              f"{d['shared_bytes']:>7,} B shared")
# --8<-- [end:dot_stages]
results["dot_stages"] = dot_stages


# --8<-- [start:occupancy]
# How many programs one SM of an H100 can hold at once, from each build's
# registers and shared memory and the SM's published limits (CUDA's occupancy
# rules for compute capability 9.0): a model, not a measurement.
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


occupancy = {}
for knob, builds, warps_of in (("num_warps", warps, lambda k: k),
                               ("num_stages", stages, lambda k: 4)):
    for key, build in builds.items():
        programs, binding = programs_per_sm(build["registers"],
                                            build["shared_bytes"], warps_of(key))
        occupancy[f"{knob}_{key}"] = {
            "programs": programs, "limited_by": binding,
            "warps": programs * warps_of(key),
            "occupancy": programs * warps_of(key) / SM90["warps"]}
        o = occupancy[f"{knob}_{key}"]
        print(f"{knob}={key:<3} {o['programs']:>2} programs per SM, "
              f"{o['warps']:>2} of 64 warps ({o['occupancy']:.0%}), "
              f"limited by {binding}")
# --8<-- [end:occupancy]
results["occupancy"] = occupancy
results["files"] = files
