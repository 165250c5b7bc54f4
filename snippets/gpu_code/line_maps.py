"""From a line of Python to SASS: which lines of each stage came from which line.

    python snippets/gpu_code/line_maps.py

Every stage of Triton's pipeline carries the source location it came from: MLIR's
loc(...) in TTIR and TTGIR, !dbg in LLVM IR, .loc in PTX, and line info in the cubin
that triton's own nvdisasm prints next to the SASS. This snippet compiles two kernels
for sm_80, sm_90 and sm_100 on a machine without a GPU and reads those locations:
no text is matched between stages. Lines with no location are kept and counted.
Where LLVM's .loc inside an inline-asm block drifts, the block is put back at its
line, in PTX and in the SASS ptxas makes of it.
"""

import ast
import inspect
import os
import re
import subprocess
from collections import Counter

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
TARGETS = {80: "sm_80", 90: "sm_90", 100: "sm_100"}


def where_made():
    """How this record's GPU code was made: the label every artifact carries."""
    if device == "cuda":
        return f"on a machine with an {torch.cuda.get_device_name()}"
    return "on a machine without a GPU"


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


# --8<-- [start:locations]
# Each reader returns the stage as (source line or None, text) pairs, from the
# stage's own location info. Only locations in this file count as source lines;
# line 0 is what a compiler writes for code of its own.
HERE = os.path.basename(inspect.getsourcefile(matmul_bias_relu.fn))  # the kernels' file


def mlir_lines(ir):
    """TTIR, TTGIR: an op ends in loc(#locN); #locN is defined at the bottom,
    as "file":line:col, as a name wrapping another #loc, or, for an inlined
    @triton.jit helper, as callsite(#callee at #caller)."""
    defs = dict(re.findall(r"^#(loc\d*) = loc\((.*)\)$", ir, re.M))

    def line_of(ref, depth=0):
        body = defs.get(ref, "")
        place = re.fullmatch(r'"([^"]*)":(\d+):\d+', body)
        if place:
            mine = place.group(1).endswith(HERE)
            return int(place.group(2)) or None if mine else None
        inner = re.findall(r"#(loc\d*)", body)  # callsite: the callee, the caller
        for found in inner if depth < 16 else []:
            line = line_of(found, depth + 1)
            if line:
                return line
        return None

    pairs = []
    for text in ir.splitlines():
        if not text.strip() or text.startswith("#loc"):
            continue
        ref = re.search(r"loc\(#(loc\d*)\)\s*$", text)
        pairs.append((line_of(ref.group(1)) if ref else None,
                      re.sub(r"\s*loc\(#loc\d*\)\s*$", "", text)))
    return pairs


def llvm_lines(ir):
    """LLVM IR: an instruction ends in !dbg !N, and !N = !DILocation(line: L,
    scope: !S); the scope leads to the file, and an inlined helper's location
    to its call site (inlinedAt). Only the kernel's body is kept."""
    meta = dict(re.findall(r"^!(\d+) = (.*)$", ir, re.M))

    def file_of(ref, depth=0):
        body = meta.get(ref, "")
        name = re.search(r'filename: "([^"]*)"', body)
        if name:
            return name.group(1)
        # A lexical block names its own file: an inlined helper's block, another file.
        scope = re.search(r"file: !(\d+)", body) or re.search(r"scope: !(\d+)", body)
        return file_of(scope.group(1), depth + 1) if scope and depth < 16 else ""

    def line_of(ref, depth=0):
        body = meta.get(ref, "")
        line = re.search(r"line: (\d+)", body)
        scope = re.search(r"scope: !(\d+)", body)
        if line and scope and file_of(scope.group(1)).endswith(HERE):
            return int(line.group(1)) or None  # line 0: made by the compiler
        caller = re.search(r"inlinedAt: !(\d+)", body)
        return line_of(caller.group(1), depth + 1) if caller and depth < 16 else None

    body = ir[ir.index("\ndefine ") + 1:]
    body = body[:body.index("\n}\n") + 2]
    pairs = []
    for text in body.splitlines():
        ref = re.search(r"!dbg !(\d+)", text)
        pairs.append((line_of(ref.group(1)) if ref else None,
                      re.sub(r", !dbg !\d+", "", text)))
    return pairs


