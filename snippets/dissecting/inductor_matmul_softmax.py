"""TorchInductor on matmul + softmax: artifacts, decomposition, lowering, fusion, code.

    python snippets/dissecting/inductor_matmul_softmax.py

Runs on CUDA when torch sees a GPU (Inductor writes Triton), else on the CPU (Inductor
writes C++/OpenMP). Compiles one small function with Inductor's debug trace on (what
TORCH_COMPILE_DEBUG=1 does), into ./inductor_debug/, and reads the artifacts back.
"""

import re
import shutil
from pathlib import Path

import torch
from torch._inductor.compile_fx import compile_fx, compile_fx_inner
from torch._inductor.utils import run_and_get_code

results = {}

# --8<-- [start:backends]
device = "cuda" if torch.cuda.is_available() else "cpu"
# Inductor picks a code generator per device: C++ with OpenMP and vector intrinsics for
# the CPU, Triton for NVIDIA (and AMD) GPUs.
config = torch._inductor.config
backend = config.cuda_backend if device == "cuda" else config.cpu_backend
print(f"device: {device}; Inductor backend for it: {backend}")
if device == "cuda":
    print(f"GPU: {torch.cuda.get_device_name()}")
else:
    # The C++ is written for the widest vector unit this CPU has, and runs on torch's
    # OpenMP threads.
    print(f"CPU vector ISA: {torch.backends.cpu.get_cpu_capability()}, "
          f"OpenMP threads: {torch.get_num_threads()}")
# --8<-- [end:backends]


# --8<-- [start:function]
def simple_fn(x, y):
    z = torch.matmul(x, y)
    return torch.nn.functional.softmax(z, dim=1)
# --8<-- [end:function]

results["device"] = device
results["backend"] = backend
if device == "cpu":
    results["cpu_capability"] = torch.backends.cpu.get_cpu_capability()

# --8<-- [start:compile]
x = torch.rand(100, 100, device=device)
y = torch.rand(100, 100, device=device)
graphs = {}  # the graph Dynamo captured, and the ATen graph Inductor lowered


def keep_aten_graph(gm, example_inputs, **kwargs):
    graphs["aten"] = gm  # after AOTAutograd and Inductor's decompositions
    return compile_fx_inner(gm, example_inputs, **kwargs)


def inductor_keeping_graphs(gm, example_inputs):
    graphs["dynamo"] = gm
    return compile_fx(gm, example_inputs, inner_compile=keep_aten_graph)


# TORCH_COMPILE_DEBUG=1 sets config.trace.enabled when torch is imported, and
# TORCH_COMPILE_DEBUG_DIR names the folder. In a running program the config patch does
# the same, and undoes it on exit. The FX graph cache is off: a cache hit would skip the
# steps that write the artifacts.
DEBUG = Path("inductor_debug")
shutil.rmtree(DEBUG, ignore_errors=True)  # a second run, too, finds one graph's folder
patch = {"trace.enabled": True, "trace.debug_dir": str(DEBUG), "fx_graph_cache": False}
with config.patch(patch):
    compiled_fn = torch.compile(simple_fn, backend=inductor_keeping_graphs)
    out = compiled_fn(x, y)

(graph_dir,) = sorted((DEBUG / "torchinductor").iterdir())  # one graph, one folder
print(f"{DEBUG}/torchinductor/{graph_dir.name}/ holds:")
for path in sorted(graph_dir.iterdir()):
    print(f"  {path.name:<26} {len(path.read_text().splitlines()):4d} lines")
error = (out - simple_fn(x, y)).abs().max().item()
print(f"compiled vs eager: max abs difference {error:.1e}")
# --8<-- [end:compile]
results["dynamo_graph"] = graphs["dynamo"]
results["aten_graph"] = graphs["aten"]
results["debug_folder"] = graph_dir.as_posix()
results["artifacts"] = sorted(p.name for p in graph_dir.iterdir())
results["max_abs_error"] = error

# --8<-- [start:decomposition]
# What Dynamo captured: the two calls of simple_fn, as torch functions.
calls = [n for n in graphs["dynamo"].graph.nodes if n.op == "call_function"]
print("Dynamo's graph calls:", ", ".join(n.target.__name__ for n in calls))

# What Inductor received: softmax replaced by its definition in core ATen ops. The same
# graph is in fx_graph_readable.py. Each node's users decide what happens to it next.
aten = [n for n in graphs["aten"].graph.nodes if n.op == "call_function"]
print("the ATen graph Inductor lowers:")
for n in aten:
    shape = list(n.meta["val"].shape)
    users = ", ".join(u.name for u in n.users)
    op = f"aten.{n.target.__name__}"
    print(f"  {n.name:<6} = {op:<21} {str(shape):<10} users: {users}")
