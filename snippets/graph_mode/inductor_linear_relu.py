"""TorchInductor's output code for Linear + ReLU: C++/OpenMP on a CPU, Triton on a GPU.

    python snippets/graph_mode/inductor_linear_relu.py

Compiles the layer, takes Inductor's generated module with
torch._inductor.utils.run_and_get_code, and prints the generated kernel and the
wrapper that launches it, normalised (path and hash comments dropped, hashes
replaced) so the text is stable between runs. Then compiles it again with
mode="max-autotune", where Inductor may fold the ReLU into a GEMM template of its
own. Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import re
import textwrap

import torch
from torch._inductor.utils import run_and_get_code

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}

COMMENTS = re.compile(r"\s*# (kernel path|AOT ID|Source node|Original ATen|"
                      r"Topologically Sorted|Graph fragment)")


def normalise(code):
    """Drop comments that hold paths, hashes and source positions; hide hashes."""
    text = "\n".join(line for line in code.splitlines() if not COMMENTS.match(line))
    text = re.sub(r"'backend_hash': '[0-9A-Fa-f]+'", "'backend_hash': '<hash>'", text)
    text = re.sub(r"\b[0-9a-f]{32,}\b", "<hash>", text)
    return re.sub(r"\n{3,}", "\n\n", text)


def kernels_and_launches(code):
    """The generated kernels' sources, the wrapper's call(), and what it launches."""
    # Each kernel is a source string handed to async_compile (C++ or Triton).
    kernels = dict(re.findall(r"^(\w+) = async_compile\.\w+\(.*?r?'''\n(.*?)'''",
                              code, re.MULTILINE | re.DOTALL))
    # The wrapper's functions, each from its `def` to its `return`: call(), and where
    # Inductor partitions the graph (for CUDA graphs, as max-autotune uses on a GPU)
    # the partition_N functions that call() runs, which then hold the launches.
    functions = {m.group(2): m.group(0) for m in re.finditer(
        r"^( *)def (call|partition_\d+)\(.*?^\1    return .*?$", code,
        re.MULTILINE | re.DOTALL)}
    launch = r"^\s+(extern_kernels\.\w+|(?:cpp|triton)_\w+)(?:\.run)?\("
    launches = [name for body in functions.values()
                for name in re.findall(launch, body, re.MULTILINE)]
    return kernels, functions["call"], launches


# --8<-- [start:compile]
layer = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU())
layer = layer.to(device).eval()
x = torch.randn(64, 256, device=device)
with torch.no_grad():  # inference: Inductor compiles the forward only
    out, (code,) = run_and_get_code(torch.compile(layer), x)
    same = torch.allclose(out, layer(x), rtol=1e-4, atol=1e-4)
code = normalise(code)
kernels, body, launches = kernels_and_launches(code)
print(f"output code: {len(code.splitlines())} lines; "
      f"generated kernels: {', '.join(kernels)}")
print(f"call() launches: {', '.join(launches)}")
print(f"compiled output matches eager: {same}")
# --8<-- [end:compile]
results["kernels"] = list(kernels)
results["launches"] = launches
results["extern_calls"] = [n for n in launches if n.startswith("extern_kernels")]
results["matches_eager"] = same
results["output_code_lines"] = len(code.splitlines())

# --8<-- [start:kernel]
for source in kernels.values():
    print(source.strip())
# --8<-- [end:kernel]
results["kernel_lines"] = {n: len(s.strip().splitlines()) for n, s in kernels.items()}

# --8<-- [start:wrapper]
print(textwrap.dedent(body).rstrip())
# --8<-- [end:wrapper]

# --8<-- [start:autotune]
# max-autotune benchmarks Inductor's own GEMM templates against the library GEMM
# and keeps the fastest. A template can apply the bias and ReLU before its one
# write: one kernel. On a GPU the templates are Triton, considered only on GPUs
# that is_big_gpu() accepts; on a CPU they are C++, and need the weights frozen
# (constants of the graph, inference only) to pack them.
if device == "cuda":
    big = torch._inductor.utils.is_big_gpu(0)
    print(f"is_big_gpu: {big} "
          f"({torch.cuda.get_device_properties(0).multi_processor_count} SMs)")
torch._dynamo.reset()
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    tuned = torch.compile(layer, mode="max-autotune")
    out, (tuned_code,) = run_and_get_code(tuned, x)
    tuned_same = torch.allclose(out, layer(x), rtol=1e-4, atol=1e-4)
tuned_kernels, _, tuned_launches = kernels_and_launches(normalise(tuned_code))
# Folded: something was launched, and none of it is a library GEMM.
folded = bool(tuned_launches) and not any(n.startswith("extern_kernels")
                                          for n in tuned_launches)
print(f"max-autotune: call() launches {', '.join(tuned_launches)}")
if folded:
    print("a GEMM template won its benchmark: the ReLU is folded into the GEMM")
elif device == "cuda" and not big:
    print("no Triton template was tried (is_big_gpu is False): library GEMM + ReLU")
else:
    print("the library GEMM won its benchmark: the ReLU stays a kernel of its own")
print(f"compiled output matches eager: {tuned_same}")
# --8<-- [end:autotune]
results["autotune"] = {"kernels": list(tuned_kernels), "launches": tuned_launches,
                       "folded": folded, "matches_eager": tuned_same,
                       "big_gpu": big if device == "cuda" else None}
