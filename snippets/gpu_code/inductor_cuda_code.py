"""TorchInductor's CUDA code (Triton kernels) for three chapters' examples, anywhere.

    python snippets/gpu_code/inductor_cuda_code.py

On a GPU, each example is compiled and run, and Inductor's output code is kept as it
generated it. Without a GPU, Inductor still writes the same code: the examples are
compiled with fake CUDA tensors, for an H100 target, and Inductor is stopped once the
code exists, before anything would need a GPU. That path uses Inductor's private
internals and may break with any torch release: the snippet then prints why and goes on.
"""

import ast
import contextlib
import importlib.util
import inspect
import linecache
import os
import re
import subprocess
import types
import warnings
from collections import Counter
from unittest import mock

import torch
import triton
from torch._inductor.compile_fx import compile_fx
from torch._inductor.graph import GraphLowering
from torch._inductor.virtualized import V
from torch._subclasses.fake_tensor import FakeTensorMode

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:examples]
def complex_activation(x, y):  # Eager mode: six ops, six kernels in eager
    return torch.relu((torch.sin(x) * torch.cos(y) + x) * y)


def linear_relu(x, w, b):  # Graph mode: matmul, bias, relu
    return torch.relu(x @ w + b)


def matmul_softmax(x, y):  # TorchInductor page: a matmul, then softmax per row
    return torch.softmax(x @ y, dim=1)


N = 64 * 2**20  # the Eager mode chapter's GPU size: 256 MiB per fp32 tensor
EXAMPLES = {  # the function, its inputs' shapes and their dtype, on the GPU
    "complex_activation": (complex_activation, [(N,), (N,)], torch.float32),
    "linear_relu": (linear_relu, [(8192, 512), (512, 8192), (8192,)], torch.bfloat16),
    "matmul_softmax": (matmul_softmax, [(100, 100), (100, 100)], torch.float32),
}
# --8<-- [end:examples]


# Stand-ins for the few torch.cuda queries Inductor makes while it writes code (is
# there a GPU, which one, its properties, its random-number state), answering as an
# H100 SXM would (published properties); Triton's backend pointed at sm_90 instead of
# asking a driver; the pattern-matcher set-up skipped, as it builds real CUDA tensors;
# and (torch 2.11) a fake tensor's request for a CUDA context ignored. All private
# to torch, all undone on leaving. None of it is needed on a GPU.
H100 = types.SimpleNamespace(
    name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
    total_memory=80 * 10**9, L2_cache_size=50 * 2**20, warp_size=32,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    regs_per_multiprocessor=65536, shared_memory_per_block=48 * 1024,
    shared_memory_per_block_optin=227 * 1024,
    shared_memory_per_multiprocessor=228 * 1024,
    gcnArchName="", is_integrated=False, uuid="none")


@contextlib.contextmanager
def h100_stand_ins():
    from torch._dynamo import device_interface
    from torch._inductor.fx_passes import joint_graph
    from torch._subclasses import fake_tensor
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    backend = make_backend(GPUTarget("cuda", 90, 32))
    answers = {
        "is_available": lambda: True, "device_count": lambda: 1,
        "current_device": lambda: 0, "get_device_properties": lambda *a, **k: H100,
        "get_device_capability": lambda *a, **k: (H100.major, H100.minor),
        "get_device_name": lambda *a, **k: H100.name,
        "get_rng_state": lambda *a, **k: torch.zeros(16, dtype=torch.uint8),
        "_exchange_device": lambda index: 0, "_maybe_exchange_device": lambda index: 0,
    }
    cuda_interface = device_interface.CudaInterface
    with contextlib.ExitStack() as stack:
        for name, answer in answers.items():
            stack.enter_context(mock.patch.object(torch.cuda, name, answer))
            # CudaInterface copied some of these functions when torch was imported.
            name = name.lstrip("_")
            if name in vars(cuda_interface):
                stack.enter_context(mock.patch.object(cuda_interface, name,
                                                      staticmethod(answer)))
        stack.enter_context(mock.patch.object(torch.utils._triton, "triton_backend",
                                              lambda: backend))
        stack.enter_context(mock.patch.object(joint_graph, "lazy_init",
                                              lambda *a, **k: None))
        if hasattr(fake_tensor, "init_gpu_context"):  # torch 2.11 asks a driver
            stack.enter_context(mock.patch.object(fake_tensor, "init_gpu_context",
                                                  lambda *a, **k: None))
        stack.enter_context(warnings.catch_warnings())  # "TF32 not enabled", as a GPU
        warnings.filterwarnings("ignore", message="TensorFloat32 tensor cores")
        # Answers cached before (no GPU, so no Triton) or during (an H100) are dropped.
        saved = dict(device_interface.caching_worker_device_properties)
        torch.utils._triton.has_triton.cache_clear()
        try:
            yield
        finally:
            torch.utils._triton.has_triton.cache_clear()
            device_interface.caching_worker_device_properties.clear()
            device_interface.caching_worker_device_properties.update(saved)


