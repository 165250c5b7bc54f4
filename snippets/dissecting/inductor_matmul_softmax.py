"""TorchInductor on matmul + softmax: the debug artifacts, the decomposed graph, the fusion, the kernel.

    python snippets/dissecting/inductor_matmul_softmax.py

Runs on CUDA when torch sees a GPU (Inductor writes Triton), else on the CPU (Inductor writes C++/OpenMP).
Compiles one small function with Inductor's debug trace switched on (what TORCH_COMPILE_DEBUG=1 does),
then copies the interesting artifacts, normalised, to $SNIPPET_OUTPUT_DIR/debug/ (or a temporary folder)
and prints excerpts of them. Also writes results.json there.
"""

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import torch
from torch._inductor.compile_fx import compile_fx
from torch._inductor.runtime.cache_dir_utils import cache_dir

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="inductor_matmul_softmax-"))
results = {}

# --8<-- [start:function]
def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)
# --8<-- [end:function]

# --8<-- [start:backends]
device = "cuda" if torch.cuda.is_available() else "cpu"
# Inductor picks a code generator per device: C++ with OpenMP and vector intrinsics for the CPU,
# Triton for NVIDIA (and AMD) GPUs.
backend = torch._inductor.config.cuda_backend if device == "cuda" else torch._inductor.config.cpu_backend
print(f"device: {device}; Inductor backend for it: {backend}")
if device == "cuda":
    print(f"GPU: {torch.cuda.get_device_name()}")
else:
    # The C++ code is written for the widest vector unit this CPU has, and runs on torch's OpenMP threads.
    print(f"CPU vector ISA: {torch.backends.cpu.get_cpu_capability()}, OpenMP threads: {torch.get_num_threads()}")
# --8<-- [end:backends]
results.update(device=device, backend=backend)
if device == "cpu":
    results["cpu_capability"] = torch.backends.cpu.get_cpu_capability()

# --8<-- [start:compile]
x = torch.rand(100, 100, device=device)
y = torch.rand(100, 100, device=device)

captured = []  # the graph Dynamo hands to the backend, before any decomposition


def inductor_recording_graph(gm, example_inputs):
    captured.append(gm)
    return compile_fx(gm, example_inputs)  # what backend="inductor" calls


# TORCH_COMPILE_DEBUG=1 sets torch._inductor.config.trace.enabled when torch is imported, and
# TORCH_COMPILE_DEBUG_DIR moves the folder. In a running program the config patch does the same, and
# undoes it on exit. The FX graph cache is off so that Inductor really compiles (a cache hit skips the
# steps that write the artifacts).
RAW = Path(tempfile.mkdtemp(prefix="torch_compile_debug-"))  # outside OUT: its names hold run counters
with torch._inductor.config.patch({"trace.enabled": True, "trace.debug_dir": str(RAW), "fx_graph_cache": False}):
    compiled_fn = torch.compile(simple_fn, backend=inductor_recording_graph)
    out = compiled_fn(x, y)

graph_dirs = sorted(p for p in (RAW / "torchinductor").iterdir() if p.is_dir())
print(f"{len(graph_dirs)} graph compiled; its debug folder holds:")
for path in sorted(graph_dirs[0].iterdir()):
    print(f"  {path.name:<26} {len(path.read_text().splitlines()):4d} lines")
error = (out - simple_fn(x, y)).abs().max().item()
print(f"compiled vs eager: max abs difference {error:.1e}")
# --8<-- [end:compile]
results["graph_count"] = len(graph_dirs)
results["artifacts"] = sorted(p.name for p in graph_dirs[0].iterdir())
results["max_abs_error"] = error


def normalise(text):
    """Replace what changes from run to run or machine to machine with stable placeholders."""
    text = text.replace(str(RAW), "<debug_dir>").replace(cache_dir(), "<inductor_cache>")
    text = text.replace(tempfile.gettempdir(), "<tmp>")
    text = re.sub(r"(# File: )\S*/([^/\s]+\.py)", r"\1\2", text)  # keep the file name, drop its folder
    text = re.sub(r"^# kernel path: .*\n", "", text, flags=re.MULTILINE)  # a path in the compile cache
    text = re.sub(r"'backend_hash': '\w+'", "'backend_hash': '<hash>'", text)
    text = re.sub(r"\b[a-z0-9]{52}\b", "<hash>", text)  # cache keys (base32 hashes)
    return re.sub(r"AOT ID: \['\d+_", "AOT ID: ['<n>_", text)  # a counter of graphs compiled in this process


# Stable names under OUT/debug/, so a page can link to them; then the raw tree goes.
DEBUG = OUT / "debug"
DEBUG.mkdir(exist_ok=True)
for path in graph_dirs[0].iterdir():
    (DEBUG / path.name).write_text(normalise(path.read_text()))
shutil.rmtree(RAW)

# --8<-- [start:decomposition]
# What Dynamo captured: the two calls of simple_fn, as torch functions.
dynamo_calls = [n.target.__name__ for n in captured[0].graph.nodes if n.op == "call_function"]
print("Dynamo's graph calls:", ", ".join(dynamo_calls))

