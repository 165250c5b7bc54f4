"""Triton's compiler pipeline, Python to SASS, for three GPU generations, with no GPU.

    python snippets/gpu_code/triton_pipeline.py

triton.compile with an explicit target compiles a @triton.jit kernel ahead of time:
no GPU and no driver are needed. Two kernels (a tiled matmul + bias + ReLU, and the
six-op activation of the Eager mode chapter) are compiled for sm_80 (A100), sm_90 (H100)
and sm_100 (B200), with and without alignment hints. SASS and resource usage come from
the cuobjdump that triton ships. Then the kernels run, on a GPU, or on the CPU in
Triton's interpreter (TRITON_INTERPRET=1 set before the start), and are compared with
torch.
"""

import os
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device, "triton": triton.__version__}


# --8<-- [start:kernels]
@triton.jit
def matmul_bias_relu(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    # C = relu(A @ B + bias), row-major A (M, K), B (K, N), C (M, N), all fp16.
    # M, N and K are multiples of the blocks: no masks. Each program reads
    # BLOCK_M x K of A and K x BLOCK_N of B once, writes one tile of C once.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a = a_ptr + rows[:, None] * K + ks[None, :]
    b = b_ptr + ks[:, None] * N + cols[None, :]
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)  # fp32, in registers
    for _ in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a), tl.load(b), acc)  # the tensor-core instruction
        a += BLOCK_K
        b += BLOCK_K * N
    bias = tl.load(bias_ptr + cols).to(tl.float32)
    acc = tl.maximum(acc + bias[None, :], 0.0)  # epilogue: still in registers
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(tl.float16))


@triton.jit
def complex_activation(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # relu((sin(x) * cos(y) + x) * y): eager PyTorch runs six kernels,
    # this is one. Bytes moved: read x and y, write out, 3 x 4 bytes a value.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    out = tl.maximum((tl.sin(x) * tl.cos(y) + x) * y, 0.0)
    tl.store(out_ptr + offsets, out, mask=mask)
# --8<-- [end:kernels]


# --8<-- [start:compile]
KERNELS = {  # argument types, constant arguments, launch options
    "matmul_bias_relu": (
        matmul_bias_relu,
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "bias_ptr": "*fp16", "c_ptr": "*fp16",
         "M": "i32", "N": "i32", "K": "i32"},
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
        {"num_warps": 8, "num_stages": 3}),
    "complex_activation": (
        complex_activation,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
        {"BLOCK": 1024},
        {"num_warps": 4}),
}


def compile_for(name, cc, hints):
    """Compile kernel `name` for compute capability cc (90 = sm_90) ahead of time."""
    kernel, types, constants, options = KERNELS[name]
    # Under TRITON_INTERPRET=1, @triton.jit returns the interpreter's wrapper;
    # the compiler takes a JITFunction of the same Python function.
    if not isinstance(kernel, JITFunction):
        kernel = JITFunction(kernel.fn)
    signature = {**types, **{c: "constexpr" for c in constants}}
    # The alignment hint: every pointer and size is a multiple of 16. It is what
    # a launch infers from real arguments; here we state it, or leave it out.
    aligned = [["tt.divisibility", 16]]
    attrs = {(i,): aligned for i in range(len(types))} if hints else {}
    source = ASTSource(fn=kernel, signature=signature, constexprs=constants,
                       attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", cc, 32), options=options)
# --8<-- [end:compile]


# --8<-- [start:cuobjdump]
CUOBJDUMP = Path(triton.backends.nvidia.__file__).parent / "bin" / "cuobjdump"
HARMLESS = "Disassembling Std Elf to Old format"  # a notice from triton 3.6/3.7's tool


def cuobjdump(flag, cubin):
    """Run triton's own cuobjdump on a cubin (bytes); return its output."""
    # cuobjdump reads a file it can seek in: a file in memory, given as stdin.
    with open(os.memfd_create("cubin"), "w+b") as file:
        file.write(cubin)
        file.seek(0)
        done = subprocess.run([str(CUOBJDUMP), flag, "/dev/stdin"], stdin=file,
                              capture_output=True, text=True, check=True)
    for line in done.stderr.splitlines():
        if line.strip() and HARMLESS not in line:
            print(f"cuobjdump: {line}")
    return done.stdout


def sass_of(text):
    """Keep `/*addr*/ INSTRUCTION ;` lines, dropping the hex encoding of each."""
    lines = []
    for line in text.splitlines():
        found = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*/\*\s*0x[0-9a-f]+\s*\*/",
                         line)
        if found:
            lines.append(f"/*{found.group(1)}*/  {found.group(2)}")
        elif line.strip() and not re.fullmatch(r"\s*/\*\s*0x[0-9a-f]+\s*\*/\s*", line):
            lines.append(line.strip())
    return "\n".join(lines) + "\n"