class CodeWritten(Exception):
    """Raised once Inductor has written the code, to stop before it compiles it."""


def stopped_by_us(error):
    while error is not None:
        if isinstance(error, CodeWritten):
            return True
        error = error.__cause__ or error.__context__
    return False


# --8<-- [start:generate]
def generate(fn, shapes, dtype):
    """Inductor's output code for fn on CUDA inputs, and the bytes each kernel moves."""
    seen = {}

    def save_output_code(code):  # Inductor calls this with the module it wrote
        seen["code"] = code
        # Inductor's own traffic estimate: bytes each scheduled kernel reads and
        # writes (what TORCH_LOGS=inductor_metrics reports as num_bytes_accessed).
        seen["nodes"] = [(type(node).__name__,
                          getattr(node.node, "python_kernel_name", None),
                          node.get_read_write_buffers_sizes())
                         for node in V.graph.scheduler.nodes]
        seen["buffers"] = [sorted(node.get_buffer_names())
                           for node in V.graph.scheduler.nodes]
        if device != "cuda":
            raise CodeWritten  # no GPU: stop before Triton compiles it for one

    patches = [torch._inductor.config.patch(fx_graph_cache=False, compile_threads=1),
               mock.patch.object(GraphLowering, "save_output_code", save_output_code)]
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        if device == "cuda":  # a GPU: compile with torch.compile, run, compare
            inputs = [torch.randn(shape, device="cuda", dtype=dtype)
                      for shape in shapes]
            out = torch.compile(fn)(*inputs)
            seen["max_error"] = (out - fn(*inputs)).abs().max().float().item()
        else:  # no GPU: fake CUDA tensors (shapes, no data) and the stand-ins
            stack.enter_context(h100_stand_ins())
            with FakeTensorMode():
                inputs = [torch.empty(shape, device="cuda", dtype=dtype)
                          for shape in shapes]
                try:
                    compile_fx(torch.fx.symbolic_trace(fn), inputs)
                except Exception as error:
                    if not stopped_by_us(error):
                        raise
    return seen
# --8<-- [end:generate]


def normalise(code):
    """Drop the comments that hold cache paths; replace hashes with a placeholder."""
    code = re.sub(r"^# kernel path: .*\n", "", code, flags=re.MULTILINE)
    code = re.sub(r"'backend_hash': '\w+'", "'backend_hash': '<hash>'", code)
    return re.sub(r"\b[0-9a-f]{32,}\b", "<hash>", code)


def kernel_source(code, name):
    """The @triton.jit function of kernel `name` in the output code."""
    source = code.split(f"{name} = async_compile.triton('{name}'", 1)[1]
    return source[source.index("@triton.jit"):].split("'''", 1)[0].rstrip()


LABEL = ("generated for an H100 target on a machine without a GPU; never run"
         if device != "cuda" else
         f"generated and run on an {torch.cuda.get_device_name()}")
generated = {"available": False, "label": LABEL}
output_code = {}
try:
    for name, (fn, shapes, dtype) in EXAMPLES.items():
        seen = generate(fn, shapes, dtype)
        code = output_code[name] = normalise(seen["code"])
        kernels = re.findall(r"^(\w+) = async_compile\.triton\('", code, flags=re.M)
        body = code[code.index("def call("):]
        launches = re.findall(r"^\s+(extern_kernels\.\w+|\w+\.run)\(", body,
                              flags=re.M)
        # Scheduler nodes and kernels come in one order; extern nodes call a library.
        generated_names = iter(kernels)
        per_kernel = {}
        for kind, extern_name, num_bytes in seen["nodes"]:
            extern = kind == "ExternKernelSchedulerNode"
            key = extern_name if extern else next(generated_names)
            per_kernel[key] = per_kernel.get(key, 0) + num_bytes
        generated[name] = {
            "kernels": kernels, "launches": launches,
            "num_bytes_accessed": sum(b for _, _, b in seen["nodes"]),
            "bytes_per_kernel": per_kernel,
            "sources": {k: kernel_source(code, k) for k in kernels},
            "file": f"{name}.output_code.py",
            "max_error": seen.get("max_error"),
            "buffers": seen["buffers"],
        }
    generated["available"] = True