# --8<-- [end:decomposition]
results["dynamo_calls"] = [n.target.__name__ for n in calls]
results["aten_ops"] = [n.target.__name__.split(".")[0] for n in aten]
results["users"] = {n.name: [u.name for u in n.users] for n in aten}


def scheduler_nodes(ir_text):
    """The top-level nodes of an ir_pre_fusion/ir_post_fusion dump: each one's buffers
    and the compute ops in its loop bodies."""
    nodes, nested = [], False
    for block in re.split(r"\n(?=\w+: \w+\()", ir_text.strip()):
        header = re.match(r"(\w+): (\w+)\(", block)
        if not header:
            continue
        kernel = re.search(r"\.node\.kernel = (\S+)", block)
        reductions = re.findall(r"ops\.reduction\([^']*'(\w+)'", block)
        skip = {"load", "store", "store_reduction", "reduction", "index_expr",
                "constant"}
        pointwise = [op for op in re.findall(r"ops\.(\w+)\(", block) if op not in skip]
        ops = [kernel.group(1)] if kernel else [f"{r} reduction" for r in reductions]
        ops += [] if kernel else pointwise
        if nested:  # a member of the fused node before it: its ops belong to that node
            nodes[-1]["members"].append(header.group(1))
            nodes[-1]["ops"] += ops
        else:
            buffers = re.findall(r"^\s+(buf\d+): \w+", block, flags=re.MULTILINE)
            nodes.append({"name": header.group(1), "kind": header.group(2),
                          "buffers": buffers, "ops": ops, "members": []})
        # Inside a fused node, each member is dumped after a line ".snodes[i] ="
        nested = re.search(r"\.snodes\[\d+\] =$", block.rstrip()) is not None
    return nodes


def show(nodes):
    for node in nodes:
        buffers = ", ".join(node["buffers"])
        print(f"  {node['name']:<16} {buffers:<22} {', '.join(node['ops'])}")
        if node["members"]:
            print(f"  {'':<16} {node['kind']}, fused from {', '.join(node['members'])}")


# --8<-- [start:lowering]
# Lowering turns each ATen node into a loop body. A pointwise node with one user is
# inlined into that user's body; a node is stored to a buffer ("realized") when it is a
# reduction, an extern kernel, an output, or reused by more than one user and judged too
# costly to recompute in each (on a CPU: any body that computes exp, log, tanh...).
pre = scheduler_nodes((graph_dir / "ir_pre_fusion.txt").read_text())
print(f"ir_pre_fusion.txt: {len(pre)} scheduler nodes, one per buffer, for {len(aten)} "
      f"ATen ops")
show(pre)
# --8<-- [end:lowering]
results["pre_fusion"] = pre

# --8<-- [start:fusion]
# The scheduler then fuses whole nodes whose loops are compatible: their buffers stay
# listed, but they run in one kernel (one loop nest).
post = scheduler_nodes((graph_dir / "ir_post_fusion.txt").read_text())
print(f"ir_post_fusion.txt: {len(post)} scheduler nodes")
show(post)
# --8<-- [end:fusion]
results["post_fusion"] = post


def kernels_and_launches(code):
    """The kernels an output_code.py module generates, as (name, how it is compiled),
    and the library and generated kernels it launches, in order."""
    # Each generated kernel is a module-level name bound to an async_compile call, which
    # compiles the kernels in a pool of workers while the module loads; a later
    # async_compile.wait(globals()) blocks until every kernel is ready.
    kernels = re.findall(r"^(\w+) = async_compile\.(\w+)\(", code, flags=re.MULTILINE)
    # The launches sit in call() (a function, or a method of a Runner class, depending
    # on the torch version), or, where Inductor partitions the graph (for CUDA graphs),
    # in the partition_N functions call() runs.
    names = "|".join(["extern_kernels\\.\\w+"] + [re.escape(k) for k, _ in kernels])
    launch = rf"^[ \t]+((?:{names})(?:\.run)?)\("
    return kernels, re.findall(launch, code, flags=re.MULTILINE)


