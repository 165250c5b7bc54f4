"""Dead-code elimination: a matmul whose result nobody uses is captured, then dropped
before code generation.

    python snippets/optimizations/dead_code.py

Profiles an MLP with one unused matmul eager and compiled, prints the graph TorchDynamo
captured (all three matmuls), the ATen graph Inductor lowered (two), and counts the
matmul calls in the generated code. Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import copy
import re

import torch
from torch._inductor.compile_fx import compile_fx
from torch._inductor.utils import run_and_get_code
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {}
results["device"] = device


# --8<-- [start:mlp]
def mlp(x, gating0, gating1, linear):
    h = x @ gating0
    unused = x @ gating1  # computed, then never read: nothing returned depends on it
    h = torch.relu(h)
    return h @ linear


# The batch and model sizes of a small transformer MLP on CUDA; a CPU gets 1/8 of each.
b, d = (512, 2048) if device == "cuda" else (64, 256)
f = 2 * d
dtype = torch.bfloat16 if device == "cuda" else torch.float32
g = torch.Generator(device=device).manual_seed(0)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=g, device=device, dtype=dtype) * scale


x = randn(b, d)
gating0, gating1 = randn(d, f, scale=d**-0.5), randn(d, f, scale=d**-0.5)
linear = randn(f, d, scale=f**-0.5)
args = (x, gating0, gating1, linear)
print(f"x {tuple(x.shape)}, gating0 and gating1 {tuple(gating0.shape)}, "
      f"linear {tuple(linear.shape)}, {dtype}")
# --8<-- [end:mlp]
results["sizes"] = {"b": b, "d": d, "f": f, "dtype": dtype}

# --8<-- [start:graphs]
captured, lowered = [], []


def inductor_keeping_graphs(graph_module, example_inputs):
    """A torch.compile backend: keep the graph TorchDynamo captured, then hand it to
    Inductor, the default backend."""
    captured.append(graph_module)
    return compile_fx(graph_module, example_inputs)


def keep_aten_graph(graph):
    """Inductor calls this with the ATen graph near the end of its passes; keep a
    copy, because the passes after it (a topological sort, ...) edit it in place."""
    lowered.append(copy.deepcopy(graph))


# Compile caches off: a cache hit skips the passes, and the hook would see no graph.
with torch._inductor.config.patch(post_grad_custom_post_pass=keep_aten_graph,
                                  fx_graph_cache=False), \
        torch._functorch.config.patch(enable_autograd_cache=False):
    compiled_mlp = torch.compile(mlp, backend=inductor_keeping_graphs)
    out, (output_code,) = run_and_get_code(compiled_mlp, *args)

tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-4
same = torch.allclose(out, mlp(*args), rtol=tolerance, atol=tolerance)
print(f"compiled == eager: {same}")
print("Graph TorchDynamo captured (Python-level, one node per line of mlp):")
print(re.sub(r"\n\s*\n", "\n", captured[0].code.strip()))
print("ATen graph Inductor lowered:")
print(str(lowered[0]).strip())
dynamo_matmuls = captured[0].code.count(" @ ")
aten_matmuls = str(lowered[0]).count("aten.mm.")
code_matmuls = output_code.count("extern_kernels.mm(")
print(f"matmuls: {dynamo_matmuls} captured, {aten_matmuls} lowered, "
      f"{code_matmuls} called by the generated code")
# --8<-- [end:graphs]
results["allclose"] = same
results["graphs"] = {"captured": captured[0], "lowered": lowered[0]}
results["matmuls"] = {"dynamo": dynamo_matmuls, "aten": aten_matmuls,
                      "generated_code": code_matmuls}
unused_input = re.search(r"%(\w+) : \[num_users=0\]", str(lowered[0]))
results["unused_input"] = unused_input.group(1) if unused_input else None
results["unused_line"] = next((line.strip().split(";")[0]
                               for line in captured[0].code.splitlines()
                               if "unused =" in line), None)
results["lowered_matmul_nodes"] = re.findall(r"%(\w+) : .*aten\.mm\.", str(lowered[0]))


# --8<-- [start:profile]
def profile_matmuls(fn, name):
    for _ in range(10):  # warm up
        fn(*args)
    sync()
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)  # the kernels the GPU ran
    with profile(activities=activities) as prof:
        fn(*args)
        sync()
    events = prof.events()
    # A matmul op calls mm inside it: count the outermost only.
    mm_ops = [e.name for e in events
              if e.name in ("aten::mm", "aten::addmm", "aten::matmul")
              and (e.cpu_parent is None or e.cpu_parent.name != "aten::matmul")]
    print(f"{name:>8}: {len(mm_ops)} matmul ops {mm_ops}")
    if device != "cuda":
        return len(mm_ops), None
    # cuBLAS kernel names vary by GPU and version; these patterns cover its GEMMs.
    names = [e.name for e in events if e.device_type == DeviceType.CUDA]
    gemms = [n for n in names if re.search(r"gemm|nvjet|cutlass|xmma", n, re.I)]
    short = [n.removeprefix("void ").split("<")[0].split("(")[0][:50] for n in names]
    print(f"{'':>8}  {len(gemms)} GEMM kernels of {len(names)} kernels: {short}")
    return len(mm_ops), len(gemms)


eager_mm, eager_gemms = profile_matmuls(mlp, "eager")
compiled_mm, compiled_gemms = profile_matmuls(compiled_mlp, "compiled")
# --8<-- [end:profile]
results["profile"] = {
    "eager_mm_ops": eager_mm,
    "compiled_mm_ops": compiled_mm,
    "eager_mm_kernels": eager_gemms,
    "compiled_mm_kernels": compiled_gemms,
}