def ptx_lines(ptx):
    """PTX: a `.loc file line column` directive holds for what follows it (an
    inlined helper's lines name the helper's file, with no call site); the
    debug sections at the end are dropped."""
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', ptx, re.M))
    pairs, line = [], None
    for text in ptx[:ptx.find("\t.section\t.debug")].splitlines():
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)\s+\d+", text)
        if loc:
            mine = files.get(loc.group(1), "").endswith(HERE)
            line = int(loc.group(2)) or None if mine else None
        elif text.strip() and not text.lstrip().startswith(("//", ".file")):
            pairs.append((line, text.rstrip()))
    return pairs


NVDISASM = os.path.join(os.path.dirname(triton.backends.nvidia.__file__), "bin",
                        "nvdisasm")


def sass_lines(cubin):
    """SASS: nvdisasm -g prints `//## File "...", line L` before the
    instructions that came from line L."""
    with open(os.memfd_create("cubin"), "w+b") as file:  # a file in memory
        file.write(cubin)
        file.flush()
        done = subprocess.run([NVDISASM, "-g", "-c", f"/proc/self/fd/{file.fileno()}"],
                              capture_output=True, text=True, check=True,
                              pass_fds=(file.fileno(),))
    pairs, line = [], None
    for text in done.stdout.splitlines():
        where = re.match(r'\s*//## File "([^"]*)", line (\d+)', text)
        op = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$", text)
        if where:
            mine = where.group(1).endswith(HERE)
            line = int(where.group(2)) or None if mine else None
        elif op:
            pairs.append((line, f"/*{op.group(1)}*/ {op.group(2)}"))
    return pairs


def asm_blocks_at_their_line(ptx):
    """PTX, corrected: a recent LLVM gives each line of a multi-line inline-asm
    block its own .loc, one source line further each time, and the last one stays
    in force after the block. Every line of a block, and what follows it up to the
    next .loc, gets the block's own line: its first .loc less the lines before it."""
    out, block, origin = [], None, None
    for text in ptx.splitlines():
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)", text)
        if text.strip() == "// begin inline asm":
            block, origin = 0, None
        elif text.strip() == "// end inline asm":
            block, text = None, text + (f"\n\t.loc\t{origin}" if origin else "")
        elif block is not None and loc:
            line = int(loc.group(2)) - block
            origin = origin or f"{loc.group(1)} {line} {loc.group(3)}"
            text = f"\t.loc\t{origin}"
        elif block is not None:
            block += 1  # a line of the block's text
        out.append(text)
    return "\n".join(out) + "\n"


def reassembled(compiled, ptx):
    """The cubin that Triton's last step (ptxas, with the options `compiled` was
    made with) makes of `ptx`."""
    from triton.compiler.compiler import make_backend

    target = compiled.metadata.target
    backend = make_backend(target)
    options = backend.parse_options(compiled.metadata._asdict())
    return backend.make_cubin(ptx, {}, options, target.arch)
# --8<-- [end:locations]


# --8<-- [start:cost]
# What a source line cost, per target: its SASS instructions, and which of them
# move memory (global, shared, local; TMA) or run on the tensor cores.
MEMORY = re.compile(r"^(?:@!?U?P\w+\s+)?(LDG|STG|LDS|STS|LDL|STL|LDSM|STSM|LDGSTS|"
                    r"UTMALDG|UTMASTG|UBLKCP|ATOM|ATOMS|ATOMG|RED|LD|ST)\b")
TENSOR = re.compile(r"^(?:@!?U?P\w+\s+)?(HMMA|HGMMA|IMMA|QGMMA|UTC\w*MMA)\b")


def cost(sass):
    """SASS instructions per source line: all, memory, tensor-core and other."""
    per_line = {}
    for line, text in sass:
        op = text.split("*/", 1)[1].strip()
        kind = ("tensor" if TENSOR.match(op) else
                "memory" if MEMORY.match(op) else "other")
        counts = per_line.setdefault(str(line), Counter())
        counts[kind] += 1
        counts["sass"] += 1
    return {line: dict(counts) for line, counts in per_line.items()}
# --8<-- [end:cost]


# --8<-- [start:maps]
def code_lines(fn):
    """The file's line numbers of the kernel's statements (a loop: its header)."""
    source, first = inspect.getsourcelines(fn)
    tree = ast.parse("".join(source))  # a kernel defined at the top level
    found = set()
    for node in ast.walk(tree.body[0]):
        if isinstance(node, ast.stmt) and node is not tree.body[0]:
            body = getattr(node, "body", None)
            last = body[0].lineno - 1 if body else node.end_lineno
            found.update(range(node.lineno, last + 1))
    return sorted(first + line - 1 for line in found)