# --8<-- [start:output_code]
code = (graph_dir / "output_code.py").read_text()
kernels, launches = kernels_and_launches(code)
buffers = re.findall(r"^[ \t]+(buf\d+) = empty_strided", code, flags=re.MULTILINE)
print("kernels generated:", ", ".join(f"{name} ({how})" for name, how in kernels))
print(f"call() launches {len(launches)}: {', '.join(launches)}")
print(f"call() allocates {len(buffers)} buffers: {', '.join(buffers)}")
print(f"compile workers: {config.compile_threads}")
# --8<-- [end:output_code]
results["kernels"] = [name for name, _ in kernels]
results["kernel_name"] = kernels[0][0]
results["launches"] = launches
results["buffers"] = buffers
# Buffers call() takes over from another ("buf3 = buf0; del buf0  # reuse"), and the
# pre-fusion buffers that call() never allocates: they live only inside the kernel.
reuse = r"^[ \t]+(buf\d+) = buf\d+; del buf\d+  # reuse"
results["reused"] = re.findall(reuse, code, flags=re.MULTILINE)
results["kept_in_kernel"] = [b for node in pre for b in node["buffers"]
                             if b not in buffers + results["reused"]]
# The buffer exp is stored to, if lowering realized it (a node whose body ends in exp).
results["exp_buffer"] = next(
    (node["buffers"][0] for node in pre if node["ops"][-1:] == ["exp"]), None)
results["compile_threads"] = config.compile_threads
results["counts"] = {
    "aten_ops": len(aten), "pre_fusion_nodes": len(pre), "post_fusion_nodes": len(post),
    "kernels": len(kernels), "launches": len(launches), "buffers": len(buffers),
}

# --8<-- [start:kernel_code]
# The source of the generated kernel: C++ on the CPU, a Triton function on a GPU.
name, how = kernels[0]
source = code.split(f"{name} = async_compile.{how}(", 1)[1]
start = source.index('extern "C"') if how.startswith("cpp") else source.index("@triton")
body = source[start:].split("'''", 1)[0].rstrip().splitlines()
HEAD = 40
print("\n".join(body[:HEAD]))
more = f"... {len(body) - HEAD} more lines in output_code.py"
if len(body) > HEAD:
    print(f"// {more}" if device == "cpu" else f"# {more}")
# --8<-- [end:kernel_code]
kernel_source = "\n".join(body)
results["kernel_lines"] = len(body)
# Inductor leaves most unrolling to the C++ compiler (g++ -O3) or, for Triton, to LLVM;
# it writes an unroll pragma only in some kernels (a gather's scalar loop, its C++ GEMM
# templates). Count the ones it wrote here.
results["unroll_pragmas"] = len(re.findall(r"#pragma (?:GCC )?unroll", kernel_source))
if device == "cpu":
    # The vector length the C++ kernel loads with (16 floats for AVX-512, 8 for AVX2).
    load = r"Vectorized<float>::loadu\([^;]*?static_cast<int64_t>\((\d+)\)\)"
    widths = re.findall(load, kernel_source)
    results["vector_floats"] = int(widths[0]) if widths else None
else:
    # The Triton kernel's tile sizes (XBLOCK, R0_BLOCK...) are tl.constexpr parameters:
    # Inductor's heuristics decorator lists candidate configs for the sizes, and its
    # autotuner times them at the first call when there are several. Triton compiles
    # whatever block size it is given.
    heuristic = re.search(r"@triton_heuristics\.(\w+)\(", source)
    results["triton_heuristic"] = heuristic.group(1) if heuristic else None


# --8<-- [start:unroll]
# Inductor unrolls one kind of loop itself: a reduction shorter than
# config.unroll_reductions_threshold becomes pointwise code, a load and an add per
# value, with no loop and no accumulator. A sum over rows of 4 values is below it.
def row_sums(t):
    return t.sum(dim=1)


unrolled = {}
for length in (4, config.unroll_reductions_threshold):
    torch._dynamo.reset()  # a fresh compile for each length, not a dynamic-shape one
    with config.patch({"fx_graph_cache": False}):
        _, (code,) = run_and_get_code(torch.compile(row_sums),
                                      torch.rand(100, length, device=device))
    # A reduction keeps an accumulator: tmp_acc in C++, a triton_per_ or triton_red_
    # kernel on a GPU. Unrolled, the sum is plain adds of plain loads.
    reduces = re.search(r"tmp_acc|def triton_(?:per|red)_", code) is not None
    adds = len(re.findall(r"tmp\d+ \+ tmp\d+", code))
    unrolled[length] = {"reduction_loop": reduces, "adds": adds}
    print(f"rows of {length} (unroll_reductions_threshold = "
          f"{config.unroll_reductions_threshold}): "
          + ("a reduction loop" if reduces else f"unrolled, {adds} adds a row"))
# --8<-- [end:unroll]
results["unroll_reductions_threshold"] = config.unroll_reductions_threshold
results["unrolled"] = unrolled