# What Inductor received after AOTAutograd decomposed it into core ATen ops (fx_graph_readable.py).
readable = (DEBUG / "fx_graph_readable.py").read_text()
ATEN_LINE = re.compile(r'^\s*(\w+): "([^"]+)" = torch\.ops\.aten\.([\w.]+)\((.*?)\)(?:;|$)', re.MULTILINE)
aten_ops = []
print("fx_graph_readable.py, the aten ops:")
for name, shape, op, args in ATEN_LINE.findall(readable):
    aten_ops.append(op.split(".")[0])
    print(f"  {name:<6} {shape:<15} = aten.{op}({args})")
# --8<-- [end:decomposition]
results["dynamo_calls"] = dynamo_calls
results["aten_ops"] = aten_ops


def scheduler_nodes(ir_text):
    """The top-level nodes of an ir_pre_fusion/ir_post_fusion dump, with the compute ops each one runs."""
    nodes, nested = [], False
    for block in re.split(r"\n(?=\w+: \w+\()", ir_text.strip()):
        header = re.match(r"(\w+): (\w+)\(", block)
        if not header:
            continue
        kernel = re.search(r"\.node\.kernel = (\S+)", block)
        reductions = re.findall(r"ops\.reduction\([^']*'(\w+)'", block)
        pointwise = [op for op in re.findall(r"ops\.(\w+)\(", block)
                     if op not in {"load", "store", "store_reduction", "reduction", "index_expr", "constant"}]
        ops = [kernel.group(1)] if kernel else [f"{r} reduction" for r in reductions] + pointwise
        if nested:  # a member of the fused node before it: its ops belong to that node
            nodes[-1]["members"].append(header.group(1))
            nodes[-1]["ops"] += ops
        else:
            nodes.append({"name": header.group(1), "kind": header.group(2), "ops": ops, "members": []})
        # Inside a fused node, each member is dumped after a line ending in ".snodes[i] ="
        nested = re.search(r"\.snodes\[\d+\] =$", block.rstrip()) is not None
    return nodes


# --8<-- [start:fusion]
pre = scheduler_nodes((DEBUG / "ir_pre_fusion.txt").read_text())
post = scheduler_nodes((DEBUG / "ir_post_fusion.txt").read_text())
for title, nodes in (("ir_pre_fusion.txt", pre), ("ir_post_fusion.txt", post)):
    print(f"{title}: {len(nodes)} scheduler nodes")
    for node in nodes:
        print(f"  {node['name']:<16} {node['kind']:<28} {', '.join(node['ops'])}")
        if node["members"]:
            print(f"  {'':<16} fused from {len(node['members'])} nodes: {', '.join(node['members'])}")
# --8<-- [end:fusion]
results["pre_fusion"] = pre
results["post_fusion"] = post

# --8<-- [start:output_code]
code = (DEBUG / "output_code.py").read_text()
# Each generated kernel is a module-level name bound to an async compile of its source.
kernels = re.findall(r"^(\w+) = async_compile\.(\w+)\(", code, flags=re.MULTILINE)
call_body = code[code.index("def call("):code.index("def benchmark_compiled_module")]
launches = re.findall(r"^\s+((?:extern_kernels\.\w+|\w+_fused_\w+)(?:\.run)?)\(", call_body, flags=re.MULTILINE)
buffers = re.findall(r"^\s+(buf\d+) = empty_strided", call_body, flags=re.MULTILINE)
print("kernels generated:", ", ".join(f"{name} ({how})" for name, how in kernels))
print(f"call() launches {len(launches)}: {', '.join(launches)}")
print(f"call() allocates {len(buffers)} buffers: {', '.join(buffers)}")
# --8<-- [end:output_code]
results["kernels"] = [name for name, _ in kernels]
results["launches"] = launches
results["buffers"] = buffers
results["counts"] = {"aten_ops": len(aten_ops), "pre_fusion_nodes": len(pre), "post_fusion_nodes": len(post),
                     "kernels": len(kernels), "launches": len(launches), "buffers": len(buffers)}
results["kernel_name"] = kernels[0][0]

# --8<-- [start:kernel_code]
# The source of the generated kernel: C++ on the CPU, a Triton function on a GPU.
name, how = kernels[0]
source = code.split(f"{name} = async_compile.{how}(", 1)[1]
start = source.index('extern "C"') if how.startswith("cpp") else source.index("@triton.jit")
body = source[start:].split("'''", 1)[0].rstrip().splitlines()
HEAD = 40
print("\n".join(body[:HEAD]))
if len(body) > HEAD:
    print(f"// ... {len(body) - HEAD} more lines in output_code.py" if device == "cpu"
          else f"# ... {len(body) - HEAD} more lines in output_code.py")
# --8<-- [end:kernel_code]
results["kernel_lines"] = len(body)
if device == "cpu":
    # The vector length the C++ kernel loads with (16 floats for AVX-512, 8 for AVX2).
    widths = re.findall(r"Vectorized<float>::loadu\([^;]*?static_cast<int64_t>\((\d+)\)\)", code)
    results["vector_floats"] = int(widths[0]) if widths else None

(OUT / "results.json").write_text(json.dumps(results, indent=2))