except Exception as error:  # the private path broke: say why, keep going
    first_line = (str(error).strip().splitlines() or [""])[0]
    reason = f"{type(error).__name__}: {first_line}"
    generated["reason"] = (f"Inductor's CUDA code could not be generated here "
                           f"(torch {torch.__version__}): {reason}")
results["inductor_cuda"] = generated
results["files"] = {f"{name}.output_code.py": code
                    for name, code in output_code.items()}
results["n"] = N
results["stand_in"] = {"name": H100.name,
                       "compute_capability": f"{H100.major}.{H100.minor}",
                       "multi_processor_count": H100.multi_processor_count}
results["torch"] = torch.__version__


def unavailable():
    print(generated["reason"])


# --8<-- [start:kernels]
if generated["available"]:
    print(LABEL)
    for name in EXAMPLES:
        example = generated[name]
        print(f"{name}: call() launches {len(example['launches'])}: "
              f"{', '.join(example['launches'])}")
        for kernel, num_bytes in example["bytes_per_kernel"].items():
            print(f"    {kernel:<44} {num_bytes:>12,} bytes")
else:
    unavailable()
# --8<-- [end:kernels]

# --8<-- [start:activation]
if generated["available"]:
    example = generated["complex_activation"]
    (kernel,) = example["kernels"]  # six ops, one kernel
    print(f"# {LABEL}")
    print(example["sources"][kernel])
    print(f"# num_bytes_accessed: {example['num_bytes_accessed']:,} "
          f"= 3 x {N:,} x 4 bytes: {example['num_bytes_accessed'] == 3 * N * 4}")
else:
    unavailable()
# --8<-- [end:activation]

# --8<-- [start:linear_relu]
if generated["available"]:
    example = generated["linear_relu"]
    code = output_code["linear_relu"]
    call = code[code.index("def call("):code.index("return (", code.index("def call("))]
    print(f"# {LABEL}")
    print("\n".join("    " * (line.startswith(" ")) + line.strip()
                    for line in call.splitlines()
                    if re.search(r"def call|extern_kernels|\.run\(|empty_strided|= buf",
                                 line)))
    for kernel in example["kernels"]:
        print(example["sources"][kernel])
else:
    unavailable()
# --8<-- [end:linear_relu]

# --8<-- [start:matmul_softmax]
if generated["available"]:
    example = generated["matmul_softmax"]
    print(f"# {LABEL}")
    for kernel in example["kernels"]:
        print(example["sources"][kernel])
else:
    unavailable()
# --8<-- [end:matmul_softmax]


# The activation's kernel, followed from its source line down to SASS. Triton
# compiles it for three targets like any kernel, and each stage's lines are mapped
# to the kernel's lines by their own locations, with the readers of
# gpu_code/line_maps.py. The kernel's source is compiled under its own name.
HERE = "inductor_kernel.py"


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


@contextlib.contextmanager
def compiler_view():
    """Triton's own @triton.jit helpers as the compiler needs them: under
    TRITON_INTERPRET=1 each was replaced by the interpreter's wrapper at import,
    which the compiler cannot call (tl.zeros, used by Inductor's helpers)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, {"TRITON_INTERPRET": "0"}))
        for module in (triton.language, triton.language.standard, triton.language.math):
            for name, value in list(vars(module).items()):
                if isinstance(value, InterpretedFunction):
                    compiled = JITFunction(value.fn)
                    stack.enter_context(mock.patch.object(module, name, compiled))
        yield


def load_kernel(source, name):
    """Define one of Inductor's @triton.jit kernels from its source, as its file
    would, with a fresh copy of Inductor's helpers (made in compiler_view)."""
    spec = importlib.util.find_spec("torch._inductor.runtime.triton_helpers")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    namespace = {"triton": triton, "tl": triton.language, "triton_helpers": helpers,
                 "libdevice": helpers.libdevice, "tl_math": helpers.math}
    text = source + "\n"
    linecache.cache[HERE] = (len(text), None, text.splitlines(True), HERE)
    exec(compile(text, HERE, "exec"), namespace)
    return namespace[name]