# --8<-- [end:cuobjdump]


def where_made():
    """How this record's GPU code was made: the label every artifact carries."""
    if device == "cuda":
        return f"on a machine with an {torch.cuda.get_device_name()}"
    return "on a machine without a GPU"


TARGETS = {80: "sm_80", 90: "sm_90", 100: "sm_100"}
MATRIX_PTX = r"wgmma\.mma_async|mma\.sync\.aligned\.m16n8k16|tcgen05\.mma\b"
MATRIX_SASS = r"\b(HGMMA\S*|HMMA\S*|UTC\w*MMA\S*)"
LOADS = r"\b((?:LDGSTS|LDG|UTMALDG)(?:\.[A-Z0-9]+)*)(?![A-Z])"
STORES = r"\b((?:STG|UTMASTG)(?:\.[A-Z0-9]+)*)(?![A-Z])"
# Files kept: every stage of the sm_90 matmul with hints; PTX and SASS of the
# other targets' matmul with hints; the SASS of the builds without hints
# (sm_90 only for the activation, whose LLVM IR is mostly libdevice's sin/cos).
KEEP = {("matmul_bias_relu", 90, True): ("ttir", "ttgir", "llir", "ptx", "sass"),
        ("matmul_bias_relu", 80, True): ("ptx", "sass"),
        ("matmul_bias_relu", 100, True): ("ptx", "sass"),
        ("complex_activation", 90, True): ("ttir", "ttgir", "ptx", "sass"),
        ("complex_activation", 90, False): ("sass",)}
builds, texts, stage_files = {}, {}, {}
started = time.perf_counter()
for name in KERNELS:
    for cc, target in TARGETS.items():
        for hints in (True, False):
            t0 = time.perf_counter()
            compiled = compile_for(name, cc, hints)
            compile_s = time.perf_counter() - t0
            tag = f"{name}.{target}{'' if hints else '.no_hints'}"
            sass = sass_of(cuobjdump("-sass", compiled.asm["cubin"]))
            usage = cuobjdump("-res-usage", compiled.asm["cubin"])
            stage_text = {"ttir": compiled.asm["ttir"], "ttgir": compiled.asm["ttgir"],
                          "llir": compiled.asm["llir"], "ptx": compiled.asm["ptx"],
                          "sass": sass}
            texts[(name, cc, hints)] = stage_text
            default = ("sass",) if name == "matmul_bias_relu" else ()
            kept = KEEP.get((name, cc, hints), default)
            for stage in kept:
                stage_files[f"{tag}.{stage}"] = stage_text[stage]
            matrix_sass = re.findall(MATRIX_SASS, sass)
            matrix_ptx = [re.sub(r"^@%\w+\s+", "", line.strip())  # no predicate
                          for line in compiled.asm["ptx"].splitlines()
                          if re.search(MATRIX_PTX, line)]
            sass_line = next((line for line in sass.splitlines()
                              if re.search(MATRIX_SASS, line)), None)
            builds.setdefault(name, {}).setdefault(target, {})[
                "hints" if hints else "no_hints"] = {
                "label": f"compiled for {target} {where_made()}; never run",
                "registers": int(re.search(r"REG:(\d+)", usage).group(1)),
                "static_shared_bytes": int(re.search(r"SHARED:(\d+)", usage).group(1)),
                "shared_bytes": compiled.metadata.shared,
                "ptx_target": re.search(r"^\.target\s+(\S+)", compiled.asm["ptx"],
                                        re.MULTILINE).group(1),
                "ptx_version": re.search(r"^\.version\s+(\S+)", compiled.asm["ptx"],
                                         re.MULTILINE).group(1),
                "matrix_ptx": (matrix_ptx[0].split()[0] if matrix_ptx else None),
                "matrix_ptx_count": len(matrix_ptx),
                "matrix_sass": (matrix_sass[0] if matrix_sass else None),
                "matrix_sass_count": len(matrix_sass),
                "matrix_sass_line": (
                    re.sub(r"^/\*\w+\*/\s*", "", sass_line).rstrip(" ;")
                    if sass_line else None),
                "loads": dict(Counter(re.findall(LOADS, sass))),
                "stores": dict(Counter(re.findall(STORES, sass))),
                "sass_instructions": sum(line.startswith("/*")
                                         for line in sass.splitlines()),
                "files": [f"{tag}.{stage}" for stage in kept],
                "compile_s": compile_s,
            }