def stage_map(compiled, name, target):
    """Every stage of one compiled kernel as (source line or None, text) pairs,
    summed up for the record, and each stage as a file: per line, its source
    line (or -), a tab, the text. PTX is read with its inline-asm blocks at their
    line; where that moved a line, SASS is read from the cubin ptxas makes of the
    corrected PTX. `asm` counts the lines moved, and says whether that SASS holds
    Triton's instructions in Triton's order (ptxas may pick other registers)."""
    ptx = asm_blocks_at_their_line(compiled.asm["ptx"])
    changed = ptx != compiled.asm["ptx"]
    cubin = reassembled(compiled, ptx) if changed else compiled.asm["cubin"]
    stages = {"TTIR": mlir_lines(compiled.asm["ttir"]),
              "TTGIR": mlir_lines(compiled.asm["ttgir"]),
              "LLVM IR": llvm_lines(compiled.asm["llir"]),
              "PTX": ptx_lines(ptx),
              "SASS": sass_lines(cubin)}
    as_made = {"PTX": ptx_lines(compiled.asm["ptx"]),
               "SASS": sass_lines(compiled.asm["cubin"])}

    def opcodes(sass):
        return [re.sub(r"^@!?U?P\w+\s+", "", text.split("*/ ", 1)[1]).split()[0]
                for _, text in sass]

    summary = {
        "lines": {stage: len(pairs) for stage, pairs in stages.items()},
        "unmapped": {stage: sum(line is None for line, _ in pairs)
                     for stage, pairs in stages.items()},
        "sources": {stage: sorted({line for line, _ in pairs if line})
                    for stage, pairs in stages.items()},
        "sass_mapped_share": 1 - sum(line is None for line, _ in stages["SASS"])
                             / len(stages["SASS"]),
        "cost": cost(stages["SASS"]),
        "asm": {"moved": {stage: sum(a != b for (a, _), (b, _) in
                                     zip(as_made[stage], stages[stage]))
                          for stage in as_made},
                "same_sass": opcodes(as_made["SASS"]) == opcodes(stages["SASS"])},
    }
    files = {f"{name}.{target}.{stage.replace(' ', '_')}.txt":
             "".join(f"{line or '-'}\t{text}\n" for line, text in pairs)
             for stage, pairs in stages.items()}
    return summary, files


maps, files = {}, {}
for name, (kernel, *_) in KERNELS.items():
    source, first = inspect.getsourcelines(kernel.fn)  # first: the decorator's line
    maps[name] = {"first_line": first, "source": [s.rstrip("\n") for s in source],
                  "code_lines": code_lines(kernel.fn), "targets": {}}
    for cc, target in TARGETS.items():
        compiled = compile_for(name, cc, hints=True)
        maps[name]["targets"][target], kernel_files = stage_map(compiled, name, target)
        files.update(kernel_files)
# --8<-- [end:maps]

# --8<-- [start:report]
STAGES = ("TTIR", "TTGIR", "LLVM IR", "PTX", "SASS")
print(f"{'kernel':<19}{'target':<7}" + "".join(f"{s:^12}" for s in STAGES))
for name, kernel_map in maps.items():
    for target, found in kernel_map["targets"].items():
        cells = "".join(
            f"{found['lines'][s] - found['unmapped'][s]:>6}/{found['lines'][s]:<5}"
            for s in STAGES)
        print(f"{name:<19}{target:<7}{cells}")
print("each cell: the stage's lines that carry a line of the kernel / all its lines")
for name, kernel_map in maps.items():
    found = kernel_map["targets"]["sm_90"]
    silent = [line for line in kernel_map["code_lines"]
              if line not in found["sources"]["SASS"]]
    for line in silent:
        print(f"{name}, line {line}: no SASS of its own on sm_90 "
              f"({kernel_map['source'][line - kernel_map['first_line']].strip()})")
print("SASS lines moved by putting inline asm back at its line "
      f"({', '.join(TARGETS.values())}):")
for name, kernel_map in maps.items():
    print(f"  {name}: " + ", ".join(str(found["asm"]["moved"]["SASS"])
                                    for found in kernel_map["targets"].values()))
# --8<-- [end:report]
results["maps"] = maps
# What the tl.dot line cost, per target (triton.md's quiz).
matmul = maps["matmul_bias_relu"]
dot = next(line for line in matmul["code_lines"]
           if "tl.dot(" in matmul["source"][line - matmul["first_line"]])
results["dot"] = {"line": dot, **{target: found["cost"][str(dot)]
                                  for target, found in matmul["targets"].items()}}
results["files"] = files
results["label"] = f"compiled for each target {where_made()}; never run"
