"""TorchInductor's output code for Linear + ReLU: C++/OpenMP on a CPU, Triton on a GPU.

    python snippets/graph_mode/inductor_linear_relu.py

Compiles the layer, takes Inductor's generated module with torch._inductor.utils.run_and_get_code, and
prints the generated kernel and the wrapper that launches it, normalised (path and hash comments dropped,
hashes replaced) so the text is stable between runs. Runs on CUDA when torch sees a GPU, else on the CPU;
writes results.json and the whole normalised output code to $SNIPPET_OUTPUT_DIR or a temporary folder.
"""

import json
import os
import re
import tempfile
import textwrap
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="inductor_linear_relu-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


def normalise(code):
    """Drop comments that hold paths, hashes and source positions; replace hashes with placeholders."""
    kept = [line for line in code.splitlines()
            if not re.match(r"\s*# (kernel path|AOT ID|Source node|Original ATen|Topologically Sorted|Graph fragment)", line)]
    text = "\n".join(kept)
    text = re.sub(r"'backend_hash': '[0-9A-Fa-f]+'", "'backend_hash': '<hash>'", text)
    text = re.sub(r"\b[0-9a-f]{32,}\b", "<hash>", text)
    return re.sub(r"\n{3,}", "\n\n", text)


# --8<-- [start:compile]
layer = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).to(device).eval()
x = torch.randn(64, 256, device=device)
with torch.no_grad():  # inference: Inductor compiles the forward only, without saving anything for backward
    out, (code,) = run_and_get_code(torch.compile(layer), x)
    same = torch.allclose(out, layer(x), rtol=1e-4, atol=1e-4)
code = normalise(code)
(OUT / "output_code.py").write_text(code)

# Each generated kernel is a source string handed to async_compile (C++ on a CPU, Triton on a GPU).
kernels = dict(re.findall(r"^(\w+) = async_compile\.\w+\(.*?r?'''\n(.*?)'''", code, re.MULTILINE | re.DOTALL))
# The wrapper function call(): from its `def` to its `return` (a method of Runner in recent torch).
body = re.search(r"^( *)def call\(.*?^\1    return .*?$", code, re.MULTILINE | re.DOTALL).group(0)
launches = re.findall(r"^\s+(extern_kernels\.\w+|(?:cpp|triton)_\w+)(?:\.run)?\(", body, re.MULTILINE)
print(f"output code: {len(code.splitlines())} lines; generated kernels: {', '.join(kernels)}")
print(f"call() launches: {', '.join(launches)}")
print(f"compiled output matches eager: {same}")
# --8<-- [end:compile]
results["kernels"] = list(kernels)
results["launches"] = launches
results["extern_calls"] = [name for name in launches if name.startswith("extern_kernels")]
results["matches_eager"] = bool(same)
results["output_code_lines"] = len(code.splitlines())

# --8<-- [start:kernel]
for name, source in kernels.items():
    print(source.strip())
# --8<-- [end:kernel]
results["kernel_lines"] = {name: len(source.strip().splitlines()) for name, source in kernels.items()}

# --8<-- [start:wrapper]
print(textwrap.dedent(body).rstrip())
# --8<-- [end:wrapper]

(OUT / "results.json").write_text(json.dumps(results, indent=2))