compile_all_s = time.perf_counter() - started
results["builds"] = builds
results["files"] = stage_files  # the kept stages, as files beside the results
results["compile_all_s"] = compile_all_s
results["label"] = f"compiled {where_made()}; never run"
results["ptxas"] = "triton/backends/nvidia/bin"


def unloc(line):
    """An MLIR line without its source locations (loc(...)), which hold file paths."""
    return re.sub(r"\s*loc\((?:[^()]|\([^()]*\))*\)", "", line)


def show(text, patterns, context=1, first=1, width=80):
    """Print the first matches of each pattern with `context` lines around them,
    numbered as in the file; a matching line is marked with an arrow."""
    lines = [unloc(line).rstrip() for line in text.splitlines()]
    wanted = set()
    for pattern in patterns:
        hits = [i for i, line in enumerate(lines) if re.search(pattern, line)]
        for i in hits[:first]:
            wanted.update(range(max(0, i - context), min(len(lines), i + context + 1)))
    previous = None
    for i in sorted(wanted):
        if previous is not None and i != previous + 1:
            print("      ⋮")
        mark = "→" if any(re.search(p, lines[i]) for p in patterns) else " "
        line = lines[i] if len(lines[i]) <= width else lines[i][:width - 1] + "…"
        print(f"{mark}{i + 1:5d}  {line}")
        previous = i


def heading(name, cc, hints, stage):
    text = texts[(name, cc, hints)][stage]
    tag = f"{name}.{TARGETS[cc]}{'' if hints else '.no_hints'}.{stage}"
    print(f"{tag}: {len(text.splitlines()):,} lines; "
          f"compiled for {TARGETS[cc]} {where_made()}; never run")
    return text


# --8<-- [start:ttir]
# TTIR: the kernel as tensor operations, the same for every GPU.
text = heading("matmul_bias_relu", 90, True, "ttir")
show(text, [r"tt\.func public", r"scf\.for", r"tt\.dot", r"arith\.maxnumf",
            r"tt\.store"], context=0)
# --8<-- [end:ttir]

# --8<-- [start:ttgir]
# TTGIR: the same, with a layout per tensor and the copies to shared memory.
text = heading("matmul_bias_relu", 90, True, "ttgir")
show(text, [r"^#mma =", r"ttg\.local_alloc", r"async_copy_global_to_local",
            r"warp_group_dot |tt\.dot "], context=0)
# --8<-- [end:ttgir]

# --8<-- [start:llir]
# LLVM IR: scalar code per thread; the GPU-specific steps as NVVM intrinsics.
text = heading("matmul_bias_relu", 90, True, "llir")
show(text, [r"^define ", r"cp\.async\.cg\.shared\.global", r"nvvm\.wgmma\.fence"],
     context=0)
# --8<-- [end:llir]

# --8<-- [start:ptx]
# PTX: NVIDIA's virtual instruction set, for one target (.target).
text = heading("matmul_bias_relu", 90, True, "ptx")
show(text, [r"^\.target", r"^\.reqntid", r"cp\.async\.cg\.shared\.global",
            r"wgmma\.mma_async"], context=0)