# --8<-- [start:line_map]
def kernel_map(name, code, user_fn):
    """Line maps of Inductor's kernel `name` for sm_80, sm_90 and sm_100, and the
    chain from the user's source line to the kernel."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    meta = code.split(f"async_compile.triton('{name}'", 1)[1]
    # The kernel's signature and alignment hints, as Inductor wrote them.
    signature = ast.literal_eval(re.search(r"'signature': (\{[^}]*\})", meta).group(1))
    hints = ast.literal_eval(re.search(r"'configs': \[(\{.*?\})\]", meta).group(1))
    found = {"targets": {}, "files": {}}
    with compiler_view():
        kernel = load_kernel(kernel_source(code, name), name)
        source, first = inspect.getsourcelines(kernel.fn)
        found.update(first_line=first, source=[s.rstrip("\n") for s in source],
                     code_lines=code_lines(kernel.fn))
        for cc, target in {80: "sm_80", 90: "sm_90", 100: "sm_100"}.items():
            # XBLOCK = 1024 and 4 warps here; on a GPU Inductor picks them at launch.
            compiled = triton.compile(
                ASTSource(fn=kernel, signature=signature, constexprs={"XBLOCK": 1024},
                          attrs=hints),
                target=GPUTarget("cuda", cc, 32), options={"num_warps": 4})
            found["targets"][target], files = stage_map(compiled, name, target)
            found["files"].update(files)
    # One step further back: the comment above the kernel names the graph's nodes
    # and ATen ops it computes; the user's line is where those nodes came from.
    nodes, aten = re.search(r"# Topologically Sorted Source Nodes: \[(.*?)\], "
                            r"Original ATen: \[(.*?)\]", code).groups()
    user_source, user_first = inspect.getsourcelines(user_fn)
    (user_line,) = [user_first + i for i, s in enumerate(user_source) if "return" in s]
    found["chain"] = {"user_line": user_line,
                      "user_code": user_source[user_line - user_first].strip(),
                      "fx_nodes": nodes.split(", "), "aten": aten.split(", ")}
    return found


maps = {}
if generated["available"]:
    try:
        (kernel,) = generated["complex_activation"]["kernels"]
        maps[kernel] = kernel_map(kernel, output_code["complex_activation"],
                                  complex_activation)
        where = ("on a machine without a GPU" if device != "cuda" else
                 f"on a machine with an {torch.cuda.get_device_name()}")
        maps[kernel]["label"] = f"compiled by Triton for each target {where}; never run"
        chain = maps[kernel]["chain"]
        chain["buffers"] = generated["complex_activation"]["buffers"]
        print(f"line {chain['user_line']}: {chain['user_code']}\n"
              f"  -> graph nodes {', '.join(chain['fx_nodes'])}\n"
              f"  -> scheduler node(s) writing {chain['buffers']}\n  -> {kernel}")
        for target, map_ in maps[kernel]["targets"].items():
            print(f"{target}: {map_['lines']['SASS']} SASS lines, "
                  f"{map_['sass_mapped_share']:.0%} of them carry a line of the kernel")
        print("kernel lines with no SASS of their own on sm_90:")
        for line in maps[kernel]["code_lines"]:
            if line not in maps[kernel]["targets"]["sm_90"]["sources"]["SASS"]:
                text = maps[kernel]["source"][line - maps[kernel]["first_line"]]
                print(f"  {line:>2}  {text.strip()}")
    except Exception as error:  # a private path again: say why, keep going
        maps = {}
        print(f"no line map: {type(error).__name__}: {error}")
else:
    unavailable()
# --8<-- [end:line_map]
results["maps"] = {name: {k: v for k, v in found.items() if k != "files"}
                   for name, found in maps.items()}
# The fused multiply-adds on tmp5's line (tmp4's multiply, tmp5's add), per target.
results["fma"] = {}
for name, found in maps.items():
    (line,) = [found["first_line"] + i for i, text in enumerate(found["source"])
               if text.strip().startswith("tmp5 = ")]
    for target in found["targets"]:
        sass = found["files"][f"{name}.{target}.SASS.txt"].splitlines()
        results["fma"][target] = " and ".join(sorted(
            {op for row in sass if row.startswith(f"{line}\t")
             for op in re.findall(r"\*/ (?:@!?P\w+ )?(FFMA2?)\b", row)}))
results["files"].update({file: text for found in maps.values()
                         for file, text in found["files"].items()})
