"""Dead-code elimination: a matmul whose result nobody uses is captured, then dropped before code generation.

    python snippets/optimizations/dead_code.py

Profiles an MLP with one unused matmul eager and compiled, prints the graph TorchDynamo captured (all three
matmuls), the ATen graph Inductor lowered (two), and counts the matmul calls in the generated code. Runs on
CUDA when torch sees a GPU, else on the CPU. Writes results.json to $SNIPPET_OUTPUT_DIR, or to a temporary
folder.
"""

import json
import os
import re
import tempfile
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from torch._inductor.compile_fx import compile_fx
from torch._inductor.utils import run_and_get_code

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="dead_code-"))
OUT.mkdir(parents=True, exist_ok=True)
device = "cuda" if torch.cuda.is_available() else "cpu"
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
results = {"device": device}


# --8<-- [start:mlp]
def mlp(x, gating0, gating1, linear):
    h = x @ gating0
    unused = x @ gating1  # computed, then never read: no output, no side effect depends on it
    h = torch.relu(h)
    return h @ linear


# The batch, model and hidden sizes of a small transformer MLP on CUDA; a CPU runner gets 1/8 of each.
b, d = (512, 2048) if device == "cuda" else (64, 256)
f = 2 * d
dtype = torch.bfloat16 if device == "cuda" else torch.float32
g = torch.Generator(device=device).manual_seed(0)
x = torch.randn(b, d, generator=g, device=device, dtype=dtype)
gating0, gating1 = (torch.randn(d, f, generator=g, device=device, dtype=dtype) / d**0.5 for _ in range(2))
linear = torch.randn(f, d, generator=g, device=device, dtype=dtype) / f**0.5
args = (x, gating0, gating1, linear)
print(f"x {tuple(x.shape)}, gating0 and gating1 {tuple(gating0.shape)}, linear {tuple(linear.shape)}, {dtype}")
# --8<-- [end:mlp]

# --8<-- [start:graphs]
dynamo_graphs, aten_graphs = [], []


def inductor_showing_graphs(graph_module, example_inputs):
    """A torch.compile backend: keep the graph TorchDynamo captured, then compile it with Inductor."""
    dynamo_graphs.append(graph_module.code.strip())
    (OUT / "captured.fxgraph.txt").write_text(str(graph_module.graph))  # drawn on the page
    return compile_fx(graph_module, example_inputs)


def keep_aten_graph(graph):
    """Inductor calls this on the ATen graph it is about to lower (after its own passes)."""
    aten_graphs.append(str(graph).strip())


# Compile caches off: a cache hit would skip the passes, and the hook would see no graph.
with torch._inductor.config.patch(post_grad_custom_post_pass=keep_aten_graph, fx_graph_cache=False), \
        torch._functorch.config.patch(enable_autograd_cache=False):
    compiled_mlp = torch.compile(mlp, backend=inductor_showing_graphs)
    out, (output_code,) = run_and_get_code(compiled_mlp, *args)

tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-4
print(f"compiled == eager: {torch.allclose(out, mlp(*args), rtol=tolerance, atol=tolerance)}")
print("Graph TorchDynamo captured (Python-level, one node per line of mlp):")
print(re.sub(r"\n\s*\n", "\n", dynamo_graphs[0]))
print("ATen graph Inductor lowered:")
print(aten_graphs[0])
dynamo_matmuls = len(re.findall(r" @ ", dynamo_graphs[0]))
aten_matmuls = len(re.findall(r"aten\.mm\.", aten_graphs[0]))
code_matmuls = len(re.findall(r"extern_kernels\.mm\(", output_code))
print(f"matmuls: {dynamo_matmuls} captured, {aten_matmuls} lowered, {code_matmuls} called by the generated code")
# --8<-- [end:graphs]
results["allclose"] = torch.allclose(out, mlp(*args), rtol=tolerance, atol=tolerance)
results["matmuls"] = {"dynamo": dynamo_matmuls, "aten": aten_matmuls, "generated_code": code_matmuls}
(OUT / "lowered.fxgraph.txt").write_text(aten_graphs[0] + "\n")  # drawn on the page
results["gating1_unused_in_aten_graph"] = bool(re.search(r"%arg2_1 : \[num_users=0\]", aten_graphs[0]))


# --8<-- [start:profile]
def profile_matmuls(fn, name):
    for _ in range(10):  # warm up
        fn(*args)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        fn(*args)
        sync()
    events = prof.events()
    mm_ops = [e.name for e in events if e.name in ("aten::mm", "aten::addmm", "aten::matmul") and
              (e.cpu_parent is None or e.cpu_parent.name != "aten::matmul")]  # a matmul calls mm: count once
    if device == "cuda":  # cuBLAS kernel names vary by GPU and version; these cover gemm kernels
        names = [e.name for e in events if e.device_type == DeviceType.CUDA]
        mm_kernels = [n for n in names if re.search(r"gemm|nvjet|cutlass|xmma", n, re.I)]
        print(f"{name:>8}: {len(mm_ops)} matmul ops, {len(mm_kernels)} matmul kernels of {len(names)} kernels: "
              f"{[n.split('<')[0].split('(')[0][:50] for n in names]}")
    else:
        mm_kernels = []
        print(f"{name:>8}: {len(mm_ops)} matmul ops {mm_ops}")
    return len(mm_ops), len(mm_kernels)


eager_mm, eager_kernels = profile_matmuls(mlp, "eager")
compiled_mm, compiled_kernels = profile_matmuls(compiled_mlp, "compiled")
# --8<-- [end:profile]
results["profile"] = {
    "eager_mm_ops": eager_mm,
    "compiled_mm_ops": compiled_mm,
    "eager_mm_kernels": eager_kernels,
    "compiled_mm_kernels": compiled_kernels,
}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