# --8<-- [end:ptx]

# --8<-- [start:sass]
# SASS: the machine code ptxas made from the PTX, read back with cuobjdump.
text = heading("matmul_bias_relu", 90, True, "sass")
show(text, [r"LDGSTS\.E\.BYPASS\.128", r"HGMMA", r"STG\.E"], context=1)
# --8<-- [end:sass]

# --8<-- [start:matrix]
# The tensor-core instruction of each generation, in PTX and in SASS.
for target in TARGETS.values():
    build = builds["matmul_bias_relu"][target]["hints"]
    print(f"{target}: .target {build['ptx_target']}")
    print(f"    PTX   {build['matrix_ptx']}  (x{build['matrix_ptx_count']})")
    print(f"    SASS  {build['matrix_sass_line']}  (x{build['matrix_sass_count']})")
# --8<-- [end:matrix]

# --8<-- [start:loads]
# Global loads and stores in the SASS, with and without the alignment hints.
for name in KERNELS:
    for target in TARGETS.values():
        for hints in ("hints", "no_hints"):
            build = builds[name][target][hints]
            loads = ", ".join(f"{n} {op}" for op, n in sorted(build["loads"].items()))
            stores = ", ".join(f"{n} {op}" for op, n in sorted(build["stores"].items()))
            print(f"{name} {target} {hints}:\n    loads  {loads}\n    stores {stores}")
# --8<-- [end:loads]

# --8<-- [start:resources]
# Registers per thread (cuobjdump -res-usage) and the shared memory a launch
# asks for (Triton's metadata: the pipeline's buffers, allocated at launch).
print(f"{'kernel':<18} {'target':<6} {'hints':<8} {'registers':>9} "
      f"{'shared memory':>14}")
for name in KERNELS:
    for target in TARGETS.values():
        for hints in ("hints", "no_hints"):
            build = builds[name][target][hints]
            print(f"{name:<18} {target:<6} {hints:<8} {build['registers']:>9} "
                  f"{build['shared_bytes']:>12,} B")
# --8<-- [end:resources]

# --8<-- [start:check]
# The same kernels, run: on a GPU, or in Triton's interpreter on the CPU.
interpreted = not isinstance(matmul_bias_relu, JITFunction)
check = {"ran": device == "cuda" or interpreted, "interpreted": interpreted}


def run_and_compare():
    torch.manual_seed(0)
    M = N = K = 256  # small: the interpreter runs each program in NumPy
    a = torch.randn(M, K, device=device, dtype=torch.float16)
    b = torch.randn(K, N, device=device, dtype=torch.float16) / K**0.5
    bias = torch.randn(N, device=device, dtype=torch.float16)
    c = torch.empty(M, N, device=device, dtype=torch.float16)
    matmul_bias_relu[(M // 128, N // 128)](a, b, bias, c, M, N, K, BLOCK_M=128,
                                           BLOCK_N=128, BLOCK_K=64, num_warps=8)
    want = torch.relu(a.float() @ b.float() + bias.float())
    check["matmul_error"] = (c.float() - want).abs().max().item()
    n = 10_000  # not a multiple of the block: the mask guards the last block
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    out = torch.empty_like(x)
    complex_activation[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    want = torch.relu((torch.sin(x) * torch.cos(y) + x) * y)
    check["activation_error"] = (out - want).abs().max().item()


if device == "cuda":
    run_and_compare()
elif interpreted:
    try:
        run_and_compare()
    except Exception as error:  # some interpreter releases fail on some NumPy ones
        check["ran"] = False
        check["reason"] = (f"triton {triton.__version__}'s interpreter failed: "
                           f"{type(error).__name__}: {error}")
if check["ran"]:
    how = "in Triton's interpreter" if interpreted else f"on {device}"
    print(f"ran {how}: matmul max error {check['matmul_error']:.1e} (fp16), "
          f"activation max error {check['activation_error']:.1e} (fp32)")
else:
    print(check.get("reason", "not run: no GPU, and TRITON_INTERPRET=1 was not set "
                              "before the start"))
# --8<-- [end:check]
results["check"] = check
