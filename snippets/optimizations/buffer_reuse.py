"""Buffer reuse: compiled code frees intermediates as soon as they die and writes new
ones into their memory.

    python snippets/optimizations/buffer_reuse.py

Measures the peak memory of an eager and a compiled call of one chain of ops
(torch.cuda.max_memory_allocated on CUDA, the profiler's allocation records on CPU),
counts the buffers Inductor's generated code allocates, and prints the lines where it
reuses one. Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import re
import textwrap

import torch
from torch._inductor.utils import run_and_get_code
from torch.profiler import ProfilerActivity, profile

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:chain]
def chain(x, w):
    # Seven ops, each a new tensor of x's size in eager mode. The softmaxes (row
    # reductions) and the matmul cannot share one loop with their neighbours, so the
    # compiled code has several kernels and keeps some intermediates in memory.
    a = torch.sin(x)
    b = a.softmax(dim=-1)
    c = b @ w
    d = torch.relu(c)
    e = d + x
    f = e.softmax(dim=-1)
    return f * 2


# 4096 x 4096 fp32 is 64 MiB per tensor on CUDA; 512 x 512 (1 MiB) keeps CPU runs short.
n = 4096 if device == "cuda" else 512
x = torch.randn(n, n, device=device)
w = torch.randn(n, n, device=device) / n**0.5
tensor_mib = x.numel() * x.element_size() / 2**20

compiled_chain = torch.compile(chain)
# The first call compiles; run_and_get_code also returns the module Inductor wrote.
out, (output_code,) = run_and_get_code(compiled_chain, x, w)
same = torch.allclose(out, chain(x, w), rtol=1e-4, atol=1e-6)
print(f"compiled == eager: {same}; one tensor is {tensor_mib:.0f} MiB")
# --8<-- [end:chain]
results["allclose"] = same
results["n"] = n
results["tensor_mib"] = tensor_mib


# --8<-- [start:peak]
def peak_mib(fn):
    """Most memory the call held at once beyond its inputs, its result included."""
    fn(x, w)  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn(x, w)
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - before) / 2**20
    # On CPU the profiler records every allocation (+bytes) and free (-bytes) with its
    # time; its summary folds those made inside a compiled graph into one row, so
    # replay the raw records in order.
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(x, w)
    records = sorted((e.start_ns(), e.nbytes()) for e in
                     prof.profiler.kineto_results.events() if e.name() == "[memory]")
    held = peak = 0
    for _, change in records:
        held += change
        peak = max(peak, held)
    return peak / 2**20


eager_peak, compiled_peak = peak_mib(chain), peak_mib(compiled_chain)
print(f"peak memory beyond the inputs: "
      f"eager {eager_peak:.1f} MiB ({eager_peak / tensor_mib:.1f} tensors), "
      f"compiled {compiled_peak:.1f} MiB ({compiled_peak / tensor_mib:.1f} tensors)")
# --8<-- [end:peak]
results["peak"] = {
    "eager_mib": eager_peak,
    "compiled_mib": compiled_peak,
    "eager_tensors": eager_peak / tensor_mib,
    "compiled_tensors": compiled_peak / tensor_mib,
}

def call_body(output_code):
    """The generated `call` function (a method of a Runner class, or a plain function,
    by torch version and settings): its allocations, kernel launches, frees and reuses,
    with comments and size checks dropped."""
    body = output_code[output_code.index("def call("):].split("\n\n")[0]
    header, *lines = (line for line in body.splitlines()
                      if not line.strip().startswith(("#", "assert_")))
    body = header + "\n" + textwrap.indent(textwrap.dedent("\n".join(lines)), "    ")
    # graph_N: N counts the graphs of the process that generated the code (a copy from
    # Inductor's cache keeps that process's N); every other name is the same each run.
    return re.sub(r"graph_\d+_", "graph_N_", body)


# --8<-- [start:code]
body = call_body(output_code)
print(body)

allocations = re.findall(r"^\s*(buf\d+) = empty_strided_\w+\(\((.*?)\)", body, re.M)
reuses = re.findall(r"^\s*(buf\d+) = (?:reinterpret_tensor\()?(\w+).*# reuse$",
                    body, re.M)
full_size = [name for name, shape in allocations
             if shape.replace(" ", "") == f"{n},{n}"]
# x and w (arg0_1, arg1_1) belong to the caller, who may read them after the call:
# the generated code drops its references to them (`del`) but never writes into them.
inputs_reused = [old for new, old in reuses if not old.startswith("buf")]
print(f"\neager allocates 7 tensors of {n} x {n} (six intermediates and the result)")
print(f"compiled allocates {len(allocations)} buffers, {len(full_size)} of them "
      f"{n} x {n}: {full_size}")
print(f"and reuses {len(reuses)}: "
      + ", ".join(f"{new} <- {old}" for new, old in reuses))
print(f"inputs whose memory it reuses: {inputs_reused or 'none'}")
# --8<-- [end:code]
returned = re.search(r"return \((\w+), \)", body).group(1)
matmul = re.search(r"extern_kernels\.mm\((\w+), \w+, out=(\w+)\)", body)
results["code"] = {
    "allocations": len(allocations),
    "full_size_allocations": len(full_size),
    "small_allocations": len(allocations) - len(full_size),
    "full_size_names": full_size,
    "reuses": dict(reuses),
    "reuse_count": len(reuses),
    "inputs_reused": inputs_reused,
    "reuses_an_input": bool(inputs_reused),
    "eager_tensors_allocated": 7,
    "returned": returned,
    "returned_reuses": dict(reuses).get(returned),
    "matmul_input": matmul.group(1) if matmul else None,
    "matmul_output": matmul.group(2) if matmul else None,
    "reuse_line": next((line.strip() for line in body.splitlines()
                        if line.strip().startswith(f"{returned} = ")), None),
}
